// The daemon's configuration (`dlq-archive run|check --config FILE`): YAML,
// parsed and validated completely before anything starts. Every problem found
// is reported at once, one per line, as "FILE:LINE:COL: field.path: what is
// wrong". Header values (secrets) never appear in errors. ${VAR} in any string
// value is expanded from the given Environment ("$${" is a literal "${").
// Field reference: doc/configuration.md. Parsed values are plain data;
// copying and reading them from many threads is safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "archive/batch_builder.h"
#include "archive/key_layout.h"
#include "archiver/drain_options.h"
#include "aws/environment.h"
#include "common/log.h"
#include "common/status.h"
#include "common/strings.h"  // EditDistance
#include "monitor/shard.h"
#include "s3/object_store.h"

namespace dlq {

// One alarm (CloudWatch semantics: `datapoints_to_alarm` of the last
// `evaluation_periods` periods breach the threshold).
struct AlarmSettings {
  enum class MissingData { kMissing, kBreaching, kNotBreaching, kIgnore };
  // What the daemon does while the alarm is in ALARM (besides notifying on
  // every transition): nothing more; archive a copy once per transition into
  // ALARM, deleting nothing; or archive and delete, again on every sweep.
  enum class Action { kNotify, kCopy, kArchive };

  bool enabled = true;
  // For the expiry alarm, an age in seconds; for the depth alarm, a message
  // count. With threshold_auto (expiry only), the threshold is derived at run
  // time: max(retention of the DLQ and its sources) - safety_margin.
  bool threshold_auto = false;
  double threshold = 0;
  std::chrono::seconds period{60};
  int evaluation_periods = 1;
  int datapoints_to_alarm = 1;
  std::chrono::seconds safety_margin{3600};  // expiry only
  MissingData treat_missing_data = MissingData::kMissing;
  Action action = Action::kArchive;
};

std::string_view MissingDataName(AlarmSettings::MissingData m);  // "missing", "notBreaching", ...
std::string_view AlarmActionName(AlarmSettings::Action a);       // "notify", "copy", "archive"

struct AlarmsConfig {
  // Age of the oldest message (or per-message expiry) vs threshold; archives
  // the messages expiring within its lead window by default.
  AlarmSettings expiry{.threshold_auto = true};
  // ApproximateNumberOfMessages vs threshold; notifies only by default, so
  // the DLQ keeps its messages for a redrive.
  AlarmSettings depth{.threshold = 1,
                      .period = std::chrono::seconds(300),
                      .evaluation_periods = 3,
                      .datapoints_to_alarm = 3,
                      .treat_missing_data = AlarmSettings::MissingData::kNotBreaching,
                      .action = AlarmSettings::Action::kNotify};
};

// Everything `defaults` holds; each group starts from the defaults and
// overrides field by field (nested maps too).
struct GroupSettings {
  std::string destination;                             // "s3://bucket/prefix" or "file:///dir" (validated)
  std::string key_template_text = "default";           // as written: "default", "hive" or a template
  KeyTemplate key_template = KeyTemplate::Default();   // parsed
  PutOptions put = DrainOptions::DefaultPutOptions();  // sse, sse_kms_key_id, storage_class
  BatchLimits batch = DrainOptions::DefaultBatchLimits();
  std::chrono::seconds visibility_timeout{120};
  int receivers = 4;
  bool fixed_receivers = false;  // all `receivers` always, not only as many as raise the rate
  // policy.select: auto (policy_by_alarm, the default): a run started by the
  // expiry alarm takes the messages expiring within the alarm's lead window
  // (retention - threshold + sweep_interval), one started by the depth alarm
  // takes all. Otherwise `policy` applies to every run (all = the reference
  // design: the whole queue); window used by older-than / expiring-within.
  bool policy_by_alarm = true;
  Selection policy;
  bool cloudwatch_age = false;
  AlarmsConfig alarms;
  // Why messages failed, from their consumers' logs (doc/causes.md). auto:
  // looked up when the permissions are there; off: never.
  enum class Causes { kAuto, kOn, kOff };
  Causes causes = Causes::kAuto;
  int cause_samples = 3;  // messages looked up per failure group
  // Log groups of consumers that are not Lambda functions: "GROUP" for every
  // queue of the group, "QUEUE=GROUP" for one queue.
  std::vector<std::string> consumer_logs;
  // The log groups consumer_logs names for `queue` (a name).
  std::vector<std::string> ConsumerLogsFor(const std::string& queue) const;
};

struct GroupConfig : GroupSettings {
  std::string name;
  std::string region;        // empty: the default region of the environment / profile
  std::string endpoint_url;  // optional SQS endpoint (stand-ins, tests)
  std::string profile;
  std::string role_arn;               // optional: assume this role (other accounts)
  std::string external_id;            // only with role_arn
  std::vector<std::string> queues;    // names or URLs; each must exist
  std::vector<std::string> prefixes;  // ListQueues prefixes
  std::string regex;                  // RE2 syntax (common/regex.h), searched in queue names; empty: none
  bool discover = false;              // every deadLetterTargetArn of a RedrivePolicy
  std::vector<std::string> exclude;   // names (or URLs) never selected
  bool allow_empty = false;           // selectors matching no queue: not an error for `check`
  // Which group watches a queue that several groups' selectors match: the
  // highest priority (ResolveGroupOverlaps in monitor/discovery.h).
  int priority = 0;

