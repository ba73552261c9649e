#include "archiver/fifo_turns.h"

namespace dlq {

FifoTurns::Turn FifoTurns::Begin(size_t held, bool deleting) {
  Turn turn;
  turn.probe = turns_;
  if (turn.probe) {
    probing_ = true;
    probe_due_ = false;
  }
  turn.held_before = held;
  turn.leaves_before = leaves_;
  turn.deletes_before = deletes_;
  turn.deleting_before = deleting;
  return turn;
}

bool FifoTurns::After(const Turn& turn, int64_t got, size_t held_now) {
  bool keep = false;
  if (turn.probe) probing_ = false;
  const bool left_meanwhile = leaves_ != turn.leaves_before;
  // SQS frees a group on a delete before the reply tells us (and the batch
  // leaves): what such a probe brought may be the next of a group we held.
  const bool may_have_left = left_meanwhile || deletes_ != turn.deletes_before || turn.deleting_before;
  if (got < 0) {
    if (turn.probe) probe_due_ = true;
  } else if (got > 0) {
    if (turn.probe) {
      // Messages while others stayed held: more groups in sight than ours.
      if (turn.held_before > 0 && !may_have_left) {
        turns_ = false;
      } else {
        keep = true;  // its next probe tells whether this group was the only one
      }
    }
  } else if (held_now == 0) {
    // Blocking nothing: the queue looks empty (or blocked elsewhere). This
    // receiver checks the depth and polls again; the others wait rather
    // than start long polls that the end of the run would wait for.
    if (turn.probe || !turns_) {
      turns_ = true;
      keep = true;
    }
  } else if (!turns_) {
    turns_ = true;
    probe_due_ = left_meanwhile;
  } else if (turn.probe) {
    probe_due_ = left_meanwhile;
  }
  if (keep) {
    probing_ = true;  // reserved for this receiver's next receive
    probe_due_ = false;
  }
  return keep;
}

}  // namespace dlq
