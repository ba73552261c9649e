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
#include <set>
#include <span>
#include <sstream>
#include <tuple>
#include <utility>

#include "archive/destination.h"
#include "aws/http.h"
#include "common/byte_size.h"
#include "common/regex.h"
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
  o.adaptive_receivers = !fixed_receivers;
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
  if (b.empty()) return std::string(a);
  return fmt::format("{}.{}", a, b);
}

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

// ---------------------------------------------------------------- the schema

template <class V>
using Ref = std::function<V&(const ConfigTarget&)>;

template <class V>
ConfigKey Int(ConfigScope scope, std::string key, int64_t lo, int64_t hi, std::string def, std::string example,
              std::string doc, const Ref<V>& ref) {
  ConfigKey k{scope,
              std::move(key),
              ConfigType::kInt,
              lo,
              hi,
              {},
              std::move(def),
              std::move(example),
              std::move(doc),
              {},
              {},
              {},
              {}};
  k.set = [ref](const ConfigTarget& t, const ConfigValue& v) {
    ref(t) = static_cast<V>(v.number);
    return std::string();
  };
  k.get = [ref](const ConfigTarget& t) { return std::to_string(ref(t)); };
  return k;
}

template <class D>
ConfigKey Dur(ConfigScope scope, std::string key, seconds lo, seconds hi, std::string def, std::string example,
              std::string doc, const Ref<D>& ref) {
  ConfigKey k{scope,
              std::move(key),
              ConfigType::kDuration,
              lo.count(),
              hi.count(),
              {},
              std::move(def),
              std::move(example),
              std::move(doc),
              {},
              {},
              {},
              {}};
  k.set = [ref](const ConfigTarget& t, const ConfigValue& v) {
    ref(t) = v.duration;
    return std::string();
  };
  k.get = [ref](const ConfigTarget& t) { return FormatDuration(std::chrono::duration_cast<seconds>(ref(t))); };
  return k;
}

ConfigKey BoolKey(ConfigScope scope, std::string key, std::string def, std::string example, std::string doc,
                  const Ref<bool>& ref) {
  ConfigKey k{scope,
              std::move(key),
              ConfigType::kBool,
              0,
              0,
              {},
              std::move(def),
              std::move(example),
              std::move(doc),
              {},
              {},
              {},
              {}};
  k.set = [ref](const ConfigTarget& t, const ConfigValue& v) {
    ref(t) = v.flag;
    return std::string();
  };
  k.get = [ref](const ConfigTarget& t) { return std::string(ref(t) ? "true" : "false"); };
  return k;
}

// A string checked by `check` (returns what is wrong, empty when fine) and
// stored as is.
ConfigKey Str(ConfigScope scope, std::string key, std::string def, std::string example, std::string doc,
              const Ref<std::string>& ref, const std::function<std::string(const std::string&)>& check = {},
              ConfigType type = ConfigType::kString) {
  ConfigKey k{scope, std::move(key), type, 0, 0, {}, std::move(def), std::move(example), std::move(doc), {}, {}, {},
              {}};
  k.set = [ref, check](const ConfigTarget& t, const ConfigValue& v) {
    if (check) {
      if (std::string bad = check(v.text); !bad.empty()) return bad;
    }
    ref(t) = v.text;
    return std::string();
  };
  k.get = [ref](const ConfigTarget& t) { return ref(t); };
  return k;
}

// One of `choices`; `set` stores the index of the word chosen, `get` gives it back.
ConfigKey Choice(ConfigScope scope, std::string key, const std::vector<std::string_view>& choices, std::string def,
                 std::string example, std::string doc, const std::function<void(const ConfigTarget&, size_t)>& set,
                 const std::function<size_t(const ConfigTarget&)>& get) {
  ConfigKey k{scope,
              std::move(key),
              ConfigType::kChoice,
              0,
              0,
              choices,
              std::move(def),
              std::move(example),
              std::move(doc),
              {},
              {},
              {},
              {}};
  k.set = [set, choices](const ConfigTarget& t, const ConfigValue& v) {
    set(t, static_cast<size_t>(std::find(choices.begin(), choices.end(), v.text) - choices.begin()));
    return std::string();
  };
  k.get = [get, choices](const ConfigTarget& t) { return std::string(choices.at(get(t))); };
  return k;
}

// A scalar read as text and parsed by `set`.
ConfigKey Text(ConfigScope scope, std::string key, std::string def, std::string example, std::string doc,
               const std::function<std::string(const ConfigTarget&, const std::string&)>& set,
               std::function<std::string(const ConfigTarget&)> get, std::string_view not_scalar = {}) {
  ConfigKey k{scope,          std::move(key),     ConfigType::kString, 0,  0,  {},
              std::move(def), std::move(example), std::move(doc),      {}, {}, {},
              not_scalar};
  k.set = [set](const ConfigTarget& t, const ConfigValue& v) { return set(t, v.text); };
  k.get = std::move(get);
  return k;
}

ConfigKey List(std::string key, std::string doc, const Ref<std::vector<std::string>>& ref,
               std::function<std::string(const std::string&)> check_item, ConfigScope scope = ConfigScope::kGroup,
               std::string example = "[a-dlq, b-dlq]") {
  ConfigKey k{scope, std::move(key),     ConfigType::kList, 0,  0,  {},
              "[]",  std::move(example), std::move(doc),    {}, {}, std::move(check_item),
              {}};
  k.set = [ref](const ConfigTarget& t, const ConfigValue& v) {
    ref(t) = v.list;
    return std::string();
  };
  k.get = [ref](const ConfigTarget& t) { return ListText(ref(t)); };
  return k;
}