  // Drain options for queues of this group (selection, batch, key template,
  // key prefix from the destination, put options, visibility, receivers).
  DrainOptions ToDrainOptions() const;
  // The key prefix the destination implies ("" when it has none).
  std::string DestinationPrefix() const;
};

struct WebhookConfig {
  std::string url;
  std::map<std::string, std::string> headers;  // values may be secrets: never log them
  std::chrono::seconds timeout{5};
  bool notify_on_startup = false;  // also post an alarm's first INSUFFICIENT_DATA -> OK
};

struct MonitorConfig {
  std::string path;  // the file it came from (or the name given to ParseMonitorConfig)
  std::string listen_host = "127.0.0.1";
  int listen_port = 9464;  // 0: any free port
  std::chrono::seconds collection_interval{60};
  std::chrono::seconds sweep_interval{300};
  std::chrono::seconds discovery_interval{600};
  int concurrency_global = 8;
  int concurrency_per_queue = 2;
  // This replica's share of the queues (monitor/shard.h); index < count.
  ShardSpec shard;
  // Where the daemon keeps its state (monitor/state_store.h), one file per
  // shard; empty: in memory only, lost at exit. Read at start only.
  std::string state_dir;
  LogLevel log_level = LogLevel::kInfo;
  LogFormat log_format = LogFormat::kJson;
  std::vector<WebhookConfig> webhooks;
  // Enables the dashboard's actions (archive now, replay); a secret, never
  // logged or echoed. Empty: the dashboard is read-only.
  std::string dashboard_write_token;
  // Guards message content on the dashboard (dashboard.h); a secret.
  std::string dashboard_read_token;
  // Host header names accepted besides IP literals, localhost and the listen
  // host (server/http_server.h).
  std::vector<std::string> dashboard_hosts;
  // The dashboard's address as people reach it ("https://dlq.example.com"):
  // notifications link there. Empty: no links.
  std::string dashboard_url;
  // The dashboard's failure-group fields (query/fingerprint.h); empty: the defaults.
  std::vector<std::string> dashboard_fingerprint_fields;
  // Bounds on a dashboard request that reads the archive (DashboardOptions).
  std::chrono::seconds dashboard_scan_deadline{10};
  uint64_t dashboard_request_memory = uint64_t{64} << 20;
  int dashboard_max_scans = 2;
  GroupSettings defaults;
  std::vector<GroupConfig> groups;
};

// The schema: every key the file accepts, in one table (ConfigSchema(), built
// in config_schema.cc). The parser (config_parse.cc) walks a mapping with it:
// unknown keys, type and range errors, and the stored value all come from a
// key's entry; checks that span several keys (per_queue <= global,
// external_id needs role_arn, ...; config_checks.cc) come after.
enum class ConfigScope {
  kTop,       // top level (nested keys such as "concurrency.global" are mappings)
  kSettings,  // under defaults: or in a group (GroupSettings)
  kGroup,     // in a group only (GroupConfig)
  kWebhook,   // in one item of notify.webhooks
};
enum class ConfigType {
  kString,
  kSecret,    // a string never echoed in errors
  kInt,       // whole number in [lo, hi]
  kBool,      // true or false
  kDuration,  // "90s", "5m", ...; in [lo, hi] seconds unless both are 0
  kSize,      // "8MiB", "1048576"; in [lo, hi] bytes
  kChoice,    // one of `choices`
  kList,      // a string or a list of strings
  kWebhooks,  // notify.webhooks: a list of kWebhook mappings
  kHeaders,   // a webhook's header map (values are secrets)
};
// Where a key's value goes; the pointer of the key's scope is set.
struct ConfigTarget {
  MonitorConfig* config = nullptr;
  GroupSettings* settings = nullptr;
  GroupConfig* group = nullptr;
  WebhookConfig* webhook = nullptr;
};
// A value that passed its key's type and range checks (the member for the type is set).
struct ConfigValue {
  std::string text;  // kString, kSecret, kChoice
  int64_t number = 0;
  bool flag = false;
  std::chrono::seconds duration{0};
  uint64_t bytes = 0;
  std::vector<std::string> list;
};
struct ConfigKey {
  ConfigScope scope;
  std::string key;  // dotted path below its scope, e.g. "batch.max_age"
  ConfigType type;
  int64_t lo = 0, hi = 0;                 // kInt, kDuration (seconds), kSize (bytes)
  std::vector<std::string_view> choices;  // kChoice
  std::string default_text;               // the built-in default, as get() renders it
  std::string example;                    // a valid non-default value, as get() renders it
  std::string doc;
  // Stores a checked value; kInvalidArgument saying what is wrong with it
  // (nothing is stored then).
  std::function<Status(const ConfigTarget&, const ConfigValue&)> set;
  // The stored value as YAML text that sets it (empty for kWebhooks, kHeaders).
  std::function<std::string(const ConfigTarget&)> get;
  // kList: kInvalidArgument saying what is wrong with one item, reported at the item.
  std::function<Status(const std::string&)> check_item;
  // Message for a value that is not a scalar (empty: "expected a string").
  std::string_view not_scalar;
};
const std::vector<ConfigKey>& ConfigSchema();

// Deepest YAML nesting accepted (checked on the raw text before yaml-cpp,
// whose parser recurses once per level).
inline constexpr int kMaxConfigDepth = 64;
// Largest config accepted.
inline constexpr size_t kMaxConfigBytes = 4u << 20;
// Most a config may expand to while it is read: every scalar's text, each
// time it is used (a YAML alias repeats its anchor's text), every ${VAR}
// value substituted, 16 bytes per mapping entry and list item, and the
// error messages. A larger one is refused, naming the file, line and
// column where the limit was passed. Real configs expand to about their own size.
inline constexpr size_t kMaxExpandedConfigBytes = 64u << 20;

// kInvalidArgument with every problem, one per line; never throws.
Result<MonitorConfig> ParseMonitorConfig(std::string_view text, const std::string& path, const Environment& env);
// Reads `path` (kNotFound / kPermissionDenied naming it) and parses it.
Result<MonitorConfig> LoadMonitorConfig(const std::string& path, const Environment& env);

}  // namespace dlq
