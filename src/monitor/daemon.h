// Daemon: the loop behind `dlq-archive run`. Every collection interval it
// reads each watched DLQ's attributes, updates metrics, feeds the expiry and
// depth alarms, notifies on every alarm transition, and while any alarm of a
// queue is in ALARM submits an archive run (a QueueDrainer slice bounded by
// max_messages_per_run) to the Scheduler on every sweep, earliest expiry
// first. Nothing depends on a single transition. doc/operations.md explains
// how the expiry estimate is made. With config.shard.count > 1 discovery keeps
// only the queues this shard owns (monitor/shard.h); the others are counted,
// never watched. Parts: the submit decision (monitor/daemon_submit.h), one
// archive run (monitor/daemon_archive_job.h), a queue's state
// (monitor/daemon_state.h), the JSON documents (monitor/daemon_json.h).
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
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "monitor/alarm.h"
#include "monitor/alarm_plan.h"
#include "monitor/config.h"
#include "monitor/daemon_metrics.h"
#include "monitor/discovery.h"
#include "monitor/group_clients.h"
#include "monitor/notifier.h"
#include "monitor/overview.h"
#include "monitor/queue_history.h"
#include "monitor/safety.h"
#include "monitor/scheduler.h"
#include "monitor/state_store.h"
#include "s3/object_store.h"
#include "server/health.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "sqs/sqs_client.h"

namespace dlq {

struct DaemonArchiveRunReport;
struct DaemonArchiveRunSpec;
class StateStore;

struct DaemonOptions {
  AlarmPlanOptions plan;         // the run budget (plan.max_messages_per_run) and auto-threshold assumptions
  std::string host = "unknown";  // archiver host recorded in archives
  bool serve_http = true;        // Run() starts the HTTP server
  // Called by Reload() (so also at construction) with the webhooks of the
  // configuration it installs (`run` passes WebhookSet::Apply). An error is
  // logged (webhooks_reload_failed) and the previous webhooks stay.
  std::function<Status(const std::vector<WebhookConfig>&)> apply_webhooks;
  size_t history_samples = QueueHistory::kDefaultCapacity;  // per queue, for the dashboard's charts
  // How often a running archive run's counts reach the metrics (archived,
  // deleted, duplicates, objects, bytes), so a long drain shows as it goes;
  // the rest of a run's figures come when it returns. Real time.
  std::chrono::milliseconds progress_interval{5000};
  // Where the state is kept across restarts (not owned; must outlive the
  // Daemon). Null: the Daemon opens config.state_dir's file itself, or keeps
  // state in memory only when state_dir is empty.
  StateStore* state_store = nullptr;
  // How often old state (samples, transitions, unwatched queues) is pruned.
  std::chrono::seconds state_prune_interval{3600};
};

using ArchiveError = StoredError;  // monitor/state_store.h

// The result of the group's destination check (ObjectStore::CheckWritable),
// made when the group starts, on reload, and while it fails, on every discovery.
struct DestinationStatus {
  bool checked = false;
  bool ok = true;           // false: definite failure, the group does not archive
  bool confirmed = true;    // ok but the store could not tell (note says why)
  std::string error;        // when !ok
  std::string code;         // AWS error code or class, when !ok
  std::string error_class;  // when !ok
  std::string note;         // when !confirmed
  std::optional<SystemTime> checked_at;
};

// What the daemon knows about one DLQ (a snapshot, for /api/queues and tests).
struct QueueStatus : ArchiveTotals {
  std::string group;
  DiscoveredQueue queue;
  int64_t visible = -1, not_visible = -1, delayed = -1;
  std::optional<SystemTime> nearest_expiry;  // nearest possible expiry (conservative)
  std::string expiry_unknown;                // why nearest_expiry is unknown ("" when known or empty)
  size_t ledger_messages = 0;                // messages whose expiry the daemon learned
  uint64_t learning_passes = 0;              // receive passes that only learned (kept every message)
  std::optional<SystemTime> oldest_sent;     // oldest SentTimestamp the archiver saw still queued
  std::optional<SystemTime> last_empty;      // last time the queue was seen empty
  double expiry_threshold_s = 0;
  std::vector<std::pair<AlarmSpec, AlarmState>> alarms;
  bool running = false;
  bool failing = false;       // the last run failed (or could not start)
  std::string collect_error;  // last GetQueueAttributes failure, "" after a success
};

// What the dashboard needs to read a queue's archive and act on it: the
// group's clients (kept alive by clients.keepalive) and where it archives.
struct QueueArchiveAccess {
  std::string group;
  DiscoveredQueue queue;
  GroupClients clients;
  std::string destination;  // the group's destination URI
  KeyTemplate key_template;
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
  Status Run(std::atomic<bool>& stop, std::atomic<bool>& reload, const std::function<Result<MonitorConfig>()>& load);

