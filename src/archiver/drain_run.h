// DrainRun: the state one drain run's threads share (receivers, uploaders,
// the heartbeat and Run itself). Flags, counters and the visibility ledger
// are read and written without a lock; the batches, the selection pass,
// FIFO turns and the outcome are guarded by `mu`, and `cv` is notified of
// every change to them and of every stop. Owned by the QueueDrainer, whose
// parts (Receivers) hold a reference; sqs, queue and options must outlive it.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "archiver/batch_pipeline.h"
#include "archiver/copy_ledger.h"
#include "archiver/drain_options.h"
#include "archiver/drain_stats.h"
#include "archiver/fifo_turns.h"
#include "archiver/queue_depth.h"
#include "archiver/selection_pass.h"
#include "archiver/visibility_ledger.h"
#include "common/mutex.h"
#include "common/status.h"
#include "sqs/queue_info.h"
#include "sqs/sqs_client.h"

namespace dlq {

struct DrainRun {
  DrainRun(QueueClient& sqs, const QueueInfo& queue, const DrainOptions& options, BatchPipeline::MakeBuilder make);

  // Stop receiving; a stop that does not let receives finish
  // (finish_receives_on_stop) abandons those in flight.
  void RequestStop();
  // The first error ends the run: receiving stops, receives are abandoned.
  void Fail(const Status& status) DLQ_EXCLUDES(mu);
  // Ends the run as incomplete (the first reason stays).
  void MarkIncomplete(std::string reason) DLQ_EXCLUDES(mu);
  // A stop requested or an error: release instead of archiving.
  bool Aborting() const DLQ_EXCLUDES(mu);
  bool AbortingLocked() const DLQ_REQUIRES(mu) { return stop_requested || !first_error.ok(); }
  // A batch or released messages left the pipeline: their FIFO groups are free.
  void NoteFifoLeave() DLQ_EXCLUDES(mu);
  // Messages this run holds that block their FIFO group until the pipeline
  // is done with them (not examined or set-aside ones), plus those in hand.
  size_t PipelineHeldLocked() const DLQ_REQUIRES(mu);
  // ApproximateNumberOfMessages / ...NotVisible, also kept in the counters;
  // nullopt (logged) when the call fails or the reply lacks them.
  std::optional<QueueDepth> ReadCounts();

  QueueClient& sqs;
  const QueueInfo& queue;
  const DrainOptions& options;

  // Read and written by any thread without a lock.
  DrainCounters counters;
  // Internally synchronized. What the run did with each message it took, so
  // copies SQS hands out again count once (archived, deleted).
  CopyLedger copies{counters};
  std::atomic<bool> stop{false};  // stop receiving (requested, drained, limit or error)
  std::atomic<bool> stop_requested{false};
  std::atomic<bool> abort_receives{false};    // a stop or an error: abandon receives in flight
  std::atomic<bool> queue_seen_empty{false};  // receivers ended on an empty queue
  std::atomic<int64_t> in_hand{0};            // received, not yet in a batch, held or released
  // Internally synchronized. Receives and visibility changes: when what this
  // run put in flight is visible again, and which empty receives looked
  // after that.
  VisibilityLedger ledger;

  mutable Mutex mu;
  CondVar cv;
  BatchPipeline pipeline DLQ_GUARDED_BY(mu);
  SelectionPass selection DLQ_GUARDED_BY(mu);
  FifoTurns fifo DLQ_GUARDED_BY(mu);
  // -- The outcome.
  std::string incomplete_reason DLQ_GUARDED_BY(mu);
  std::vector<std::string> keys DLQ_GUARDED_BY(mu);  // objects written, in completion order
  Status first_error DLQ_GUARDED_BY(mu);
};

}  // namespace dlq
