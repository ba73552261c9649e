#include "common/log.h"

#include <fmt/format.h>

#include <chrono>

#include "common/clock.h"
#include "common/json_writer.h"
#include "common/text.h"
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

namespace {

// A field's value in the text format: strings that are empty or hold a space,
// '"' or '=' are quoted and escaped as JSON strings.
void AppendTextValue(std::string& out, const LogField& f) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          if (v.empty() || v.find_first_of(" \"=") != std::string::npos) {
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
  JsonWriter w;
  w.BeginObject();
  w.Key("ts").String(FormatIso8601(DefaultClock().Now()));
  w.Key("level").String(LogLevelName(level));
  w.Key("event").String(event);
  for (const auto& f : fields) {
    w.Key(f.key);
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::string>) {
            w.String(v);
          } else if constexpr (std::is_same_v<T, bool>) {
            w.Bool(v);
          } else if constexpr (std::is_same_v<T, int64_t>) {
            w.Int(v);
          } else {
            w.Double(v);
          }
        },
        f.value);
  }
  w.EndObject();
  return w.Take();
}

void StreamLogger::Log(LogLevel level, std::string_view event, std::initializer_list<LogField> fields) {
  if (!Enabled(level)) return;
  std::string line;
  if (format_ == LogFormat::kJson) {
    line = RenderJsonLogLine(level, event, fields);
    EscapeJsonForTerminal(line);
  } else {
    line = fmt::format("{} {:5} {}", FormatIso8601(DefaultClock().Now()), LogLevelName(level), event);
    for (const auto& f : fields) {
      line += ' ';
      line += f.key;
      line += '=';
      AppendTextValue(line, f);
    }
    line = TerminalSafe(line);  // keys, names and errors come from outside: nothing may act on a terminal
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
  out += TerminalSafe(line);
  if (line.empty() && status_.empty()) return;
  status_ = TerminalSafe(line);
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
