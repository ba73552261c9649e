// FifoTurns: when a FIFO queue's receivers take turns, and when a probe shows
// that they need not (doc/drainer.md, "FIFO queues: taking turns"). State
// only: the drainer calls it under its own mutex and does the waiting;
// thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dlq {

class FifoTurns {
 public:
  // A run starts in turns for a FIFO queue (a one-group queue never leaves
  // them); a standard queue never takes turns.
  explicit FifoTurns(bool fifo) : turns_(fifo) {}

  // One receive, as it started.
  struct Turn {
    bool probe = false;            // the one probe of a turn
    size_t held_before = 0;        // messages the pipeline held that block their groups
    uint64_t leaves_before = 0;    // batches that had left the pipeline
    uint64_t deletes_before = 0;   // batches whose delete had begun
    bool deleting_before = false;  // a delete was on the wire
  };

  bool in_turns() const { return turns_; }
  // Some receiver's probe is on the wire, or reserved for its next receive.
  bool probing() const { return probing_; }
  // No probe running and one is due: the next receiver may probe.
  bool probe_due() const { return !probing_ && probe_due_; }
  // With no probe running, messages building and none in hand, nothing more
  // arrives from the groups held until they are stored and deleted: seal.
  bool should_seal(bool building, bool in_hand) const { return !probing_ && building && !in_hand; }

  // The receiver that kept the turn starts its next receive (its reservation
  // ends; Begin takes it again while in turns).
  void EndReservation() { probing_ = false; }
  // A receive starts: `held` as PipelineHeld, `deleting` a delete on the wire.
  Turn Begin(size_t held, bool deleting);
  // The receive ended with `got` messages (-1: an error), the pipeline now
  // holding `held_now`. True: the turn stays reserved for this receiver's
  // next receive, which must call EndReservation first.
  bool After(const Turn& turn, int64_t got, size_t held_now);
  // A batch (or released messages) left the pipeline: their groups are free.
  void Left() {
    ++leaves_;
    probe_due_ = true;
  }
  // A batch's delete began: SQS may free its groups before it leaves.
  void DeleteBegan() { ++deletes_; }

 private:
  bool turns_;
  bool probing_ = false;
  bool probe_due_ = true;
  uint64_t leaves_ = 0;
  uint64_t deletes_ = 0;
};

}  // namespace dlq