  // {"queues":[{...,"alarms":[{...,"history":[...]}]}]} of every watched queue
  // (only the queue named `queue` when set; without the alarms' history when
  // !history: a smaller document for frequent polls).
  struct QueuesJsonOptions {
    bool history = true;
    std::string queue;
  };
  std::string QueuesJson(const QueuesJsonOptions& options) const;
  std::string QueuesJson() const { return QueuesJson(QueuesJsonOptions{}); }
  std::vector<QueueStatus> Queues() const;
  // The destination check of the group named `group` (nullopt: no such group).
  std::optional<DestinationStatus> Destination(const std::string& group) const;
  // The collected samples of the queue named `queue`, oldest first (nullopt:
  // not watched). Names are looked up across groups; the first match wins.
  std::optional<std::vector<QueueSample>> History(const std::string& queue) const;
  // Status and archive access of the queue named `queue` (nullopt: not watched).
  std::optional<QueueStatus> Queue(const std::string& queue) const;
  std::optional<QueueArchiveAccess> ArchiveAccess(const std::string& queue) const;
  // Asks for an archive run of every message of `queue` (selection all,
  // deleting what is archived) at the next collection, which Run() starts at
  // once; a run already queued or running absorbs the request. kNotFound for
  // a queue not watched. Any thread.
  // When that run ends, an audit record of kind "archive" (src/replay/audit.h:
  // outcome and counts, `requested_by` as the caller) is written to the
  // group's archive, as replay writes its own; a failure to write it is
  // logged (archive_audit_failed).
  Status ArchiveNow(const std::string& queue, const std::string& requested_by = "");
  // Changes whenever what QueuesJson and OverviewJson show may have changed
  // (a collection, a reload, an archive run starting or ending, a failure,
  // ArchiveNow): a reader may cache a document built at one generation until
  // it changes. Any thread.
  uint64_t generation() const { return generation_.load(); }
  // The overview table's rows and the groups' problems, as one snapshot
  // (monitor/overview.h); OverviewJson is its JSON, small enough to poll at
  // 1,000 queues. Any thread.
  Overview BuildOverview() const;
  std::string OverviewJson() const;
  // Registers more routes on the HTTP server before Run() starts it.
  void SetExtraRoutes(std::function<void(HttpServer&)> add) { extra_routes_ = std::move(add); }
  HealthState& health() { return health_; }
  int http_port() const;

 private:
  struct QueueState;
  struct GroupState;

  void Discover(GroupState& group, SystemTime now);
  // Drops from `found` the queues another group wins (GroupOverlap), takes
  // over the state of those `group` wins from the group that watched them,
  // and logs each overlap; returns the equal-priority overlaps as one error
  // ("" when none).
  std::string ResolveOverlaps(GroupState& group, std::vector<DiscoveredQueue>& found);
  // Discovery's parts: the state of a queue found (kept, or new), and the
  // group's new set of queues replacing the old one.
  std::shared_ptr<QueueState> Watch(const GroupState& group, const DiscoveredQueue& dq);
  std::shared_ptr<QueueState> NewQueue(const std::string& group, const DiscoveredQueue& dq);
  void Replace(GroupState& group, std::map<std::string, std::shared_ptr<QueueState>> next, size_t other_shards);
  void Collect(GroupState& group, QueueState& q, SystemTime now);
  void MaybeSubmit(GroupState& group, const std::shared_ptr<QueueState>& q, SystemTime now, bool transitioned);
  // Hands an archive run of q to the scheduler.
  void Submit(const std::shared_ptr<QueueState>& q, DaemonArchiveRunSpec spec, const std::string& queue_key,
              SystemTime deadline, bool requested);
  // Runs the store's CheckWritable, logs and exports the outcome; sets
  // group.destination (and destination_error) under mu_ unless `locked`.
  void CheckDestination(GroupState& group, SystemTime now, bool locked);
  // Counts a failed run (metrics, last_error, log). Any thread; `q.mu` must not be held.
  void RecordFailure(const std::string& group, QueueState& q, const Status& status, SystemTime now,
                     std::string_view event);
  // An archive run's reports (monitor/daemon_archive_job.h), on its threads.
  void RunArchived(QueueState& q, uint64_t archived);
  void RunFinished(const std::string& group, QueueState& q, const DaemonArchiveRunReport& r);
  void Notify(const QueueState& q, const Alarm& alarm, const Transition& t);
  std::vector<AlarmSpec> AlarmsFor(const GroupConfig& g, const DiscoveredQueue& dq, double* expiry_threshold) const;
  // State across restarts (monitor/state_store.h), control thread only:
  // opens the store at construction, restores a queue when it is first
  // watched, saves every watched queue after each collection cycle.
  void OpenState();
  // True when something was kept for the queue.
  bool RestoreQueue(QueueState& q, const std::string& group, const DiscoveredQueue& dq);
  void SaveState(SystemTime now);
  // Every state_prune_interval: prunes the store (ledgers of the queues not in `watched` too, when every
  // group was discovered).
  void PruneState(SystemTime now, std::vector<std::string> watched, bool every_group_discovered);

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
  std::function<void(HttpServer&)> extra_routes_;
  std::atomic<bool> wake_{false};  // ArchiveNow: collect now
  std::atomic<uint64_t> generation_{0};
  std::unique_ptr<StateStore> owned_store_;  // opened from config.state_dir
  StateStore* store_ = nullptr;              // null: state in memory only
  bool save_failing_ = false;                // logs a failing save once until it recovers
  std::optional<SystemTime> last_prune_;

  mutable Mutex mu_;
  std::vector<std::unique_ptr<GroupState>> groups_ DLQ_GUARDED_BY(mu_);  // the control thread replaces it
  ShardSpec shard_ DLQ_GUARDED_BY(mu_);                                  // config_.shard, for readers
};

}  // namespace dlq
