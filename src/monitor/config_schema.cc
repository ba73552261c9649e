// The daemon config's schema: every key the file accepts (config.h,
// ConfigSchema()), one function per section of the file.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <optional>
#include <utility>

#include "archive/destination.h"
#include "aws/http.h"
#include "common/regex.h"
#include "common/strings.h"
#include "common/time_util.h"
#include "monitor/config_internal.h"

namespace dlq::config_internal {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

constexpr ConfigScope kTop = ConfigScope::kTop, kSet = ConfigScope::kSettings, kGrp = ConfigScope::kGroup,
                      kHook = ConfigScope::kWebhook;

constexpr std::string_view kStorageClasses[] = {"STANDARD",   "STANDARD_IA", "ONEZONE_IA",   "INTELLIGENT_TIERING",
                                                "GLACIER_IR", "GLACIER",     "DEEP_ARCHIVE", "REDUCED_REDUNDANCY"};

// What a validator returns: fine, or what is wrong (reported at the value).
Status Bad(std::string message) {
  return InvalidArgument(std::move(message));
}

// ------------------------------------------------------------ key makers

template <class V>
using Ref = std::function<V&(const ConfigTarget&)>;
using Check = std::function<Status(const std::string&)>;

ConfigKey NewKey(ConfigScope scope, std::string key, ConfigType type, std::string def, std::string example,
                 std::string doc) {
  return ConfigKey{.scope = scope,
                   .key = std::move(key),
                   .type = type,
                   .default_text = std::move(def),
                   .example = std::move(example),
                   .doc = std::move(doc)};
}

template <class V>
ConfigKey Int(ConfigScope scope, std::string key, int64_t lo, int64_t hi, std::string def, std::string example,
              std::string doc, const Ref<V>& ref) {
  ConfigKey k = NewKey(scope, std::move(key), ConfigType::kInt, std::move(def), std::move(example), std::move(doc));
  k.lo = lo;
  k.hi = hi;
  k.set = [ref](const ConfigTarget& t, const ConfigValue& v) {
    ref(t) = static_cast<V>(v.number);
    return Status::Ok();
  };
  k.get = [ref](const ConfigTarget& t) { return std::to_string(ref(t)); };
  return k;
}

template <class D>
ConfigKey Dur(ConfigScope scope, std::string key, seconds lo, seconds hi, std::string def, std::string example,
              std::string doc, const Ref<D>& ref) {
  ConfigKey k =
      NewKey(scope, std::move(key), ConfigType::kDuration, std::move(def), std::move(example), std::move(doc));
  k.lo = lo.count();
  k.hi = hi.count();
  k.set = [ref](const ConfigTarget& t, const ConfigValue& v) {
    ref(t) = v.duration;
    return Status::Ok();
  };
  k.get = [ref](const ConfigTarget& t) { return FormatDuration(std::chrono::duration_cast<seconds>(ref(t))); };
  return k;
}

template <class V>
ConfigKey Size(ConfigScope scope, std::string key, int64_t lo, int64_t hi, std::string def, std::string example,
               std::string doc, const Ref<V>& ref) {
  ConfigKey k = NewKey(scope, std::move(key), ConfigType::kSize, std::move(def), std::move(example), std::move(doc));
  k.lo = lo;
  k.hi = hi;
  k.set = [ref](const ConfigTarget& t, const ConfigValue& v) {
    ref(t) = static_cast<V>(v.bytes);
    return Status::Ok();
  };
  k.get = [ref](const ConfigTarget& t) { return std::to_string(ref(t)); };
  return k;
}

ConfigKey BoolKey(ConfigScope scope, std::string key, std::string def, std::string example, std::string doc,
                  const Ref<bool>& ref) {
  ConfigKey k = NewKey(scope, std::move(key), ConfigType::kBool, std::move(def), std::move(example), std::move(doc));
  k.set = [ref](const ConfigTarget& t, const ConfigValue& v) {
    ref(t) = v.flag;
    return Status::Ok();
  };
  k.get = [ref](const ConfigTarget& t) { return std::string(ref(t) ? "true" : "false"); };
  return k;
}

// A string checked by `check` and stored as is.
ConfigKey Str(ConfigScope scope, std::string key, std::string def, std::string example, std::string doc,
              const Ref<std::string>& ref, const Check& check = {}, ConfigType type = ConfigType::kString) {
  ConfigKey k = NewKey(scope, std::move(key), type, std::move(def), std::move(example), std::move(doc));
  k.set = [ref, check](const ConfigTarget& t, const ConfigValue& v) {
    if (check) DLQ_RETURN_IF_ERROR(check(v.text));
    ref(t) = v.text;
    return Status::Ok();
  };
  k.get = [ref](const ConfigTarget& t) { return ref(t); };
  return k;
}

// One of `choices`; `set` stores the index of the word chosen, `get` gives it back.
ConfigKey Choice(ConfigScope scope, std::string key, const std::vector<std::string_view>& choices, std::string def,
                 std::string example, std::string doc, const std::function<void(const ConfigTarget&, size_t)>& set,
                 const std::function<size_t(const ConfigTarget&)>& get) {
  ConfigKey k = NewKey(scope, std::move(key), ConfigType::kChoice, std::move(def), std::move(example), std::move(doc));
  k.choices = choices;
  k.set = [set, choices](const ConfigTarget& t, const ConfigValue& v) {
    set(t, static_cast<size_t>(std::find(choices.begin(), choices.end(), v.text) - choices.begin()));
    return Status::Ok();
  };
  k.get = [get, choices](const ConfigTarget& t) { return std::string(choices.at(get(t))); };
  return k;
}

// A scalar read as text and parsed by `set`.
ConfigKey Text(ConfigScope scope, std::string key, std::string def, std::string example, std::string doc,
               const std::function<Status(const ConfigTarget&, const std::string&)>& set,
               std::function<std::string(const ConfigTarget&)> get, std::string_view not_scalar = {}) {
  ConfigKey k = NewKey(scope, std::move(key), ConfigType::kString, std::move(def), std::move(example), std::move(doc));
  k.not_scalar = not_scalar;
  k.set = [set](const ConfigTarget& t, const ConfigValue& v) { return set(t, v.text); };
  k.get = std::move(get);
  return k;
}

ConfigKey List(std::string key, std::string doc, const Ref<std::vector<std::string>>& ref, Check check_item,
               ConfigScope scope = kGrp, std::string example = "[a-dlq, b-dlq]") {
  ConfigKey k = NewKey(scope, std::move(key), ConfigType::kList, "[]", std::move(example), std::move(doc));
  k.check_item = std::move(check_item);
  k.set = [ref](const ConfigTarget& t, const ConfigValue& v) {
    ref(t) = v.list;
    return Status::Ok();
  };
  k.get = [ref](const ConfigTarget& t) { return ListText(ref(t)); };
  return k;
}

// ------------------------------------------------------------ validators

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

// HOST:PORT with a port in 0..65535 (aws/http.h's SplitHostPort); an empty
// host listens on every address.
Status SetListen(const ConfigTarget& t, const std::string& text) {
  Result<HostPort> split = SplitHostPort(text);
  if (!split.ok() || !split->port) {
    return Bad(fmt::format("{} is not HOST:PORT (e.g. 127.0.0.1:9464, [::1]:9464)", Quote(text)));
  }
  std::string host = split->host.empty() ? "0.0.0.0" : split->host;
  bool host_ok = std::all_of(host.begin(), host.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' || c == '_';
  });
  std::optional<int> port = ParsePort(*split->port, 0);
  if (!host_ok || !port) return Bad(fmt::format("{} is not HOST:PORT with a port in 0..65535", Quote(text)));
  t.config->listen_host = host;
  t.config->listen_port = *port;
  return Status::Ok();
}