void AddAlarmKeys(std::vector<ConfigKey>& keys, bool expiry) {
  using M = AlarmSettings::MissingData;
  using A = AlarmSettings::Action;
  const ConfigScope s = ConfigScope::kSettings;
  const std::string base = expiry ? "alarms.expiry." : "alarms.depth.";
  auto key = [&](std::string_view name) { return base + std::string(name); };
  const AlarmSettings d = expiry ? AlarmsConfig().expiry : AlarmsConfig().depth;
  Ref<AlarmSettings> alarm = [expiry](const ConfigTarget& t) -> AlarmSettings& {
    return expiry ? t.settings->alarms.expiry : t.settings->alarms.depth;
  };
  keys.push_back(BoolKey(s, key("enabled"), "true", "false", "whether the alarm is evaluated at all",
                         [alarm](const ConfigTarget& t) -> bool& { return alarm(t).enabled; }));
  if (expiry) {
    keys.push_back(Text(
        s, key("threshold"), "auto", "4h",
        "age of the oldest message that raises the alarm; auto: max(retention of the DLQ and its sources) - "
        "safety_margin",
        [alarm](const ConfigTarget& t, const std::string& text) -> std::string {
          AlarmSettings& a = alarm(t);
          if (text == "auto") {
            a.threshold_auto = true;
            return {};
          }
          std::optional<seconds> d = text.size() <= 32 ? ParseDuration(text) : std::nullopt;
          if (!d) return fmt::format("{} is not a duration (e.g. 60s, 5m)", Quote(text));
          if (d->count() < 1) return "must be at least 1s";
          a.threshold_auto = false;
          a.threshold = static_cast<double>(d->count());
          return {};
        },
        [alarm](const ConfigTarget& t) {
          const AlarmSettings& a = alarm(t);
          return a.threshold_auto ? std::string("auto") : FormatDuration(seconds(std::llround(a.threshold)));
        },
        "expected auto or a duration"));
  } else {
    keys.push_back(Text(
        s, key("threshold"), "1", "25.5", "message count (ApproximateNumberOfMessages) that raises the alarm",
        [alarm](const ConfigTarget& t, const std::string& text) -> std::string {
          double x = 0;
          auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
          if (ec != std::errc() || p != text.data() + text.size() || text.empty() || !std::isfinite(x) || x < 0) {
            return text == "auto" ? std::string("auto is only for the expiry alarm; give a message count")
                                  : fmt::format("{} is not a non-negative number", Quote(text));
          }
          alarm(t).threshold_auto = false;
          alarm(t).threshold = x;
          return {};
        },
        [alarm](const ConfigTarget& t) { return fmt::format("{}", alarm(t).threshold); }, "expected a number"));
  }
  keys.push_back(Dur<seconds>(s, key("period"), seconds(1), std::chrono::hours(24), FormatDuration(d.period), "2m",
                              "length of one evaluation period",
                              [alarm](const ConfigTarget& t) -> seconds& { return alarm(t).period; }));
  keys.push_back(Int<int>(s, key("evaluation_periods"), 1, 10000, std::to_string(d.evaluation_periods), "7",
                          "periods looked at",
                          [alarm](const ConfigTarget& t) -> int& { return alarm(t).evaluation_periods; }));
  keys.push_back(Int<int>(s, key("datapoints_to_alarm"), 1, 10000, std::to_string(d.datapoints_to_alarm), "2",
                          "breaching periods (of evaluation_periods) that raise the alarm",
                          [alarm](const ConfigTarget& t) -> int& { return alarm(t).datapoints_to_alarm; }));
  if (expiry) {
    keys.push_back(Dur<seconds>(s, key("safety_margin"), seconds(0), seconds(0), FormatDuration(d.safety_margin), "2h",
                                "with threshold: auto, how long before expiry the alarm fires",
                                [alarm](const ConfigTarget& t) -> seconds& { return alarm(t).safety_margin; }));
  }
  keys.push_back(Choice(
      s, key("treat_missing_data"), {"missing", "breaching", "notBreaching", "ignore"},
      std::string(MissingDataName(d.treat_missing_data)), expiry ? "breaching" : "ignore",
      "how periods without data count (CloudWatch TreatMissingData)",
      [alarm](const ConfigTarget& t, size_t i) {
        alarm(t).treat_missing_data = std::array{M::kMissing, M::kBreaching, M::kNotBreaching, M::kIgnore}[i];
      },
      [alarm](const ConfigTarget& t) { return static_cast<size_t>(alarm(t).treat_missing_data); }));
  keys.push_back(Choice(
      s, key("action"), {"notify", "copy", "archive"}, std::string(AlarmActionName(d.action)),
      expiry ? "copy" : "archive", "what the daemon does while the alarm is in ALARM",
      [alarm](const ConfigTarget& t, size_t i) {
        alarm(t).action = std::array{A::kNotify, A::kCopy, A::kArchive}[i];
      },
      [alarm](const ConfigTarget& t) { return static_cast<size_t>(alarm(t).action); }));
}

