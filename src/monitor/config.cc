#include "monitor/config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <span>
#include <sstream>
#include <tuple>
#include <utility>

#include "archive/destination.h"
#include "aws/http.h"
#include "common/byte_size.h"
#include "common/strings.h"
#include "common/time_util.h"

namespace dlq {

using std::chrono::seconds;

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
  return o;
}

namespace {

struct Loc {
  int line = 1;
  int col = 1;
};

Loc LocOf(const YAML::Node& n) {
  YAML::Mark m = n.Mark();
  if (m.is_null()) return {};
  return {m.line + 1, m.column + 1};
}

// Where a setting's effective value came from.
struct Origin {
  std::string path;  // full field path, e.g. "defaults.batch.max_bytes"
  Loc loc;
  bool from_group = false;
};
using Origins = std::map<std::string, Origin>;  // by path relative to the settings block

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
  return fmt::format("{}.{}", a, b);
}

constexpr std::string_view kTopKeys[] = {
    "listen", "collection_interval", "sweep_interval", "discovery_interval", "concurrency", "log", "notify", "defaults",
    "groups"};
constexpr std::string_view kSettingsKeys[] = {
    "destination",        "key_template", "sse",    "sse_kms_key_id", "storage_class", "batch",
    "visibility_timeout", "receivers",    "policy", "cloudwatch_age", "alarms"};
constexpr std::string_view kGroupOnlyKeys[] = {"name",     "region",      "endpoint_url", "profile",
                                               "role_arn", "external_id", "queues",       "prefixes",
                                               "regex",    "discover",    "exclude",      "allow_empty"};
constexpr std::string_view kBatchKeys[] = {"max_messages", "max_bytes", "max_age", "gzip_level"};
constexpr std::string_view kPolicyKeys[] = {"select", "window"};
constexpr std::string_view kAlarmsKeys[] = {"expiry", "depth"};
constexpr std::string_view kExpiryKeys[] = {
    "enabled",       "threshold",          "period", "evaluation_periods", "datapoints_to_alarm",
    "safety_margin", "treat_missing_data", "action"};
constexpr std::string_view kDepthKeys[] = {
    "enabled", "threshold", "period", "evaluation_periods", "datapoints_to_alarm", "treat_missing_data", "action"};
constexpr std::string_view kConcurrencyKeys[] = {"global", "per_queue"};
constexpr std::string_view kLogKeys[] = {"level", "format"};
constexpr std::string_view kNotifyKeys[] = {"webhooks"};
constexpr std::string_view kWebhookKeys[] = {"url", "headers", "timeout", "notify_on_startup"};
constexpr std::string_view kStorageClasses[] = {"STANDARD",   "STANDARD_IA", "ONEZONE_IA",   "INTELLIGENT_TIERING",
                                                "GLACIER_IR", "GLACIER",     "DEEP_ARCHIVE", "REDUCED_REDUNDANCY"};

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

// A rough upper bound of the nesting depth of a YAML document, from its text:
// block indentation levels, compact "- - x" indicators and flow brackets.
int EstimateYamlDepth(std::string_view text) {
  int max_depth = 0;
  int flow = 0;
  std::vector<size_t> indents;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    int block = 0;
    size_t i = 0;
    if (flow == 0) {
      while (i < line.size() && line[i] == ' ') ++i;
      if (i == line.size() || line[i] == '#') {
        if (end == text.size()) break;
        continue;
      }
      while (!indents.empty() && indents.back() >= i) indents.pop_back();
      indents.push_back(i);
      block = static_cast<int>(indents.size());
      while (i < line.size() && (line[i] == '-' || line[i] == '?' || line[i] == ':') &&
             (i + 1 == line.size() || line[i + 1] == ' ')) {
        ++block;
        i += 2;
        while (i < line.size() && line[i] == ' ') ++i;
      }
    }
    int line_flow_max = flow;
    char quote = 0;
    for (; i < line.size(); ++i) {
      char c = line[i];
      if (quote != 0) {
        if (c == quote) quote = 0;
        continue;
      }
      if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
        break;
      } else if (c == '[' || c == '{') {
        line_flow_max = std::max(line_flow_max, ++flow);
      } else if ((c == ']' || c == '}') && flow > 0) {
        --flow;
      }
    }
    max_depth = std::max(max_depth, block + line_flow_max);
    if (end == text.size()) break;
  }
  return max_depth;
}

class ConfigParser {
 public:
  ConfigParser(std::string path, const Environment& env) : path_(std::move(path)), env_(env) {}

  Result<MonitorConfig> Parse(std::string_view text);

 private:
  struct Error {
    Loc loc;
    std::string text;
  };
  using Entries = std::vector<std::pair<std::string, YAML::Node>>;

  void Fail(Loc loc, std::string_view field, std::string_view message) {
    std::string text = field.empty() ? fmt::format("{}:{}:{}: {}", path_, loc.line, loc.col, message)
                                     : fmt::format("{}:{}:{}: {}: {}", path_, loc.line, loc.col, field, message);
    errors_.push_back({loc, std::move(text)});
  }
  void Fail(const YAML::Node& at, std::string_view field, std::string_view message) { Fail(LocOf(at), field, message); }

