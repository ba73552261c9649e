// QueueDrainer: archives one DLQ into an ObjectStore, deleting a message
// only once the object holding it is stored. How: doc/drainer.md.
//
// Guarantees:
// - No loss: a message is deleted only after a create-only Put of its batch
//   succeeded. What could not be archived goes back to the queue (visibility
//   0) or stays in it; an expired receipt handle makes a duplicate, never a
//   loss.
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
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "archive/batch_builder.h"
#include "archive/key_layout.h"
#include "archive/record.h"
#include "archiver/fifo_turns.h"
#include "archiver/receiver_governor.h"
#include "archiver/selection_pass.h"
#include "archiver/visibility_ledger.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "s3/object_store.h"
#include "sqs/limits.h"
#include "sqs/queue_info.h"
#include "sqs/sqs_client.h"

namespace dlq {

struct DrainOptions {
  Selection selection;
  uint64_t max_messages = 0;  // 0: no limit
  BatchLimits batch = DefaultBatchLimits();
  KeyTemplate key_template = KeyTemplate::Default();
  std::string prefix = std::string(kDefaultKeyPrefix);
  PutOptions put = DefaultPutOptions();
  // Visibility timeout for received messages; the heartbeat extends it.
  std::chrono::seconds visibility_timeout{120};
  bool keep = false;              // archive without deleting
  bool dry_run = false;           // receive, select and count; upload and delete nothing
  int receivers = 4;              // concurrent ReceiveMessage loops, at most
  int deleters = 4;               // concurrent DeleteMessageBatch calls
  int max_batches_in_flight = 2;  // sealed batches waiting for or in upload
  int wait_time_seconds = 2;      // long poll per receive
  // Standard queues: receive with only as many of `receivers` as raise the
  // rate (ReceiverGovernor: 2, then doubling while it pays). Off: all of
  // them, always. FIFO queues take turns instead (see above).
  bool adaptive_receivers = true;
  // Consecutive receives without progress before checking depth (an empty
  // long poll also checks at once, without counting towards giving up).
  int empty_receives_to_drain = 3;
  int depth_checks_before_incomplete = 20;  // depth checks that still see messages before giving up
  int corrupt_receipts_to_give_up = 3;      // MD5 failures of one message before it is set aside
  // Messages examined but not taken, held invisible (with heartbeat) so the
  // pass reaches the rest; beyond this they are released early and the pass
  // may end incomplete.
  size_t max_examined_held = 20000;
  int delete_attempts = 4;  // per failed DeleteMessageBatch entry
  // On RequestStop, let receives in flight return and release what they
  // bring, instead of abandoning them (faster, but SQS then keeps those
  // messages invisible for visibility_timeout). The Lambda runtime sets it:
  // its deadline margin covers a long poll.
  bool finish_receives_on_stop = false;
  std::chrono::milliseconds heartbeat_interval{500};
  // Receives of a message by dlq-archive before this run (the daemon's
  // arrival ledger); each record's own_receive_count adds this run's
  // receives to it. Unset: this run's only. Called under the drainer's lock.
  std::function<int(const std::string& message_id)> prior_own_receives;

  static BatchLimits DefaultBatchLimits();
  static PutOptions DefaultPutOptions();
  Status Validate() const;
};

// The ArchiveContext for draining `queue` on `host`: the queue's fields and this
// build's version (DLQ_VERSION). The one place that fills an ArchiveContext.
ArchiveContext MakeArchiveContext(const QueueInfo& queue, std::string host);

struct DrainStats {
  uint64_t received = 0;  // ReceiveMessage deliveries (a message may be delivered twice)
  uint64_t selected = 0;
  uint64_t skipped = 0;   // not selected, released at once
  uint64_t archived = 0;  // in confirmed objects
  uint64_t deleted = 0;
  uint64_t duplicates = 0;       // receipt handle expired before delete: will be archived again
  uint64_t delete_failures = 0;  // still in the DLQ after every delete attempt (archived, not lost)
  uint64_t released = 0;         // returned to the queue unarchived (upload failure, stop)
  uint64_t kept = 0;             // archived and returned to the queue (keep), not deleted
  // Receives abandoned in flight by a stop or a failure: whatever SQS handed
  // them (up to 10 messages each) stays invisible for visibility_timeout.
  uint64_t abandoned_receives = 0;
  uint64_t objects = 0;
  uint64_t bytes_uploaded = 0;
  uint64_t visibility_extensions = 0;
  uint64_t receive_calls = 0;
  uint64_t corrupt = 0;                // receipts that failed the MD5 check (released, never archived)
  int64_t approximate_remaining = -1;  // last ApproximateNumberOfMessages seen, -1 unknown
  int64_t approximate_in_flight = -1;  // last ApproximateNumberOfMessagesNotVisible seen, -1 unknown
  int64_t initial_depth = -1;          // visible + in flight when the run started, -1 unknown
  int receivers = 0;                   // receivers receiving at the end (the governor's level)
};

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

class QueueDrainer {
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
  struct Held {
    std::string message_id;
    std::string receipt_handle;
    std::chrono::steady_clock::time_point received_at;  // first receipt by us
    std::chrono::steady_clock::time_point visible_until;
  };
  struct Batch {
    uint64_t seq = 0;
    std::vector<Held> held;
    std::optional<SealedBatch> sealed;  // set once compressed
    bool deleting = false;              // stored; only deletes remain (guarded by mu_)
  };
  struct Counters {
    std::atomic<uint64_t> received{0}, selected{0}, skipped{0}, archived{0}, deleted{0}, duplicates{0},
        delete_failures{0}, released{0}, kept{0}, abandoned_receives{0}, objects{0}, bytes_uploaded{0},
        visibility_extensions{0}, receive_calls{0}, corrupt{0};
    std::atomic<int64_t> approximate_remaining{-1}, approximate_in_flight{-1};
  };

