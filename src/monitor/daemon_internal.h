// The Daemon's private state, shared by its parts: daemon.cc (the collection
// cycle, alarms and archive runs), daemon_discovery.cc (DaemonDiscovery: what
// is watched), daemon_saved_state.cc (DaemonStateKeeper: what is kept across
// restarts) and daemon_view.cc (DaemonView: what other threads read). Not
// for use outside the Daemon.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "monitor/daemon.h"
#include "monitor/daemon_state.h"
#include "monitor/shard.h"
#include "monitor/state_store.h"

namespace dlq {

// The key an alarm's state is kept under: its spec, every field that changes
// what it decides.
std::string SpecKey(const AlarmSpec& s);

namespace daemon_internal {

// One watched queue, one part per concern (monitor/daemon_state.h). The
// identity is written by the control thread at discovery under mu and read
// under mu by other threads; the other parts are guarded by mu.
struct QueueState {
  QueueIdentity id;
  mutable Mutex mu;
  QueueObservation seen DLQ_GUARDED_BY(mu);
  QueueAlarms alarms DLQ_GUARDED_BY(mu);
  QueueArchiveRuns archive DLQ_GUARDED_BY(mu);
  // State across restarts: what was kept, until the alarms exist to take
  // it; what the next save appends; the start of the current non-empty streak.
  std::optional<QueueRecord> restored DLQ_GUARDED_BY(mu);
  std::vector<QueueSample> unsaved_samples DLQ_GUARDED_BY(mu);
  std::map<std::string, std::vector<Transition>> unsaved_transitions DLQ_GUARDED_BY(mu);
  std::optional<SystemTime> nonempty_since DLQ_GUARDED_BY(mu);
  uint64_t saved_ledger_generation DLQ_GUARDED_BY(mu) = 0;  // seen.ledger's generation in the store
};

// Written by the control thread; what other threads read (QueuesJson,
// Destination) it writes under WatchedGroups::mu, which an annotation here
// cannot name, so those comments are not checked.
struct GroupState {
  GroupConfig config;
  std::optional<GroupClients> clients;
  std::string error;              // the last discovery failure (written under mu)
  DestinationStatus destination;  // guarded by mu for readers; control thread writes
  Status destination_error;       // the failed check, as a status (control thread)
  bool empty = false;             // the last discovery matched no queue (guarded by mu)
  size_t other_shards = 0;        // matched queues another shard owns (guarded by mu)
  std::optional<SystemTime> last_discovery;
  std::map<std::string, std::shared_ptr<QueueState>> queues;  // by URL
};

// The groups the Daemon watches: the control thread replaces `groups` (and
// writes what other threads read of a group) under mu; DaemonView reads them
// under it.
struct WatchedGroups {
  mutable Mutex mu;
  std::vector<std::unique_ptr<GroupState>> groups DLQ_GUARDED_BY(mu);
  ShardSpec shard DLQ_GUARDED_BY(mu);  // the config's shard, for readers
};

}  // namespace daemon_internal
}  // namespace dlq
