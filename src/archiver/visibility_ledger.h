#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <set>

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
// Not thread-safe: the drainer calls it under its lock.
class VisibilityLedger {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;

  // How many empty receives are kept as candidates for proof.
  static constexpr size_t kCandidates = 64;

  void ReceiveStarted(TimePoint started);
  // The receive that began at `started` came back at `ended`. `took`: it
  // brought messages, or failed (its reply may have been lost after SQS
  // took messages); they are in flight for at most `visibility` after `ended`.
  void ReceiveEnded(TimePoint started, TimePoint ended, bool took, Duration visibility);
  // A visibility change (extension) of at most `visibility` came back, or
  // failed, at `ended`.
  void VisibilityChanged(TimePoint ended, Duration visibility);

  // Whether an empty receive that began after `after`, and after every
  // message this run put in flight was visible again, came back with no
  // receive that began before its end still running.
  bool LookedAfter(TimePoint after) const;

  // Whether a receive that began at or before `t` has not come back yet.
  bool ReceiveRunningSince(TimePoint t) const { return !running_.empty() && *running_.begin() <= t; }

  // When everything this run put in flight is visible again at the latest.
  TimePoint all_visible_by() const { return all_visible_by_; }

 private:
  struct Empty {
    TimePoint started, ended;
  };
  std::multiset<TimePoint> running_;  // starts of receives not back yet
  TimePoint all_visible_by_{};
  std::deque<Empty> empties_;  // empty receives that began after all_visible_by_, oldest first
};

}  // namespace dlq
