// The live form of replay (`replay --from-queue DLQ`): receives messages from
// a DLQ, selects them with a predicate (the same Filter as the archive form,
// applied to the record the archiver would write), and hands the selected
// ones to a Replayer. A message leaves the DLQ only after its send was
// confirmed (and MD5-verified); then it is deleted.
//
// A pass examines every message present at its start, the contract of
// archive's selection passes: every message it receives stays held
// (invisible; a heartbeat extends the visibility of those close to running
// out) until the pass ends, so later receives reach messages not seen yet.
// Messages not selected, failed sends and dry-run messages are then released
// together (visibility 0). Counts are of distinct messages (by MessageId): a
// message received again (its visibility lapsed, a delete failed) is held
// again and never examined, selected or sent twice.
//
// The pass has seen everything when `idle_rounds` receives in a row brought
// nothing new while it held everything it had seen, and the queue then shows
// no visible message (ApproximateNumberOfMessages 0). FIFO: SQS hands out a
// group's messages in order and holds back the rest of a group while one of
// its messages is in flight, so messages behind a held (not selected, failed
// or dry-run) message of their group cannot be reached in the same pass;
// they show as visible and the pass ends incomplete, naming them. Selected
// messages are deleted once sent, which frees their group.
//
// Incomplete (LiveReplayStats::complete false, with a reason): messages
// stayed visible after `depth_checks` rounds of such receives, messages are
// in flight that the pass does not hold (another consumer), the depth could
// not be read, or `max_held` was reached. A pass stopped by --max or a stop
// request is neither complete nor incomplete. Memory: the ids seen and a
// receipt handle per held message. Not thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "archive/record.h"
#include "common/clock.h"
#include "replay/redrive_guard.h"
#include "replay/replayer.h"
#include "sqs/queue_info.h"
#include "sqs/sqs_client.h"

namespace dlq {

struct LiveReplayOptions {
  // Set on every receive; extended by the heartbeat when less than half is left.
  int visibility_timeout_seconds = 300;
  int wait_time_seconds = 1;
  int idle_rounds = 3;    // receives in a row with nothing new before the depth is read
  int depth_checks = 10;  // depth reads that still show visible messages before giving up
  // Messages held at once (SQS allows 120,000 in flight); FIFO: at most 20,000, SQS's limit there.
  size_t max_held = 100000;
  bool dry_run = false;  // select and describe; delete nothing, release everything at the end
  const std::atomic<bool>* stop = nullptr;
  // A guarded redrive (the Replayer's gate): while it waits the pass keeps
  // its holds and receives from the DLQ; a message whose MessageId is a new
  // id the guard sent is a re-failure, reported to it and released. Not owned.
  RedriveGuard* guard = nullptr;

  Status Validate() const;
};

struct LiveReplayStats {
  int64_t present_at_start = -1;  // ApproximateNumberOfMessages + ...NotVisible at the start, -1 unknown
  uint64_t examined = 0;          // distinct messages received and put through the filter
  uint64_t received = 0;          // receipts (a message received twice counts twice here only)
  uint64_t receive_calls = 0;
  uint64_t selected = 0;      // distinct messages selected and handed to the Replayer
  uint64_t not_selected = 0;  // distinct messages examined and not selected (held, released at the end)
  uint64_t deleted = 0;
  uint64_t released = 0;         // distinct messages made visible again by this pass
  uint64_t delete_failures = 0;  // sent but still in the DLQ (would be sent again by a later run)
  uint64_t corrupt = 0;          // receipts that failed the MD5 check: released at once, never sent
  uint64_t visibility_extensions = 0;
  uint64_t holds_lost = 0;        // held messages whose visibility could not be extended (received again later)
  uint64_t refailed = 0;          // guarded: messages this run sent found back in the DLQ (released, not sent)
  bool complete = false;          // every message present at the start was examined
  bool at_max = false;            // the Replayer reached its --max
  std::string incomplete_reason;  // set when the pass ended neither complete nor stopped nor at --max
};

// `options` must pass Validate(). Errors (a failed receive, a Replayer error,
// a guard's stop) release everything held first. `so_far`, when given, gets
// the counts of the pass however it ended (a stopped run reports them too).
Result<LiveReplayStats> ReplayFromQueue(QueueClient& sqs, const QueueInfo& dlq, Replayer& replayer,
                                        const std::function<bool(const ArchiveRecord&)>& select, Clock& clock,
                                        const LiveReplayOptions& options, LiveReplayStats* so_far = nullptr);

}  // namespace dlq
