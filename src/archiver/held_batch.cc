#include "archiver/held_batch.h"

#include <algorithm>

#include "sqs/limits.h"

namespace dlq {

void AppendDue(const HeldBatch& batch, SteadyTime now, std::chrono::seconds timeout, bool building, bool moves,
               bool& seal, std::vector<VisibilityDue>& due) {
  for (size_t i = 0; i < batch.held.size(); ++i) {
    const HeldMessage& h = batch.held[i];
    if (h.receipt_handle.empty()) continue;  // moved from a waiting batch to one that extends it
    if (h.visible_until - now > timeout / 2) continue;
    auto cap_left = std::chrono::duration_cast<std::chrono::seconds>(h.received_at + sqs::kMaxVisibilityWindow - now);
    auto extend = std::min(timeout, cap_left - std::chrono::seconds(30));
    if (extend < std::chrono::seconds(10)) {
      if (building) seal = true;  // cannot extend much longer: get it archived now
      continue;
    }
    due.push_back({batch.seq, i, h.receipt_handle, static_cast<int>(extend.count()), moves});
  }
}

bool RecordDue(HeldBatch& batch, const VisibilityDue& d, SteadyTime until) {
  if (batch.seq != d.seq || d.index >= batch.held.size() || batch.held[d.index].receipt_handle != d.receipt_handle) {
    return false;
  }
  batch.held[d.index].visible_until = until;
  return true;
}

}  // namespace dlq
