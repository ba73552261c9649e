// Replayer: the engine of `dlq-archive replay`, shared by the archive form
// (records read from an archive) and the live form (messages received from a
// DLQ). A source pushes items with Add() in a deterministic order and calls
// Finish() at the end; the engine routes each to its destination
// (TargetResolver), batches per destination (SendMessageBatch: at most 10
// entries and kMaxMessageBytes in all), rate-limits, sends, verifies the
// returned MD5s, retries failed entries with backoff and full jitter, and
// reports what it could not send.
//
// Fidelity: body and every message attribute are sent unchanged, and
// AWSTraceHeader as a system attribute. Without a transform a record whose
// body or attributes do not hash to its archived md5_of_body /
// md5_of_message_attributes is not sent (a corrupt record). A returned digest
// that differs from the one computed for what was sent fails the entry
// without a retry (SQS has accepted it; resending would duplicate it).
//
// FIFO destinations: MessageGroupId is kept; MessageDeduplicationId is the
// original one, else the message id unless the queue deduplicates by content.
// Items bound for FIFO queues are buffered per (queue, group) and sent sorted
// by SequenceNumber, then sent_at, when the input ends, Flush() is called, or
// the buffer reaches fifo_buffer_records / fifo_buffer_bytes (then it is sent
// as it stands and order is kept only within each flushed run; a later record
// that sorts before one already sent counts as an order break).
//
// Checkpoint (replay/checkpoint.h): the send sequence is the order in which
// items enter batches. After each finished batch the checkpoint records how
// many items are finished. A resumed run skips that many items after checking
// the hash chain of their ids; items that had failed are sent again once the
// chain is verified. A crash loses at most the record of the batches in
// flight (`concurrency` of them; the command uses 1 with a checkpoint), which
// are sent again: duplicates are bounded by them (FIFO queues drop them
// through the deduplication id within 5 minutes).
//
// Skips: with `skip`, an item that an earlier run delivered to the same
// destination (already_replayed), or a copy of a message this run sends
// (skipped_copies), is not sent (a line in a dry run); it keeps its place in
// the send sequence, so checkpoints are unaffected.
//
// Memory: open batches (10 entries per destination), the FIFO buffer, one
// sort key per FIFO group, and the ids (original and new) of sent messages for
// the audit record.
// Not thread-safe: one source thread drives it; batches are sent on worker
// threads (`concurrency`), and callbacks run on the driving thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "archive/record.h"
#include "aws/aws_client.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "replay/checkpoint.h"
#include "replay/origin_sender.h"
#include "replay/targets.h"
#include "replay/token_bucket.h"
#include "replay/transform.h"
#include "sqs/sqs_client.h"

