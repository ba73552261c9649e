#include "monitor/config.h"

// The daemon config: names, group methods, the schema table, loading a file,
// and the text helpers the schema, the parser and the checks share
// (config_internal.h). Parsing: config_parse.cc.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "archive/destination.h"
#include "common/strings.h"
#include "monitor/config.h"
#include "monitor/config_internal.h"

namespace dlq {

std::vector<std::string> GroupSettings::ConsumerLogsFor(const std::string& queue) const {
  std::vector<std::string> out;
  for (const std::string& entry : consumer_logs) {
    const size_t eq = entry.find('=');
    if (eq == std::string::npos) {
      out.push_back(entry);
    } else if (entry.compare(0, eq, queue) == 0 && eq == queue.size()) {
      out.push_back(entry.substr(eq + 1));
    }
  }
  return out;
}

std::string_view MissingDataName(AlarmSettings::MissingData m) {
  switch (m) {
    case AlarmSettings::MissingData::kMissing: return "missing";
    case AlarmSettings::MissingData::kBreaching: return "breaching";
    case AlarmSettings::MissingData::kNotBreaching: return "notBreaching";
    case AlarmSettings::MissingData::kIgnore: return "ignore";
  }
  return "missing";
}

std::string_view AlarmActionName(AlarmSettings::Action a) {
  switch (a) {
    case AlarmSettings::Action::kNotify: return "notify";
    case AlarmSettings::Action::kCopy: return "copy";
    case AlarmSettings::Action::kArchive: return "archive";
  }
  return "archive";
}

std::string GroupConfig::DestinationPrefix() const {
  auto dest = ParseDestination(destination);
  return dest.ok() ? dest->prefix : std::string();
}

DrainOptions GroupConfig::ToDrainOptions() const {
  DrainOptions o;
  o.selection = policy;
  o.batch = batch;
  o.key_template = key_template;
  if (std::string prefix = DestinationPrefix(); !prefix.empty()) o.prefix = prefix;
  o.put = put;
  o.visibility_timeout = visibility_timeout;
  o.receivers = receivers;
  o.adaptive_receivers = !fixed_receivers;
  return o;
}

namespace config_internal {

// A value fit for an error message: truncated, control characters replaced.
std::string Quote(std::string_view v) {
  std::string out = "\"";
  size_t n = 0;
  for (char c : v) {
    if (++n > 64) {
      out += "...";
      break;
    }
    out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  }
  out += '"';
  return out;
}

std::string Join(std::string_view a, std::string_view b) {
  if (a.empty()) return std::string(b);
  if (b.empty()) return std::string(a);
  return fmt::format("{}.{}", a, b);
}

bool Contains(std::span<const std::string_view> list, std::string_view s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

bool ValidQueueName(std::string_view s) {
  if (s.empty() || s.size() > 80) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

bool IsUrl(std::string_view s) {
  return StartsWith(s, "http://") || StartsWith(s, "https://");
}

// A URL fit for an error message: scheme and host only, since a webhook URL
// may carry a secret token in its user info, path, query or fragment.
std::string RedactedUrl(std::string_view url) {
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos || scheme_end == 0 || scheme_end > 16) {
    return "the value (not shown: it may hold a secret)";
  }
  std::string_view rest = url.substr(scheme_end + 3);
  size_t authority_end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, authority_end);
  bool cut = authority_end != std::string_view::npos;
  if (size_t at = authority.rfind('@'); at != std::string_view::npos) {
    authority = authority.substr(at + 1);
    cut = true;
  }
  std::string shown = fmt::format("{}://{}{}", url.substr(0, scheme_end), authority, cut ? "/..." : "");
  return Quote(shown);
}

std::string Joined(const std::vector<std::string_view>& choices) {
  std::string out;
  for (std::string_view c : choices) {
    if (!out.empty()) out += ", ";
    out += c.empty() ? std::string("\"\"") : std::string(c);
  }
  return out;
}

// "1KiB", "8MiB", or a byte count when not a whole number of KiB.
std::string SizeText(uint64_t bytes) {
  if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0) return fmt::format("{}GiB", bytes >> 30);
  if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0) return fmt::format("{}MiB", bytes >> 20);
  if (bytes >= 1024 && bytes % 1024 == 0) return fmt::format("{}KiB", bytes >> 10);
  return std::to_string(bytes);
}

std::string ListText(const std::vector<std::string>& items) {
  std::string out = "[";
  for (const std::string& s : items) {
    if (out.size() > 1) out += ", ";
    out += s;
  }
  return out + "]";
}

}  // namespace config_internal

const std::vector<ConfigKey>& ConfigSchema() {
  static const std::vector<ConfigKey> kSchema = config_internal::BuildSchema();
  return kSchema;
}

Result<MonitorConfig> LoadMonitorConfig(const std::string& path, const Environment& env) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    if (err == EACCES) return PermissionDenied(fmt::format("config {}: permission denied", path));
    if (err == ENOENT) return NotFound(fmt::format("config {}: no such file", path));
    return InvalidArgument(fmt::format("config {}: cannot open: {}", path, std::strerror(err)));
  }
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxConfigBytes) {
      return InvalidArgument(fmt::format("config {}: larger than {} bytes", path, kMaxConfigBytes));
    }
  }
  if (in.bad()) return InvalidArgument(fmt::format("config {}: read error", path));
  return ParseMonitorConfig(text, path, env);
}

}  // namespace dlq
