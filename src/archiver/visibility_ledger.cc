#include "archiver/visibility_ledger.h"

#include <algorithm>

namespace dlq {

VisibilityLedger::VisibilityLedger(int receivers)
    : slots_(std::max(receivers, 1)), running_(std::make_unique<std::atomic<int64_t>[]>(slots_)) {
  for (int i = 0; i < slots_; ++i) running_[i].store(kIdle);
}

void VisibilityLedger::ReceiveStarted(int slot, TimePoint started) {
  running_[slot].store(started.time_since_epoch().count());
}

void VisibilityLedger::ReceiveEnded(int slot, TimePoint started, TimePoint ended, bool took, Duration visibility) {
  // What it put in flight is recorded before it stops counting as running:
  // whoever sees it ended sees that too.
  if (took) {
    VisibilityChanged(ended, visibility);
  } else {
    MutexLock lock(mu_);
    empties_.push_back({started, ended});
    if (empties_.size() > kCandidates) empties_.pop_front();
  }
  running_[slot].store(kIdle);
}

void VisibilityLedger::VisibilityChanged(TimePoint ended, Duration visibility) {
  const int64_t until = (ended + visibility).time_since_epoch().count();
  int64_t seen = all_visible_by_.load();
  while (seen < until && !all_visible_by_.compare_exchange_weak(seen, until)) {
  }
}

int64_t VisibilityLedger::EarliestRunning() const {
  int64_t earliest = kIdle;
  for (int i = 0; i < slots_; ++i) earliest = std::min(earliest, running_[i].load());
  return earliest;
}

bool VisibilityLedger::ReceiveRunningSince(TimePoint t) const {
  return EarliestRunning() <= t.time_since_epoch().count();
}

bool VisibilityLedger::LookedAfter(TimePoint after) const {
  // Read the running receives first: one that ends after this read has
  // already recorded what it took, and so is seen below.
  const int64_t earliest_running = EarliestRunning();
  const TimePoint visible_by = all_visible_by();
  MutexLock lock(mu_);
  return std::any_of(empties_.begin(), empties_.end(), [&](const Empty& e) {
    return e.started > after && e.started > visible_by && earliest_running > e.ended.time_since_epoch().count();
  });
}

}  // namespace dlq
