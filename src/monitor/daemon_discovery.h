// DaemonDiscovery: what the Daemon watches. Discovers each group's queues
// (monitor/discovery.h) when due, settles queues two groups match
// (GroupOverlap), keeps only those this shard owns, plans each queue's alarms
// (monitor/alarm_plan.h) keeping the state of alarms whose spec did not
// change, restores a newly watched queue's kept state, and checks each
// group's destination (on start, reload, and while it fails, on every
// discovery), notifying when that check starts failing or recovers.
//
// Thread-safety: control thread only. It writes what other threads read
// (a group's queues, error and destination check) under the watched groups'
// mutex. Everything passed in by reference must outlive it.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "monitor/config.h"
#include "monitor/daemon.h"
#include "monitor/daemon_internal.h"
#include "monitor/daemon_metrics.h"
#include "monitor/daemon_saved_state.h"
#include "monitor/discovery.h"
#include "monitor/notifier.h"

namespace dlq {

class DaemonDiscovery {
 public:
  // `config` is the Daemon's current configuration (replaced by Reload).
  DaemonDiscovery(const MonitorConfig& config, const DaemonOptions& options, Notifier& notifier, DaemonMetrics& metrics,
                  daemon_internal::WatchedGroups& watched, DaemonStateKeeper& state);
  DaemonDiscovery(const DaemonDiscovery&) = delete;
  DaemonDiscovery& operator=(const DaemonDiscovery&) = delete;

  // Discovers the group's queues and replaces what it watches (a failure
  // keeps what was found before and is the group's error).
  void Discover(daemon_internal::GroupState& group, SystemTime now);
  // Runs the store's CheckWritable, logs and exports the outcome; sets
  // group.destination (and destination_error) under the groups' mutex unless
  // `locked` (the caller holds it).
  void CheckDestination(daemon_internal::GroupState& group, SystemTime now, bool locked);

 private:
  using QueueMap = std::map<std::string, std::shared_ptr<daemon_internal::QueueState>>;

  // Drops from `found` the queues another group wins (GroupOverlap), takes
  // over the state of those `group` wins from the group that watched them,
  // and logs each overlap; returns the equal-priority overlaps as one error
  // ("" when none).
  std::string ResolveOverlaps(daemon_internal::GroupState& group, std::vector<DiscoveredQueue>& found);
  // Discovery's parts: the state of a queue found (kept, or new), and the
  // group's new set of queues replacing the old one.
  std::shared_ptr<daemon_internal::QueueState> Watch(const daemon_internal::GroupState& group,
                                                     const DiscoveredQueue& dq);
  std::shared_ptr<daemon_internal::QueueState> NewQueue(const std::string& group, const DiscoveredQueue& dq);
  void Replace(daemon_internal::GroupState& group, QueueMap next, size_t other_shards);

  const MonitorConfig& config_;
  const DaemonOptions& options_;
  Notifier& notifier_;
  DaemonMetrics& metrics_;
  daemon_internal::WatchedGroups& watched_;
  DaemonStateKeeper& state_;
};

}  // namespace dlq