  enum class Depth { kEmpty, kWaitInFlight, kNotEmpty, kUnknown };

  // One receiver: waits for its level or FIFO turn, receives, places what
  // came, and looks for the end of the queue when receives stop bringing
  // anything new. `slot`: this receiver's in visibility_ledger_.
  void ReceiverLoop(int slot);
  // Messages received and not yet placed (in a batch, held or released):
  // not "in flight elsewhere" for a depth check. Counts into in_hand_ until
  // Done() or destruction.
  class InHand {
   public:
    explicit InHand(std::atomic<int64_t>& total) : total_(total) {}
    ~InHand() { Done(); }
    InHand(const InHand&) = delete;
    InHand& operator=(const InHand&) = delete;
    void Add(int64_t n) {
      total_ += n;
      mine_ += n;
    }
    void Done() {
      total_ -= mine_;
      mine_ = 0;
    }

   private:
    std::atomic<int64_t>& total_;
    int64_t mine_ = 0;
  };
  // What one ReceiveMessage call brought.
  struct Receipt {
    Result<std::vector<Message>> got;
    std::vector<CorruptMessage> corrupt;  // failed the MD5 check
    SteadyTime started;                   // when the call was sent
    bool long_poll = false;
  };
  // Standard queues with the governor: waits while `slot` is above the level.
  void WaitForReceiverLevel(int slot) DLQ_EXCLUDES(mu_);
  // One ReceiveMessage call; what it brought is in `in_hand` before the
  // visibility ledger sees the call end.
  Receipt Receive(int slot, const FifoTurns::Turn& turn, InHand& in_hand) DLQ_EXCLUDES(mu_);
  // After a failed receive (the `consecutive_errors`th): true when the
  // receiver should try again (after a backoff); false when it ends (the run
  // is stopping, or failed now).
  bool RetryAfterReceiveError(const Status& st, int consecutive_errors, std::mt19937_64& rng) DLQ_EXCLUDES(mu_);
  // Sorts what a receive sent at `received` brought (SelectionPass), holds
  // what it examined, applies max_messages and adds the rest to the
  // building batch. True: something not seen before.
  bool Place(std::vector<Message>&& msgs, SteadyTime received) DLQ_EXCLUDES(mu_);
  // After receives without progress: waits for our own batches, checks the
  // depth, and ends the run (empty, or incomplete after enough `counted`
  // checks; depth_checks counts them) or lets the receivers go on.
  void LookForTheEnd(bool counted, int& depth_checks) DLQ_EXCLUDES(mu_);
  // FIFO turn taking (FifoTurns). Before a receive: waits for this
  // receiver's turn (sealing what is held first when nothing else can
  // arrive), at once with `keep_turn`; nullopt when the loop should start
  // over (stopping, or another receiver's turn).
  std::optional<FifoTurns::Turn> AwaitFifoTurn(bool keep_turn) DLQ_EXCLUDES(mu_);
  // After the receive: `got` messages (corrupt ones included), -1 on error.
  // True: the turn stays reserved for this receiver's next receive, which
  // must pass keep_turn.
  bool AfterFifoReceive(const FifoTurns::Turn& turn, int64_t got) DLQ_EXCLUDES(mu_);
  // A batch or released messages left the pipeline: their groups are free.
  void NoteFifoLeave() DLQ_EXCLUDES(mu_);
  // Messages this run holds that block their FIFO group until the pipeline
  // is done with them (not examined or set-aside ones), plus those in hand.
  size_t PipelineHeldLocked() const DLQ_REQUIRES(mu_);
  // `received` is when the receive that brought them was sent: their
  // visibility deadlines count from it (never later than SQS's own).
  void HandleCorrupt(const std::vector<CorruptMessage>& corrupt, std::chrono::steady_clock::time_point received)
      DLQ_EXCLUDES(mu_);
  void HoldExamined(std::vector<Held> held) DLQ_EXCLUDES(mu_);
  size_t HeldLocked() const DLQ_REQUIRES(mu_);
  // Receives of `message_id` by dlq-archive: before this run and in it.
  int OwnReceivesLocked(const std::string& message_id) const DLQ_REQUIRES(mu_);
  void MarkIncomplete(std::string reason) DLQ_EXCLUDES(mu_);
  struct Counts {
    int64_t visible = 0;
    int64_t in_flight = 0;
  };
  // ApproximateNumberOfMessages / ...NotVisible, also kept in the counters;
  // nullopt (logged) when the call fails or the reply lacks them.
  std::optional<Counts> ReadCounts();
  Depth CheckDepth() DLQ_EXCLUDES(mu_);
  bool FinalQueueEmpty();
  // Run's steps: sets the receivers' level (the governor's, or all of them);
  // seals what is building, or releases it when aborting; releases what the
  // pass examined or set aside and returns the corrupt ids; fills the
  // verdict of a run that neither failed nor stopped (JudgeCompletion).
  void StartGovernor() DLQ_EXCLUDES(governor_mu_);
  void FinishBuilding() DLQ_EXCLUDES(mu_);
  std::vector<std::string> EndPass() DLQ_EXCLUDES(mu_);
  void Judge(DrainResult& result) DLQ_EXCLUDES(mu_);
  void LogDone(const DrainResult& result) const;
  void UploaderLoop();
  void HeartbeatLoop();
  // HeartbeatLoop's steps: the held messages whose visibility ends within
  // half a timeout (sets `seal` when the building batch holds one that cannot
  // be extended much longer); their extension, sent without the lock, as
  // (index into due, new deadline); the new deadlines recorded, returning the
  // messages that left their batch meanwhile (to release again).
  struct Due;
  using Extension = std::pair<size_t, SteadyTime>;
  std::vector<Due> DueLocked(SteadyTime now, bool& seal) DLQ_REQUIRES(mu_);
  std::vector<Extension> ExtendVisibility(const std::vector<Due>& due) DLQ_EXCLUDES(mu_);
  std::vector<Held> RecordExtensionsLocked(const std::vector<Due>& due, const std::vector<Extension>& extended,
                                           SteadyTime now) DLQ_REQUIRES(mu_);
  // Puts selected messages into batches, sealing each full one. While the
  // receiver waits for room (max_batches_in_flight), the messages it still
  // has in hand wait in waiting_, where the heartbeat keeps them invisible.
  void AddSelected(std::vector<Message>&& msgs, std::chrono::steady_clock::time_point received) DLQ_EXCLUDES(mu_);
  // The Held of msgs[i], from `waiting` if it was set there.
  Held TakeHeld(Message& m, size_t i, std::list<Batch>::iterator waiting, size_t waiting_from,
                std::chrono::steady_clock::time_point received) DLQ_REQUIRES(mu_);
  // The held message with this receipt handle in any batch but examined_ and set_aside_ (which nothing leaves
  // for another batch), or null.
  Held* FindMovedLocked(const std::string& receipt_handle) DLQ_REQUIRES(mu_);
  // Seals the building batch if non-empty and queues it for upload. With
  // `wait`, blocks until fewer than max_batches_in_flight are in flight;
  // without, gives up when the bound is reached.
  void SealBuilding(bool wait, bool only_if_full) DLQ_EXCLUDES(mu_);
  Batch* FindBatchLocked(uint64_t seq) DLQ_REQUIRES(mu_);
  // A builder for the next batch: a spare one (its buffer already sized)
  // when there is one.
  std::unique_ptr<BatchBuilder> NewBuilderLocked() DLQ_REQUIRES(mu_);
  Status UploadBatch(Batch& batch);
  void DeleteBatch(Batch& batch);
  // Makes the messages visible again; count_released: they were meant to be
  // archived (stats.released), not skipped by choice.
  void ReleaseHeld(const std::vector<Held>& held, bool count_released = true);
  void ExtendVisibility(std::vector<Held*>& due);
  void Fail(const Status& status) DLQ_EXCLUDES(mu_);
  bool Aborting() const DLQ_EXCLUDES(mu_);  // stop requested or an error: release instead of archiving

