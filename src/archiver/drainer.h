// QueueDrainer: archives one DLQ into an ObjectStore, deleting a message
// only once the object holding it is stored. How: doc/drainer.md.
//
// Guarantees:
// - No loss: a message is deleted only after a create-only Put of its batch
//   succeeded. What could not be archived goes back to the queue (visibility
//   0) or stays in it; an expired receipt handle makes a duplicate, never a
//   loss.
// - Counts are of distinct messages: a message SQS hands out again while
//   the run holds or has archived it is archived and deleted once, and the
//   copy counts in received_again.
// - Held messages stay invisible (a heartbeat extends them, within SQS's
//   12-hour limit); memory is bounded by the batches in flight, not by
//   queue depth. A FIFO group's messages are archived in SQS's order.
// - On an upload error, or RequestStop(), the run ends within seconds:
//   receiving stops, stored batches are still deleted, everything else held
//   is released. A stop lets uploads already running finish.
// - The result says which: `drained` (every selected message present at the
//   start archived, and for a whole-queue drain the queue seen empty),
//   `stopped`, a failed `status`, or `incomplete` with the reason.
//
// Callers must: pass options that passed Validate(); keep sqs, store and
// clock alive until the drainer is destroyed; call Run() once. RequestStop()
// and Snapshot() may be called from any thread, during Run() too (see
// RunWatched in common/clock.h for a watcher thread).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "archive/record.h"
#include "archiver/batch_settler.h"
#include "archiver/drain_options.h"
#include "archiver/drain_run.h"
#include "archiver/drain_stats.h"
#include "archiver/held_batch.h"
#include "archiver/receivers.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "s3/object_store.h"
#include "sqs/queue_info.h"
#include "sqs/sqs_client.h"

namespace dlq {

// The ArchiveContext for draining `queue` on `host`: the queue's fields and this
// build's version (DLQ_VERSION). The one place that fills an ArchiveContext.
ArchiveContext MakeArchiveContext(const QueueInfo& queue, std::string host);

struct DrainResult {
  QueueInfo queue;
  DrainStats stats;
  std::vector<std::string> keys;  // objects written, in completion order
  // Every selected message present at the start was archived (and deleted
  // unless keep/dry run) and, for a whole-queue drain, the queue shows 0
  // visible and 0 in flight at the end. For a selection pass: every message
  // present at its start was examined.
  bool drained = false;
  bool stopped = false;  // RequestStop() ended it
  // Neither drained nor stopped nor failed: something selected may be left.
  // `incomplete_reason` says what and what to do.
  bool incomplete = false;
  std::string incomplete_reason;
  std::vector<std::string> corrupt_ids;  // failed the MD5 check on every receive; left in the DLQ
  Status status;                         // first error, OK when none
  std::chrono::milliseconds elapsed{0};
};

// The parts (doc/drainer.md): Receivers receive; the SelectionPass sorts
// and holds what was examined; the BatchPipeline builds and tracks batches;
// the BatchSettler uploads, deletes, releases and extends. DrainRun is the
// state they share. The drainer owns them and runs the uploaders and the
// heartbeat.
class QueueDrainer final : private ReceiverHandoff {
 public:
  // sqs, store and clock must outlive the drainer. `options` must pass Validate().
  QueueDrainer(QueueClient& sqs, ObjectStore& store, Clock& clock, QueueInfo queue, DrainOptions options,
               ArchiveContext context);
  ~QueueDrainer();
  QueueDrainer(const QueueDrainer&) = delete;
  QueueDrainer& operator=(const QueueDrainer&) = delete;

  // Drains until the queue is empty (or max_messages reached, or stopped, or
  // an error). Always finishes in-flight uploads and deletes, and releases
  // whatever was received but not archived.
  DrainResult Run();

  // Stop receiving; finish what is in flight. Safe from any thread.
  void RequestStop();
  DrainStats Snapshot() const;

  // How many batch buffers (builders) this run has made: at most two, the
  // one filling and the one compressing. For tests and benchmarks.
  int batch_buffers_made() const;

 private:
  // ReceiverHandoff. Place sorts what a receive sent at `received` brought
  // (SelectionPass), holds what it examined, applies max_messages and adds
  // the rest to the building batch.
  bool Place(std::vector<Message>&& msgs, const std::vector<CorruptMessage>& corrupt, SteadyTime received) override
      DLQ_EXCLUDES(run_.mu);
  void Seal(bool wait) override DLQ_EXCLUDES(run_.mu);

  // `received` is when the receive that brought them was sent: their
  // visibility deadlines count from it (never later than SQS's own).
  void HandleCorrupt(const std::vector<CorruptMessage>& corrupt, SteadyTime received) DLQ_EXCLUDES(run_.mu);
  void HoldExamined(std::vector<HeldMessage> held) DLQ_EXCLUDES(run_.mu);
  // Returns the messages of `take` new to the run. A copy of one the run
  // holds in a batch joins that batch; of one already stored, is deleted
  // now; of one elsewhere (in another receiver's hand, waiting for room, or
  // the run ending), is released.
  std::vector<Message> SettleCopies(std::vector<Message>&& take, SteadyTime received) DLQ_EXCLUDES(run_.mu);
  // Puts selected messages into batches, sealing each full one. While the
  // receiver waits for room (max_batches_in_flight), the messages it still
  // has in hand wait in the pipeline, where the heartbeat keeps them invisible.
  void AddSelected(std::vector<Message>&& msgs, SteadyTime received) DLQ_EXCLUDES(run_.mu);
  // Seals the building batch if non-empty and queues it for upload. With
  // `wait`, blocks until fewer than max_batches_in_flight are in flight;
  // without, gives up when the bound is reached.
  void SealBuilding(bool wait, bool only_if_full) DLQ_EXCLUDES(run_.mu);
  void UploaderLoop() DLQ_EXCLUDES(run_.mu);
  // Uploads a batch taken for upload, then deletes its messages (or, with
  // keep, holds them to the end of the pass); on failure, releases them.
  void StoreBatch(HeldBatch& batch) DLQ_EXCLUDES(run_.mu);
  // Every heartbeat_interval: extends the held messages whose visibility
  // ends within half a timeout, and seals the building batch when it is due
  // or holds one that cannot be extended much longer.
  void HeartbeatLoop() DLQ_EXCLUDES(run_.mu);
  // Run's steps: seals what is building, or releases it when aborting;
  // releases what the pass examined or set aside and returns the corrupt
  // ids; fills the verdict of a run that neither failed nor stopped
  // (JudgeCompletion).
  void FinishBuilding() DLQ_EXCLUDES(run_.mu);
  std::vector<std::string> EndPass() DLQ_EXCLUDES(run_.mu);
  void Judge(DrainResult& result) DLQ_EXCLUDES(run_.mu);
  bool FinalQueueEmpty();
  void LogDone(const DrainResult& result) const;

  // Set by the constructor; read-only afterwards, from any thread.
  QueueClient& sqs_;
  ObjectStore& store_;
  Clock& clock_;
  const QueueInfo queue_;
  const DrainOptions options_;
  const ArchiveContext context_;

  DrainRun run_;
  BatchSettler settler_;
  Receivers receivers_;

  std::atomic<int64_t> initial_total_{-1};  // visible + in flight at the start, -1 unknown
  std::atomic<uint64_t> budget_used_{0};    // selected messages counted against max_messages
  bool heartbeat_stop_ DLQ_GUARDED_BY(run_.mu) = false;
  bool receivers_done_ DLQ_GUARDED_BY(run_.mu) = false;
};

}  // namespace dlq
