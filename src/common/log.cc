#include "common/log.h"

#include <fmt/format.h>

#include <chrono>

#include "common/clock.h"
#include "common/time_util.h"

namespace dlq {

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
    case LogLevel::kOff: return "off";
  }
  return "info";
}

bool ParseLogLevel(std::string_view text, LogLevel& out) {
  for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError, LogLevel::kOff}) {
    if (text == LogLevelName(l)) {
      out = l;
      return true;
    }
  }
  if (text == "warning") {
    out = LogLevel::kWarn;
    return true;
  }
  return false;
}

void AppendJsonString(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 15];
    }
  }
  out.append(s.data() + run, s.size() - run);
  out += '"';
}

namespace {

void AppendValue(std::string& out, const LogField& f, bool json) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          if (json || v.empty() || v.find_first_of(" \"=") != std::string::npos) {
            AppendJsonString(out, v);
          } else {
            out += v;
          }
        } else if constexpr (std::is_same_v<T, bool>) {
          out += v ? "true" : "false";
        } else {
          out += fmt::format("{}", v);
        }
      },
      f.value);
}

std::unique_ptr<Logger>& GlobalLogger() {
  static std::unique_ptr<Logger> logger = std::make_unique<StreamLogger>(stderr, LogFormat::kText, LogLevel::kInfo);
  return logger;
}

}  // namespace

std::string RenderJsonLogLine(LogLevel level, std::string_view event, std::initializer_list<LogField> fields) {
  std::string out = "{\"ts\":\"";
  out += FormatIso8601(std::chrono::system_clock::now());
  out += "\",\"level\":\"";
  out += LogLevelName(level);
  out += "\",\"event\":";
  AppendJsonString(out, event);
  for (const auto& f : fields) {
    out += ',';
    AppendJsonString(out, f.key);
    out += ':';
    AppendValue(out, f, true);
  }
  out += '}';
  return out;
}

void StreamLogger::Log(LogLevel level, std::string_view event, std::initializer_list<LogField> fields) {
  if (!Enabled(level)) return;
  std::string line;
  if (format_ == LogFormat::kJson) {
    line = RenderJsonLogLine(level, event, fields);
  } else {
    line = fmt::format("{} {:5} {}", FormatIso8601(std::chrono::system_clock::now()), LogLevelName(level), event);
    for (const auto& f : fields) {
      line += ' ';
      line += f.key;
      line += '=';
      AppendValue(line, f, false);
    }
  }
  line += '\n';
  MutexLock lock(mu_);
  if (!status_.empty()) line = "\r\033[K" + line + status_;  // clear the status line, log, draw it again
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fflush(out_);
}

void StreamLogger::SetStatusLine(std::string_view line) {
  MutexLock lock(mu_);
  std::string out = "\r\033[K";
  out += line;
  if (line.empty() && status_.empty()) return;
  status_ = std::string(line);
  std::fwrite(out.data(), 1, out.size(), out_);
  std::fflush(out_);
}

void CapturingLogger::Log(LogLevel level, std::string_view event, std::initializer_list<LogField> fields) {
  Entry e{level, std::string(event), RenderJsonLogLine(level, event, fields)};
  MutexLock lock(mu_);
  entries_.push_back(std::move(e));
}

std::vector<CapturingLogger::Entry> CapturingLogger::entries() const {
  MutexLock lock(mu_);
  return entries_;
}

bool CapturingLogger::Contains(std::string_view needle) const {
  MutexLock lock(mu_);
  for (const auto& e : entries_) {
    if (e.line.find(needle) != std::string::npos) return true;
  }
  return false;
}

Logger& Log() {
  return *GlobalLogger();
}
void SetLogger(std::unique_ptr<Logger> logger) {
  GlobalLogger() = std::move(logger);
}

}  // namespace dlq
