// The live form of replay (`replay --from-queue DLQ`): receives messages from
// a DLQ, selects them with a predicate (the same Filter as the archive form,
// applied to the record the archiver would write), and hands the selected
// ones to a Replayer. A message leaves the DLQ only after its send was
// confirmed (and MD5-verified): sent ones are deleted, failed ones released
// (visibility 0). Messages not selected are released at once. Memory: the
// ids of the messages seen (to tell when a pass has seen everything).
//
// A pass ends when `idle_rounds` receives in a row bring nothing new (SQS
// samples its servers, so an empty receive does not prove the queue empty),
// when the Replayer reaches its --max, or on a stop request. Not thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "archive/record.h"
#include "archiver/drainer.h"
#include "common/clock.h"
#include "replay/replayer.h"
#include "sqs/sqs_client.h"

namespace dlq {

struct LiveReplayOptions {
  int visibility_timeout_seconds = 300;  // held while being sent; released or deleted long before
  int wait_time_seconds = 1;
  int idle_rounds = 3;
  bool dry_run = false;  // release everything, delete nothing
  const std::atomic<bool>* stop = nullptr;
};

struct LiveReplayStats {
  uint64_t received = 0;
  uint64_t selected = 0;
  uint64_t not_selected = 0;  // released at once
  uint64_t deleted = 0;
  uint64_t released = 0;         // selected, then released (failed, dry run, stop)
  uint64_t delete_failures = 0;  // sent but still in the DLQ (would be sent again by a later run)
  uint64_t corrupt = 0;          // failed the receive MD5 check: released, never sent
};

Result<LiveReplayStats> ReplayFromQueue(QueueClient& sqs, const QueueInfo& dlq, Replayer& replayer,
                                        const std::function<bool(const ArchiveRecord&)>& select, Clock& clock,
                                        const LiveReplayOptions& options);

}  // namespace dlq