std::string GetListen(const ConfigTarget& t) {
  const std::string& h = t.config->listen_host;
  if (h.find(':') != std::string::npos) return fmt::format("[{}]:{}", h, t.config->listen_port);
  return fmt::format("{}:{}", h, t.config->listen_port);
}

Status CheckToken(const std::string& v) {
  bool ok =
      v.size() >= 16 && v.size() <= 256 && std::all_of(v.begin(), v.end(), [](char c) { return c > 0x20 && c < 0x7f; });
  return ok ? Status::Ok() : Bad("must be 16-256 printable characters without spaces");
}

Status CheckDashboardHost(const std::string& h) {
  bool ok = !h.empty() && h.size() <= 253 && (h == "*" || std::all_of(h.begin(), h.end(), IsNameChar));
  if (ok) return Status::Ok();
  return Bad(fmt::format("{} is not a host name (letters, digits, '.', '-', '_'; or \"*\")", Quote(h)));
}

Status CheckStorageClass(const std::string& v) {
  if (v.empty() || Contains(kStorageClasses, v)) return Status::Ok();
  return Bad(
      fmt::format("{} is not an S3 storage class (STANDARD, STANDARD_IA, ONEZONE_IA, "
                  "INTELLIGENT_TIERING, GLACIER_IR, GLACIER, DEEP_ARCHIVE, REDUCED_REDUNDANCY)",
                  Quote(v)));
}

Status CheckRegion(const std::string& v) {
  bool ok = !v.empty() && v.size() <= 32 && std::all_of(v.begin(), v.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-';
  });
  return ok ? Status::Ok() : Bad(fmt::format("{} is not a region name (e.g. us-east-1)", Quote(v)));
}