std::vector<ConfigKey> BuildSchema() {
  using std::chrono::hours;
  using std::chrono::minutes;
  const ConfigScope top = ConfigScope::kTop, set = ConfigScope::kSettings, grp = ConfigScope::kGroup,
                    hook = ConfigScope::kWebhook;
  const MonitorConfig dc;
  const GroupSettings ds;
  std::vector<ConfigKey> k;

  // Top level.
  k.push_back(Text(
      top, "listen", "127.0.0.1:9464", "[::1]:9000", "HOST:PORT of /metrics, /healthz and /api/queues (port 0: any)",
      [](const ConfigTarget& t, const std::string& v) -> std::string {
        std::string host;
        std::string_view port_text, text = v;
        std::string not_host_port = fmt::format("{} is not HOST:PORT (e.g. 127.0.0.1:9464, [::1]:9464)", Quote(text));
        if (StartsWith(text, "[")) {
          size_t close = text.find(']');
          if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
            return not_host_port;
          }
          host = std::string(text.substr(1, close - 1));
          port_text = text.substr(close + 2);
        } else {
          size_t colon = text.rfind(':');
          if (colon == std::string_view::npos || text.find(':') != colon) return not_host_port;
          host = std::string(text.substr(0, colon));
          port_text = text.substr(colon + 1);
        }
        if (host.empty()) host = "0.0.0.0";
        bool host_ok = std::all_of(host.begin(), host.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' || c == '_';
        });
        std::optional<int64_t> port = ParseInt64(port_text);
        if (!host_ok || !port || *port < 0 || *port > 65535) {
          return fmt::format("{} is not HOST:PORT with a port in 0..65535", Quote(text));
        }
        t.config->listen_host = host;
        t.config->listen_port = static_cast<int>(*port);
        return {};
      },
      [](const ConfigTarget& t) {
        const std::string& h = t.config->listen_host;
        if (h.find(':') != std::string::npos) return fmt::format("[{}]:{}", h, t.config->listen_port);
        return fmt::format("{}:{}", h, t.config->listen_port);
      }));
  auto token_check = [](const std::string& v) -> std::string {
    bool ok = v.size() >= 16 && v.size() <= 256 &&
              std::all_of(v.begin(), v.end(), [](char c) { return c > 0x20 && c < 0x7f; });
    return ok ? std::string() : std::string("must be 16-256 printable characters without spaces");
  };
  k.push_back(Str(
      top, "dashboard.write_token", "", "s3cr3t-t0ken-0123456789",
      "enables the dashboard's actions (archive now, replay) for requests with 'Authorization: Bearer TOKEN' "
      "(a secret: never echoed); empty: read-only",
      [](const ConfigTarget& t) -> std::string& { return t.config->dashboard_write_token; }, token_check,
      ConfigType::kSecret));
  k.push_back(Str(
      top, "dashboard.read_token", "", "r34d-t0ken-0123456789",
      "required as 'Authorization: Bearer TOKEN' (or the write token) by every route that returns message content "
      "(search, message detail, failure examples, archive listings); a secret; empty: those routes are open "
      "(warned about when listen is not loopback)",
      [](const ConfigTarget& t) -> std::string& { return t.config->dashboard_read_token; }, token_check,
      ConfigType::kSecret));
  k.push_back(List(
      "dashboard.hosts",
      "host names the listener answers to in the Host header, besides IP addresses, localhost and the listen host "
      "(\".example.com\": every subdomain; \"*\": any, which gives up the DNS-rebinding protection)",
      [](const ConfigTarget& t) -> std::vector<std::string>& { return t.config->dashboard_hosts; },
      [](const std::string& h) -> std::string {
        bool ok = !h.empty() && h.size() <= 253 && (h == "*" || std::all_of(h.begin(), h.end(), [](char c) {
                                                      return std::isalnum(static_cast<unsigned char>(c)) || c == '.' ||
                                                             c == '-' || c == '_';
                                                    }));
        return ok ? std::string()
                  : fmt::format("{} is not a host name (letters, digits, '.', '-', '_'; or \"*\")", Quote(h));
      },
      top, "[dlq.example.com, .internal.example.com]"));
  k.push_back(List(  // the failure groups' discriminator fields (query/fingerprint.h); empty: the defaults
      "dashboard.fingerprint_fields", "JSON fields whose values tell the dashboard's failure groups apart",
      [](const ConfigTarget& t) -> std::vector<std::string>& { return t.config->dashboard_fingerprint_fields; },
      [](const std::string& f) { return f.empty() ? std::string("a field name must not be empty") : std::string(); },
      top, "[type, error.code]"));
  k.push_back(Dur<seconds>(top, "dashboard.scan_deadline", seconds(1), minutes(10),
                           FormatDuration(dc.dashboard_scan_deadline), "30s",
                           "a dashboard request that reads the archive (search, message, failures) stops after this "
                           "long and answers what it read with \"complete\": false",
                           [](const ConfigTarget& t) -> seconds& { return t.config->dashboard_scan_deadline; }));
  {
    ConfigKey m{top,
                "dashboard.request_memory",
                ConfigType::kSize,
                8 << 20,
                int64_t{16} << 30,
                {},
                std::to_string(dc.dashboard_request_memory),
                "134217728",
                "memory one dashboard request's archive scan may take (objects in flight, de-duplication)",
                {},
                {},
                {},
                {}};
    m.set = [](const ConfigTarget& t, const ConfigValue& v) {
      t.config->dashboard_request_memory = v.bytes;
      return std::string();
    };
    m.get = [](const ConfigTarget& t) { return std::to_string(t.config->dashboard_request_memory); };
    k.push_back(std::move(m));
  }
  k.push_back(Int<int>(top, "dashboard.max_scans", 1, 64, std::to_string(dc.dashboard_max_scans), "4",
                       "dashboard requests reading the archive at once; more get 503 with Retry-After",
                       [](const ConfigTarget& t) -> int& { return t.config->dashboard_max_scans; }));
  k.push_back(Dur<seconds>(top, "collection_interval", seconds(1), hours(24), FormatDuration(dc.collection_interval),
                           "30s", "how often queue metrics are read and alarms evaluated",
                           [](const ConfigTarget& t) -> seconds& { return t.config->collection_interval; }));
  k.push_back(Dur<seconds>(top, "sweep_interval", seconds(1), hours(24), FormatDuration(dc.sweep_interval), "10m",
                           "how often a queue whose alarm stays in ALARM is archived again",
                           [](const ConfigTarget& t) -> seconds& { return t.config->sweep_interval; }));
  k.push_back(Dur<seconds>(top, "discovery_interval", seconds(10), hours(24), FormatDuration(dc.discovery_interval),
                           "1h", "how often the groups' selectors are matched again",
                           [](const ConfigTarget& t) -> seconds& { return t.config->discovery_interval; }));
  k.push_back(Int<int>(top, "concurrency.global", 1, 1024, std::to_string(dc.concurrency_global), "16",
                       "archive runs at once, over all queues",
                       [](const ConfigTarget& t) -> int& { return t.config->concurrency_global; }));
  k.push_back(Int<int>(top, "concurrency.per_queue", 1, 64, std::to_string(dc.concurrency_per_queue), "1",
                       "archive runs at once on one queue",
                       [](const ConfigTarget& t) -> int& { return t.config->concurrency_per_queue; }));
  k.push_back(Int<int>(top, "shard.index", 0, kMaxShards - 1, std::to_string(dc.shard.index), "2",
                       "this replica's shard, 0..shard.count-1 (run --shard I/N overrides)",
                       [](const ConfigTarget& t) -> int& { return t.config->shard.index; }));
  k.push_back(Int<int>(top, "shard.count", 1, kMaxShards, std::to_string(dc.shard.count), "3",
                       "replicas sharing the queues by rendezvous hashing of the queue ARN (1: no sharding)",
                       [](const ConfigTarget& t) -> int& { return t.config->shard.count; }));
  k.push_back(Text(
      top, "log.level", std::string(LogLevelName(dc.log_level)), "debug", "debug, info, warn, error or off",
      [](const ConfigTarget& t, const std::string& v) -> std::string {
        if (ParseLogLevel(v, t.config->log_level)) return {};
        return fmt::format("{} is not one of debug, info, warn, error, off", Quote(v));
      },
      [](const ConfigTarget& t) { return std::string(LogLevelName(t.config->log_level)); }));
  k.push_back(Choice(
      top, "log.format", {"json", "text"}, dc.log_format == LogFormat::kJson ? "json" : "text", "text",
      "json lines or text",
      [](const ConfigTarget& t, size_t i) { t.config->log_format = i == 0 ? LogFormat::kJson : LogFormat::kText; },
      [](const ConfigTarget& t) -> size_t { return t.config->log_format == LogFormat::kJson ? 0 : 1; }));
  {
    ConfigKey w{top,
                "notify.webhooks",
                ConfigType::kWebhooks,
                0,
                0,
                {},
                "",
                "",
                "webhooks told of every alarm "
                "transition",
                {},
                {},
                {},
                {}};
    k.push_back(std::move(w));
  }

  // One webhook.
  k.push_back(Text(
      hook, "url", "", "https://hooks.example.com", "http:// or https:// URL to POST to (may carry a secret token)",
      [](const ConfigTarget& t, const std::string& v) -> std::string {
        if (!IsUrl(v) || !ParseUrl(v).ok()) return fmt::format("{} is not an http:// or https:// URL", RedactedUrl(v));
        t.webhook->url = v;
        return {};
      },
      [](const ConfigTarget& t) { return t.webhook->url; }));
  {
    ConfigKey h{
        hook, "headers", ConfigType::kHeaders, 0, 0, {}, "", "", "extra request headers (values are secrets)", {}, {},
        {},   {}};
    k.push_back(std::move(h));
  }
  k.push_back(Dur<seconds>(hook, "timeout", seconds(1), minutes(5), FormatDuration(WebhookConfig().timeout), "30s",
                           "per request", [](const ConfigTarget& t) -> seconds& { return t.webhook->timeout; }));
  k.push_back(BoolKey(hook, "notify_on_startup", "false", "true", "also post an alarm's first INSUFFICIENT_DATA -> OK",
                      [](const ConfigTarget& t) -> bool& { return t.webhook->notify_on_startup; }));

  // Settings: under defaults: or in a group.
  k.push_back(Text(
      set, "destination", ds.destination, "s3://bucket/prefix", "s3://bucket[/prefix] or file:///dir",
      [](const ConfigTarget& t, const std::string& v) -> std::string {
        auto d = ParseDestination(v);
        if (!d.ok()) return d.status().message();
        t.settings->destination = v;
        return {};
      },
      [](const ConfigTarget& t) { return t.settings->destination; }));
  k.push_back(Text(
      set, "key_template", ds.key_template_text, "hive", "object key template: default, hive or a template",
      [](const ConfigTarget& t, const std::string& v) -> std::string {
        std::string_view text = v == "default" ? kDefaultKeyTemplate : v == "hive" ? kHiveKeyTemplate : v;
        auto parsed = KeyTemplate::Parse(text);
        if (!parsed.ok()) return fmt::format("{}: {} (or use default, hive)", Quote(v), parsed.status().message());
        t.settings->key_template_text = v;
        t.settings->key_template = *parsed;
        return {};
      },
      [](const ConfigTarget& t) { return t.settings->key_template_text; }));
  k.push_back(Choice(
      set, "sse", {"", "AES256", "aws:kms"}, ds.put.sse, "aws:kms", "server-side encryption of archive objects",
      [](const ConfigTarget& t, size_t i) {
        t.settings->put.sse = std::array{"", "AES256", "aws:kms"}[i];
      },
      [](const ConfigTarget& t) -> size_t {
        return t.settings->put.sse == "AES256" ? 1 : t.settings->put.sse == "aws:kms" ? 2 : 0;
      }));
  k.push_back(Str(set, "sse_kms_key_id", ds.put.sse_kms_key_id, "alias/archive", "KMS key for sse: aws:kms",
                  [](const ConfigTarget& t) -> std::string& { return t.settings->put.sse_kms_key_id; }));
  k.push_back(Str(
      set, "storage_class", ds.put.storage_class, "STANDARD_IA", "S3 storage class of archive objects",
      [](const ConfigTarget& t) -> std::string& { return t.settings->put.storage_class; },
      [](const std::string& v) -> std::string {
        if (v.empty() || Contains(kStorageClasses, v)) return {};
        return fmt::format(
            "{} is not an S3 storage class (STANDARD, STANDARD_IA, ONEZONE_IA, "
            "INTELLIGENT_TIERING, GLACIER_IR, GLACIER, DEEP_ARCHIVE, REDUCED_REDUNDANCY)",
            Quote(v));
      }));
  k.push_back(Int<size_t>(set, "batch.max_messages", 1, 10'000'000, std::to_string(ds.batch.max_messages), "500",
                          "messages per archive object",
                          [](const ConfigTarget& t) -> size_t& { return t.settings->batch.max_messages; }));
  {
    ConfigKey b{set,
                "batch.max_bytes",
                ConfigType::kSize,
                1024,
                1 << 30,
                {},
                std::to_string(ds.batch.max_bytes),
                "1048576",
                "uncompressed JSON bytes per archive object",
                {},
                {},
                {},
                {}};
    b.set = [](const ConfigTarget& t, const ConfigValue& v) {
      t.settings->batch.max_bytes = static_cast<size_t>(v.bytes);
      return std::string();
    };
    b.get = [](const ConfigTarget& t) { return std::to_string(t.settings->batch.max_bytes); };
    k.push_back(std::move(b));
  }
  k.push_back(Dur<std::chrono::milliseconds>(
      set, "batch.max_age", seconds(1), hours(12),
      FormatDuration(std::chrono::duration_cast<seconds>(ds.batch.max_age)), "2m",
      "longest an object stays open before upload",
      [](const ConfigTarget& t) -> std::chrono::milliseconds& { return t.settings->batch.max_age; }));
  k.push_back(Int<int>(set, "batch.gzip_level", 0, 12, std::to_string(ds.batch.gzip_level), "6", "gzip level",
                       [](const ConfigTarget& t) -> int& { return t.settings->batch.gzip_level; }));
  k.push_back(Dur<seconds>(set, "visibility_timeout", seconds(10), hours(12), FormatDuration(ds.visibility_timeout),
                           "5m", "visibility timeout of received messages (the heartbeat extends it)",
                           [](const ConfigTarget& t) -> seconds& { return t.settings->visibility_timeout; }));
  k.push_back(Int<int>(set, "receivers", 1, 64, std::to_string(ds.receivers), "8",
                       "ReceiveMessage loops per archive run, at most: a standard queue's run uses as many as raise "
                       "its rate (2, doubled while a doubling pays)",
                       [](const ConfigTarget& t) -> int& { return t.settings->receivers; }));
  k.push_back(BoolKey(set, "fixed_receivers", ds.fixed_receivers ? "true" : "false", "true",
                      "receive with all `receivers`, always",
                      [](const ConfigTarget& t) -> bool& { return t.settings->fixed_receivers; }));
  k.push_back(Choice(
      set, "policy.select", {"auto", "all", "older-than", "expiring-within"}, "auto", "older-than",
      "which messages a run archives",
      [](const ConfigTarget& t, size_t i) {
        t.settings->policy_by_alarm = i == 0;
        t.settings->policy.kind = std::array{SelectionKind::kAll, SelectionKind::kAll, SelectionKind::kOlderThan,
                                             SelectionKind::kExpiringWithin}[i];
      },
      [](const ConfigTarget& t) -> size_t {
        if (t.settings->policy_by_alarm) return 0;
        switch (t.settings->policy.kind) {
          case SelectionKind::kAll: return 1;
          case SelectionKind::kOlderThan: return 2;
          case SelectionKind::kExpiringWithin: return 3;
        }
        return 1;
      }));
  k.push_back(Dur<seconds>(set, "policy.window", seconds(0), seconds(0), FormatDuration(ds.policy.window), "1d",
                           "with older-than or expiring-within",
                           [](const ConfigTarget& t) -> seconds& { return t.settings->policy.window; }));
  k.push_back(BoolKey(set, "cloudwatch_age", ds.cloudwatch_age ? "true" : "false", "true",
                      "the expiry alarm reads ApproximateAgeOfOldestMessage from CloudWatch",
                      [](const ConfigTarget& t) -> bool& { return t.settings->cloudwatch_age; }));
  AddAlarmKeys(k, /*expiry=*/true);
  AddAlarmKeys(k, /*expiry=*/false);

  // In a group only.
  k.push_back(Text(
      grp, "name", "", "orders", "the group's name (1-64 of A-Z a-z 0-9 . _ -), unique",
      [](const ConfigTarget& t, const std::string& v) -> std::string {
        bool ok = !v.empty() && v.size() <= 64 && std::all_of(v.begin(), v.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
        });
        if (!ok) return fmt::format("{} must be 1-64 of A-Z a-z 0-9 . _ -", Quote(v));
        t.group->name = v;
        return {};
      },
      [](const ConfigTarget& t) { return t.group->name; }));
  k.push_back(Str(
      grp, "region", "", "eu-west-1", "AWS region (empty: from the environment or profile)",
      [](const ConfigTarget& t) -> std::string& { return t.group->region; },
      [](const std::string& v) -> std::string {
        bool ok = !v.empty() && v.size() <= 32 && std::all_of(v.begin(), v.end(), [](char c) {
          return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-';
        });
        return ok ? std::string() : fmt::format("{} is not a region name (e.g. us-east-1)", Quote(v));
      }));
  k.push_back(Str(
      grp, "endpoint_url", "", "http://127.0.0.1:4566", "SQS endpoint (stand-ins, tests)",
      [](const ConfigTarget& t) -> std::string& { return t.group->endpoint_url; },
      [](const std::string& v) -> std::string {
        if (IsUrl(v) && ParseUrl(v).ok()) return {};
        return fmt::format("{} is not an http:// or https:// URL", Quote(v));
      }));
  k.push_back(Str(
      grp, "profile", "", "archive", "shared config profile",
      [](const ConfigTarget& t) -> std::string& { return t.group->profile; },
      [](const std::string& v) { return v.empty() ? std::string("must not be empty") : std::string(); }));
  k.push_back(Str(
      grp, "role_arn", "", "arn:aws:iam::123456789012:role/archiver", "role to assume (other accounts)",
      [](const ConfigTarget& t) -> std::string& { return t.group->role_arn; },
      [](const std::string& v) -> std::string {
        static const Result<Regex> kRoleArn =
            Regex::Compile(R"(arn:aws[a-z-]*:iam::[0-9]{12}:role/[A-Za-z0-9+=,.@_/-]{1,512})");
        if (v.size() <= 2048 && kRoleArn->FullMatch(v)) return {};
        return fmt::format("{} is not an IAM role ARN (arn:aws:iam::123456789012:role/NAME)", Quote(v));
      }));
  k.push_back(Str(
      grp, "external_id", "", "ext-42", "sts:ExternalId for role_arn (a secret: never echoed)",
      [](const ConfigTarget& t) -> std::string& { return t.group->external_id; },
      [](const std::string& v) -> std::string {
        bool ok = v.size() >= 2 && v.size() <= 1224 && std::all_of(v.begin(), v.end(), [](char c) {
                    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("+=,.@:/_-", c) != nullptr;
                  });
        return ok ? std::string() : std::string("must be 2-1224 of A-Z a-z 0-9 + = , . @ : / _ -");
      },
      ConfigType::kSecret));
  auto queue_check = [](bool prefix) {
    return [prefix](const std::string& q) -> std::string {
      bool ok = !prefix && IsUrl(q) ? ParseUrl(q).ok() : ValidQueueName(q);
      if (ok) return {};
      return fmt::format("{} is not a queue {} (1-80 of A-Z a-z 0-9 - _, .fifo for FIFO{})", Quote(q),
                         prefix ? "name prefix" : "name or URL", prefix ? "" : ", or a URL");
    };
  };
  k.push_back(List(
      "queues", "queue names or URLs; each must exist",
      [](const ConfigTarget& t) -> std::vector<std::string>& { return t.group->queues; }, queue_check(false)));
  k.push_back(List(
      "prefixes", "ListQueues name prefixes",
      [](const ConfigTarget& t) -> std::vector<std::string>& { return t.group->prefixes; }, queue_check(true)));
  k.push_back(Str(
      grp, "regex", "", "^orders-.*-dlq$", "regular expression (RE2 syntax) searched in queue names",
      [](const ConfigTarget& t) -> std::string& { return t.group->regex; },
      [](const std::string& v) -> std::string {
        if (v.size() > 1000) return "is longer than 1000 characters";
        Result<Regex> re = Regex::Compile(v);
        return re.ok() ? std::string() : fmt::format("{}: {}", Quote(v), re.status().message());
      }));
  k.push_back(BoolKey(grp, "discover", "false", "true", "every deadLetterTargetArn of a RedrivePolicy",
                      [](const ConfigTarget& t) -> bool& { return t.group->discover; }));
  k.push_back(List(
      "exclude", "queue names or URLs never selected",
      [](const ConfigTarget& t) -> std::vector<std::string>& { return t.group->exclude; }, queue_check(false)));
  k.push_back(BoolKey(grp, "allow_empty", "false", "true", "selectors matching no queue are not an error for check",
                      [](const ConfigTarget& t) -> bool& { return t.group->allow_empty; }));
  return k;
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

  // One mapping being applied with the schema.
  struct Block {
    std::vector<ConfigScope> scopes;
    std::string base;  // field path of the mapping, e.g. "groups[0]"
    ConfigTarget target;
    Origins* origins;
    bool in_group = false;
    std::set<std::string> present;  // keys given, valid or not
  };
  // The schema's key `key` (dotted) in one of `scopes`; nullptr when `key` is a section.
  static const ConfigKey* Find(const std::vector<ConfigScope>& scopes, std::string_view key);
  // The names directly below `prefix` ("" for the top) in `scopes`.
  static std::vector<std::string_view> Children(const std::vector<ConfigScope>& scopes, std::string_view prefix);
  // Reads `n` as `key`'s type and checks its range; reports and returns nullopt otherwise.
  std::optional<ConfigValue> Read(const ConfigKey& key, const YAML::Node& n, const std::string& path);
  // Applies the value of `key` (a key or a section, dotted from the block).
  void ApplyEntry(Block& b, const std::string& key, const YAML::Node& value);
  // Applies every key of the mapping `n`, the section `prefix` of the block.
  void ApplyMapping(Block& b, const YAML::Node& n, const std::string& prefix,
                    std::span<const std::string_view> known_elsewhere = {}, std::string_view elsewhere = {});
  void ParseTop(const YAML::Node& root, MonitorConfig& config);
  void ParseWebhooks(const YAML::Node& n, const std::string& path, MonitorConfig& config);
  void ParseHeaders(const YAML::Node& n, const std::string& path, WebhookConfig& hook);
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
  std::optional<int64_t> v = ParseInt64(*s);
  if (!v) {
    Fail(n, path, fmt::format("{} is not a whole number", Quote(*s)));
    return std::nullopt;
  }
  if (*v < lo || *v > hi) {
    Fail(n, path, fmt::format("{} is out of range [{}, {}]", *v, lo, hi));
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

const ConfigKey* ConfigParser::Find(const std::vector<ConfigScope>& scopes, std::string_view key) {
  for (const ConfigKey& k : ConfigSchema()) {
    if (k.key == key && std::find(scopes.begin(), scopes.end(), k.scope) != scopes.end()) return &k;
  }
  return nullptr;
}

std::vector<std::string_view> ConfigParser::Children(const std::vector<ConfigScope>& scopes, std::string_view prefix) {
  std::vector<std::string_view> out;
  for (const ConfigKey& k : ConfigSchema()) {
    if (std::find(scopes.begin(), scopes.end(), k.scope) == scopes.end()) continue;
    std::string_view rest = k.key;
    if (!prefix.empty()) {
      if (rest.size() <= prefix.size() || !StartsWith(rest, prefix) || rest[prefix.size()] != '.') continue;
      rest.remove_prefix(prefix.size() + 1);
    }
    rest = rest.substr(0, rest.find('.'));
    if (std::find(out.begin(), out.end(), rest) == out.end()) out.push_back(rest);
  }
  return out;
}

std::optional<ConfigValue> ConfigParser::Read(const ConfigKey& key, const YAML::Node& n, const std::string& path) {
  ConfigValue v;
  switch (key.type) {
    case ConfigType::kString:
    case ConfigType::kSecret: {
      if (!key.not_scalar.empty() && !n.IsScalar()) {
        Fail(n, path, key.not_scalar);
        return std::nullopt;
      }
      auto s = Str(n, path, key.type == ConfigType::kSecret);
      if (!s) return std::nullopt;
      v.text = std::move(*s);
      return v;
    }
    case ConfigType::kChoice: {
      auto s = Str(n, path);
      if (!s) return std::nullopt;
      if (!Contains(key.choices, *s)) {
        Fail(n, path, fmt::format("{} is not one of {}", Quote(*s), Joined(key.choices)));
        return std::nullopt;
      }
      v.text = std::move(*s);
      return v;
    }
    case ConfigType::kInt: {
      auto x = Int(n, path, key.lo, key.hi);
      if (!x) return std::nullopt;
      v.number = *x;
      return v;
    }
    case ConfigType::kBool: {
      auto b = Bool(n, path);
      if (!b) return std::nullopt;
      v.flag = *b;
      return v;
    }
    case ConfigType::kDuration: {
      auto d = Duration(n, path);
      if (!d) return std::nullopt;
      if ((key.lo != 0 || key.hi != 0) && (d->count() < key.lo || d->count() > key.hi)) {
        Fail(n, path,
             fmt::format("{} is out of range [{}, {}]", FormatDuration(*d), FormatDuration(seconds(key.lo)),
                         FormatDuration(seconds(key.hi))));
        return std::nullopt;
      }
      v.duration = *d;
      return v;
    }
    case ConfigType::kSize: {
      auto b = Size(n, path);
      if (!b) return std::nullopt;
      if (*b < static_cast<uint64_t>(key.lo) || *b > static_cast<uint64_t>(key.hi)) {
        Fail(n, path,
             fmt::format("{} bytes is out of range [{}, {}]", *b, SizeText(static_cast<uint64_t>(key.lo)),
                         SizeText(static_cast<uint64_t>(key.hi))));
        return std::nullopt;
      }
      v.bytes = *b;
      return v;
    }
    case ConfigType::kList: {
      auto list = StrList(n, path);
      if (!list) return std::nullopt;
      bool ok = true;
      for (size_t i = 0; i < list->size(); ++i) {
        std::string bad = key.check_item ? key.check_item((*list)[i]) : std::string();
        if (bad.empty()) continue;
        Fail(n.IsSequence() ? n[i] : n, fmt::format("{}[{}]", path, i), bad);
        ok = false;
      }
      if (!ok) return std::nullopt;
      v.list = std::move(*list);
      return v;
    }
    case ConfigType::kWebhooks:
    case ConfigType::kHeaders: break;  // mappings and lists of their own: see ApplyEntry
  }
  return std::nullopt;
}

void ConfigParser::ApplyEntry(Block& b, const std::string& key, const YAML::Node& value) {
  const std::string path = Join(b.base, key);
  b.present.insert(key);
  const ConfigKey* k = Find(b.scopes, key);
  if (k == nullptr) {  // a section: MapEntries reports a value that is not a mapping
    ApplyMapping(b, value, key);
    return;
  }
  if (k->type == ConfigType::kWebhooks) {
    ParseWebhooks(value, path, *b.target.config);
    return;
  }
  if (k->type == ConfigType::kHeaders) {
    ParseHeaders(value, path, *b.target.webhook);
    return;
  }
  std::optional<ConfigValue> v = Read(*k, value, path);
  if (!v) return;
  if (std::string bad = k->set(b.target, *v); !bad.empty()) {
    Fail(value, path, bad);
    return;
  }
  (*b.origins)[key] = Origin{path, LocOf(value), b.in_group};
}

void ConfigParser::ApplyMapping(Block& b, const YAML::Node& n, const std::string& prefix,
                                std::span<const std::string_view> known_elsewhere, std::string_view elsewhere) {
  std::vector<std::string_view> other;
  if (prefix == "alarms.depth") {  // keys of the expiry alarm only
    other = Children(b.scopes, "alarms.expiry");
    known_elsewhere = other;
    elsewhere = "on the expiry alarm";
  }
  for (auto& [name, value] :
       MapEntries(n, Join(b.base, prefix), Children(b.scopes, prefix), known_elsewhere, elsewhere)) {
    ApplyEntry(b, Join(prefix, name), value);
  }
}

void ConfigParser::ParseWebhooks(const YAML::Node& n, const std::string& path, MonitorConfig& config) {
  size_t i = 0;
  for (const YAML::Node& item : SeqItems(n, path)) {
    WebhookConfig hook;
    Origins origins;
    Block b{{ConfigScope::kWebhook}, fmt::format("{}[{}]", path, i++), ConfigTarget{.webhook = &hook}, &origins};
    ApplyMapping(b, item, "");
    if (!origins.contains("url") && item.IsMap()) Fail(item, b.base, "url is required");
    config.webhooks.push_back(std::move(hook));
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
  GroupConfig g;
  static_cast<GroupSettings&>(g) = defaults;
  Origins origins = default_origins;
  for (auto& [rel, o] : origins) o.from_group = false;
  Block b{{ConfigScope::kGroup, ConfigScope::kSettings},
          base,
          ConfigTarget{.settings = &g, .group = &g},
          &origins,
          /*in_group=*/true};
  ApplyMapping(b, n, "");
  if (!b.present.contains("name")) Fail(n, base, "name is required");
  if (auto it = origins.find("name"); it != origins.end() && !names.insert(g.name).second) {
    Fail(it->second.loc, it->second.path, fmt::format("duplicate group name '{}'", g.name));
  }
  // A selector that failed to parse counts as given: "selects no queues" would only repeat its error.
  bool selects = !g.queues.empty() || !g.prefixes.empty() || !g.regex.empty() || g.discover;
  for (const char* key : {"queues", "prefixes", "regex", "discover"}) {
    if (b.present.contains(key) && !origins.contains(key)) selects = true;
  }
  if (!selects) Fail(n, base, "selects no queues: set queues, prefixes, regex or discover: true");
  if (auto it = origins.find("external_id"); it != origins.end() && g.role_arn.empty()) {
    Fail(it->second.loc, it->second.path, "needs role_arn");
  }
  CrossCheck(g, origins, base, LocOf(n), /*in_group=*/true, config);
  config.groups.push_back(std::move(g));
}

void ConfigParser::ParseTop(const YAML::Node& root, MonitorConfig& config) {
  if (root.IsNull()) {
    Fail(Loc{}, "", "the file is empty (at least one group is required)");
    return;
  }
  static const std::vector<std::string_view> kTop = [] {
    std::vector<std::string_view> k = Children({ConfigScope::kTop}, "");
    k.insert(k.end(), {"defaults", "groups"});
    return k;
  }();
  static const std::vector<std::string_view> kGroupOnly = Children({ConfigScope::kGroup}, "");
  static const std::vector<std::string_view> kElsewhere = Children({ConfigScope::kGroup, ConfigScope::kSettings}, "");
  auto entries = MapEntries(root, "", kTop, kElsewhere, "under defaults: or in a group");
  if (!root.IsMap()) return;
  YAML::Node defaults_node, groups_node;
  bool has_groups = false;
  Origins top_origins;
  Block top{{ConfigScope::kTop}, "", ConfigTarget{.config = &config}, &top_origins};
  for (auto& [key, v] : entries) {
    if (key == "defaults") {
      defaults_node = v;
    } else if (key == "groups") {
      groups_node = v;
      has_groups = true;
    } else {
      ApplyEntry(top, key, v);
    }
  }
  if (config.concurrency_per_queue > config.concurrency_global) {
    auto it = top_origins.find("concurrency.per_queue");
    if (it == top_origins.end()) it = top_origins.find("concurrency.global");
    Fail(it != top_origins.end() ? it->second.loc : LocOf(root), "concurrency.per_queue",
         fmt::format("{} is more than concurrency.global ({})", config.concurrency_per_queue,
                     config.concurrency_global));
  }

  if (config.shard.index >= config.shard.count) {
    auto it = top_origins.find("shard.index");
    if (it == top_origins.end()) it = top_origins.find("shard.count");
    Fail(it != top_origins.end() ? it->second.loc : LocOf(root), "shard.index",
         fmt::format("{} is not below shard.count ({}); shards are numbered from 0", config.shard.index,
                     config.shard.count));
  }

  Origins default_origins;
  Block defaults{{ConfigScope::kSettings}, "defaults", ConfigTarget{.settings = &config.defaults}, &default_origins};
  ApplyMapping(defaults, defaults_node, "", kGroupOnly, "in a group");
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

const std::vector<ConfigKey>& ConfigSchema() {
  static const std::vector<ConfigKey> kSchema = BuildSchema();
  return kSchema;
}

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
