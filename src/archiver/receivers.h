// Receivers: a drain's ReceiveMessage loops. Each waits for its level (the
// ReceiverGovernor's, standard queues) or its FIFO turn (FifoTurns), receives
// 10 messages at a time, hands what came to the drainer (ReceiverHandoff),
// and, once receives stop bringing anything new, checks the queue's depth to
// find the end of the queue (or gives the run up as incomplete).
// doc/drainer.md says how.
//
// Run() blocks until every receiver has ended: the run stopped (DrainRun's
// stop: requested, drained, the message limit, or a failure). level() may be
// read from any thread. sqs, clock, run and handoff must outlive it.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "archiver/drain_run.h"
#include "archiver/fifo_turns.h"
#include "archiver/receiver_governor.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "sqs/sqs_client.h"

namespace dlq {

// Where the receivers hand what they receive. Called from receiver threads
// without the run's mutex held.
class ReceiverHandoff {
 public:
  // What one receive, sent at `received`, brought: messages that failed the
  // MD5 check (released or set aside), then the rest, to select, hold or
  // batch. True: something this run had not seen before.
  virtual bool Place(std::vector<Message>&& msgs, const std::vector<CorruptMessage>& corrupt, SteadyTime received) = 0;
  // Seals the building batch, if any, for upload; with `wait`, waits for
  // room among the batches in flight, else gives up when there is none.
  virtual void Seal(bool wait) = 0;

 protected:
  ~ReceiverHandoff() = default;
};

class Receivers {
 public:
  Receivers(QueueClient& sqs, Clock& clock, DrainRun& run, ReceiverHandoff& handoff);
  Receivers(const Receivers&) = delete;
  Receivers& operator=(const Receivers&) = delete;

  // Starts options.receivers loops (on their own threads) and waits for all.
  void Run();
  // Receivers receiving now (the governor's level, or all of them).
  int level() const { return receiver_limit_.load(); }

 private:
  // Messages received and not yet placed (in a batch, held or released):
  // not "in flight elsewhere" for a depth check. Counts into
  // DrainRun::in_hand until Done() or destruction.
  class InHand;
  // What one ReceiveMessage call brought.
  struct Receipt {
    Result<std::vector<Message>> got;
    std::vector<CorruptMessage> corrupt;  // failed the MD5 check
    SteadyTime started;                   // when the call was sent
    bool long_poll = false;
  };
  enum class Depth { kEmpty, kWaitInFlight, kNotEmpty, kUnknown };

  // Sets the receivers' level: the governor's, or all of them.
  void StartGovernor() DLQ_EXCLUDES(governor_mu_);
  // One receiver; `slot`: its own in the visibility ledger.
  void Loop(int slot);
  // Standard queues with the governor: waits while `slot` is above the level.
  void WaitForLevel(int slot) DLQ_EXCLUDES(run_.mu);
  // One ReceiveMessage call; what it brought is in `in_hand` before the
  // visibility ledger sees the call end.
  Receipt Receive(int slot, const FifoTurns::Turn& turn, InHand& in_hand) DLQ_EXCLUDES(run_.mu);
  // After a failed receive (the `consecutive_errors`th): true when the
  // receiver should try again (after a backoff); false when it ends (the run
  // is stopping, or failed now).
  bool RetryAfterError(const Status& st, int consecutive_errors, std::mt19937_64& rng) DLQ_EXCLUDES(run_.mu);
  // FIFO turn taking. Before a receive: waits for this receiver's turn
  // (sealing what is held first when nothing else can arrive), at once with
  // `keep_turn`; nullopt when the loop should start over (stopping, or
  // another receiver's turn).
  std::optional<FifoTurns::Turn> AwaitFifoTurn(bool keep_turn) DLQ_EXCLUDES(run_.mu);
  // After the receive: `got` messages (corrupt ones included), -1 on error.
  // True: the turn stays reserved for this receiver's next receive, which
  // must pass keep_turn.
  bool AfterFifoReceive(const FifoTurns::Turn& turn, int64_t got) DLQ_EXCLUDES(run_.mu);
  // After receives without progress: waits for the run's own batches, checks
  // the depth, and ends the run (empty, or incomplete after enough
  // `counted` checks; depth_checks counts them) or lets the receivers go on.
  void LookForTheEnd(bool counted, int& depth_checks) DLQ_EXCLUDES(run_.mu);
  Depth CheckDepth() DLQ_EXCLUDES(run_.mu);
  // A receive came back at `end` with `messages`: the governor may move the level.
  void ObserveReceive(SteadyTime end, uint64_t messages) DLQ_EXCLUDES(run_.mu, governor_mu_);

  QueueClient& sqs_;
  Clock& clock_;
  DrainRun& run_;
  ReceiverHandoff& handoff_;
  const QueueInfo& queue_;
  const DrainOptions& options_;
  // Standard queues with adaptive_receivers: receivers whose slot is at or
  // above receiver_limit_ wait (on run_.cv) instead of receiving; each
  // receive that comes back tells the governor, which moves the limit. Set
  // by Run() before the receivers start.
  bool governed_ = false;

  std::atomic<int> no_progress_receives_{0};
  std::atomic<int> receive_waiters_{0};  // depth checks waiting for receives on the wire
  std::atomic<int> receiver_limit_{0};   // written under governor_mu_

  // Taken alone, never with run_.mu.
  Mutex governor_mu_;
  std::optional<ReceiverGovernor> governor_ DLQ_GUARDED_BY(governor_mu_);
  int announced_receivers_ DLQ_GUARDED_BY(governor_mu_) = 0;  // the level archive.receivers last logged

  std::optional<SteadyTime> unexplained_in_flight_since_ DLQ_GUARDED_BY(run_.mu);
};

}  // namespace dlq