Status CheckEndpointUrl(const std::string& v) {
  if (IsUrl(v) && ParseUrl(v).ok()) return Status::Ok();
  return Bad(fmt::format("{} is not an http:// or https:// URL", Quote(v)));
}

Status CheckRoleArn(const std::string& v) {
  static const Result<Regex> kRoleArn =
      Regex::Compile(R"(arn:aws[a-z-]*:iam::[0-9]{12}:role/[A-Za-z0-9+=,.@_/-]{1,512})");
  if (v.size() <= 2048 && kRoleArn->FullMatch(v)) return Status::Ok();
  return Bad(fmt::format("{} is not an IAM role ARN (arn:aws:iam::123456789012:role/NAME)", Quote(v)));
}

Status CheckExternalId(const std::string& v) {
  bool ok = v.size() >= 2 && v.size() <= 1224 && std::all_of(v.begin(), v.end(), [](char c) {
              return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("+=,.@:/_-", c) != nullptr;
            });
  return ok ? Status::Ok() : Bad("must be 2-1224 of A-Z a-z 0-9 + = , . @ : / _ -");
}

Status CheckRegex(const std::string& v) {
  if (v.size() > 1000) return Bad("is longer than 1000 characters");
  Result<Regex> re = Regex::Compile(v);
  return re.ok() ? Status::Ok() : Bad(fmt::format("{}: {}", Quote(v), re.status().message()));
}

// A queue name or URL (`prefix`: a ListQueues name prefix, no URL).
Check QueueCheck(bool prefix) {
  return [prefix](const std::string& q) -> Status {
    bool ok = !prefix && IsUrl(q) ? ParseUrl(q).ok() : ValidQueueName(q);
    if (ok) return Status::Ok();
    return Bad(fmt::format("{} is not a queue {} (1-80 of A-Z a-z 0-9 - _, .fifo for FIFO{})", Quote(q),
                           prefix ? "name prefix" : "name or URL", prefix ? "" : ", or a URL"));
  };
}

// ------------------------------------------------------------ the sections

void AddListenKeys(std::vector<ConfigKey>& k) {
  k.push_back(Text(kTop, "listen", "127.0.0.1:9464", "[::1]:9000",
                   "HOST:PORT of /metrics, /healthz and /api/queues (port 0: any)", SetListen, GetListen));
}

void AddDashboardKeys(std::vector<ConfigKey>& k) {
  const MonitorConfig dc;
  k.push_back(Str(
      kTop, "dashboard.write_token", "", "s3cr3t-t0ken-0123456789",
      "enables the dashboard's actions (archive now, replay) for requests with 'Authorization: Bearer TOKEN' "
      "(a secret: never echoed); empty: read-only",
      [](const ConfigTarget& t) -> std::string& { return t.config->dashboard_write_token; }, CheckToken,
      ConfigType::kSecret));
  k.push_back(Str(
      kTop, "dashboard.read_token", "", "r34d-t0ken-0123456789",
      "required as 'Authorization: Bearer TOKEN' (or the write token) by every route that returns message content "
      "(search, message detail, failure examples, archive listings); a secret; empty: those routes are open "
      "(warned about when listen is not loopback)",
      [](const ConfigTarget& t) -> std::string& { return t.config->dashboard_read_token; }, CheckToken,
      ConfigType::kSecret));
  k.push_back(Str(
      kTop, "dashboard.url", "", "https://dlq.example.com",
      "the dashboard's address as people reach it; alarm notifications link to the queue and to its "
      "failure groups there; empty: no links",
      [](const ConfigTarget& t) -> std::string& { return t.config->dashboard_url; }, CheckEndpointUrl));
  k.push_back(List(
      "dashboard.hosts",
      "host names the listener answers to in the Host header, besides IP addresses, localhost and the listen host "
      "(\".example.com\": every subdomain; \"*\": any, which gives up the DNS-rebinding protection)",
      [](const ConfigTarget& t) -> std::vector<std::string>& { return t.config->dashboard_hosts; }, CheckDashboardHost,
      kTop, "[dlq.example.com, .internal.example.com]"));
  k.push_back(List(  // the failure groups' discriminator fields (query/fingerprint.h); empty: the defaults
      "dashboard.fingerprint_fields", "JSON fields whose values tell the dashboard's failure groups apart",
      [](const ConfigTarget& t) -> std::vector<std::string>& { return t.config->dashboard_fingerprint_fields; },
      [](const std::string& f) { return f.empty() ? Bad("a field name must not be empty") : Status::Ok(); }, kTop,
      "[type, error.code]"));
  k.push_back(Dur<seconds>(kTop, "dashboard.scan_deadline", seconds(1), minutes(10),
                           FormatDuration(dc.dashboard_scan_deadline), "30s",
                           "a dashboard request that reads the archive (search, message, failures) stops after this "
                           "long and answers what it read with \"complete\": false",
                           [](const ConfigTarget& t) -> seconds& { return t.config->dashboard_scan_deadline; }));
  k.push_back(Size<uint64_t>(kTop, "dashboard.request_memory", 8 << 20, int64_t{16} << 30,
                             std::to_string(dc.dashboard_request_memory), "134217728",
                             "memory one dashboard request's archive scan may take (objects in flight, de-duplication)",
                             [](const ConfigTarget& t) -> uint64_t& { return t.config->dashboard_request_memory; }));
  k.push_back(Int<int>(kTop, "dashboard.max_scans", 1, 64, std::to_string(dc.dashboard_max_scans), "4",
                       "dashboard requests reading the archive at once; more get 503 with Retry-After",
                       [](const ConfigTarget& t) -> int& { return t.config->dashboard_max_scans; }));
}