  // The entries of a mapping (a null node is an empty mapping); reports
  // unknown, duplicate and non-scalar keys.
  Entries MapEntries(const YAML::Node& n, const std::string& path, std::span<const std::string_view> known,
                     std::span<const std::string_view> known_elsewhere = {}, std::string_view elsewhere = {});
  std::vector<YAML::Node> SeqItems(const YAML::Node& n, const std::string& path);

  std::optional<std::string> Expand(const YAML::Node& n, const std::string& path, std::string_view raw, bool secret);
  std::optional<std::string> Str(const YAML::Node& n, const std::string& path, bool secret = false);
  std::optional<int64_t> Int(const YAML::Node& n, const std::string& path, int64_t lo, int64_t hi);
  std::optional<bool> Bool(const YAML::Node& n, const std::string& path);
  std::optional<seconds> Duration(const YAML::Node& n, const std::string& path);
  std::optional<uint64_t> Size(const YAML::Node& n, const std::string& path);
  std::optional<std::vector<std::string>> StrList(const YAML::Node& n, const std::string& path);

  void ParseTop(const YAML::Node& root, MonitorConfig& config);
  void ParseListen(const YAML::Node& n, MonitorConfig& config);
  void ParseNotify(const YAML::Node& n, MonitorConfig& config);
  void ParseHeaders(const YAML::Node& n, const std::string& path, WebhookConfig& hook);
  // Applies one settings key (defaults or group); false when `key` is not one.
  bool ApplySetting(const std::string& key, const YAML::Node& value, const std::string& base, bool in_group,
                    GroupSettings& s, Origins& origins);
  void ApplyAlarm(const YAML::Node& n, const std::string& base, const std::string& rel, bool expiry, bool in_group,
                  AlarmSettings& a, Origins& origins);
  void ParseGroup(const YAML::Node& n, size_t index, const GroupSettings& defaults, const Origins& default_origins,
                  std::set<std::string>& names, MonitorConfig& config);
  // Checks that span several fields, on the effective settings. In a group,
  // an error is reported only when the group set one of the fields involved
  // (otherwise it was already reported under defaults).
  void CrossCheck(const GroupSettings& s, const Origins& origins, const std::string& base, Loc fallback, bool in_group,
                  const MonitorConfig& config);

  std::string path_;
  const Environment& env_;
  std::vector<Error> errors_;
  Loc collection_interval_loc_;
};

ConfigParser::Entries ConfigParser::MapEntries(const YAML::Node& n, const std::string& path,
                                               std::span<const std::string_view> known,
                                               std::span<const std::string_view> known_elsewhere,
                                               std::string_view elsewhere) {
  Entries out;
  if (n.IsNull()) return out;
  if (!n.IsMap()) {
    Fail(n, path, "expected a mapping (key: value)");
    return out;
  }
  std::set<std::string> seen;
  for (auto it = n.begin(); it != n.end(); ++it) {
    const YAML::Node key = it->first;  // a copy: the iterator yields a temporary
    if (!key.IsScalar()) {
      Fail(key, path, "keys must be plain names");
      continue;
    }
    const std::string& name = key.Scalar();
    if (!Contains(known, name)) {
      if (Contains(known_elsewhere, name)) {
        Fail(key, path, fmt::format("field '{}' can only be set {}", name, elsewhere));
        continue;
      }
      std::string best;
      size_t best_d = SIZE_MAX;
      for (std::string_view k : known) {
        size_t d = EditDistance(name, k);
        if (d < best_d) best_d = d, best = std::string(k);
      }
      std::string shown = Quote(name);
      shown = shown.substr(1, shown.size() - 2);
      if (best_d <= std::max<size_t>(2, name.size() / 4)) {
        Fail(key, path, fmt::format("unknown field '{}' (did you mean '{}'?)", shown, best));
      } else {
        Fail(key, path, fmt::format("unknown field '{}'", shown));
      }
      continue;
    }
    if (!seen.insert(name).second) {
      Fail(key, path, fmt::format("field '{}' is given twice", name));
      continue;
    }
    out.emplace_back(name, it->second);
  }
  return out;
}

std::vector<YAML::Node> ConfigParser::SeqItems(const YAML::Node& n, const std::string& path) {
  std::vector<YAML::Node> out;
  if (n.IsNull()) return out;
  if (!n.IsSequence()) {
    Fail(n, path, "expected a list");
    return out;
  }
  for (auto it = n.begin(); it != n.end(); ++it) out.push_back(*it);
  return out;
}

