#include "archiver/drainer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "archive/expiry.h"
#include "archiver/drain_completion.h"
#include "archiver/queue_depth.h"
#include "common/count_noun.h"
#include "common/log.h"
#include "common/strings.h"
#include "sqs/limits.h"

namespace dlq {
namespace {

// "s3://bucket" and "arch/" as "s3://bucket/arch": where the run's objects go.
std::string DestinationWithPrefix(std::string store, std::string_view prefix) {
  while (!prefix.empty() && prefix.front() == '/') prefix.remove_prefix(1);
  while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  if (prefix.empty()) return store;
  while (!store.empty() && store.back() == '/') store.pop_back();
  return store + "/" + std::string(prefix);
}

using sqs::kMaxVisibilityWindow;
constexpr size_t kSqsBatch = 10;
// Local retries of receives and deletes (after AwsClient's own retries):
// full jitter, cap 100 ms doubling to 5 s.
const RetryOptions kLocalRetry{
    .max_attempts = 6, .base_delay = std::chrono::milliseconds(100), .max_delay = std::chrono::milliseconds(5000)};
// Pause between depth checks while waiting for messages in flight that this
// drainer does not hold, when receives do not wait on their own.
constexpr std::chrono::milliseconds kInFlightPoll{500};
// FIFO turns: a probe at least this often even when no batch left the
// pipeline (a group held by someone else comes back on its own).
constexpr std::chrono::seconds kFifoProbeEvery{1};
// A reply to a batch call names entries by the index we gave them.
std::optional<size_t> EntryIndex(const std::string& id, size_t size) {
  auto v = ParseInt64(id);
  if (!v || *v < 0 || static_cast<uint64_t>(*v) >= size) return std::nullopt;
  return static_cast<size_t>(*v);
}

bool IsReceiptHandleError(const BatchEntryError& e) {
  return e.code == "ReceiptHandleIsInvalid" || e.code == "InvalidReceiptHandle" ||
         e.code == "AWS.SimpleQueueService.ReceiptHandleIsInvalid" ||
         (e.code == "InvalidParameterValue" && e.message.find("eceipt") != std::string::npos);
}

constexpr size_t kReserveHeld = 16384;

}  // namespace

BatchLimits DrainOptions::DefaultBatchLimits() {
  BatchLimits limits;
  limits.max_messages = 10000;
  limits.max_bytes = 8u << 20;  // keeps peak memory well under 64 MiB with 2 batches in flight
  limits.max_age = std::chrono::seconds(30);
  limits.gzip_level = 1;  // JSON compresses well at level 1; level 6 costs ~3x the CPU
  return limits;
}

PutOptions DrainOptions::DefaultPutOptions() {
  PutOptions put;
  put.content_type = "application/gzip";
  put.create_only = true;
  return put;
}

Status DrainOptions::Validate() const {
  DLQ_RETURN_IF_ERROR(batch.Validate());
  if (visibility_timeout < std::chrono::seconds(10) || visibility_timeout > std::chrono::hours(12)) {
    return InvalidArgument("visibility timeout must be between 10s and 12h");
  }
  if (receivers < 1 || receivers > 64) return InvalidArgument("concurrency (receivers) must be between 1 and 64");
  if (deleters < 1 || deleters > 64) return InvalidArgument("deleters must be between 1 and 64");
  if (max_batches_in_flight < 1 || max_batches_in_flight > 16) {
    return InvalidArgument("max batches in flight must be between 1 and 16");
  }
  if (wait_time_seconds < 0 || wait_time_seconds > 20) return InvalidArgument("wait time must be 0..20 seconds");
  if (empty_receives_to_drain < 1) return InvalidArgument("empty receives to drain must be >= 1");
  if (delete_attempts < 1) return InvalidArgument("delete attempts must be >= 1");
  if (depth_checks_before_incomplete < 1) return InvalidArgument("depth checks before incomplete must be >= 1");
  if (corrupt_receipts_to_give_up < 1) return InvalidArgument("corrupt receipts to give up must be >= 1");
  if (max_examined_held < kSqsBatch) return InvalidArgument("max examined held must be >= 10");
  if (selection.kind != SelectionKind::kAll && selection.window.count() < 0) {
    return InvalidArgument("selection window must not be negative");
  }
  if (put.sse != "" && put.sse != "AES256" && put.sse != "aws:kms") {
    return InvalidArgument("--sse must be AES256 or aws:kms");
  }
  if (!put.sse_kms_key_id.empty() && put.sse != "aws:kms") {
    return InvalidArgument("--sse-kms-key-id needs --sse aws:kms");
  }
  if (!put.create_only) return InvalidArgument("archive objects are always written create-only");
  if (visibility_timeout < 4 * std::chrono::duration_cast<std::chrono::seconds>(heartbeat_interval)) {
    return InvalidArgument("visibility timeout must be at least 4 heartbeat intervals");
  }
  return Status::Ok();
}

ArchiveContext MakeArchiveContext(const QueueInfo& queue, std::string host) {
  ArchiveContext ctx;
  ctx.queue = queue.name;
  ctx.queue_url = queue.url;
  ctx.region = queue.region;
  ctx.account_id = queue.account_id;
  ctx.archiver_version = DLQ_VERSION;
  ctx.host = std::move(host);
  ctx.fifo = queue.fifo;
  ctx.retention = queue.retention;
  return ctx;
}

QueueDrainer::QueueDrainer(QueueClient& sqs, ObjectStore& store, Clock& clock, QueueInfo queue, DrainOptions options,
                           ArchiveContext context)
    : sqs_(sqs),
      store_(store),
      clock_(clock),
      queue_(std::move(queue)),
      options_(std::move(options)),
      context_(std::move(context)),
      visibility_ledger_(options_.receivers),
      builder_(
          std::make_unique<BatchBuilder>(context_, options_.key_template, options_.prefix, options_.batch, clock_)),
      selection_({.selection = options_.selection,
                  .dry_run = options_.dry_run,
                  .keep = options_.keep,
                  .fifo = queue_.fifo,
                  .retention = queue_.retention}),
      fifo_(queue_.fifo) {
  examined_.seq = UINT64_MAX;
  set_aside_.seq = UINT64_MAX - 1;
}

QueueDrainer::~QueueDrainer() = default;

QueueDrainer::Batch* QueueDrainer::FindBatchLocked(uint64_t seq) {
  if (building_.seq == seq) return &building_;
  if (examined_.seq == seq) return &examined_;
  for (Batch& b : upload_queue_)
    if (b.seq == seq) return &b;
  for (Batch* b : uploading_)
    if (b->seq == seq) return b;
  for (Batch* b : sealing_batches_)
    if (b->seq == seq) return b;
  for (Batch& b : waiting_)
    if (b.seq == seq) return &b;
  return nullptr;
}

QueueDrainer::Held* QueueDrainer::FindMovedLocked(const std::string& receipt_handle) {
  auto find = [&](Batch& b) -> Held* {
    for (Held& h : b.held)
      if (h.receipt_handle == receipt_handle) return &h;
    return nullptr;
  };
  if (Held* h = find(building_)) return h;
  for (Batch& b : upload_queue_)
    if (Held* h = find(b)) return h;
  for (Batch* b : uploading_)
    if (Held* h = find(*b)) return h;
  for (Batch* b : sealing_batches_)
    if (Held* h = find(*b)) return h;
  return nullptr;
}

int QueueDrainer::batch_buffers_made() const {
  MutexLock lock(mu_);
  return builders_made_;
}

std::unique_ptr<BatchBuilder> QueueDrainer::NewBuilderLocked() {
  if (spare_builder_ == nullptr) {
    ++builders_made_;
    return std::make_unique<BatchBuilder>(context_, options_.key_template, options_.prefix, options_.batch, clock_);
  }
  return std::move(spare_builder_);
}

void QueueDrainer::RequestStop() {
  stop_requested_ = true;
  // stop_ before abort_receives_: a receiver whose receive comes back
  // cancelled must find the run stopping, or it could hand a FIFO turn to a
  // receiver that starts a new receive (the stopping thread may be
  // descheduled between the two stores).
  stop_ = true;
  if (!options_.finish_receives_on_stop) abort_receives_ = true;
  cv_.NotifyAll();
}

DrainStats QueueDrainer::Snapshot() const {
  DrainStats s;
  s.received = counters_.received;
  s.selected = counters_.selected;
  s.skipped = counters_.skipped;
  s.archived = counters_.archived;
  s.deleted = counters_.deleted;
  s.duplicates = counters_.duplicates;
  s.delete_failures = counters_.delete_failures;
  s.released = counters_.released;
  s.kept = counters_.kept;
  s.abandoned_receives = counters_.abandoned_receives;
  s.objects = counters_.objects;
  s.bytes_uploaded = counters_.bytes_uploaded;
  s.visibility_extensions = counters_.visibility_extensions;
  s.receive_calls = counters_.receive_calls;
  s.receivers = receiver_limit_.load();
  s.corrupt = counters_.corrupt;
  s.approximate_remaining = counters_.approximate_remaining;
  s.approximate_in_flight = counters_.approximate_in_flight;
  s.initial_depth = initial_total_;
  return s;
}

void QueueDrainer::Fail(const Status& status) {
  {
    MutexLock lock(mu_);
    if (first_error_.ok()) first_error_ = status;
  }
  stop_ = true;  // before abort_receives_, as in RequestStop
  abort_receives_ = true;
  cv_.NotifyAll();
}

bool QueueDrainer::Aborting() const {
  if (stop_requested_) return true;
  MutexLock lock(mu_);
  return !first_error_.ok();
}

void QueueDrainer::MarkIncomplete(std::string reason) {
  {
    MutexLock lock(mu_);
    if (incomplete_reason_.empty()) incomplete_reason_ = std::move(reason);
  }
  stop_ = true;
  cv_.NotifyAll();
}

int QueueDrainer::OwnReceivesLocked(const std::string& message_id) const {
  auto it = receipts_.find(message_id);
  const int now = it == receipts_.end() ? 0 : it->second;
  return now + (options_.prior_own_receives ? options_.prior_own_receives(message_id) : 0);
}

size_t QueueDrainer::HeldLocked() const {
  size_t n = building_.held.size() + examined_.held.size() + set_aside_.held.size();
  for (const Batch& b : upload_queue_) n += b.held.size();
  for (const Batch* b : uploading_) n += b->held.size();
  for (const Batch* b : sealing_batches_) n += b->held.size();
  return n;
}

size_t QueueDrainer::PipelineHeldLocked() const {
  size_t n = building_.held.size() + static_cast<size_t>(std::max<int64_t>(0, in_hand_.load()));
  for (const Batch& b : upload_queue_) n += b.held.size();
  for (const Batch* b : uploading_) n += b->held.size();
  for (const Batch* b : sealing_batches_) n += b->held.size();
  return n;
}

std::optional<FifoTurns::Turn> QueueDrainer::AwaitFifoTurn(bool keep_turn) {
  MutexLock lock(mu_);
  // A reservation ends here; it is taken again below while in turns.
  if (keep_turn) fifo_.EndReservation();
  const SteadyTime deadline = clock_.SteadyNow() + kFifoProbeEvery;
  auto seal_due = [&]() DLQ_REQUIRES(mu_) { return fifo_.should_seal(!builder_->empty(), in_hand_ != 0); };
  while (fifo_.in_turns() && !keep_turn) {
    if (stop_) return std::nullopt;
    if (fifo_.probe_due()) break;
    if (seal_due()) {
      lock.Unlock();
      SealBuilding(/*wait=*/true, /*only_if_full=*/false);
      return std::nullopt;
    }
    // No news for a while: probe anyway (or wait again behind a probe).
    if (!clock_.WaitUntil(mu_, cv_, deadline, [&]() DLQ_REQUIRES(mu_) {
          return stop_ || !fifo_.in_turns() || fifo_.probe_due() || seal_due();
        })) {
      if (fifo_.probing()) return std::nullopt;
      break;
    }
  }
  return fifo_.Begin(PipelineHeldLocked(), deleting_ > 0);
}

bool QueueDrainer::AfterFifoReceive(const FifoTurns::Turn& turn, int64_t got) {
  bool keep = false;
  {
    MutexLock lock(mu_);
    keep = fifo_.After(turn, got, PipelineHeldLocked());
  }
  cv_.NotifyAll();
  return keep;
}

void QueueDrainer::NoteFifoLeave() {
  {
    MutexLock lock(mu_);
    fifo_.Left();
  }
  cv_.NotifyAll();
}

std::optional<QueueDrainer::Counts> QueueDrainer::ReadCounts() {
  auto depth = ReadQueueDepth(sqs_, queue_.url, queue_.name);
  if (!depth.ok()) {
    Log().Log(LogLevel::kWarn, "archive.depth_check_failed",
              {{"queue", queue_.name}, {"error", depth.status().ToString()}});
    return std::nullopt;
  }
  counters_.approximate_remaining = depth->visible;
  counters_.approximate_in_flight = depth->in_flight;
  return Counts{depth->visible, depth->in_flight};
}

QueueDrainer::Depth QueueDrainer::CheckDepth() {
  auto counts = ReadCounts();
  if (!counts) return Depth::kUnknown;
  size_t held;
  {
    MutexLock lock(mu_);
    held = HeldLocked() + static_cast<size_t>(std::max<int64_t>(0, in_hand_.load()));
  }
  // In flight beyond what we hold: a receive whose reply was lost, or
  // another consumer. Either comes back within a visibility timeout. In a
  // FIFO queue they also block the rest of their group, which shows as
  // visible but cannot be received meanwhile.
  const bool unexplained = counts->in_flight > static_cast<int64_t>(held);
  if (counts->visible > 0 && !(queue_.fifo && unexplained)) return Depth::kNotEmpty;
  return unexplained ? Depth::kWaitInFlight : Depth::kEmpty;
}

void QueueDrainer::HandleCorrupt(const std::vector<CorruptMessage>& corrupt,
                                 std::chrono::steady_clock::time_point received) {
  std::vector<Held> release;
  const auto now = received;
  {
    MutexLock lock(mu_);
    for (const CorruptMessage& c : corrupt) {
      ++counters_.corrupt;
      int n = ++corrupt_counts_[c.message_id];
      Log().Log(LogLevel::kWarn, "archive.md5_mismatch",
                {{"queue", queue_.name}, {"message_id", c.message_id}, {"attempt", n}, {"reason", c.reason}});
      if (n < options_.corrupt_receipts_to_give_up) {
        release.push_back({c.message_id, c.receipt_handle, now, now});
      } else {
        // Set aside until the end, so receives reach the rest.
        set_aside_.held.push_back({c.message_id, c.receipt_handle, now, now + options_.visibility_timeout});
      }
    }
  }
  ReleaseHeld(release, /*count_released=*/false);
  if (!release.empty()) NoteFifoLeave();
}

void QueueDrainer::HoldExamined(std::vector<Held> held) {
  if (held.empty()) return;
  std::vector<Held> release_now;
  {
    MutexLock lock(mu_);
    for (Held& h : held) examined_.held.push_back(std::move(h));
    if (examined_.held.size() >= options_.max_examined_held) {
      release_now.swap(examined_.held);
      examined_released_early_ = true;
    }
  }
  if (!release_now.empty()) {
    Log().Log(LogLevel::kWarn, "archive.examined_released_early",
              {{"queue", queue_.name},
               {"messages", static_cast<int64_t>(release_now.size())},
               {"note", "more messages examined than can be held; the pass may not reach every message"}});
    ReleaseHeld(release_now, /*count_released=*/false);
  }
}

void QueueDrainer::ReceiverLoop(int slot) {
  int consecutive_errors = 0;
  int depth_checks = 0;
  bool keep_turn = false;  // FIFO: this receiver holds the turn for its next receive
  std::mt19937_64 rng(std::random_device{}());
  while (!stop_) {
    if (governed_ && slot >= receiver_limit_.load()) {
      WaitForReceiverLevel(slot);
      continue;
    }
    FifoTurns::Turn turn;
    if (queue_.fifo) {
      auto t = AwaitFifoTurn(keep_turn);
      keep_turn = false;
      if (!t) continue;
      turn = *t;
    }
    InHand in_hand(in_hand_);
    Receipt r = Receive(slot, turn, in_hand);
    if (!r.got.ok()) {
      if (queue_.fifo) AfterFifoReceive(turn, -1);
      if (!RetryAfterReceiveError(r.got.status(), ++consecutive_errors, rng)) return;
      continue;
    }
    consecutive_errors = 0;
    const bool got_none = r.got->empty();
    const bool nothing = got_none && r.corrupt.empty();  // not even a corrupt message
    const size_t got = r.got->size() + r.corrupt.size();
    if (queue_.fifo) keep_turn = AfterFifoReceive(turn, static_cast<int64_t>(got));
    counters_.received += got;
    if (!r.corrupt.empty()) HandleCorrupt(r.corrupt, r.started);
    const bool progress = Place(std::move(*r.got), r.started);
    in_hand.Done();

    // An empty long poll: SQS looked at every server and found nothing
    // visible, so the queue is at its end (or refilling).
    const bool empty_long_poll = nothing && r.long_poll;
    // Receives come back empty while messages are held: archive them now
    // rather than at the batch's age limit (a FIFO group is blocked until
    // they are deleted; a standard queue is near its end). After an empty
    // long poll, wait for an upload slot rather than for another long poll.
    // (Not while another receiver still has messages in hand for the batch.)
    if (nothing && in_hand_ == 0) SealBuilding(/*wait=*/empty_long_poll, /*only_if_full=*/false);

    if (!got_none && progress) {
      no_progress_receives_ = 0;
      depth_checks = 0;
      MutexLock lock(mu_);
      unexplained_in_flight_since_.reset();
      continue;
    }
    // Receives without progress check the depth every
    // empty_receives_to_drain; an empty long poll checks it at once (the
    // run then ends without another round of long polls), but only the
    // counted checks move a run towards giving up as incomplete.
    const bool counted = ++no_progress_receives_ >= options_.empty_receives_to_drain;
    if (!counted && !empty_long_poll) continue;
    if (counted) no_progress_receives_ = 0;
    LookForTheEnd(counted, depth_checks);
  }
}

void QueueDrainer::WaitForReceiverLevel(int slot) {
  // Not needed at this level: wait until it rises or the run stops.
  // (Every stop notifies cv_; the timeout covers a stop_ set without.)
  MutexLock lock(mu_);
  clock_.WaitFor(mu_, cv_, std::chrono::milliseconds(200),
                 [&]() DLQ_REQUIRES(mu_) { return stop_ || slot < receiver_limit_.load(); });
}

QueueDrainer::Receipt QueueDrainer::Receive(int slot, const FifoTurns::Turn& turn, InHand& in_hand) {
  ReceiveOptions ro;
  ro.max_messages = static_cast<int>(kSqsBatch);
  // A FIFO group stays blocked while we hold its messages: do not sit in a
  // long poll then, find out at once and seal what is held.
  ro.wait_time_seconds = queue_.fifo && turn.held_before > 0 ? 0 : options_.wait_time_seconds;
  ro.visibility_timeout = static_cast<int>(options_.visibility_timeout.count());
  std::vector<CorruptMessage> corrupt;
  ro.corrupt = &corrupt;
  ro.cancel = &abort_receives_;
  ++counters_.receive_calls;
  const auto started = clock_.SteadyNow();
  visibility_ledger_.ReceiveStarted(slot, started);
  auto got = sqs_.ReceiveMessages(queue_.url, ro);
  // In hand before the receive stops counting as running (a depth check
  // between SQS's reply and here sees the receive still running). A receive
  // that brought messages, or failed (its reply may be lost after SQS took
  // messages), put them in flight until at most a timeout after its end.
  if (got.ok()) in_hand.Add(static_cast<int64_t>(got->size() + corrupt.size()));
  const auto ended = clock_.SteadyNow();
  visibility_ledger_.ReceiveEnded(slot, started, ended, !got.ok() || !got->empty() || !corrupt.empty(),
                                  options_.visibility_timeout);
  if (governed_) ObserveReceive(ended, got.ok() ? got->size() + corrupt.size() : 0);
  if (receive_waiters_ > 0) {
    MutexLock lock(mu_);  // the waiter checks and sleeps under it
    cv_.NotifyAll();      // a depth check waits for receives on the wire
  }
  return Receipt{std::move(got), std::move(corrupt), started, ro.wait_time_seconds > 0};
}

bool QueueDrainer::RetryAfterReceiveError(const Status& st, int consecutive_errors, std::mt19937_64& rng) {
  if (st.code() == ErrorCode::kCancelled && abort_receives_) {  // stopping or failed already
    ++counters_.abandoned_receives;
    return false;
  }
  if (st.retryable() && consecutive_errors < 5) {
    Log().Log(LogLevel::kWarn, "archive.receive_retry", {{"queue", queue_.name}, {"error", st.ToString()}});
    clock_.SleepFor(BackoffDelay(kLocalRetry, consecutive_errors, rng));
    return true;
  }
  Fail(st.WithContext(fmt::format("receive from {}", queue_.name)));
  return false;
}

bool QueueDrainer::Place(std::vector<Message>&& msgs, SteadyTime received) {
  // SQS started their visibility timeout when it answered, at some moment
  // after the request went out: counting from the request's start keeps
  // our deadline at or before SQS's, never after it.
  const auto now = received;
  SelectionPass::Sorted sorted;
  {
    MutexLock lock(mu_);
    for (const Message& m : msgs) ++receipts_[m.message_id];
    sorted = selection_.Sort(std::move(msgs), clock_.Now());
  }
  counters_.selected += sorted.selected;
  counters_.skipped += sorted.skipped;
  std::vector<Message>& take = sorted.take;
  std::vector<Held> examined;
  examined.reserve(sorted.examined.size());
  for (Message& m : sorted.examined) {
    examined.push_back({std::move(m.message_id), std::move(m.receipt_handle), now, now + options_.visibility_timeout});
  }
  // Held invisible until the pass ends, so the next receives reach messages
  // not seen yet.
  HoldExamined(std::move(examined));
  // Enforce --max-messages across receivers.
  if (options_.max_messages > 0 && !take.empty()) {
    uint64_t before = budget_used_.fetch_add(take.size());
    uint64_t allowed =
        before >= options_.max_messages ? 0 : std::min<uint64_t>(take.size(), options_.max_messages - before);
    if (allowed < take.size()) {
      std::vector<Held> over;
      for (size_t i = allowed; i < take.size(); ++i)
        over.push_back({take[i].message_id, take[i].receipt_handle, {}, {}});
      take.resize(allowed);
      ReleaseHeld(over, /*count_released=*/false);
      stop_ = true;
    } else if (before + take.size() >= options_.max_messages) {
      stop_ = true;
    }
  }
  if (options_.dry_run && options_.max_messages > 0 && counters_.selected >= options_.max_messages) stop_ = true;
  if (!take.empty()) AddSelected(std::move(take), received);
  return sorted.progress;
}

void QueueDrainer::LookForTheEnd(bool counted, int& depth_checks) {
  {
    // Our own batches may be what is in flight, or what blocks a FIFO
    // group: nothing to conclude until they are stored and deleted. Wait
    // for that (briefly) rather than for another empty long poll. A batch
    // still being built is not in flight: once nothing is, the next pass
    // of the loop seals it (waiting on, the wait only ran out its time).
    MutexLock lock(mu_);
    auto in_flight = [&]() DLQ_REQUIRES(mu_) { return !upload_queue_.empty() || !uploading_.empty() || sealing_ > 0; };
    auto busy = [&]() DLQ_REQUIRES(mu_) { return !building_.held.empty() || in_flight(); };
    clock_.WaitFor(mu_, cv_, std::chrono::seconds(2), [&]() DLQ_REQUIRES(mu_) { return !in_flight() || stop_; });
    if (busy() || stop_) return;
  }
  Depth depth = CheckDepth();
  if (depth == Depth::kEmpty) {
    queue_seen_empty_ = true;
    stop_ = true;
    cv_.NotifyAll();
    return;
  }
  if (depth == Depth::kWaitInFlight) {
    auto t = clock_.SteadyNow();
    std::chrono::steady_clock::duration waited{0};
    bool looked_since = false;
    {
      MutexLock lock(mu_);
      if (!unexplained_in_flight_since_) unexplained_in_flight_since_ = t;
      waited = t - *unexplained_in_flight_since_;
      // An empty receive that began after their visibility ran out: they
      // are not ours to catch. (Time alone is not proof: it also passes
      // while no receiver ran.)
      looked_since = visibility_ledger_.LookedAfter(*unexplained_in_flight_since_ + options_.visibility_timeout);
    }
    // Their visibility runs out within one timeout (ours, for a lost
    // reply); a few seconds more for the long poll to catch them.
    auto limit = options_.visibility_timeout + std::chrono::seconds(options_.wait_time_seconds + 5);
    if (waited > limit && looked_since) {
      MarkIncomplete(fmt::format(
          "{} in flight for {}s without this run holding them (another consumer may hold "
          "them); run again after {}s",
          CountNoun(counters_.approximate_in_flight.load(), "message stayed", "messages stayed"),
          std::chrono::duration_cast<std::chrono::seconds>(waited).count(), options_.visibility_timeout.count()));
    } else if (options_.wait_time_seconds == 0) {
      // A receive on the wire may be what holds them: let it come back
      // before time moves on (a reply is not lost for waiting).
      {
        MutexLock lock(mu_);
        ++receive_waiters_;
        clock_.WaitFor(mu_, cv_, kInFlightPoll, [&]() DLQ_REQUIRES(mu_) {
          return !visibility_ledger_.ReceiveRunningSince(t) || stop_ || stop_requested_;
        });
        --receive_waiters_;
      }
      clock_.SleepFor(kInFlightPoll);
    }
    return;
  }
  // Give a receiver that holds a reply it has not placed yet (a FIFO
  // group stays blocked meanwhile) time to run: at least a second passes
  // before the run gives up.
  clock_.SleepFor(std::chrono::milliseconds(50));
  if (counted && ++depth_checks >= options_.depth_checks_before_incomplete) {
    MarkIncomplete(
        fmt::format("receives brought nothing new while ~{} visible (messages examined earlier came "
                    "back, a FIFO group is held elsewhere, or the queue is being refilled); run again",
                    CountNoun(counters_.approximate_remaining.load(), "message remained", "messages remained")));
  }
}

void QueueDrainer::ObserveReceive(std::chrono::steady_clock::time_point end, uint64_t messages) {
  int limit = 0;
  int before = 0;
  double rate = 0;
  bool announce = false;  // a probe ended on a level other than the last one announced
  {
    MutexLock lock(governor_mu_);
    const bool changed = governor_->Observe(end, messages);
    limit = governor_->limit();
    // A probe can also end on the level it measured last (the maximum).
    if (governor_->settled() && limit != announced_receivers_) {
      announced_receivers_ = limit;
      announce = true;
    }
    if (!changed && !announce) return;
    // Under the lock: two receivers' changes reach the limit in the
    // governor's order.
    before = receiver_limit_.exchange(limit);
    rate = governor_->settled_rate();
  }
  if (limit > before) {
    MutexLock lock(mu_);
    cv_.NotifyAll();  // receivers waiting for the level
  }
  if (announce) {
    Log().Log(
        LogLevel::kInfo, "archive.receivers",
        {{"queue", queue_.name},
         {"receivers", limit},
         {"max", options_.receivers},
         {"messages_per_s", std::round(rate)},
         {"note", limit < options_.receivers ? "more receivers did not raise the rate enough; measured again every 30s"
                                             : "every receiver raises the rate"}});
  } else {
    Log().Log(LogLevel::kDebug, "archive.receivers_probe", {{"queue", queue_.name}, {"receivers", limit}});
  }
}

void QueueDrainer::AddSelected(std::vector<Message>&& msgs, std::chrono::steady_clock::time_point received) {
  const auto now = received;
  size_t i = 0;
  // Set (with the index of its first message) once this receiver waits for room.
  std::optional<std::list<Batch>::iterator> waiting;
  size_t waiting_from = 0;
  while (i < msgs.size()) {
    bool need_seal = false;
    {
      MutexLock lock(mu_);
      // Stopping or failed: nothing more goes into a batch.
      if (stop_requested_ || !first_error_.ok()) break;
      while (i < msgs.size() && !builder_->Full()) {
        if (builder_->empty()) {
          building_.seq = next_seq_++;
          // One allocation for the batch's receipt handles, not a doubling
          // chain whose last step (> 1 MiB) is mapped and faulted in anew.
          building_.held.reserve(std::min<size_t>(options_.batch.max_messages, kReserveHeld));
        }
        builder_->Add(msgs[i], OwnReceivesLocked(msgs[i].message_id));
        building_.held.push_back(TakeHeld(msgs[i], i, waiting.value_or(waiting_.end()), waiting_from, now));
        ++counters_.selected;
        ++i;
      }
      need_seal = builder_->Full();
      if (need_seal && i < msgs.size() && !waiting) {
        // The wait for room can outlast the visibility timeout (slow
        // uploads): the heartbeat extends what waits here.
        Batch& w = waiting_.emplace_back();
        w.seq = next_seq_++;
        for (size_t j = i; j < msgs.size(); ++j) {
          w.held.push_back({msgs[j].message_id, msgs[j].receipt_handle, now, now + options_.visibility_timeout});
        }
        waiting = std::prev(waiting_.end());
        waiting_from = i;
      }
    }
    if (need_seal) SealBuilding(/*wait=*/true, /*only_if_full=*/true);
  }
  std::vector<Held> rest;
  {
    MutexLock lock(mu_);
    for (; i < msgs.size(); ++i) {
      Held h = TakeHeld(msgs[i], i, waiting.value_or(waiting_.end()), waiting_from, now);
      h.visible_until = now;
      rest.push_back(std::move(h));
    }
    if (waiting) waiting_.erase(*waiting);
  }
  if (!rest.empty()) ReleaseHeld(rest);
}

QueueDrainer::Held QueueDrainer::TakeHeld(Message& m, size_t i, std::list<Batch>::iterator waiting, size_t waiting_from,
                                          std::chrono::steady_clock::time_point received) {
  if (waiting == waiting_.end() || i < waiting_from) {
    // The builder keeps only the record: the ids move, not copied.
    return {std::move(m.message_id), std::move(m.receipt_handle), received, received + options_.visibility_timeout};
  }
  // With the deadline the heartbeat gave it; its place stays (due entries
  // name messages by index) with an empty handle, which nothing extends.
  Held& w = waiting->held[i - waiting_from];
  Held h{std::move(w.message_id), std::move(w.receipt_handle), w.received_at, w.visible_until};
  w.receipt_handle.clear();
  return h;
}

void QueueDrainer::SealBuilding(bool wait, bool only_if_full) {
  MutexLock lock(mu_);
  // Batches whose object is stored and which are only deleting hold receipt
  // handles, not data: they do not count against the in-flight bound.
  auto in_flight = [&]() DLQ_REQUIRES(mu_) {
    return upload_queue_.size() + uploading_.size() - static_cast<size_t>(deleting_) + static_cast<size_t>(sealing_);
  };
  auto aborting = [&]() DLQ_REQUIRES(mu_) { return stop_requested_ || !first_error_.ok(); };
  // One batch is compressed at a time, so two batch buffers exist at most
  // (the one filling and the one compressing; each 8 MiB by default, the
  // largest part of the RSS). A compress takes tens of milliseconds, a batch
  // far longer to fill from SQS.
  auto may_seal = [&]() DLQ_REQUIRES(mu_) {
    return in_flight() < static_cast<size_t>(options_.max_batches_in_flight) && sealing_ == 0;
  };
  if (wait) {
    cv_.Wait(mu_, [&]() DLQ_REQUIRES(mu_) { return may_seal() || aborting(); });
  } else if (!may_seal()) {
    return;
  }
  if (aborting()) return;  // Run() releases the building batch
  if (builder_->empty()) return;
  // Another receiver sealed the full batch while this one waited: keep filling.
  if (only_if_full && !builder_->Full()) return;
  std::unique_ptr<BatchBuilder> full = std::move(builder_);
  builder_ = NewBuilderLocked();
  std::string gz;
  if (!spare_gz_.empty()) {
    gz = std::move(spare_gz_.back());
    spare_gz_.pop_back();
  }
  Batch batch = std::move(building_);
  building_ = Batch{};
  ++sealing_;
  sealing_batches_.push_back(&batch);
  lock.Unlock();

  auto sealed = full->Finish(std::move(gz));

  lock.Lock();
  --sealing_;
  std::erase(sealing_batches_, &batch);
  // It builds the batch after next (one builder builds while this one seals).
  if (sealed.ok() && spare_builder_ == nullptr) {
    spare_builder_ = std::move(full);
  }
  if (!sealed.ok()) {
    lock.Unlock();
    Fail(sealed.status().WithContext(fmt::format("compress batch of {}", queue_.name)));
    ReleaseHeld(batch.held);
    cv_.NotifyAll();
    return;
  }
  batch.sealed = std::move(*sealed);
  upload_queue_.push_back(std::move(batch));
  cv_.NotifyAll();
}

Status QueueDrainer::UploadBatch(Batch& batch) {
  const SealedBatch& sb = *batch.sealed;
  std::string where = fmt::format("{}/{}", store_.Describe(), sb.key);
  // The template was checked when parsed; a queue, region or account name
  // from a non-AWS endpoint could still render a key naming another place.
  DLQ_RETURN_IF_ERROR(ValidateKeyPath(sb.key, "object key").WithContext(fmt::format("upload {} refused", where)));
  Status st = store_.Put(sb.key, sb.gz, options_.put);
  if (st.ok()) return st;
  if (st.code() == ErrorCode::kAlreadyExists) {
    // A batch id collision is astronomically unlikely; never overwrite.
    return st.WithContext(fmt::format("upload {} refused to overwrite", where));
  }
  std::string code =
      st.aws() && !st.aws()->error_code.empty() ? st.aws()->error_code : std::string(ErrorCodeName(st.code()));
  const PutFailureAdvice advice = store_.AdvisePutFailure(st);
  Status out(st.code(),
             fmt::format("{} failed with {} on {}: {} ({})", advice.operation, code, where, advice.hint, st.message()));
  return st.aws() ? out.WithAws(*st.aws()) : out;
}

void QueueDrainer::DeleteBatch(Batch& batch) {
  const std::vector<Held>& held = batch.held;
  size_t chunks = (held.size() + kSqsBatch - 1) / kSqsBatch;
  std::atomic<size_t> next{0};
  auto worker = [&] {
    std::mt19937_64 rng(std::random_device{}());
    for (size_t c = next++; c < chunks; c = next++) {
      size_t begin = c * kSqsBatch;
      size_t end = std::min(held.size(), begin + kSqsBatch);
      std::vector<DeleteEntry> pending;
      for (size_t i = begin; i < end; ++i) pending.push_back({std::to_string(i - begin), held[i].receipt_handle});
      auto message_id = [&](const std::string& id) {
        auto i = EntryIndex(id, end - begin);
        return i ? held[begin + *i].message_id : std::string("?");
      };
      for (int attempt = 0; attempt < options_.delete_attempts && !pending.empty(); ++attempt) {
        if (attempt > 0) clock_.SleepFor(BackoffDelay(kLocalRetry, attempt, rng));
        auto r = sqs_.DeleteMessageBatch(queue_.url, pending);
        if (!r.ok()) {
          Log().Log(LogLevel::kWarn, "archive.delete_retry",
                    {{"queue", queue_.name}, {"attempt", attempt + 1}, {"error", r.status().ToString()}});
          if (!r.status().retryable() && r.status().code() != ErrorCode::kInternal) {
            // Denied or gone: every later batch would be archived and left
            // behind too, and archived again once visible. Stop here.
            Fail(Status(r.status().code(),
                        fmt::format("sqs:DeleteMessage failed on {} ({}): the archived messages stay in the DLQ and "
                                    "will be archived again; check the role's policy for sqs:DeleteMessage",
                                    queue_.name, r.status().message())));
            break;
          }
          continue;
        }
        counters_.deleted += r->successful_ids.size();
        std::vector<DeleteEntry> retry;
        for (const BatchEntryError& e : r->failed) {
          auto it = std::find_if(pending.begin(), pending.end(), [&](const DeleteEntry& d) { return d.id == e.id; });
          if (it == pending.end()) continue;
          if (IsReceiptHandleError(e)) {
            // The message became visible again before we deleted it: it is
            // still in the DLQ and will be archived again (a duplicate).
            ++counters_.duplicates;
            Log().Log(LogLevel::kWarn, "archive.duplicate",
                      {{"queue", queue_.name}, {"message_id", message_id(e.id)}, {"reason", e.code}});
          } else {
            retry.push_back(*it);
          }
        }
        pending = std::move(retry);
      }
      if (!pending.empty()) {
        counters_.delete_failures += pending.size();
        for (const DeleteEntry& d : pending) {
          Log().Log(LogLevel::kWarn, "archive.delete_failed",
                    {{"queue", queue_.name},
                     {"message_id", message_id(d.id)},
                     {"note", "archived; stays in the DLQ and will be archived again"}});
        }
      }
    }
  };
  int n = static_cast<int>(std::min<size_t>(chunks, static_cast<size_t>(options_.deleters)));
  std::vector<std::thread> threads;
  for (int t = 1; t < n; ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
}

void QueueDrainer::ReleaseHeld(const std::vector<Held>& held, bool count_released) {
  for (size_t begin = 0; begin < held.size(); begin += kSqsBatch) {
    size_t end = std::min(held.size(), begin + kSqsBatch);
    std::vector<VisibilityEntry> entries;
    for (size_t i = begin; i < end; ++i) entries.push_back({std::to_string(i - begin), held[i].receipt_handle, 0});
    auto r = sqs_.ChangeMessageVisibilityBatch(queue_.url, entries);
    if (!r.ok()) {
      // They become visible when their visibility timeout runs out anyway.
      Log().Log(LogLevel::kWarn, "archive.release_failed",
                {{"queue", queue_.name},
                 {"messages", static_cast<int64_t>(entries.size())},
                 {"error", r.status().ToString()}});
    }
    if (count_released) counters_.released += entries.size();
  }
}

void QueueDrainer::UploaderLoop() {
  while (true) {
    MutexLock lock(mu_);
    cv_.Wait(mu_, [&]() DLQ_REQUIRES(mu_) { return !upload_queue_.empty() || (receivers_done_ && sealing_ == 0); });
    if (upload_queue_.empty()) return;
    Batch batch = std::move(upload_queue_.front());
    upload_queue_.pop_front();
    uploading_.push_back(&batch);
    // Failed or stopping: batches not yet uploading go back to the queue.
    bool release = !first_error_.ok() || stop_requested_;
    lock.Unlock();

    if (release) {
      ReleaseHeld(batch.held);
    } else {
      Status st = UploadBatch(batch);
      if (!st.ok()) {
        Fail(st);
        ReleaseHeld(batch.held);
      } else {
        counters_.archived += batch.held.size();
        ++counters_.objects;
        counters_.bytes_uploaded += batch.sealed->gz.size();
        {
          MutexLock g(mu_);
          keys_.push_back(batch.sealed->key);
        }
        Log().Log(LogLevel::kInfo, "archive.object",
                  {{"queue", queue_.name},
                   {"key", batch.sealed->key},
                   {"messages", static_cast<int64_t>(batch.held.size())},
                   {"bytes", static_cast<int64_t>(batch.sealed->gz.size())}});
        {
          // The body is stored: its buffer serves a later batch.
          MutexLock g(mu_);
          if (spare_gz_.size() < static_cast<size_t>(options_.max_batches_in_flight)) {
            spare_gz_.push_back(std::move(batch.sealed->gz));
          }
        }
        batch.sealed->gz.clear();
        batch.sealed->gz.shrink_to_fit();
        if (options_.keep) {
          // A copy: hold the originals to the end of the pass so receives
          // reach the rest, then release them.
          std::vector<Held> held;
          {
            MutexLock g(mu_);  // the heartbeat reads batches in uploading_
            held.swap(batch.held);
          }
          counters_.kept += held.size();
          HoldExamined(std::move(held));
        } else {
          {
            MutexLock g(mu_);
            batch.deleting = true;
            ++deleting_;
            fifo_.DeleteBegan();
          }
          cv_.NotifyAll();  // a slot for the next batch is free
          DeleteBatch(batch);
        }
      }
    }
    lock.Lock();
    if (batch.deleting) --deleting_;
    std::erase(uploading_, &batch);
    fifo_.Left();  // its FIFO groups are free (NoteFifoLeave, under the lock already held)
    cv_.NotifyAll();
  }
}

struct QueueDrainer::Due {
  uint64_t seq;
  size_t index;
  std::string receipt_handle;
  int seconds;
  bool moves;  // from waiting_: may be in the building batch (or beyond) when extended
};

void QueueDrainer::HeartbeatLoop() {
  MutexLock lock(mu_);
  while (!heartbeat_stop_) {
    // Every interval, not at each notification (the pipeline notifies often).
    clock_.WaitFor(mu_, cv_, options_.heartbeat_interval, [&]() DLQ_REQUIRES(mu_) { return heartbeat_stop_; });
    if (heartbeat_stop_) break;
    const SteadyTime now = clock_.SteadyNow();
    bool seal = !builder_->empty() && builder_->ShouldSeal();
    std::vector<Due> due = DueLocked(now, seal);
    if (!due.empty()) {
      lock.Unlock();
      std::vector<Extension> extended = ExtendVisibility(due);
      lock.Lock();
      std::vector<Held> orphans = RecordExtensionsLocked(due, extended, now);
      if (!orphans.empty()) {
        lock.Unlock();
        ReleaseHeld(orphans, /*count_released=*/false);
        lock.Lock();
      }
    }
    if (seal) {
      lock.Unlock();
      SealBuilding(/*wait=*/false, /*only_if_full=*/false);
      lock.Lock();
    }
  }
}

std::vector<QueueDrainer::Due> QueueDrainer::DueLocked(SteadyTime now, bool& seal) {
  const auto timeout = options_.visibility_timeout;
  std::vector<Due> due;
  // `moves`: its messages may go to another batch before the extension is recorded.
  auto scan = [&](Batch& batch, bool building, bool moves = false) {
    for (size_t i = 0; i < batch.held.size(); ++i) {
      const Held& h = batch.held[i];
      if (h.receipt_handle.empty()) continue;  // moved from waiting_ to a batch, which extends it
      if (h.visible_until - now > timeout / 2) continue;
      auto cap_left = std::chrono::duration_cast<std::chrono::seconds>(h.received_at + kMaxVisibilityWindow - now);
      auto extend = std::min(timeout, cap_left - std::chrono::seconds(30));
      if (extend < std::chrono::seconds(10)) {
        if (building) seal = true;  // cannot extend much longer: get it archived now
        continue;
      }
      due.push_back({batch.seq, i, h.receipt_handle, static_cast<int>(extend.count()), moves});
    }
  };
  scan(building_, true);
  scan(examined_, false);
  for (Batch& b : upload_queue_) scan(b, false);
  for (Batch* b : uploading_) scan(*b, false);
  for (Batch* b : sealing_batches_) scan(*b, false);
  for (Batch& b : waiting_) scan(b, false, /*moves=*/true);
  return due;
}

std::vector<QueueDrainer::Extension> QueueDrainer::ExtendVisibility(const std::vector<Due>& due) {
  const auto timeout = options_.visibility_timeout;
  std::vector<Extension> extended;
  for (size_t begin = 0; begin < due.size(); begin += kSqsBatch) {
    size_t end = std::min(due.size(), begin + kSqsBatch);
    std::vector<VisibilityEntry> entries;
    for (size_t i = begin; i < end; ++i) {
      entries.push_back({std::to_string(i - begin), due[i].receipt_handle, due[i].seconds});
    }
    // SQS counts the new timeout from when it handles the call: from
    // the call's start, our deadline is never later than SQS's.
    const auto sent = clock_.SteadyNow();
    auto r = sqs_.ChangeMessageVisibilityBatch(queue_.url, entries);
    // Applied or not (a lost reply), at most until a timeout after its end.
    visibility_ledger_.VisibilityChanged(clock_.SteadyNow(), timeout);
    if (!r.ok()) {
      Log().Log(LogLevel::kWarn, "archive.heartbeat_failed",
                {{"queue", queue_.name}, {"error", r.status().ToString()}});
      continue;
    }
    counters_.visibility_extensions += r->successful_ids.size();
    for (const std::string& id : r->successful_ids) {
      if (auto i = EntryIndex(id, end - begin)) {
        extended.emplace_back(begin + *i, sent + std::chrono::seconds(due[begin + *i].seconds));
      }
    }
  }
  return extended;
}

std::vector<QueueDrainer::Held> QueueDrainer::RecordExtensionsLocked(const std::vector<Due>& due,
                                                                     const std::vector<Extension>& extended,
                                                                     SteadyTime now) {
  std::vector<Held> orphans;
  for (const auto& [i, until] : extended) {
    // The batch may have moved on meanwhile: match by receipt handle.
    if (Batch* b = FindBatchLocked(due[i].seq); b != nullptr && due[i].index < b->held.size() &&
                                                b->held[due[i].index].receipt_handle == due[i].receipt_handle) {
      b->held[due[i].index].visible_until = until;
    } else if (Held* moved = due[i].moves ? FindMovedLocked(due[i].receipt_handle) : nullptr) {
      moved->visible_until = until;  // left waiting_ for a batch meanwhile: still ours
    } else {
      // Released (or deleted) while this extension was on the wire: the
      // extension must not hide it again.
      orphans.push_back({"", due[i].receipt_handle, now, now});
    }
  }
  return orphans;
}

bool QueueDrainer::FinalQueueEmpty() {
  // Approximate counts can lag a deletion by a moment: look a few times.
  for (int i = 0; i < 5; ++i) {
    if (i > 0) clock_.SleepFor(std::chrono::milliseconds(200 * i));
    if (auto c = ReadCounts(); c && c->visible == 0 && c->in_flight == 0) return true;
  }
  return false;
}

DrainResult QueueDrainer::Run() {
  DrainResult result;
  result.queue = queue_;
  auto start = clock_.SteadyNow();
  Log().Log(LogLevel::kInfo, "archive.start",
            {{"queue", queue_.name},
             {"queue_url", queue_.url},
             {"destination", DestinationWithPrefix(store_.Describe(), options_.prefix)},
             {"dry_run", options_.dry_run},
             {"keep", options_.keep}});
  if (auto c = ReadCounts()) initial_total_ = c->visible + c->in_flight;

  std::thread heartbeat([this] { HeartbeatLoop(); });
  std::vector<std::thread> uploaders;
  uploaders.reserve(2 * static_cast<size_t>(options_.max_batches_in_flight));
  // Twice the in-flight bound: some threads delete stored batches while the
  // others upload the next ones.
  for (int i = 0; i < 2 * options_.max_batches_in_flight; ++i) uploaders.emplace_back([this] { UploaderLoop(); });
  StartGovernor();
  std::vector<std::thread> receivers;
  receivers.reserve(static_cast<size_t>(options_.receivers));
  for (int i = 0; i < options_.receivers; ++i) receivers.emplace_back([this, i] { ReceiverLoop(i); });
  for (auto& t : receivers) t.join();

  FinishBuilding();
  {
    MutexLock lock(mu_);
    receivers_done_ = true;
  }
  cv_.NotifyAll();
  for (auto& t : uploaders) t.join();
  {
    MutexLock lock(mu_);
    heartbeat_stop_ = true;
  }
  cv_.NotifyAll();
  heartbeat.join();

  result.corrupt_ids = EndPass();
  result.stats = Snapshot();
  {
    MutexLock lock(mu_);
    result.keys = keys_;
    result.status = first_error_;
    result.incomplete_reason = incomplete_reason_;
  }
  result.stopped = stop_requested_;
  if (result.status.ok() && !result.stopped) Judge(result);
  result.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(clock_.SteadyNow() - start);
  LogDone(result);
  return result;
}

void QueueDrainer::StartGovernor() {
  governed_ = options_.adaptive_receivers && !queue_.fifo && options_.receivers > 1;
  if (!governed_) {
    receiver_limit_ = options_.receivers;
    return;
  }
  ReceiverGovernor::Options g;
  g.max_receivers = options_.receivers;
  MutexLock lock(governor_mu_);
  governor_.emplace(g, clock_.SteadyNow());
  receiver_limit_ = governor_->limit();
  if (governor_->settled()) announced_receivers_ = governor_->limit();  // nothing to choose, nothing to say
}

void QueueDrainer::FinishBuilding() {
  if (!Aborting()) {
    SealBuilding(/*wait=*/true, /*only_if_full=*/false);
    return;
  }
  // Stop or failure: what is still being built goes back at once.
  std::vector<Held> rest;
  {
    MutexLock lock(mu_);
    rest = std::move(building_.held);
    building_ = Batch{};
    builder_ = NewBuilderLocked();
  }
  ReleaseHeld(rest);
}

std::vector<std::string> QueueDrainer::EndPass() {
  // The pass is over: what it examined and what it set aside go back.
  std::vector<Held> examined, set_aside;
  std::vector<std::string> corrupt_ids;
  {
    MutexLock lock(mu_);
    examined.swap(examined_.held);
    set_aside.swap(set_aside_.held);
    for (const auto& [id, n] : corrupt_counts_) {
      if (n >= options_.corrupt_receipts_to_give_up) corrupt_ids.push_back(id);
    }
  }
  ReleaseHeld(examined, /*count_released=*/false);
  ReleaseHeld(set_aside, /*count_released=*/false);
  return corrupt_ids;
}

void QueueDrainer::Judge(DrainResult& result) {
  const bool whole_queue = options_.selection.kind == SelectionKind::kAll && !options_.keep && !options_.dry_run &&
                           options_.max_messages == 0;
  CompletionFacts facts;
  facts.queue_seen_empty = queue_seen_empty_;
  facts.incomplete_reason = result.incomplete_reason;
  facts.corrupt_ids = result.corrupt_ids;
  facts.released = result.stats.released;
  facts.examined_released_early = examined_released_early_;
  facts.examined = result.stats.skipped + result.stats.selected;
  facts.initial_total = initial_total_;
  facts.max_examined_held = options_.max_examined_held;
  facts.budget_reached = options_.max_messages > 0 && budget_used_ >= options_.max_messages;
  std::function<std::string()> final_check;
  if (whole_queue) {
    final_check = [&]() -> std::string {
      if (FinalQueueEmpty()) return "";
      result.stats = Snapshot();
      return fmt::format(
          "the queue still shows {} visible and {} in flight at the end (new messages, or another consumer); run "
          "again after {}s",
          result.stats.approximate_remaining, result.stats.approximate_in_flight, options_.visibility_timeout.count());
    };
  }
  Completion c = JudgeCompletion(facts, final_check);
  result.drained = c.drained;
  result.incomplete = c.incomplete;
  result.incomplete_reason = std::move(c.reason);
}

void QueueDrainer::LogDone(const DrainResult& result) const {
  const char* outcome = !result.status.ok() ? "failed"
                        : result.stopped    ? "stopped"
                        : result.incomplete ? "incomplete"
                                            : "done";
  Log().Log(result.status.ok() ? LogLevel::kInfo : LogLevel::kWarn, "archive.done",
            {{"queue", queue_.name},
             {"result", std::string(outcome)},
             {"archived", static_cast<int64_t>(result.stats.archived)},
             {"deleted", static_cast<int64_t>(result.stats.deleted)},
             {"released", static_cast<int64_t>(result.stats.released)},
             {"kept", static_cast<int64_t>(result.stats.kept)},
             {"duplicates", static_cast<int64_t>(result.stats.duplicates)},
             {"objects", static_cast<int64_t>(result.stats.objects)},
             {"receivers", result.stats.receivers},
             {"drained", result.drained}});
}

}  // namespace dlq