namespace dlq {

// A message this run delivered: its id in the source, the id SQS gave the
// copy, and where it went.
struct ReplayedMessage {
  std::string message_id;
  std::string new_message_id;
  std::string destination;
};

class Replayer;

// Sits between the source and the engine (the guarded redrive,
// replay/redrive_guard.h). Not consulted in a dry run. Both calls run on the
// driving thread; an error from either stops the run and is returned by the
// Add / Flush / Finish that called it.
class ReplayGate {
 public:
  virtual ~ReplayGate() = default;
  // Called by Add before it takes an item (after the --max check). May block
  // and may call `replayer.Flush()` (never Add).
  virtual Status BeforeAdd(Replayer& replayer) = 0;
  // Called once per finished batch with the messages it confirmed sent, in
  // send order, before the checkpoint records the batch.
  virtual Status OnSent(const std::vector<ReplayedMessage>& sent) = 0;
  // An origin answered at once that these failed again (a function error of
  // a synchronous invocation, an endpoint's error): not sent, and re-failures
  // all the same. new_message_id is the key they are known by.
  virtual Status OnFailedAtOnce(const std::vector<ReplayedMessage>& /*refused*/) { return Status::Ok(); }
  // Whether the next batch to an origin function is invoked synchronously
  // (RequestResponse: a function error shows at once), as a canary is.
  virtual bool Synchronous() const { return false; }
};

// Why an item is not sent (ReplayOptions::skip).
struct ReplaySkip {
  enum Kind { kSend, kAlreadyReplayed, kCopy } kind = kSend;
  std::string sent_as;  // kCopy: the id of the copy this run sends
};

struct ReplayOptions {
  uint64_t max = 0;       // items accepted at most, counted over resumed runs too (0: no limit)
  double rate = 0;        // messages per second (0: unlimited)
  bool dry_run = false;   // describe each batch through on_dry_run; send and save nothing
  int send_attempts = 5;  // per entry, the first included
  // Batches in flight at once (each on its own thread). After a crash up to
  // this many batches may have been sent without being checkpointed. FIFO
  // batches are always sent one at a time.
  int concurrency = 4;
  RetryOptions backoff{
      .max_attempts = 5, .base_delay = std::chrono::milliseconds(100), .max_delay = std::chrono::milliseconds(5000)};
  size_t fifo_buffer_records = 100000;
  size_t fifo_buffer_bytes = size_t{256} << 20;
  uint64_t max_failures = 1000;                // the run stops when more entries than this have failed
  std::string checkpoint_path;                 // empty: no checkpoint
  mode_t checkpoint_mode = 0600;               // permission bits of the checkpoint file
  std::string identity_text;                   // CheckpointIdentityText of the run
  std::string checkpoint_term = "checkpoint";  // "use another {checkpoint_term} file" (replay/replay_terms.h)
  const std::atomic<bool>* stop = nullptr;     // polled before every batch; not owned
  // Whether to skip the record bound for the destination URL: an earlier run
  // delivered it there (replay/ledger.h), or a copy of the same message is
  // sent by this run; null: everything selected is sent. Called in send
  // order, once per item. An error stops the run.
  std::function<Result<ReplaySkip>(const std::string& url, const ArchiveRecord& record)> skip;
  // Called for each message confirmed sent, in completion order; an error stops the run.
  std::function<Status(const std::string& url, const std::string& message_id)> on_sent;
  ReplayGate* gate = nullptr;  // not owned; null: every item is taken at once
  // Delivers to origins that are not queues (--to-origin); not owned. Null:
  // such a destination fails the run.
  OriginSender* origin_sender = nullptr;
  // How long one message to an origin may stay throttled (the run pauses on
  // it, retrying with backoff) before it counts as failed.
  std::chrono::milliseconds max_throttled{std::chrono::minutes(15)};
  Status Validate() const;
};

// One item in source order. receipt_handle is set by the live form only.
struct ReplayItem {
  ArchiveRecord record;
  std::string receipt_handle;
};

struct ReplayFailure {
  std::string message_id;
  std::string destination;  // queue URL (an origin's key), empty when unresolved
  std::string reason;
  bool unresolved = false;  // --to-origin: where it came from could not be told; not sent
  bool refused = false;     // the origin answered at once that it failed again; not sent
};

// What a dry run found for one message, as data (the dashboard counts the
// messages it would send per destination; the CLI lists each with DryRunLine).
struct DryRunEntry {
  enum Kind {
    kWouldSend,        // it would be sent to `destination`
    kAlreadyReplayed,  // skipped: an earlier run delivered it to `destination`
    kCopy,             // skipped: a copy of it is sent as `sent_as`
    kUnresolved,       // --to-origin: not sent, where it came from cannot be told (`reason`)
  };
  Kind kind = kWouldSend;
  std::string message_id;
  std::string destination;                 // queue URL
  uint64_t bytes = 0;                      // kWouldSend
  bool fifo = false;                       // kWouldSend: the destination is a FIFO queue
  std::string group;                       // kWouldSend, FIFO: MessageGroupId
  std::string sent_as;                     // kCopy
  TargetKind target = TargetKind::kQueue;  // kWouldSend
  std::string how;                         // kWouldSend to an origin: how it was found
  std::string reason;                      // kUnresolved
};
// "would send ID to URL (N bytes[, group G])", "would invoke function ARN
// with ID (N bytes; how it was found)", "skip ID: already replayed to URL by
// an earlier run", "skip ID: a copy ... is sent as ID2", "cannot send ID: why".
std::string DryRunLine(const DryRunEntry& e);

struct ReplayStats {
  uint64_t accepted = 0;          // items taken by Add
  uint64_t sent = 0;              // confirmed sent in this run
  uint64_t failed = 0;            // given up in this run
  uint64_t resumed = 0;           // skipped: finished by an earlier run (checkpoint)
  uint64_t already_replayed = 0;  // skipped: delivered to the same destination by an earlier run (ledger)
  uint64_t skipped_copies = 0;    // skipped: a copy of the same message is sent by this run
  uint64_t would_send = 0;        // dry run
  uint64_t bytes_sent = 0;
  uint64_t batches = 0;
  uint64_t retries = 0;       // entries sent again after a failure
  uint64_t order_breaks = 0;  // FIFO records sent after a later one of their group
  uint64_t unresolved = 0;    // --to-origin: not sent, their origin could not be told (also in failures)
  uint64_t refused = 0;       // of `failed`: the origin answered at once that they failed again
  uint64_t throttled = 0;     // throttled answers of origins (each paused the message and was retried)
  // From the first batch put in flight to the last one finished: the send
  // rate is sent / send_seconds (the rest of a run is reading and resolving).
  double send_seconds = 0;
};

class Replayer {
 public:
  using BatchDone =
      std::function<void(const std::vector<const ReplayItem*>& sent, const std::vector<const ReplayItem*>& failed)>;

