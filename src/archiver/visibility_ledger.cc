#include "archiver/visibility_ledger.h"

#include <algorithm>

namespace dlq {

void VisibilityLedger::ReceiveStarted(TimePoint started) {
  running_.insert(started);
}

void VisibilityLedger::ReceiveEnded(TimePoint started, TimePoint ended, bool took, Duration visibility) {
  if (auto it = running_.find(started); it != running_.end()) running_.erase(it);
  if (took) {
    VisibilityChanged(ended, visibility);
    return;
  }
  if (started <= all_visible_by_) return;
  empties_.push_back({started, ended});
  if (empties_.size() > kCandidates) empties_.pop_front();
}

void VisibilityLedger::VisibilityChanged(TimePoint ended, Duration visibility) {
  all_visible_by_ = std::max(all_visible_by_, ended + visibility);
  // Receives that began before that prove nothing any more.
  std::erase_if(empties_, [&](const Empty& e) { return e.started <= all_visible_by_; });
}

bool VisibilityLedger::LookedAfter(TimePoint after) const {
  const bool none_running = running_.empty();
  const TimePoint earliest_running = none_running ? TimePoint{} : *running_.begin();
  return std::any_of(empties_.begin(), empties_.end(), [&](const Empty& e) {
    return e.started > after && e.started > all_visible_by_ && (none_running || earliest_running > e.ended);
  });
}

}  // namespace dlq
