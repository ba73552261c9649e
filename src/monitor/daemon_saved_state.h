// DaemonStateKeeper: what the Daemon keeps across restarts
// (monitor/state_store.h): opening the state file, restoring a queue's
// record when it is watched again, saving every queue's changes after a
// collection, pruning what is no longer watched.
//
// Thread-safety: control thread only (the Daemon's constructor, discovery,
// RunOnce and Run). It reads the watched groups under their mutex and each
// queue under its own. The options, clock and groups passed in must outlive it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "monitor/config.h"
#include "monitor/daemon.h"
#include "monitor/daemon_internal.h"
#include "monitor/discovery.h"
#include "monitor/state_store.h"

namespace dlq {

class DaemonStateKeeper {
 public:
  DaemonStateKeeper(const DaemonOptions& options, Clock& clock, const daemon_internal::WatchedGroups& watched);
  DaemonStateKeeper(const DaemonStateKeeper&) = delete;
  DaemonStateKeeper& operator=(const DaemonStateKeeper&) = delete;

  // Takes options.state_store, or opens config.state_dir's file for the
  // config's shard (logged; state in memory only when that fails or
  // state_dir is empty).
  void Open(const MonitorConfig& config);
  // Puts back what was kept of the queue when it is first watched; true when
  // something was kept.
  bool Restore(daemon_internal::QueueState& q, const std::string& group, const DiscoveredQueue& dq);
  // Saves every watched queue's changes since the last save (after each
  // collection cycle), then prunes when state_prune_interval has passed.
  void Save(SystemTime now);

 private:
  // Prunes the store (ledgers of the queues not in `watched` too, when every
  // group was discovered).
  void Prune(SystemTime now, std::vector<std::string> watched, bool every_group_discovered);

  const DaemonOptions& options_;
  Clock& clock_;
  const daemon_internal::WatchedGroups& watched_;
  std::unique_ptr<StateStore> owned_store_;  // opened from config.state_dir
  StateStore* store_ = nullptr;              // null: state in memory only
  bool save_failing_ = false;                // logs a failing save once until it recovers
  std::optional<SystemTime> last_prune_;
};

}  // namespace dlq