  // `transform` may be null. Everything passed by reference must outlive it.
  Replayer(QueueClient& sqs, TargetResolver& targets, Clock& clock, ReplayOptions options, RecordTransform* transform);

  // Loads the checkpoint, if any: kInvalidArgument when it belongs to another
  // run (source, filter, destination or transform differ) or is unreadable.
  Status Start();
  // Takes the next item. Returns false once `max` items were taken (the
  // source should stop). Errors stop the run: a destination that cannot be
  // resolved, a failing transform, a non-retryable send error, a checkpoint
  // that does not match the input, too many failures, or a stop request
  // (kCancelled).
  Result<bool> Add(ReplayItem item);
  // Sends every buffered item (FIFO runs and open batches).
  Status Flush();
  // Flush() and the end-of-input checks (the input must reach the checkpoint's
  // position).
  Status Finish();

  // Called after each finished batch (not in a dry run) with the items sent
  // and the items given up: the live form deletes / releases them.
  void OnBatchDone(BatchDone fn) { on_batch_done_ = std::move(fn); }
  // Called with one line per item in a dry run.
  void OnDryRun(std::function<void(const DryRunEntry&)> fn) { on_dry_run_ = std::move(fn); }
  void OnProgress(std::function<void(const ReplayStats&)> fn) { on_progress_ = std::move(fn); }

  const ReplayStats& stats() const { return stats_; }
  const std::vector<ReplayFailure>& failures() const { return failures_; }
  const std::vector<ReplayedMessage>& sent() const { return sent_; }
  // Destination URL -> messages sent there in this run.
  const std::map<std::string, uint64_t>& sent_by_destination() const { return sent_by_destination_; }

 private:
  struct Pending {
    ReplayItem item;
    ReplayTarget target;
    size_t bytes = 0;
  };
  struct OpenBatch {
    std::vector<Pending> entries;
    size_t bytes = 0;
  };

