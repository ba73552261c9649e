#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>

#include "common/mutex.h"

namespace dlq {

// What a drain has seen of SQS visibility, to tell messages another
// consumer holds from messages this run put in flight itself (a receive
// whose reply was lost, a duplicate whose delete found a stale handle).
//
// A message this run put in flight is visible again at the latest one
// timeout after the reply of the request that set its visibility: SQS
// starts the timeout before it answers. An empty receive that began after
// that moment would have found it, unless a receive running at the same
// time took it first; that receive's own reply then moves the moment on.
// So an empty receive is proof only once every receive that began before
// it ended has come back.
//
// Thread-safe. Each receiver owns a slot (0 .. receivers-1) and runs one
// receive at a time in it; starting and ending a receive that brought
// messages takes no lock (it is on the drain's hot path).
class VisibilityLedger {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;

  // How many empty receives are kept as candidates for proof.
  static constexpr size_t kCandidates = 64;

  explicit VisibilityLedger(int receivers);

  void ReceiveStarted(int slot, TimePoint started);
  // The receive that began at `started` in `slot` came back at `ended`.
  // `took`: it brought messages, or failed (its reply may have been lost
  // after SQS took messages); they are in flight for at most `visibility`
  // after `ended`.
  void ReceiveEnded(int slot, TimePoint started, TimePoint ended, bool took, Duration visibility);
  // A visibility change (extension) of at most `visibility` came back, or
  // failed, at `ended`.
  void VisibilityChanged(TimePoint ended, Duration visibility);

  // Whether an empty receive that began after `after`, and after every
  // message this run put in flight was visible again, came back with no
  // receive that began before its end still running.
  bool LookedAfter(TimePoint after) const;
  // Whether a receive that began at or before `t` has not come back yet.
  bool ReceiveRunningSince(TimePoint t) const;

  // When everything this run put in flight is visible again at the latest.
  TimePoint all_visible_by() const { return TimePoint(Duration(all_visible_by_.load())); }

 private:
  static constexpr int64_t kIdle = INT64_MAX;
  struct Empty {
    TimePoint started, ended;
  };
  int64_t EarliestRunning() const;

  const int slots_;
  std::unique_ptr<std::atomic<int64_t>[]> running_;  // per slot: start of its receive, or kIdle
  std::atomic<int64_t> all_visible_by_{0};           // time_since_epoch().count()
  mutable Mutex mu_;
  std::deque<Empty> empties_ DLQ_GUARDED_BY(mu_);  // empty receives, oldest first
};

}  // namespace dlq
