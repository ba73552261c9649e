// Daemon: the loop behind `dlq-archive run`. Every collection interval it
// reads each watched DLQ's attributes, updates metrics, feeds the expiry and
// depth alarms, notifies on every alarm transition, and while any alarm of a
// queue is in ALARM submits an archive run (a QueueDrainer slice bounded by
// max_messages_per_run) to the Scheduler on every sweep, earliest expiry
// first. Nothing depends on a single transition. doc/operations.md explains
// how the expiry estimate is made.
//
// Thread-safety: RunOnce, Reload and Stop are called from one control thread
// (Run does that); QueuesJson, health() and the HTTP handlers may be called
// from any thread. Archive jobs run on the scheduler's threads. Everything
// passed in by reference must outlive the Daemon.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "monitor/alarm.h"
#include "monitor/config.h"
#include "monitor/discovery.h"
#include "monitor/notifier.h"
#include "monitor/safety.h"
#include "monitor/scheduler.h"
#include "s3/object_store.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "sqs/sqs_client.h"

namespace dlq {

class CloudWatchClient;

// The clients one group works with. The pointers stay valid as long as
// `keepalive` (which owns what they point into, or is empty when the caller
// owns them for the daemon's lifetime).
struct GroupClients {
  QueueClient* sqs = nullptr;
  ObjectStore* store = nullptr;
  CloudWatchClient* cloudwatch = nullptr;  // optional: for cloudwatch_age
  std::string default_region;
  std::string destination_uri;  // e.g. "s3://bucket/" for logs
  std::shared_ptr<void> keepalive;
};
using GroupClientsFactory = std::function<Result<GroupClients>(const GroupConfig&)>;

struct DaemonOptions {
  uint64_t max_messages_per_run = 10000;  // budget of one archive slice
  std::string host = "unknown";           // archiver host recorded in archives
  bool serve_http = true;                 // Run() starts the HTTP server
  // Assumed backlog for auto thresholds (see DeriveExpiryThreshold).
  int64_t assumed_depth = 10000;
  double assumed_drain_rate = 5;
};

// What the daemon knows about one DLQ (a snapshot, for /api/queues and tests).
struct QueueStatus {
  std::string group;
  DiscoveredQueue queue;
  int64_t visible = -1, not_visible = -1, delayed = -1;
  std::optional<SystemTime> nearest_expiry;  // nearest possible expiry (conservative)
  std::optional<SystemTime> oldest_sent;     // oldest SentTimestamp the archiver saw still queued
  std::optional<SystemTime> last_empty;      // last time the queue was seen empty
  double expiry_threshold_s = 0;
  std::vector<std::pair<AlarmSpec, AlarmState>> alarms;
  uint64_t runs = 0, archived = 0;
  bool running = false;
  std::string last_error;
};

class Daemon {
 public:
  Daemon(MonitorConfig config, GroupClientsFactory factory, Notifier& notifier, Clock& clock,
         metrics::Registry& registry, DaemonMetrics& metrics, DaemonOptions options = {});
  ~Daemon();  // Stop()s
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // One collection cycle at clock.Now(): discovery when due, attributes,
  // alarms, notifications, archive submissions. Errors of one group or queue
  // are logged and counted; the cycle goes on with the others.
  void RunOnce();
  // Blocks until no archive job is pending or running.
  void WaitIdle();
  // Replaces the configuration (already validated). Queues of removed groups
  // stop being watched; alarm state of queues still watched is kept when
  // their alarm settings are unchanged.
  void Reload(MonitorConfig config);
  // Stops the scheduler: running drainers are asked to stop and finish what
  // is in flight; pending jobs are dropped. Idempotent.
  void Stop();

  // Loops RunOnce every collection_interval until `stop`; on `reload` calls
  // `load` and Reload()s with its result (keeping the old config on error).
  // Serves HTTP when options.serve_http. Returns non-OK only when the HTTP
  // server cannot start.
  Status Run(std::atomic<bool>& stop, std::atomic<bool>& reload, std::function<Result<MonitorConfig>()> load);

  // {"queues":[{...,"alarms":[{...,"history":[...]}]}]} of every watched queue.
  std::string QueuesJson() const;
  std::vector<QueueStatus> Queues() const;
  HealthState& health() { return health_; }
  int http_port() const;

 private:
  struct QueueState;
  struct GroupState;

  void Discover(GroupState& group, SystemTime now);
  void Collect(GroupState& group, QueueState& q, SystemTime now);
  void MaybeSubmit(GroupState& group, const std::shared_ptr<QueueState>& q, SystemTime now, bool transitioned);
  void Notify(const QueueState& q, const Alarm& alarm, const Transition& t, std::optional<double> value);
  std::vector<AlarmSpec> AlarmsFor(const GroupConfig& g, const DiscoveredQueue& dq, double* expiry_threshold) const;

  MonitorConfig config_;  // control thread only
  GroupClientsFactory factory_;
  Notifier& notifier_;
  Clock& clock_;
  metrics::Registry& registry_;
  DaemonMetrics& metrics_;
  DaemonOptions options_;
  HealthState health_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<HttpServer> http_;

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<GroupState>> groups_;  // guarded by mu_ (structure); control thread mutates
};

// The alarms one DLQ gets under `group` (threshold_auto resolved with
// DeriveExpiryThreshold; when no safe threshold exists, 1 s, i.e. alarm as
// soon as anything may be queued) and the safety analysis input matching what
// the daemon does. Pure; shared by `run` and `check`.
struct QueueAlarmPlan {
  std::optional<AlarmSpec> expiry;
  std::optional<AlarmSpec> depth;
  std::string threshold_source;  // how the expiry threshold was chosen, with numbers
  QueueSafetyInput safety;       // expiry_alarm = the expiry spec
};
QueueSafetyInput SafetyInputFor(const MonitorConfig& config, const GroupConfig& group, const DiscoveredQueue& q,
                                const DaemonOptions& options);
QueueAlarmPlan PlanAlarms(const MonitorConfig& config, const GroupConfig& group, const DiscoveredQueue& q,
                          const DaemonOptions& options);

// The webhook notifier for the config's `notify.webhooks` (nullptr when none).
Result<std::unique_ptr<Notifier>> MakeConfiguredNotifier(const MonitorConfig& config, HttpTransport& transport,
                                                         Clock& clock);

}  // namespace dlq
