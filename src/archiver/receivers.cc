#include "archiver/receivers.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <utility>

#include "common/count_noun.h"
#include "common/log.h"
#include "sqs/limits.h"

namespace dlq {
namespace {

using sqs::kMaxBatchEntries;
// Pause between depth checks while waiting for messages in flight that this
// drainer does not hold, when receives do not wait on their own.
constexpr std::chrono::milliseconds kInFlightPoll{500};
// FIFO turns: a probe at least this often even when no batch left the
// pipeline (a group held by someone else comes back on its own).
constexpr std::chrono::seconds kFifoProbeEvery{1};

}  // namespace

class Receivers::InHand {
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

Receivers::Receivers(QueueClient& sqs, Clock& clock, DrainRun& run, ReceiverHandoff& handoff)
    : sqs_(sqs), clock_(clock), run_(run), handoff_(handoff), queue_(run.queue), options_(run.options) {}

void Receivers::Run() {
  StartGovernor();
  std::vector<std::thread> receivers;
  receivers.reserve(static_cast<size_t>(options_.receivers));
  for (int i = 0; i < options_.receivers; ++i) receivers.emplace_back([this, i] { Loop(i); });
  for (auto& t : receivers) t.join();
}

void Receivers::StartGovernor() {
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

void Receivers::Loop(int slot) {
  int consecutive_errors = 0;
  int depth_checks = 0;
  bool keep_turn = false;  // FIFO: this receiver holds the turn for its next receive
  std::mt19937_64 rng(std::random_device{}());
  while (!run_.stop) {
    if (governed_ && slot >= receiver_limit_.load()) {
      WaitForLevel(slot);
      continue;
    }
    FifoTurns::Turn turn;
    if (queue_.fifo) {
      auto t = AwaitFifoTurn(keep_turn);
      keep_turn = false;
      if (!t) continue;
      turn = *t;
    }
    InHand in_hand(run_.in_hand);
    Receipt r = Receive(slot, turn, in_hand);
    if (!r.got.ok()) {
      if (queue_.fifo) AfterFifoReceive(turn, -1);
      if (!RetryAfterError(r.got.status(), ++consecutive_errors, rng)) return;
      continue;
    }
    consecutive_errors = 0;
    const bool got_none = r.got->empty();
    const bool nothing = got_none && r.corrupt.empty();  // not even a corrupt message
    const size_t got = r.got->size() + r.corrupt.size();
    if (queue_.fifo) keep_turn = AfterFifoReceive(turn, static_cast<int64_t>(got));
    run_.counters.received += got;
    const bool progress = handoff_.Place(std::move(*r.got), r.corrupt, r.started);
    in_hand.Done();

    // An empty long poll: SQS looked at every server and found nothing
    // visible, so the queue is at its end (or refilling).
    const bool empty_long_poll = nothing && r.long_poll;
    // Receives come back empty while messages are held: archive them now
    // rather than at the batch's age limit (a FIFO group is blocked until
    // they are deleted; a standard queue is near its end). After an empty
    // long poll, wait for an upload slot rather than for another long poll.
    // (Not while another receiver still has messages in hand for the batch.)
    if (nothing && run_.in_hand == 0) handoff_.Seal(/*wait=*/empty_long_poll);

    if (!got_none && progress) {
      no_progress_receives_ = 0;
      depth_checks = 0;
      MutexLock lock(run_.mu);
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

void Receivers::WaitForLevel(int slot) {
  // Not needed at this level: wait until it rises or the run stops.
  // (Every stop notifies the run's cv; the timeout covers a run_.stop set without.)
  MutexLock lock(run_.mu);
  clock_.WaitFor(run_.mu, run_.cv, std::chrono::milliseconds(200),
                 [&]() DLQ_REQUIRES(run_.mu) { return run_.stop || slot < receiver_limit_.load(); });
}

Receivers::Receipt Receivers::Receive(int slot, const FifoTurns::Turn& turn, InHand& in_hand) {
  ReceiveOptions ro;
  ro.max_messages = static_cast<int>(kMaxBatchEntries);
  // A FIFO group stays blocked while we hold its messages: do not sit in a
  // long poll then, find out at once and seal what is held.
  ro.wait_time_seconds = queue_.fifo && turn.held_before > 0 ? 0 : options_.wait_time_seconds;
  ro.visibility_timeout = static_cast<int>(options_.visibility_timeout.count());
  std::vector<CorruptMessage> corrupt;
  ro.corrupt = &corrupt;
  ro.cancel = &run_.abort_receives;
  ++run_.counters.receive_calls;
  const auto started = clock_.SteadyNow();
  run_.ledger.ReceiveStarted(slot, started);
  auto got = sqs_.ReceiveMessages(queue_.url, ro);
  // In hand before the receive stops counting as running (a depth check
  // between SQS's reply and here sees the receive still running). A receive
  // that brought messages, or failed (its reply may be lost after SQS took
  // messages), put them in flight until at most a timeout after its end.
  if (got.ok()) in_hand.Add(static_cast<int64_t>(got->size() + corrupt.size()));
  const auto ended = clock_.SteadyNow();
  run_.ledger.ReceiveEnded(slot, started, ended, !got.ok() || !got->empty() || !corrupt.empty(),
                           options_.visibility_timeout);
  if (governed_) ObserveReceive(ended, got.ok() ? got->size() + corrupt.size() : 0);
  if (receive_waiters_ > 0) {
    MutexLock lock(run_.mu);  // the waiter checks and sleeps under it
    run_.cv.NotifyAll();      // a depth check waits for receives on the wire
  }
  return Receipt{std::move(got), std::move(corrupt), started, ro.wait_time_seconds > 0};
}

bool Receivers::RetryAfterError(const Status& st, int consecutive_errors, std::mt19937_64& rng) {
  if (st.code() == ErrorCode::kCancelled && run_.abort_receives) {  // stopping or failed already
    ++run_.counters.abandoned_receives;
    return false;
  }
  if (st.retryable() && consecutive_errors < 5) {
    Log().Log(LogLevel::kWarn, "archive.receive_retry", {{"queue", queue_.name}, {"error", st.ToString()}});
    clock_.SleepFor(BackoffDelay(kDrainLocalRetry, consecutive_errors, rng));
    return true;
  }
  run_.Fail(st.WithContext(fmt::format("receive from {}", queue_.name)));
  return false;
}

std::optional<FifoTurns::Turn> Receivers::AwaitFifoTurn(bool keep_turn) {
  MutexLock lock(run_.mu);
  // A reservation ends here; it is taken again below while in turns.
  if (keep_turn) run_.fifo.EndReservation();
  const SteadyTime deadline = clock_.SteadyNow() + kFifoProbeEvery;
  auto seal_due = [&]() DLQ_REQUIRES(run_.mu) {
    return run_.fifo.should_seal(run_.pipeline.building(), run_.in_hand != 0);
  };
  while (run_.fifo.in_turns() && !keep_turn) {
    if (run_.stop) return std::nullopt;
    if (run_.fifo.probe_due()) break;
    if (seal_due()) {
      lock.Unlock();
      handoff_.Seal(/*wait=*/true);
      return std::nullopt;
    }
    // No news for a while: probe anyway (or wait again behind a probe).
    if (!clock_.WaitUntil(run_.mu, run_.cv, deadline, [&]() DLQ_REQUIRES(run_.mu) {
          return run_.stop || !run_.fifo.in_turns() || run_.fifo.probe_due() || seal_due();
        })) {
      if (run_.fifo.probing()) return std::nullopt;
      break;
    }
  }
  return run_.fifo.Begin(run_.PipelineHeldLocked(), run_.pipeline.deleting());
}

bool Receivers::AfterFifoReceive(const FifoTurns::Turn& turn, int64_t got) {
  bool keep = false;
  {
    MutexLock lock(run_.mu);
    keep = run_.fifo.After(turn, got, run_.PipelineHeldLocked());
  }
  run_.cv.NotifyAll();
  return keep;
}

void Receivers::LookForTheEnd(bool counted, int& depth_checks) {
  {
    // Our own batches may be what is in flight, or what blocks a FIFO
    // group: nothing to conclude until they are stored and deleted. Wait
    // for that (briefly) rather than for another empty long poll. A batch
    // still being built is not in flight: once nothing is, the next pass
    // of the loop seals it (waiting on, the wait only ran out its time).
    MutexLock lock(run_.mu);
    auto in_flight = [&]() DLQ_REQUIRES(run_.mu) { return run_.pipeline.storing(); };
    auto busy = [&]() DLQ_REQUIRES(run_.mu) { return run_.pipeline.building() || in_flight(); };
    clock_.WaitFor(run_.mu, run_.cv, std::chrono::seconds(2),
                   [&]() DLQ_REQUIRES(run_.mu) { return !in_flight() || run_.stop; });
    if (busy() || run_.stop) return;
  }
  Depth depth = CheckDepth();
  if (depth == Depth::kEmpty) {
    run_.queue_seen_empty = true;
    run_.stop = true;
    run_.cv.NotifyAll();
    return;
  }
  if (depth == Depth::kWaitInFlight) {
    auto t = clock_.SteadyNow();
    std::chrono::steady_clock::duration waited{0};
    bool looked_since = false;
    {
      MutexLock lock(run_.mu);
      if (!unexplained_in_flight_since_) unexplained_in_flight_since_ = t;
      waited = t - *unexplained_in_flight_since_;
      // An empty receive that began after their visibility ran out: they
      // are not ours to catch. (Time alone is not proof: it also passes
      // while no receiver ran.)
      looked_since = run_.ledger.LookedAfter(*unexplained_in_flight_since_ + options_.visibility_timeout);
    }
    // Their visibility runs out within one timeout (ours, for a lost
    // reply); a few seconds more for the long poll to catch them.
    auto limit = options_.visibility_timeout + std::chrono::seconds(options_.wait_time_seconds + 5);
    if (waited > limit && looked_since) {
      run_.MarkIncomplete(fmt::format(
          "{} in flight for {}s without this run holding them (another consumer may hold "
          "them); run again after {}s",
          CountNoun(run_.counters.approximate_in_flight.load(), "message stayed", "messages stayed"),
          std::chrono::duration_cast<std::chrono::seconds>(waited).count(), options_.visibility_timeout.count()));
    } else if (options_.wait_time_seconds == 0) {
      // A receive on the wire may be what holds them: let it come back
      // before time moves on (a reply is not lost for waiting).
      {
        MutexLock lock(run_.mu);
        ++receive_waiters_;
        clock_.WaitFor(run_.mu, run_.cv, kInFlightPoll, [&]() DLQ_REQUIRES(run_.mu) {
          return !run_.ledger.ReceiveRunningSince(t) || run_.stop || run_.stop_requested;
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
    run_.MarkIncomplete(
        fmt::format("receives brought nothing new while ~{} visible (messages examined earlier came "
                    "back, a FIFO group is held elsewhere, or the queue is being refilled); run again",
                    CountNoun(run_.counters.approximate_remaining.load(), "message remained", "messages remained")));
  }
}

Receivers::Depth Receivers::CheckDepth() {
  auto counts = run_.ReadCounts();
  if (!counts) return Depth::kUnknown;
  size_t held;
  {
    MutexLock lock(run_.mu);
    held =
        run_.pipeline.held() + run_.selection.held() + static_cast<size_t>(std::max<int64_t>(0, run_.in_hand.load()));
  }
  // In flight beyond what we hold: a receive whose reply was lost, or
  // another consumer. Either comes back within a visibility timeout. In a
  // FIFO queue they also block the rest of their group, which shows as
  // visible but cannot be received meanwhile.
  const bool unexplained = counts->in_flight > static_cast<int64_t>(held);
  if (counts->visible > 0 && !(queue_.fifo && unexplained)) return Depth::kNotEmpty;
  return unexplained ? Depth::kWaitInFlight : Depth::kEmpty;
}

void Receivers::ObserveReceive(std::chrono::steady_clock::time_point end, uint64_t messages) {
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
    MutexLock lock(run_.mu);
    run_.cv.NotifyAll();  // receivers waiting for the level
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

}  // namespace dlq