void AddIntervalKeys(std::vector<ConfigKey>& k) {
  const MonitorConfig dc;
  k.push_back(Dur<seconds>(kTop, "collection_interval", seconds(1), hours(24), FormatDuration(dc.collection_interval),
                           "30s", "how often queue metrics are read and alarms evaluated",
                           [](const ConfigTarget& t) -> seconds& { return t.config->collection_interval; }));
  k.push_back(Dur<seconds>(kTop, "sweep_interval", seconds(1), hours(24), FormatDuration(dc.sweep_interval), "10m",
                           "how often a queue whose alarm stays in ALARM is archived again",
                           [](const ConfigTarget& t) -> seconds& { return t.config->sweep_interval; }));
  k.push_back(Dur<seconds>(kTop, "discovery_interval", seconds(10), hours(24), FormatDuration(dc.discovery_interval),
                           "1h", "how often the groups' selectors are matched again",
                           [](const ConfigTarget& t) -> seconds& { return t.config->discovery_interval; }));
  k.push_back(Str(kTop, "state_dir", "", "/var/lib/dlq-archive",
                  "directory of the daemon's state file (alarm states and history, charts, run totals; "
                  "state-shard-I-of-N.sqlite with sharding), read at start; empty: state is kept in memory only and "
                  "a restart forgets it",
                  [](const ConfigTarget& t) -> std::string& { return t.config->state_dir; }));
}

void AddConcurrencyKeys(std::vector<ConfigKey>& k) {
  const MonitorConfig dc;
  k.push_back(Int<int>(kTop, "concurrency.global", 1, 1024, std::to_string(dc.concurrency_global), "16",
                       "archive runs at once, over all queues",
                       [](const ConfigTarget& t) -> int& { return t.config->concurrency_global; }));
  k.push_back(Int<int>(kTop, "concurrency.per_queue", 1, 64, std::to_string(dc.concurrency_per_queue), "1",
                       "archive runs at once on one queue",
                       [](const ConfigTarget& t) -> int& { return t.config->concurrency_per_queue; }));
  k.push_back(Int<int>(kTop, "shard.index", 0, kMaxShards - 1, std::to_string(dc.shard.index), "2",
                       "this replica's shard, 0..shard.count-1 (run --shard I/N overrides)",
                       [](const ConfigTarget& t) -> int& { return t.config->shard.index; }));
  k.push_back(Int<int>(kTop, "shard.count", 1, kMaxShards, std::to_string(dc.shard.count), "3",
                       "replicas sharing the queues by rendezvous hashing of the queue ARN (1: no sharding)",
                       [](const ConfigTarget& t) -> int& { return t.config->shard.count; }));
}

void AddLogKeys(std::vector<ConfigKey>& k) {
  const MonitorConfig dc;
  k.push_back(Text(
      kTop, "log.level", std::string(LogLevelName(dc.log_level)), "debug", "debug, info, warn, error or off",
      [](const ConfigTarget& t, const std::string& v) -> Status {
        if (ParseLogLevel(v, t.config->log_level)) return Status::Ok();
        return Bad(fmt::format("{} is not one of debug, info, warn, error, off", Quote(v)));
      },
      [](const ConfigTarget& t) { return std::string(LogLevelName(t.config->log_level)); }));
  k.push_back(Choice(
      kTop, "log.format", {"json", "text"}, dc.log_format == LogFormat::kJson ? "json" : "text", "text",
      "json lines or text",
      [](const ConfigTarget& t, size_t i) { t.config->log_format = i == 0 ? LogFormat::kJson : LogFormat::kText; },
      [](const ConfigTarget& t) -> size_t { return t.config->log_format == LogFormat::kJson ? 0 : 1; }));
}