  void ObserveReceive(std::chrono::steady_clock::time_point end, uint64_t messages) DLQ_EXCLUDES(mu_, governor_mu_);

  // Set by the constructor (governed_: by Run() before the receivers start);
  // read-only afterwards, from any thread.
  QueueClient& sqs_;
  ObjectStore& store_;
  Clock& clock_;
  const QueueInfo queue_;
  const DrainOptions options_;
  const ArchiveContext context_;
  // Standard queues with adaptive_receivers: receivers whose slot is at or
  // above receiver_limit_ wait (on cv_) instead of receiving; each receive
  // that comes back tells the governor, which moves the limit.
  bool governed_ = false;

  // Atomics: read and written by any thread without a lock.
  Counters counters_;
  std::atomic<bool> stop_{false};  // stop receiving (requested, drained, limit or error)
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> abort_receives_{false};    // a stop or an error: abandon receives in flight
  std::atomic<bool> queue_seen_empty_{false};  // receivers ended on an empty queue
  std::atomic<int> no_progress_receives_{0};
  std::atomic<int64_t> in_hand_{0};  // received, not yet in a batch, held or released
  std::atomic<bool> examined_released_early_{false};
  std::atomic<int64_t> initial_total_{-1};  // visible + in flight at the start, -1 unknown
  std::atomic<uint64_t> budget_used_{0};    // selected messages counted against max_messages
  std::atomic<int> receive_waiters_{0};     // depth checks waiting for receives on the wire
  std::atomic<int> receiver_limit_{0};      // written under governor_mu_

