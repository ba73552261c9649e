// BatchPipeline: the drainer's batches from building to stored, and the
// batch buffers they reuse. A batch is building (one at a time), sealing
// (compressed outside the lock), waiting for an uploader, then uploading
// and deleting; a receiver whose messages wait for room in a batch parks
// them here too, where the heartbeat finds them. State only: the drainer
// calls it under its mutex and does the waiting; thread-compatible.
//
// Batches being sealed or uploaded live on their thread's stack: BeginSeal
// and BeginUpload register them, EndSeal and EndUpload take them back;
// between the two, their held messages may be read and changed only under
// the drainer's mutex (the heartbeat extends them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "archive/batch_builder.h"
#include "archiver/held_batch.h"
#include "common/clock.h"
#include "sqs/sqs_client.h"

namespace dlq {

class BatchPipeline {
 public:
  using MakeBuilder = std::function<std::unique_ptr<BatchBuilder>()>;
  // `make` makes each batch buffer (at most two in a run: the one filling
  // and the one compressing). `visibility_timeout`: of what it holds.
  BatchPipeline(MakeBuilder make, size_t max_messages, std::chrono::seconds visibility_timeout);

  // -- Building.
  // A receiver's selected messages that wait for room, from index `from` of
  // what its receive brought.
  struct Waiting {
    std::list<HeldBatch>::iterator batch;
    size_t from = 0;
  };
  // Adds msgs[i]'s record (with its own-receive count) to the building
  // batch and holds it there: from `waiting` when it waited there (its
  // place stays with an empty handle), else moved out of `m`.
  void Add(Message& m, size_t i, int own_receives, const std::optional<Waiting>& waiting, SteadyTime received);
  bool full() const { return builder_->Full(); }
  bool building() const { return !building_.held.empty(); }
  // Non-empty and full or at its age limit.
  bool should_seal() const { return !builder_->empty() && builder_->ShouldSeal(); }
  // Parks msgs[from..] of a receive at `received`, to wait for room.
  Waiting Wait(const std::vector<Message>& msgs, size_t from, SteadyTime received);
  // A receiver gives up on msgs[i..] (a stop or failure): their held
  // messages, made visible now, to release; the waiting batch goes.
  std::vector<HeldMessage> EndWait(std::vector<Message>& msgs, size_t i, const std::optional<Waiting>& waiting,
                                   SteadyTime received);
  // A copy of a message already in a batch here (SQS handed it out again,
  // received at `received`) joins that batch, to be deleted or released
  // with it: true when the batch is building, sealing, queued or uploading.
  // False when the message is elsewhere (in a receiver's hand, waiting for
  // room, or in a batch already deleting).
  bool AddCopy(const Message& m, SteadyTime received);
  // The building batch is dropped (stop or failure): its messages, to release.
  std::vector<HeldMessage> DropBuilding();

  // -- Sealing: one batch at a time, and fewer than `max_in_flight` sealed
  // batches not yet stored.
  bool MaySeal(int max_in_flight) const;
  int sealing() const { return sealing_; }
  // Moves the building batch into `batch` (registered until EndSeal) and
  // returns its builder, with a spare object buffer in `gz`; a new builder
  // takes over.
  std::unique_ptr<BatchBuilder> BeginSeal(HeldBatch& batch, std::string& gz);
  // Sealed (`sealed` set): the batch queues for upload and `full` builds the
  // batch after next. Failed: the batch stays with the caller to release.
  void EndSeal(HeldBatch& batch, std::unique_ptr<BatchBuilder> full, std::optional<SealedBatch> sealed);

  // -- Uploading and deleting.
  bool upload_queued() const { return !upload_queue_.empty(); }
  // Moves the next sealed batch into `batch` (registered until EndUpload).
  void BeginUpload(HeldBatch& batch);
  // The body is stored: its buffer serves a later batch (up to `keep` kept).
  void KeepBody(std::string&& gz, size_t keep);
  // Only deletes remain: the batch no longer counts against the bound.
  void BeginDelete(HeldBatch& batch);
  void EndUpload(HeldBatch& batch);
  // Sealing, queued or uploading batches: the run's own messages in flight.
  bool storing() const { return !upload_queue_.empty() || !uploading_.empty() || sealing_ > 0; }
  bool deleting() const { return deleting_ > 0; }

  // -- For the heartbeat and the end-of-queue checks.
  size_t held() const;  // every message in a batch here (not waiting ones)
  // Appends what is due (AppendDue) in every batch here.
  void AppendDue(SteadyTime now, bool& seal, std::vector<VisibilityDue>& due) const;
  // Records an extension; false when its message left the pipeline meanwhile.
  bool RecordDue(const VisibilityDue& d, SteadyTime until);

  int builders_made() const { return builders_made_; }

 private:
  std::unique_ptr<BatchBuilder> NewBuilder();
  HeldBatch* FindBatch(uint64_t seq);
  // The held message with this receipt handle in a batch (not waiting), or null.
  HeldMessage* FindMoved(const std::string& receipt_handle);

  const MakeBuilder make_;
  const size_t reserve_;  // receipt handles reserved per batch
  const std::chrono::seconds visibility_timeout_;
  std::unique_ptr<BatchBuilder> builder_;
  // Buffers kept for the next batches, so a drain allocates and faults in
  // its MiB-sized buffers once, not per batch: the builder that compressed
  // the last batch (one compresses at a time) and the object bodies of
  // stored batches (at most one per batch in flight).
  std::unique_ptr<BatchBuilder> spare_builder_;
  int builders_made_ = 1;  // builder_
  std::vector<std::string> spare_gz_;
  HeldBatch building_;
  uint64_t next_seq_ = 1;
  std::deque<HeldBatch> upload_queue_;  // sealed, waiting for an uploader
  std::vector<HeldBatch*> uploading_;   // in upload or delete (owned by uploaders)
  int sealing_ = 0;                     // being compressed outside the lock
  int deleting_ = 0;                    // in uploading_, only deleting
  std::vector<HeldBatch*> sealing_batches_;
  // Selected messages a receiver holds while it waits for room in a batch
  // (one entry per waiting receiver). An entry that went into the building
  // batch keeps its place with an empty receipt handle.
  std::list<HeldBatch> waiting_;
};

}  // namespace dlq