// notify.webhooks at the top, and the keys of one webhook.
void AddWebhookKeys(std::vector<ConfigKey>& k) {
  k.push_back(
      NewKey(kTop, "notify.webhooks", ConfigType::kWebhooks, "", "", "webhooks told of every alarm transition"));
  k.push_back(Text(
      kHook, "url", "", "https://hooks.example.com", "http:// or https:// URL to POST to (may carry a secret token)",
      [](const ConfigTarget& t, const std::string& v) -> Status {
        if (!IsUrl(v) || !ParseUrl(v).ok()) {
          return Bad(fmt::format("{} is not an http:// or https:// URL", RedactedUrl(v)));
        }
        t.webhook->url = v;
        return Status::Ok();
      },
      [](const ConfigTarget& t) { return t.webhook->url; }));
  k.push_back(NewKey(kHook, "headers", ConfigType::kHeaders, "", "", "extra request headers (values are secrets)"));
  k.push_back(Dur<seconds>(kHook, "timeout", seconds(1), minutes(5), FormatDuration(WebhookConfig().timeout), "30s",
                           "per request", [](const ConfigTarget& t) -> seconds& { return t.webhook->timeout; }));
  k.push_back(BoolKey(kHook, "notify_on_startup", "false", "true", "also post an alarm's first INSUFFICIENT_DATA -> OK",
                      [](const ConfigTarget& t) -> bool& { return t.webhook->notify_on_startup; }));
}

// Where and how archive objects are written.
void AddDestinationKeys(std::vector<ConfigKey>& k) {
  const GroupSettings ds;
  k.push_back(Text(
      kSet, "destination", ds.destination, "s3://bucket/prefix", "s3://bucket[/prefix] or file:///dir",
      [](const ConfigTarget& t, const std::string& v) -> Status {
        DLQ_RETURN_IF_ERROR(ParseDestination(v).status());
        t.settings->destination = v;
        return Status::Ok();
      },
      [](const ConfigTarget& t) { return t.settings->destination; }));
  k.push_back(Text(
      kSet, "key_template", ds.key_template_text, "hive", "object key template: default, hive or a template",
      [](const ConfigTarget& t, const std::string& v) -> Status {
        std::string_view text = v == "default" ? kDefaultKeyTemplate : v == "hive" ? kHiveKeyTemplate : v;
        auto parsed = KeyTemplate::Parse(text);
        if (!parsed.ok()) return Bad(fmt::format("{}: {} (or use default, hive)", Quote(v), parsed.status().message()));
        t.settings->key_template_text = v;
        t.settings->key_template = *parsed;
        return Status::Ok();
      },
      [](const ConfigTarget& t) { return t.settings->key_template_text; }));
  k.push_back(Choice(
      kSet, "sse", {"", "AES256", "aws:kms"}, ds.put.sse, "aws:kms", "server-side encryption of archive objects",
      [](const ConfigTarget& t, size_t i) {
        t.settings->put.sse = std::array{"", "AES256", "aws:kms"}[i];
      },
      [](const ConfigTarget& t) -> size_t {
        return t.settings->put.sse == "AES256" ? 1 : t.settings->put.sse == "aws:kms" ? 2 : 0;
      }));
  k.push_back(Str(kSet, "sse_kms_key_id", ds.put.sse_kms_key_id, "alias/archive", "KMS key for sse: aws:kms",
                  [](const ConfigTarget& t) -> std::string& { return t.settings->put.sse_kms_key_id; }));
  k.push_back(Str(
      kSet, "storage_class", ds.put.storage_class, "STANDARD_IA", "S3 storage class of archive objects",
      [](const ConfigTarget& t) -> std::string& { return t.settings->put.storage_class; }, CheckStorageClass));
}

void AddBatchKeys(std::vector<ConfigKey>& k) {
  const GroupSettings ds;
  k.push_back(Int<size_t>(kSet, "batch.max_messages", 1, 10'000'000, std::to_string(ds.batch.max_messages), "500",
                          "messages per archive object",
                          [](const ConfigTarget& t) -> size_t& { return t.settings->batch.max_messages; }));
  k.push_back(Size<size_t>(kSet, "batch.max_bytes", 1024, 1 << 30, std::to_string(ds.batch.max_bytes), "1048576",
                           "uncompressed JSON bytes per archive object",
                           [](const ConfigTarget& t) -> size_t& { return t.settings->batch.max_bytes; }));
  k.push_back(Dur<std::chrono::milliseconds>(
      kSet, "batch.max_age", seconds(1), hours(12),
      FormatDuration(std::chrono::duration_cast<seconds>(ds.batch.max_age)), "2m",
      "longest an object stays open before upload",
      [](const ConfigTarget& t) -> std::chrono::milliseconds& { return t.settings->batch.max_age; }));
  k.push_back(Int<int>(kSet, "batch.gzip_level", 0, 12, std::to_string(ds.batch.gzip_level), "6", "gzip level",
                       [](const ConfigTarget& t) -> int& { return t.settings->batch.gzip_level; }));
}