  Status Enqueue(Pending p);
  Status Dispatch(const std::string& url);
  Status FlushFifo();
  // Gives the batch its place in the send sequence, skips what a checkpoint
  // says is finished, and sends the rest.
  Status SendBatch(std::vector<Pending> batch);
  // Checks one batch for one destination and puts it in flight; once it is
  // finished (Complete) the checkpoint records `done_after` items finished.
  Status SendNow(std::vector<Pending>& batch, uint64_t done_after);
  struct Outcome {
    std::vector<bool> ok;              // per ready entry
    std::vector<std::string> reasons;  // why an entry failed
    std::vector<std::string> new_ids;  // the MessageId SQS gave each entry sent (an origin: its key)
    std::vector<bool> refused;         // per ready entry: an origin answered that it failed again
    uint64_t retries = 0;
    uint64_t throttled = 0;
    Status fatal;  // a non-retryable call error: the run stops
  };
  struct Flight {
    std::shared_ptr<std::vector<Pending>> batch;
    std::vector<size_t> ready;                    // indexes of the entries sent
    std::vector<const ReplayItem*> failed_early;  // failed their checks, never sent
    uint64_t done_after = 0;
    std::future<Outcome> outcome;
  };
  // Sends (retrying with backoff); runs on a worker thread, touches no state
  // but the bucket (under bucket_mu_).
  Outcome Transmit(const std::string& url, const std::vector<const Pending*>& ready);
  // The same to an origin that is not a queue, one message at a time.
  Outcome TransmitOrigin(const std::vector<const Pending*>& ready, bool synchronous);
  // --to-origin: a record whose origin cannot be told is counted, named and left out.
  void Unresolved(const ReplayItem& item, const Status& why);
  // Transmit's steps: waits for `n` tokens of the rate limit (when there is
  // one); records what a SendMessageBatch reply says of each entry in `out`
  // and returns the indexes (into ready) worth sending again.
  void AwaitTokens(size_t n) DLQ_EXCLUDES(bucket_mu_);
  static std::vector<size_t> RecordReply(const SendBatchResult& reply, const std::vector<const Pending*>& ready,
                                         Outcome& out);
  // Completes the oldest flights until at most `keep` are in flight.
  Status Drain(size_t keep);
  // Records a finished flight: stats, on_batch_done, checkpoint.
  Status Complete(Flight& flight);
  Status CheckStop() const;
  void Fail(const Pending& p, std::string reason);

  QueueClient& sqs_;
  TargetResolver& targets_;
  Clock& clock_;
  ReplayOptions options_;
  RecordTransform* transform_;
  Mutex bucket_mu_;
  std::optional<TokenBucket> bucket_ DLQ_GUARDED_BY(bucket_mu_);  // made by the first send
  std::deque<Flight> in_flight_;
  std::optional<std::chrono::steady_clock::time_point> first_dispatch_;

  std::map<std::string, OpenBatch> open_;                                     // by destination URL
  std::map<std::pair<std::string, std::string>, std::vector<Pending>> fifo_;  // (URL, group) -> items
  size_t fifo_records_ = 0, fifo_bytes_ = 0;
  std::map<std::pair<std::string, std::string>, std::string> fifo_last_key_;  // last sort key sent per group

  // Checkpoint.
  std::optional<CheckpointState> resume_;  // what an earlier run finished
  std::set<std::string> resume_failed_;    // ids finished as failed by it
  std::vector<Pending> retry_after_verify_;
  CheckpointState progress_;  // what is finished now
  uint64_t dispatched_ = 0;   // items of the send sequence so far

  ReplayStats stats_;
  std::vector<ReplayFailure> failures_;
  std::vector<ReplayedMessage> sent_;
  std::map<std::string, uint64_t> sent_by_destination_;
  BatchDone on_batch_done_;
  std::function<void(const DryRunEntry&)> on_dry_run_;
  std::function<void(const ReplayStats&)> on_progress_;
};

// The size SQS counts for a message: body plus each attribute's name, data
// type and value.
size_t MessageSize(const std::string& body, const MessageAttributes& attributes);

}  // namespace dlq