std::optional<std::string> ConfigParser::Expand(const YAML::Node& n, const std::string& path, std::string_view raw,
                                                bool secret) {
  std::string out;
  size_t i = 0;
  while (i < raw.size()) {
    if (raw.compare(i, 3, "$${") == 0) {
      out += "${";
      i += 3;
      continue;
    }
    if (raw.compare(i, 2, "${") != 0) {
      out += raw[i++];
      continue;
    }
    size_t close = raw.find('}', i + 2);
    if (close == std::string_view::npos) {
      Fail(n, path, "unterminated ${ (write $${ for a literal ${)");
      return std::nullopt;
    }
    std::string_view name = raw.substr(i + 2, close - i - 2);
    bool valid = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                 std::all_of(name.begin(), name.end(),
                             [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
    if (!valid) {
      Fail(
          n, path,
          secret ? "bad environment variable reference" : fmt::format("bad environment variable name {}", Quote(name)));
      return std::nullopt;
    }
    auto value = env_.GetEnv(name);
    if (!value) {
      Fail(n, path, fmt::format("environment variable {} is not set", name));
      return std::nullopt;
    }
    out += *value;
    i = close + 1;
  }
  return out;
}

std::optional<std::string> ConfigParser::Str(const YAML::Node& n, const std::string& path, bool secret) {
  if (!n.IsScalar()) {
    Fail(n, path, n.IsNull() ? "has no value" : "expected a string");
    return std::nullopt;
  }
  return Expand(n, path, n.Scalar(), secret);
}

std::optional<int64_t> ConfigParser::Int(const YAML::Node& n, const std::string& path, int64_t lo, int64_t hi) {
  auto s = Str(n, path);
  if (!s) return std::nullopt;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
  if (ec != std::errc() || p != s->data() + s->size() || s->empty()) {
    Fail(n, path, fmt::format("{} is not a whole number", Quote(*s)));
    return std::nullopt;
  }
  if (v < lo || v > hi) {
    Fail(n, path, fmt::format("{} is out of range [{}, {}]", v, lo, hi));
    return std::nullopt;
  }
  return v;
}

std::optional<bool> ConfigParser::Bool(const YAML::Node& n, const std::string& path) {
  auto s = Str(n, path);
  if (!s) return std::nullopt;
  if (IEquals(*s, "true")) return true;
  if (IEquals(*s, "false")) return false;
  Fail(n, path, fmt::format("{} is not a boolean (true or false)", Quote(*s)));
  return std::nullopt;
}

std::optional<seconds> ConfigParser::Duration(const YAML::Node& n, const std::string& path) {
  auto s = Str(n, path);
  if (!s) return std::nullopt;
  std::optional<seconds> d;
  if (s->size() <= 32) d = ParseDuration(*s);
  if (!d) {
    Fail(n, path, fmt::format("{} is not a duration (e.g. 60s, 5m)", Quote(*s)));
    return std::nullopt;
  }
  return d;
}

std::optional<uint64_t> ConfigParser::Size(const YAML::Node& n, const std::string& path) {
  auto s = Str(n, path);
  if (!s) return std::nullopt;
  if (auto v = ParseByteSize(*s)) return v;
  Fail(n, path, fmt::format("{} is not a size (e.g. 8MiB, 512KiB, 1048576)", Quote(*s)));
  return std::nullopt;
}

std::optional<std::vector<std::string>> ConfigParser::StrList(const YAML::Node& n, const std::string& path) {
  if (n.IsScalar()) {  // a single value is a list of one
    auto s = Str(n, path);
    if (!s) return std::nullopt;
    return std::vector<std::string>{*s};
  }
  if (!n.IsNull() && !n.IsSequence()) {
    Fail(n, path, "expected a list of strings");
    return std::nullopt;
  }
  std::vector<std::string> out;
  bool ok = true;
  size_t i = 0;
  for (const YAML::Node& item : SeqItems(n, path)) {
    auto s = Str(item, fmt::format("{}[{}]", path, i++));
    if (s) {
      out.push_back(*s);
    } else {
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return out;
}

void ConfigParser::ParseListen(const YAML::Node& n, MonitorConfig& config) {
  auto s = Str(n, "listen");
  if (!s) return;
  std::string_view v = *s;
  std::string host;
  std::string_view port_text;
  if (StartsWith(v, "[")) {
    size_t close = v.find(']');
    if (close == std::string_view::npos || close + 1 >= v.size() || v[close + 1] != ':') {
      Fail(n, "listen", fmt::format("{} is not HOST:PORT (e.g. 127.0.0.1:9464, [::1]:9464)", Quote(v)));
      return;
    }
    host = std::string(v.substr(1, close - 1));
    port_text = v.substr(close + 2);
  } else {
    size_t colon = v.rfind(':');
    if (colon == std::string_view::npos || v.find(':') != colon) {
      Fail(n, "listen", fmt::format("{} is not HOST:PORT (e.g. 127.0.0.1:9464, [::1]:9464)", Quote(v)));
      return;
    }
    host = std::string(v.substr(0, colon));
    port_text = v.substr(colon + 1);
  }
  if (host.empty()) host = "0.0.0.0";
  bool host_ok = std::all_of(host.begin(), host.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' || c == '_';
  });
  int port = -1;
  auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (!host_ok || ec != std::errc() || p != port_text.data() + port_text.size() || port < 0 || port > 65535) {
    Fail(n, "listen", fmt::format("{} is not HOST:PORT with a port in 0..65535", Quote(v)));
    return;
  }
  config.listen_host = host;
  config.listen_port = port;
}

void ConfigParser::ParseNotify(const YAML::Node& n, MonitorConfig& config) {
  for (auto& [key, value] : MapEntries(n, "notify", kNotifyKeys)) {
    size_t i = 0;
    for (const YAML::Node& item : SeqItems(value, "notify.webhooks")) {
      std::string base = fmt::format("notify.webhooks[{}]", i++);
      WebhookConfig hook;
      bool has_url = false;
      for (auto& [k, v] : MapEntries(item, base, kWebhookKeys)) {
        std::string path = Join(base, k);
        if (k == "url") {
          if (auto s = Str(v, path)) {
            auto url = ParseUrl(*s);
            if (!url.ok() || !IsUrl(*s)) {
              Fail(v, path, fmt::format("{} is not an http:// or https:// URL", Quote(*s)));
            } else {
              hook.url = *s;
              has_url = true;
            }
          }
        } else if (k == "headers") {
          ParseHeaders(v, path, hook);
        } else if (k == "timeout") {
          if (auto d = Duration(v, path)) {
            if (d->count() < 1 || *d > std::chrono::minutes(5)) {
              Fail(v, path, "must be between 1s and 5m");
            } else {
              hook.timeout = *d;
            }
          }
        } else if (k == "notify_on_startup") {
          if (auto b = Bool(v, path)) hook.notify_on_startup = *b;
        }
      }
      if (!has_url && item.IsMap()) Fail(item, base, "url is required");
      config.webhooks.push_back(std::move(hook));
    }
  }
}

void ConfigParser::ParseHeaders(const YAML::Node& n, const std::string& path, WebhookConfig& hook) {
  if (n.IsNull()) return;
  if (!n.IsMap()) {
    Fail(n, path, "expected a mapping of header names to values");
    return;
  }
  for (auto it = n.begin(); it != n.end(); ++it) {
    const YAML::Node key = it->first;  // a copy: the iterator yields a temporary
    const std::string& name = key.IsScalar() ? key.Scalar() : std::string();
    bool token = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
    });
    if (!token) {
      Fail(key, path, "header names must be HTTP tokens (e.g. Authorization, X-Api-Key)");
      continue;
    }
    std::string field = Join(path, name);
    if (hook.headers.contains(name)) {
      Fail(key, field, "header is given twice");
      continue;
    }
    // Values may be secrets: Str(secret) never echoes them.
    if (auto v = Str(it->second, field, /*secret=*/true)) {
      if (v->find_first_of("\r\n") != std::string::npos) {
        Fail(it->second, field, "header value must not contain line breaks");
      } else {
        hook.headers[name] = *v;
      }
    }
  }
}

bool ConfigParser::ApplySetting(const std::string& key, const YAML::Node& v, const std::string& base, bool in_group,
                                GroupSettings& s, Origins& origins) {
  const std::string path = Join(base, key);
  auto mark = [&](const std::string& rel, const YAML::Node& at) {
    origins[rel] = Origin{Join(base, rel), LocOf(at), in_group};
  };
  if (key == "destination") {
    if (auto str = Str(v, path)) {
      auto d = ParseDestination(*str);
      if (!d.ok()) {
        Fail(v, path, d.status().message());
      } else {
        s.destination = *str;
        mark(key, v);
      }
    }
  } else if (key == "key_template") {
    if (auto str = Str(v, path)) {
      std::string_view text = *str == "default" ? kDefaultKeyTemplate
                              : *str == "hive"  ? kHiveKeyTemplate
                                                : std::string_view(*str);
      auto t = KeyTemplate::Parse(text);
      if (!t.ok()) {
        Fail(v, path, fmt::format("{}: {} (or use default, hive)", Quote(*str), t.status().message()));
      } else {
        s.key_template_text = *str;
        s.key_template = *t;
        mark(key, v);
      }
    }
  } else if (key == "sse") {
    if (auto str = Str(v, path)) {
      if (*str != "" && *str != "AES256" && *str != "aws:kms") {
        Fail(v, path, fmt::format("{} is not one of \"\", AES256, aws:kms", Quote(*str)));
      } else {
        s.put.sse = *str;
        mark(key, v);
      }
    }
  } else if (key == "sse_kms_key_id") {
    if (auto str = Str(v, path)) {
      s.put.sse_kms_key_id = *str;
      mark(key, v);
    }
  } else if (key == "storage_class") {
    if (auto str = Str(v, path)) {
      if (!str->empty() && !Contains(kStorageClasses, *str)) {
        Fail(v, path,
             fmt::format("{} is not an S3 storage class (STANDARD, STANDARD_IA, ONEZONE_IA, "
                         "INTELLIGENT_TIERING, GLACIER_IR, GLACIER, DEEP_ARCHIVE, REDUCED_REDUNDANCY)",
                         Quote(*str)));
      } else {
        s.put.storage_class = *str;
        mark(key, v);
      }
    }
  } else if (key == "batch") {
    for (auto& [k, bv] : MapEntries(v, path, kBatchKeys)) {
      std::string rel = "batch." + k;
      std::string field = Join(base, rel);
      if (k == "max_messages") {
        if (auto n = Int(bv, field, 1, 10'000'000)) s.batch.max_messages = static_cast<size_t>(*n), mark(rel, bv);
      } else if (k == "max_bytes") {
        if (auto n = Size(bv, field)) {
          if (*n < 1024 || *n > (1ull << 30)) {
            Fail(bv, field, fmt::format("{} bytes is out of range [1KiB, 1GiB]", *n));
          } else {
            s.batch.max_bytes = static_cast<size_t>(*n);
            mark(rel, bv);
          }
        }
      } else if (k == "max_age") {
        if (auto d = Duration(bv, field)) {
          if (d->count() < 1 || *d > std::chrono::hours(12)) {
            Fail(bv, field, fmt::format("{} is out of range [1s, 12h]", FormatDuration(*d)));
          } else {
            s.batch.max_age = *d;
            mark(rel, bv);
          }
        }
      } else if (k == "gzip_level") {
        if (auto n = Int(bv, field, 0, 12)) s.batch.gzip_level = static_cast<int>(*n), mark(rel, bv);
      }
    }
  } else if (key == "visibility_timeout") {
    if (auto d = Duration(v, path)) {
      if (*d < seconds(10) || *d > std::chrono::hours(12)) {
        Fail(v, path, fmt::format("{} is out of range [10s, 12h]", FormatDuration(*d)));
      } else {
        s.visibility_timeout = *d;
        mark(key, v);
      }
    }
  } else if (key == "receivers") {
    if (auto n = Int(v, path, 1, 64)) s.receivers = static_cast<int>(*n), mark(key, v);
  } else if (key == "policy") {
    for (auto& [k, pv] : MapEntries(v, path, kPolicyKeys)) {
      std::string rel = "policy." + k;
      std::string field = Join(base, rel);
      if (k == "select") {
        if (auto str = Str(pv, field)) {
          s.policy_by_alarm = false;
          if (*str == "auto") {
            s.policy_by_alarm = true;
            s.policy.kind = SelectionKind::kAll;
          } else if (*str == "all") {
            s.policy.kind = SelectionKind::kAll;
          } else if (*str == "older-than") {
            s.policy.kind = SelectionKind::kOlderThan;
          } else if (*str == "expiring-within") {
            s.policy.kind = SelectionKind::kExpiringWithin;
          } else {
            Fail(pv, field, fmt::format("{} is not one of auto, all, older-than, expiring-within", Quote(*str)));
            continue;
          }
          mark(rel, pv);
        }
      } else if (k == "window") {
        if (auto d = Duration(pv, field)) s.policy.window = *d, mark(rel, pv);
      }
    }
  } else if (key == "cloudwatch_age") {
    if (auto b = Bool(v, path)) s.cloudwatch_age = *b, mark(key, v);
  } else if (key == "alarms") {
    for (auto& [k, av] : MapEntries(v, path, kAlarmsKeys)) {
      bool expiry = k == "expiry";
      ApplyAlarm(av, Join(base, "alarms." + k), "alarms." + k, expiry, in_group,
                 expiry ? s.alarms.expiry : s.alarms.depth, origins);
    }
  } else {
    return false;
  }
  return true;
}

void ConfigParser::ApplyAlarm(const YAML::Node& n, const std::string& base, const std::string& rel_base, bool expiry,
                              bool in_group, AlarmSettings& a, Origins& origins) {
  auto entries =
      expiry ? MapEntries(n, base, kExpiryKeys, std::span<const std::string_view>(), "")
             : MapEntries(n, base, kDepthKeys, std::span<const std::string_view>(kExpiryKeys), "on the expiry alarm");
  for (auto& entry : entries) {
    const auto& k = entry.first;
    const auto& v = entry.second;  // named, not a structured binding: clang 14 cannot capture those
    const std::string rel = Join(rel_base, k);
    const std::string field = Join(base, k);
    auto mark = [&] { origins[rel] = Origin{field, LocOf(v), in_group}; };
    if (k == "enabled") {
      if (auto b = Bool(v, field)) a.enabled = *b, mark();
    } else if (k == "threshold") {
      if (!v.IsScalar()) {
        Fail(v, field, expiry ? "expected auto or a duration" : "expected a number");
        continue;
      }
      auto str = Str(v, field);
      if (!str) continue;
      if (expiry) {
        if (*str == "auto") {
          a.threshold_auto = true;
          mark();
        } else if (auto d = Duration(v, field)) {
          if (d->count() < 1) {
            Fail(v, field, "must be at least 1s");
            continue;
          }
          a.threshold_auto = false;
          a.threshold = static_cast<double>(d->count());
          mark();
        }
      } else {
        double x = 0;
        auto [p, ec] = std::from_chars(str->data(), str->data() + str->size(), x);
        if (ec != std::errc() || p != str->data() + str->size() || str->empty() || !std::isfinite(x) || x < 0) {
          Fail(v, field,
               *str == "auto" ? std::string("auto is only for the expiry alarm; give a message count")
                              : fmt::format("{} is not a non-negative number", Quote(*str)));
          continue;
        }
        a.threshold_auto = false;
        a.threshold = x;
        mark();
      }
    } else if (k == "period") {
      if (auto d = Duration(v, field)) {
        if (d->count() < 1 || *d > std::chrono::hours(24)) {
          Fail(v, field, fmt::format("{} is out of range [1s, 1d]", FormatDuration(*d)));
        } else {
          a.period = *d;
          mark();
        }
      }
    } else if (k == "evaluation_periods") {
      if (auto x = Int(v, field, 1, 10000)) a.evaluation_periods = static_cast<int>(*x), mark();
    } else if (k == "datapoints_to_alarm") {
      if (auto x = Int(v, field, 1, 10000)) a.datapoints_to_alarm = static_cast<int>(*x), mark();
    } else if (k == "safety_margin") {
      if (auto d = Duration(v, field)) a.safety_margin = *d, mark();
    } else if (k == "treat_missing_data") {
      if (auto str = Str(v, field)) {
        using M = AlarmSettings::MissingData;
        if (*str == "missing") {
          a.treat_missing_data = M::kMissing;
        } else if (*str == "breaching") {
          a.treat_missing_data = M::kBreaching;
        } else if (*str == "notBreaching") {
          a.treat_missing_data = M::kNotBreaching;
        } else if (*str == "ignore") {
          a.treat_missing_data = M::kIgnore;
        } else {
          Fail(v, field, fmt::format("{} is not one of missing, breaching, notBreaching, ignore", Quote(*str)));
          continue;
        }
        mark();
      }
    } else if (k == "action") {
      if (auto str = Str(v, field)) {
        using A = AlarmSettings::Action;
        if (*str == "notify") {
          a.action = A::kNotify;
        } else if (*str == "copy") {
          a.action = A::kCopy;
        } else if (*str == "archive") {
          a.action = A::kArchive;
        } else {
          Fail(v, field, fmt::format("{} is not one of notify, copy, archive", Quote(*str)));
          continue;
        }
        mark();
      }
    }
  }
}

void ConfigParser::CrossCheck(const GroupSettings& s, const Origins& origins, const std::string& base, Loc fallback,
                              bool in_group, const MonitorConfig& config) {
  auto origin = [&](const std::string& rel) {
    auto it = origins.find(rel);
    return it != origins.end() ? it->second : Origin{Join(base, rel), fallback, false};
  };
  auto report = [&](std::initializer_list<std::string> involved, const std::string& primary, std::string msg) {
    if (in_group) {
      bool any = std::any_of(involved.begin(), involved.end(), [&](const std::string& rel) {
        auto it = origins.find(rel);
        return it != origins.end() && it->second.from_group;
      });
      if (!any) return;  // reported under defaults already
    }
    std::string field = Join(base, primary);
    if (origins.contains(primary)) {
      Origin o = origin(primary);
      if (o.path != field) msg += fmt::format(" (value from {})", o.path);
      Fail(o.loc, field, msg);
      return;
    }
    // The primary field has its built-in default: point at a field that was set.
    Loc loc = fallback;
    for (const std::string& rel : involved) {
      auto it = origins.find(rel);
      if (it != origins.end() && (!in_group || it->second.from_group)) {
        loc = it->second.loc;
        break;
      }
    }
    Fail(loc, field, msg);
  };

  if (in_group && s.destination.empty()) Fail(fallback, base, "destination is required (set it here or in defaults)");
  if (!s.put.sse_kms_key_id.empty() && s.put.sse != "aws:kms") {
    report({"sse", "sse_kms_key_id"}, "sse_kms_key_id", "needs sse: aws:kms");
  }
  if (s.policy_by_alarm && s.policy.window.count() > 0) {
    report({"policy.select", "policy.window"}, "policy.window",
           "is only used with select: older-than or expiring-within (select: auto takes the expiry alarm's lead "
           "window)");
  }
  if (!s.policy_by_alarm && s.policy.kind != SelectionKind::kAll && s.policy.window.count() <= 0) {
    report({"policy.select", "policy.window"}, "policy.window",
           fmt::format("a positive window is required with select: {}",
                       s.policy.kind == SelectionKind::kOlderThan ? "older-than" : "expiring-within"));
  }
  for (bool expiry : {true, false}) {
    const AlarmSettings& a = expiry ? s.alarms.expiry : s.alarms.depth;
    if (!a.enabled) continue;
    const std::string rel = expiry ? "alarms.expiry" : "alarms.depth";
    const std::string enabled = rel + ".enabled", period = rel + ".period", evals = rel + ".evaluation_periods",
                      dta = rel + ".datapoints_to_alarm";
    if (a.datapoints_to_alarm > a.evaluation_periods) {
      report({enabled, dta, evals}, dta,
             fmt::format("{} is more than evaluation_periods ({})", a.datapoints_to_alarm, a.evaluation_periods));
    }
    const bool cloudwatch = expiry && s.cloudwatch_age;
    if (cloudwatch) {
      if (a.period.count() % 60 != 0) {
        report({enabled, period, "cloudwatch_age"}, period,
               fmt::format("{} is not a multiple of 60s (CloudWatch standard resolution; this alarm reads CloudWatch "
                           "because cloudwatch_age is true)",
                           FormatDuration(a.period)));
      }
      if (a.period * a.evaluation_periods > std::chrono::hours(24)) {
        report({enabled, period, evals, "cloudwatch_age"}, evals,
               "period x evaluation_periods exceeds 1 day (CloudWatch limit)");
      }
    } else if (a.period < config.collection_interval) {
      report({enabled, period}, period,
             fmt::format("{} is shorter than collection_interval ({})", FormatDuration(a.period),
                         FormatDuration(config.collection_interval)));
    }
  }
}

void ConfigParser::ParseGroup(const YAML::Node& n, size_t index, const GroupSettings& defaults,
                              const Origins& default_origins, std::set<std::string>& names, MonitorConfig& config) {
  const std::string base = fmt::format("groups[{}]", index);
  if (!n.IsMap()) {
    Fail(n, base, "expected a mapping (name:, queues:, ...)");
    return;
  }
  static const std::vector<std::string_view> kKnown = [] {
    std::vector<std::string_view> k(std::begin(kGroupOnlyKeys), std::end(kGroupOnlyKeys));
    k.insert(k.end(), std::begin(kSettingsKeys), std::end(kSettingsKeys));
    return k;
  }();
  GroupConfig g;
  static_cast<GroupSettings&>(g) = defaults;
  Origins origins = default_origins;
  for (auto& [rel, o] : origins) o.from_group = false;
  bool has_name = false, selects = false;
  std::optional<Loc> external_id_loc;
  for (auto& [key, v] : MapEntries(n, base, kKnown)) {
    if (ApplySetting(key, v, base, /*in_group=*/true, g, origins)) continue;
    const std::string path = Join(base, key);
    if (key == "name") {
      auto s = Str(v, path);
      if (!s) continue;
      has_name = true;
      bool ok = !s->empty() && s->size() <= 64 && std::all_of(s->begin(), s->end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
      });
      if (!ok) {
        Fail(v, path, fmt::format("{} must be 1-64 of A-Z a-z 0-9 . _ -", Quote(*s)));
      } else if (!names.insert(*s).second) {
        Fail(v, path, fmt::format("duplicate group name '{}'", *s));
      }
      g.name = *s;
    } else if (key == "region") {
      if (auto s = Str(v, path)) {
        bool ok = !s->empty() && s->size() <= 32 && std::all_of(s->begin(), s->end(), [](char c) {
          return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-';
        });
        if (!ok) Fail(v, path, fmt::format("{} is not a region name (e.g. us-east-1)", Quote(*s)));
        g.region = *s;
      }
    } else if (key == "endpoint_url") {
      if (auto s = Str(v, path)) {
        if (!IsUrl(*s) || !ParseUrl(*s).ok()) {
          Fail(v, path, fmt::format("{} is not an http:// or https:// URL", Quote(*s)));
        }
        g.endpoint_url = *s;
      }
    } else if (key == "profile") {
      if (auto s = Str(v, path)) {
        if (s->empty()) Fail(v, path, "must not be empty");
        g.profile = *s;
      }
    } else if (key == "role_arn") {
      if (auto s = Str(v, path)) {
        static const std::regex kRoleArn(R"(arn:aws[a-z-]*:iam::[0-9]{12}:role/[A-Za-z0-9+=,.@_/-]{1,512})");
        if (s->size() > 2048 || !std::regex_match(*s, kRoleArn)) {
          Fail(v, path, fmt::format("{} is not an IAM role ARN (arn:aws:iam::123456789012:role/NAME)", Quote(*s)));
        }
        g.role_arn = *s;
      }
    } else if (key == "external_id") {
      if (auto s = Str(v, path, /*secret=*/true)) {
        bool ok = s->size() >= 2 && s->size() <= 1224 && std::all_of(s->begin(), s->end(), [](char c) {
                    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("+=,.@:/_-", c) != nullptr;
                  });
        if (!ok) Fail(v, path, "must be 2-1224 of A-Z a-z 0-9 + = , . @ : / _ -");
        g.external_id = *s;
        external_id_loc = LocOf(v);
      }
    } else if (key == "queues" || key == "prefixes" || key == "exclude") {
      auto list = StrList(v, path);
      if (!list) {
        selects = selects || key != "exclude";
        continue;
      }
      for (size_t i = 0; i < list->size(); ++i) {
        const std::string& q = (*list)[i];
        bool ok = key != "prefixes" && IsUrl(q) ? ParseUrl(q).ok() : ValidQueueName(q);
        if (!ok) {
          const YAML::Node& at = v.IsSequence() ? v[i] : v;
          Fail(at, fmt::format("{}[{}]", path, i),
               fmt::format("{} is not a queue {} (1-80 of A-Z a-z 0-9 - _, .fifo for FIFO{})", Quote(q),
                           key == "prefixes" ? "name prefix" : "name or URL", key == "prefixes" ? "" : ", or a URL"));
        }
      }
      if (key == "queues") {
        g.queues = *list;
        selects = selects || !list->empty();
      } else if (key == "prefixes") {
        g.prefixes = *list;
        selects = selects || !list->empty();
      } else {
        g.exclude = *list;
      }
    } else if (key == "regex") {
      if (auto s = Str(v, path)) {
        selects = selects || !s->empty();
        if (s->size() > 1000) {
          Fail(v, path, "is longer than 1000 characters");
          continue;
        }
        try {
          std::regex re(*s, std::regex::ECMAScript);
          g.regex = *s;
        } catch (const std::regex_error& e) {
          Fail(v, path, fmt::format("{} is not a valid regular expression: {}", Quote(*s), e.what()));
        }
      } else {
        selects = true;
      }
    } else if (key == "discover") {
      auto b = Bool(v, path);
      if (b) g.discover = *b;
      selects = selects || !b || *b;
    } else if (key == "allow_empty") {
      if (auto b = Bool(v, path)) g.allow_empty = *b;
    }
  }
  if (!has_name) Fail(n, base, "name is required");
  if (!selects) Fail(n, base, "selects no queues: set queues, prefixes, regex or discover: true");
  if (external_id_loc && g.role_arn.empty()) Fail(*external_id_loc, Join(base, "external_id"), "needs role_arn");
  CrossCheck(g, origins, base, LocOf(n), /*in_group=*/true, config);
  config.groups.push_back(std::move(g));
}