void AddReceiveKeys(std::vector<ConfigKey>& k) {
  const GroupSettings ds;
  k.push_back(Dur<seconds>(kSet, "visibility_timeout", seconds(10), hours(12), FormatDuration(ds.visibility_timeout),
                           "5m", "visibility timeout of received messages (the heartbeat extends it)",
                           [](const ConfigTarget& t) -> seconds& { return t.settings->visibility_timeout; }));
  k.push_back(Int<int>(kSet, "receivers", 1, 64, std::to_string(ds.receivers), "8",
                       "ReceiveMessage loops per archive run, at most: a standard queue's run uses as many as raise "
                       "its rate (2, doubled while a doubling pays)",
                       [](const ConfigTarget& t) -> int& { return t.settings->receivers; }));
  k.push_back(BoolKey(kSet, "fixed_receivers", ds.fixed_receivers ? "true" : "false", "true",
                      "receive with all `receivers`, always",
                      [](const ConfigTarget& t) -> bool& { return t.settings->fixed_receivers; }));
}

// Which messages a run archives, and where the expiry alarm reads ages.
void AddPolicyKeys(std::vector<ConfigKey>& k) {
  const GroupSettings ds;
  k.push_back(Choice(
      kSet, "policy.select", {"auto", "all", "older-than", "expiring-within"}, "auto", "older-than",
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
  k.push_back(Dur<seconds>(kSet, "policy.window", seconds(0), seconds(0), FormatDuration(ds.policy.window), "1d",
                           "with older-than or expiring-within",
                           [](const ConfigTarget& t) -> seconds& { return t.settings->policy.window; }));
  k.push_back(BoolKey(kSet, "cloudwatch_age", ds.cloudwatch_age ? "true" : "false", "true",
                      "the expiry alarm reads ApproximateAgeOfOldestMessage from CloudWatch",
                      [](const ConfigTarget& t) -> bool& { return t.settings->cloudwatch_age; }));
}

// "GROUP" or "QUEUE=GROUP": a CloudWatch Logs group name (1-512 of
// [A-Za-z0-9._/#-]), for every queue or for one.
Status CheckConsumerLogs(const std::string& entry) {
  const size_t eq = entry.find('=');
  const std::string group = eq == std::string::npos ? entry : entry.substr(eq + 1);
  if (eq != std::string::npos && eq == 0) return Bad(fmt::format("{}: the queue before '=' is empty", Quote(entry)));
  if (group.empty() || group.size() > 512) {
    return Bad(fmt::format("{}: a log group name is 1 to 512 characters", Quote(entry)));
  }
  for (char c : group) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '/' || c == '#' || c == '-')) {
      return Bad(
          fmt::format("{}: a log group name holds only letters, digits and . _ / # - (write QUEUE=GROUP for "
                      "one queue)",
                      Quote(entry)));
    }
  }
  return Status::Ok();
}

// Causes from the consumers' logs (doc/causes.md).
void AddCauseKeys(std::vector<ConfigKey>& k) {
  const GroupSettings ds;
  k.push_back(Choice(
      kSet, "causes", {"auto", "on", "off"}, "auto", "off",
      "look up why archived messages failed in their consumers' CloudWatch logs: auto (when the permissions are "
      "there), on, off",
      [](const ConfigTarget& t, size_t i) {
        t.settings->causes =
            std::array{GroupSettings::Causes::kAuto, GroupSettings::Causes::kOn, GroupSettings::Causes::kOff}[i];
      },
      [](const ConfigTarget& t) -> size_t { return static_cast<size_t>(t.settings->causes); }));
  k.push_back(Int<int>(kSet, "cause_samples", 1, 50, std::to_string(ds.cause_samples), "5",
                       "messages of each failure group whose cause is looked up",
                       [](const ConfigTarget& t) -> int& { return t.settings->cause_samples; }));
  k.push_back(List(
      "consumer_logs",
      "log groups of consumers that are not Lambda functions (ECS, EC2, Kubernetes): GROUP for every queue, "
      "QUEUE=GROUP for one",
      [](const ConfigTarget& t) -> std::vector<std::string>& { return t.settings->consumer_logs; }, CheckConsumerLogs,
      kSet, "[/ecs/orders-service, payments-dlq=/eks/payments]"));
}

// alarms.expiry.threshold: "auto" or an age.
ConfigKey ExpiryThresholdKey(const std::string& key, const Ref<AlarmSettings>& alarm) {
  return Text(
      kSet, key, "auto", "4h",
      "age of the oldest message that raises the alarm; auto: max(retention of the DLQ and its sources) - "
      "safety_margin",
      [alarm](const ConfigTarget& t, const std::string& text) -> Status {
        AlarmSettings& a = alarm(t);
        if (text == "auto") {
          a.threshold_auto = true;
          return Status::Ok();
        }
        std::optional<seconds> d = text.size() <= 32 ? ParseDuration(text) : std::nullopt;
        if (!d) return Bad(fmt::format("{} is not a duration (e.g. 60s, 5m)", Quote(text)));
        if (d->count() < 1) return Bad("must be at least 1s");
        a.threshold_auto = false;
        a.threshold = static_cast<double>(d->count());
        return Status::Ok();
      },
      [alarm](const ConfigTarget& t) {
        const AlarmSettings& a = alarm(t);
        return a.threshold_auto ? std::string("auto") : FormatDuration(seconds(std::llround(a.threshold)));
      },
      "expected auto or a duration");
}

