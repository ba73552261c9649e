// Daemon: the loop behind `dlq-archive run`. Every collection interval it
// reads each watched DLQ's attributes, updates metrics, feeds the expiry and
// depth alarms, notifies on every alarm transition, and while any alarm of a
// queue is in ALARM submits an archive run (a QueueDrainer slice bounded by
// max_messages_per_run) to the Scheduler on every sweep, earliest expiry
// first. Nothing depends on a single transition. doc/operations.md explains
// how the expiry estimate is made. With config.shard.count > 1 discovery keeps
// only the queues this shard owns (monitor/shard.h); the others are counted,
// never watched. Parts: what other threads read (DaemonView,
// monitor/daemon_view.h), discovery and the destination checks
// (DaemonDiscovery, monitor/daemon_discovery.h), the state kept across
// restarts (DaemonStateKeeper, monitor/daemon_saved_state.h), the submit
// decision (monitor/daemon_submit.h), one archive run
// (monitor/daemon_archive_job.h), a queue's state (monitor/daemon_state.h),
// the JSON documents (monitor/daemon_json.h).
//
// Thread-safety: RunOnce, Reload and Stop are called from one control thread
// (Run does that); views(), ArchiveNow, health() and the HTTP handlers may be
// called from any thread. Archive jobs run on the scheduler's threads. Everything
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
#include "monitor/cause_worker.h"
#include "monitor/config.h"
#include "monitor/daemon_metrics.h"
#include "monitor/daemon_view.h"
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
class DaemonDiscovery;
class DaemonStateKeeper;
class StateStore;
namespace daemon_internal {
struct GroupState;
struct QueueState;
struct WatchedGroups;
}  // namespace daemon_internal

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
  // Blocks until no archive job is pending or running, and no cause lookup.
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

  // What other threads read: queue status, history, destinations, JSON.
  const DaemonView& views() const { return view_; }
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
  // Registers more routes on the HTTP server before Run() starts it.
  void SetExtraRoutes(std::function<void(HttpServer&)> add) { extra_routes_ = std::move(add); }
  HealthState& health() { return health_; }
  int http_port() const;

 private:
  void Collect(daemon_internal::GroupState& group, daemon_internal::QueueState& q, SystemTime now);
  void MaybeSubmit(daemon_internal::GroupState& group, const std::shared_ptr<daemon_internal::QueueState>& q,
                   SystemTime now, bool transitioned);
  // Hands an archive run of q to the scheduler; `causes`, when set, is the
  // cause lookup to queue after it (its keys and arrivals filled then).
  void Submit(const std::shared_ptr<daemon_internal::QueueState>& q, DaemonArchiveRunSpec spec,
              const std::string& queue_key, SystemTime deadline, bool requested, std::optional<CauseJob> causes);
  // Counts a failed run (metrics, last_error, log). Any thread; `q.mu` must not be held.
  void RecordFailure(const std::string& group, daemon_internal::QueueState& q, const Status& status, SystemTime now,
                     std::string_view event);
  // An archive run's reports (monitor/daemon_archive_job.h), on its threads.
  void RunArchived(daemon_internal::QueueState& q, uint64_t archived);
  void RunFinished(const std::string& group, daemon_internal::QueueState& q, const DaemonArchiveRunReport& r,
                   const std::optional<CauseJob>& causes);
  // The cause lookup of `g`'s runs of `q` (doc/causes.md), or none (causes: off, no Logs or Lambda client).
  std::optional<CauseJob> CauseJobFor(const daemon_internal::GroupState& g, const QueueInfo& q) const;
  // A queue alarm's notification: the messages, the top failure groups, the dashboard links.
  void AddCauses(AlarmNotification& n, int64_t messages) const;

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
  // The watched groups (their mutex guards what other threads read), the
  // view over them, and the parts that keep state and discover.
  std::unique_ptr<daemon_internal::WatchedGroups> watched_;
  DaemonView view_;
  std::unique_ptr<DaemonStateKeeper> state_;
  std::unique_ptr<DaemonDiscovery> discovery_;
  std::unique_ptr<CauseWorker> causes_;  // its own thread: archiving never waits on a lookup
};

}  // namespace dlq
