// The Daemon's documents: /api/queues (QueuesJsonWriter) and the overview's
// rows (OverviewRow, whose JSON is monitor/overview.h's), written from the
// parts of a queue's state (monitor/daemon_state.h) and plain group
// snapshots. The caller holds each queue's mutex while passing its parts;
// nothing here locks, reads a clock or does I/O.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "common/json_writer.h"
#include "monitor/daemon.h"
#include "monitor/daemon_state.h"
#include "monitor/overview.h"
#include "monitor/shard.h"

namespace dlq {

// One group as /api/queues shows it.
struct QueuesJsonGroup {
  std::string name;
  std::string error;  // the last discovery failure, "" after a success
  size_t queues = 0;
  size_t other_shards = 0;
  bool empty = false;  // the last discovery matched no queue
  std::string destination_uri;
  DestinationStatus destination;
};

// {"queues":[...],"failing":[...],"groups":[...],"shard":{...}}: AddQueue for
// every queue shown, in order, then Finish once.
class QueuesJsonWriter {
 public:
  explicit QueuesJsonWriter(bool history);  // history: the alarms' transitions too

  void AddQueue(const QueueIdentity& id, const QueueObservation& seen, const QueueAlarms& alarms,
                const QueueArchiveRuns& archive);
  std::string Finish(const std::vector<QueuesJsonGroup>& groups, const ShardSpec& shard);

 private:
  void WriteAlarms(const QueueAlarms& alarms);

  JsonWriter w_;
  const bool history_;
  std::vector<std::pair<std::string, std::string>> failing_;  // (group, queue) whose last run failed or could not start
};

// The overview table's row of one queue.
OverviewQueue OverviewRow(const QueueIdentity& id, const QueueObservation& seen, const QueueAlarms& alarms,
                          const QueueArchiveRuns& archive);

}  // namespace dlq
