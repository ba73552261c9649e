// DaemonView: what other threads read of the Daemon (the dashboard, the
// daemon's /api/queues, the overview): snapshots of each queue's status and
// history, a queue's archive access, a group's destination check, and the
// JSON documents made of them. Every call takes the watched groups' mutex
// (and each queue's) for the length of one snapshot; nothing here changes
// what the Daemon watches. Daemon::views() hands out the daemon's view.
//
// Thread-safety: every method may be called from any thread. The Daemon the
// view reads must outlive it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "archive/key_layout.h"
#include "common/clock.h"
#include "monitor/alarm.h"
#include "monitor/discovery.h"
#include "monitor/group_clients.h"
#include "monitor/overview.h"
#include "monitor/queue_history.h"
#include "monitor/state_store.h"

namespace dlq {

namespace daemon_internal {
struct WatchedGroups;
}  // namespace daemon_internal

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

class DaemonView {
 public:
  explicit DaemonView(const daemon_internal::WatchedGroups& watched) : watched_(watched) {}

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
  // The overview table's rows and the groups' problems, as one snapshot
  // (monitor/overview.h); OverviewJson is its JSON, small enough to poll at
  // 1,000 queues.
  Overview BuildOverview() const;
  std::string OverviewJson() const;

 private:
  const daemon_internal::WatchedGroups& watched_;
};

}  // namespace dlq