// alarms.depth.threshold: a message count.
ConfigKey DepthThresholdKey(const std::string& key, const Ref<AlarmSettings>& alarm) {
  return Text(
      kSet, key, "1", "25.5", "message count (ApproximateNumberOfMessages) that raises the alarm",
      [alarm](const ConfigTarget& t, const std::string& text) -> Status {
        double x = 0;
        auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
        if (ec != std::errc() || p != text.data() + text.size() || text.empty() || !std::isfinite(x) || x < 0) {
          return Bad(text == "auto" ? std::string("auto is only for the expiry alarm; give a message count")
                                    : fmt::format("{} is not a non-negative number", Quote(text)));
        }
        alarm(t).threshold_auto = false;
        alarm(t).threshold = x;
        return Status::Ok();
      },
      [alarm](const ConfigTarget& t) { return fmt::format("{}", alarm(t).threshold); }, "expected a number");
}

// How an alarm decides (CloudWatch's terms) and what the daemon then does.
void AddAlarmBehaviourKeys(std::vector<ConfigKey>& k, const std::string& base, bool expiry,
                           const Ref<AlarmSettings>& alarm) {
  using M = AlarmSettings::MissingData;
  using A = AlarmSettings::Action;
  const AlarmSettings d = expiry ? AlarmsConfig().expiry : AlarmsConfig().depth;
  k.push_back(Choice(
      kSet, base + "treat_missing_data", {"missing", "breaching", "notBreaching", "ignore"},
      std::string(MissingDataName(d.treat_missing_data)), expiry ? "breaching" : "ignore",
      "how periods without data count (CloudWatch TreatMissingData)",
      [alarm](const ConfigTarget& t, size_t i) {
        alarm(t).treat_missing_data = std::array{M::kMissing, M::kBreaching, M::kNotBreaching, M::kIgnore}[i];
      },
      [alarm](const ConfigTarget& t) { return static_cast<size_t>(alarm(t).treat_missing_data); }));
  k.push_back(Choice(
      kSet, base + "action", {"notify", "copy", "archive"}, std::string(AlarmActionName(d.action)),
      expiry ? "copy" : "archive", "what the daemon does while the alarm is in ALARM",
      [alarm](const ConfigTarget& t, size_t i) {
        alarm(t).action = std::array{A::kNotify, A::kCopy, A::kArchive}[i];
      },
      [alarm](const ConfigTarget& t) { return static_cast<size_t>(alarm(t).action); }));
}

// alarms.expiry.* or alarms.depth.*.
void AddAlarmKeys(std::vector<ConfigKey>& k, bool expiry) {
  const std::string base = expiry ? "alarms.expiry." : "alarms.depth.";
  const AlarmSettings d = expiry ? AlarmsConfig().expiry : AlarmsConfig().depth;
  Ref<AlarmSettings> alarm = [expiry](const ConfigTarget& t) -> AlarmSettings& {
    return expiry ? t.settings->alarms.expiry : t.settings->alarms.depth;
  };
  k.push_back(BoolKey(kSet, base + "enabled", "true", "false", "whether the alarm is evaluated at all",
                      [alarm](const ConfigTarget& t) -> bool& { return alarm(t).enabled; }));
  k.push_back(expiry ? ExpiryThresholdKey(base + "threshold", alarm) : DepthThresholdKey(base + "threshold", alarm));
  k.push_back(Dur<seconds>(kSet, base + "period", seconds(1), hours(24), FormatDuration(d.period), "2m",
                           "length of one evaluation period",
                           [alarm](const ConfigTarget& t) -> seconds& { return alarm(t).period; }));
  k.push_back(Int<int>(kSet, base + "evaluation_periods", 1, 10000, std::to_string(d.evaluation_periods), "7",
                       "periods looked at",
                       [alarm](const ConfigTarget& t) -> int& { return alarm(t).evaluation_periods; }));
  k.push_back(Int<int>(kSet, base + "datapoints_to_alarm", 1, 10000, std::to_string(d.datapoints_to_alarm), "2",
                       "breaching periods (of evaluation_periods) that raise the alarm",
                       [alarm](const ConfigTarget& t) -> int& { return alarm(t).datapoints_to_alarm; }));
  if (expiry) {
    k.push_back(Dur<seconds>(kSet, base + "safety_margin", seconds(0), seconds(0), FormatDuration(d.safety_margin),
                             "2h", "with threshold: auto, how long before expiry the alarm fires",
                             [alarm](const ConfigTarget& t) -> seconds& { return alarm(t).safety_margin; }));
  }
  AddAlarmBehaviourKeys(k, base, expiry, alarm);
}