void ConfigParser::ParseTop(const YAML::Node& root, MonitorConfig& config) {
  if (root.IsNull()) {
    Fail(Loc{}, "", "the file is empty (at least one group is required)");
    return;
  }
  static const std::vector<std::string_view> kElsewhere = [] {
    std::vector<std::string_view> k(std::begin(kGroupOnlyKeys), std::end(kGroupOnlyKeys));
    k.insert(k.end(), std::begin(kSettingsKeys), std::end(kSettingsKeys));
    return k;
  }();
  auto entries = MapEntries(root, "", kTopKeys, kElsewhere, "under defaults: or in a group");
  if (!root.IsMap()) return;
  YAML::Node defaults_node, groups_node;
  bool has_groups = false;
  for (auto& [key, v] : entries) {
    if (key == "listen") {
      ParseListen(v, config);
    } else if (key == "collection_interval" || key == "sweep_interval" || key == "discovery_interval") {
      auto d = Duration(v, key);
      if (!d) continue;
      seconds lo = key == "discovery_interval" ? seconds(10) : seconds(1);
      if (*d < lo || *d > std::chrono::hours(24)) {
        Fail(v, key, fmt::format("{} is out of range [{}, 1d]", FormatDuration(*d), FormatDuration(lo)));
        continue;
      }
      if (key == "collection_interval") {
        config.collection_interval = *d;
        collection_interval_loc_ = LocOf(v);
      } else if (key == "sweep_interval") {
        config.sweep_interval = *d;
      } else {
        config.discovery_interval = *d;
      }
    } else if (key == "concurrency") {
      std::optional<Loc> per_queue_loc;
      for (auto& [k, cv] : MapEntries(v, key, kConcurrencyKeys)) {
        std::string field = Join(key, k);
        if (k == "global") {
          if (auto x = Int(cv, field, 1, 1024)) config.concurrency_global = static_cast<int>(*x);
        } else if (auto x = Int(cv, field, 1, 64)) {
          config.concurrency_per_queue = static_cast<int>(*x);
          per_queue_loc = LocOf(cv);
        }
      }
      if (config.concurrency_per_queue > config.concurrency_global) {
        Fail(per_queue_loc.value_or(LocOf(v)), "concurrency.per_queue",
             fmt::format("{} is more than concurrency.global ({})", config.concurrency_per_queue,
                         config.concurrency_global));
      }
    } else if (key == "log") {
      for (auto& [k, lv] : MapEntries(v, key, kLogKeys)) {
        std::string field = Join(key, k);
        auto s = Str(lv, field);
        if (!s) continue;
        if (k == "level") {
          if (!ParseLogLevel(*s, config.log_level)) {
            Fail(lv, field, fmt::format("{} is not one of debug, info, warn, error, off", Quote(*s)));
          }
        } else if (*s == "json") {
          config.log_format = LogFormat::kJson;
        } else if (*s == "text") {
          config.log_format = LogFormat::kText;
        } else {
          Fail(lv, field, fmt::format("{} is not one of json, text", Quote(*s)));
        }
      }
    } else if (key == "notify") {
      ParseNotify(v, config);
    } else if (key == "defaults") {
      defaults_node = v;
    } else if (key == "groups") {
      groups_node = v;
      has_groups = true;
    }
  }

  Origins default_origins;
  for (auto& [key, v] : MapEntries(defaults_node, "defaults", kSettingsKeys, kGroupOnlyKeys, "in a group")) {
    ApplySetting(key, v, "defaults", /*in_group=*/false, config.defaults, default_origins);
  }
  Loc defaults_loc = defaults_node ? LocOf(defaults_node) : LocOf(root);
  CrossCheck(config.defaults, default_origins, "defaults", defaults_loc, /*in_group=*/false, config);

  std::set<std::string> names;
  auto groups = SeqItems(groups_node, "groups");
  if (groups.empty()) {
    Fail(has_groups ? LocOf(groups_node) : LocOf(root), "groups", "at least one group is required");
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    ParseGroup(groups[i], i, config.defaults, default_origins, names, config);
  }
}