  // Internally synchronized. Receives and visibility changes: when what this
  // run put in flight is visible again, and which empty receives looked
  // after that.
  VisibilityLedger visibility_ledger_;

  // Guarded by governor_mu_, which is taken alone, never with mu_.
  Mutex governor_mu_;
  std::optional<ReceiverGovernor> governor_ DLQ_GUARDED_BY(governor_mu_);
  int announced_receivers_ DLQ_GUARDED_BY(governor_mu_) = 0;  // the level archive.receivers last logged

  // Guarded by mu_: the pipeline's batches, the pass's held messages, FIFO
  // turns and the outcome. cv_ signals every change to them and shutdown.
  mutable Mutex mu_;
  CondVar cv_;
  // -- Batches, from building to stored and deleted.
  std::unique_ptr<BatchBuilder> builder_ DLQ_GUARDED_BY(mu_);
  // Buffers kept for the next batches, so a drain allocates and faults in
  // its MiB-sized buffers once, not per batch: the builder that compressed
  // the last batch (one compresses at a time) and the object bodies of
  // stored batches (at most one per batch in flight).
  std::unique_ptr<BatchBuilder> spare_builder_ DLQ_GUARDED_BY(mu_);
  int builders_made_ DLQ_GUARDED_BY(mu_) = 1;  // builder_
  std::vector<std::string> spare_gz_ DLQ_GUARDED_BY(mu_);
  Batch building_ DLQ_GUARDED_BY(mu_);
  uint64_t next_seq_ DLQ_GUARDED_BY(mu_) = 1;
  std::deque<Batch> upload_queue_ DLQ_GUARDED_BY(mu_);  // sealed, waiting for an uploader
  std::vector<Batch*> uploading_ DLQ_GUARDED_BY(mu_);   // batches in upload or delete (owned by uploaders)
  int sealing_ DLQ_GUARDED_BY(mu_) = 0;                 // batches being compressed outside the lock
  int deleting_ DLQ_GUARDED_BY(mu_) = 0;                // batches in uploading_ that only delete
  std::vector<Batch*> sealing_batches_ DLQ_GUARDED_BY(mu_);
  // Selected messages a receiver holds while it waits for room in a batch
  // (one entry per waiting receiver). An entry that went into the building
  // batch keeps its place with an empty receipt handle.
  std::list<Batch> waiting_ DLQ_GUARDED_BY(mu_);
  bool heartbeat_stop_ DLQ_GUARDED_BY(mu_) = false;
  bool receivers_done_ DLQ_GUARDED_BY(mu_) = false;
  // -- Held by the pass, not archived.
  SelectionPass selection_ DLQ_GUARDED_BY(mu_);
  Batch examined_ DLQ_GUARDED_BY(mu_);   // examined and held to the end of the pass (heartbeat)
  Batch set_aside_ DLQ_GUARDED_BY(mu_);  // failed the MD5 check every time; released at the end
  std::map<std::string, int> corrupt_counts_ DLQ_GUARDED_BY(mu_);      // message id -> MD5 failures
  std::unordered_map<std::string, int> receipts_ DLQ_GUARDED_BY(mu_);  // message id -> receives in this run
  std::optional<std::chrono::steady_clock::time_point> unexplained_in_flight_since_ DLQ_GUARDED_BY(mu_);
  // -- FIFO turn taking.
  FifoTurns fifo_ DLQ_GUARDED_BY(mu_);
  // -- The outcome.
  std::string incomplete_reason_ DLQ_GUARDED_BY(mu_);
  std::vector<std::string> keys_ DLQ_GUARDED_BY(mu_);
  Status first_error_ DLQ_GUARDED_BY(mu_);
};

}  // namespace dlq