// A group's name and the account, region and credentials it reads with.
void AddGroupAccessKeys(std::vector<ConfigKey>& k) {
  k.push_back(Text(
      kGrp, "name", "", "orders", "the group's name (1-64 of A-Z a-z 0-9 . _ -), unique",
      [](const ConfigTarget& t, const std::string& v) -> Status {
        bool ok = !v.empty() && v.size() <= 64 && std::all_of(v.begin(), v.end(), IsNameChar);
        if (!ok) return Bad(fmt::format("{} must be 1-64 of A-Z a-z 0-9 . _ -", Quote(v)));
        t.group->name = v;
        return Status::Ok();
      },
      [](const ConfigTarget& t) { return t.group->name; }));
  k.push_back(Str(
      kGrp, "region", "", "eu-west-1", "AWS region (empty: from the environment or profile)",
      [](const ConfigTarget& t) -> std::string& { return t.group->region; }, CheckRegion));
  k.push_back(Str(
      kGrp, "endpoint_url", "", "http://127.0.0.1:4566", "SQS endpoint (stand-ins, tests)",
      [](const ConfigTarget& t) -> std::string& { return t.group->endpoint_url; }, CheckEndpointUrl));
  k.push_back(Str(
      kGrp, "profile", "", "archive", "shared config profile",
      [](const ConfigTarget& t) -> std::string& { return t.group->profile; },
      [](const std::string& v) { return v.empty() ? Bad("must not be empty") : Status::Ok(); }));
  k.push_back(Str(
      kGrp, "role_arn", "", "arn:aws:iam::123456789012:role/archiver", "role to assume (other accounts)",
      [](const ConfigTarget& t) -> std::string& { return t.group->role_arn; }, CheckRoleArn));
  k.push_back(Str(
      kGrp, "external_id", "", "ext-42", "sts:ExternalId for role_arn (a secret: never echoed)",
      [](const ConfigTarget& t) -> std::string& { return t.group->external_id; }, CheckExternalId,
      ConfigType::kSecret));
}

// Which queues a group selects.
void AddSelectorKeys(std::vector<ConfigKey>& k) {
  k.push_back(List(
      "queues", "queue names or URLs; each must exist",
      [](const ConfigTarget& t) -> std::vector<std::string>& { return t.group->queues; }, QueueCheck(false)));
  k.push_back(List(
      "prefixes", "ListQueues name prefixes",
      [](const ConfigTarget& t) -> std::vector<std::string>& { return t.group->prefixes; }, QueueCheck(true)));
  k.push_back(Str(
      kGrp, "regex", "", "^orders-.*-dlq$", "regular expression (RE2 syntax) searched in queue names",
      [](const ConfigTarget& t) -> std::string& { return t.group->regex; }, CheckRegex));
  k.push_back(BoolKey(kGrp, "discover", "false", "true", "every deadLetterTargetArn of a RedrivePolicy",
                      [](const ConfigTarget& t) -> bool& { return t.group->discover; }));
  k.push_back(List(
      "exclude", "queue names or URLs never selected",
      [](const ConfigTarget& t) -> std::vector<std::string>& { return t.group->exclude; }, QueueCheck(false)));
  k.push_back(Int(kGrp, "priority", -1000, 1000, "0", "10",
                  "which group watches a queue that several groups match: the highest priority; equal priorities "
                  "are an error",
                  Ref<int>([](const ConfigTarget& t) -> int& { return t.group->priority; })));
  k.push_back(BoolKey(kGrp, "allow_empty", "false", "true", "selectors matching no queue are not an error for check",
                      [](const ConfigTarget& t) -> bool& { return t.group->allow_empty; }));
}

}  // namespace

std::vector<ConfigKey> BuildSchema() {
  std::vector<ConfigKey> k;
  // The top level.
  AddListenKeys(k);
  AddDashboardKeys(k);
  AddIntervalKeys(k);
  AddConcurrencyKeys(k);
  AddLogKeys(k);
  AddWebhookKeys(k);
  // Settings: under defaults: or in a group.
  AddDestinationKeys(k);
  AddBatchKeys(k);
  AddReceiveKeys(k);
  AddPolicyKeys(k);
  AddCauseKeys(k);
  AddAlarmKeys(k, /*expiry=*/true);
  AddAlarmKeys(k, /*expiry=*/false);
  // In a group only.
  AddGroupAccessKeys(k);
  AddSelectorKeys(k);
  return k;
}

}  // namespace dlq::config_internal