Result<MonitorConfig> ConfigParser::Parse(std::string_view text) {
  if (text.size() > kMaxConfigBytes) {
    return InvalidArgument(fmt::format("{}: larger than {} bytes", path_, kMaxConfigBytes));
  }
  if (int depth = EstimateYamlDepth(text); depth > kMaxConfigDepth) {
    return InvalidArgument(fmt::format("{}: nested deeper than {} levels", path_, kMaxConfigDepth));
  }
  MonitorConfig config;
  config.path = path_;
  try {
    YAML::Node root = YAML::Load(std::string(text));
    ParseTop(root, config);
  } catch (const YAML::Exception& e) {
    Loc loc = e.mark.is_null() ? Loc{} : Loc{e.mark.line + 1, e.mark.column + 1};
    Fail(loc, "", fmt::format("YAML syntax error: {}", e.msg));
  } catch (const std::exception& e) {
    Fail(Loc{}, "", fmt::format("cannot read the YAML: {}", e.what()));
  }
  if (errors_.empty()) return config;
  std::stable_sort(errors_.begin(), errors_.end(), [](const Error& a, const Error& b) {
    return std::tie(a.loc.line, a.loc.col) < std::tie(b.loc.line, b.loc.col);
  });
  std::string message;
  std::set<std::string> seen;
  for (const Error& e : errors_) {
    if (!seen.insert(e.text).second) continue;
    if (!message.empty()) message += '\n';
    message += e.text;
  }
  return InvalidArgument(std::move(message));
}

}  // namespace

Result<MonitorConfig> ParseMonitorConfig(std::string_view text, const std::string& path, const Environment& env) {
  return ConfigParser(path, env).Parse(text);
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
