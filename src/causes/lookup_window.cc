#include "causes/lookup_window.h"

#include <algorithm>

namespace dlq {
namespace {

constexpr int64_t kMaxReceiveCount = 1000;                              // SQS's limit for a redrive policy
constexpr int64_t kMaxVisibilityTimeoutMs = int64_t{12} * 3600 * 1000;  // SQS's limit: 12 hours
constexpr int64_t kMaxTimeMs = 1'000'000'000'000'000;                   // year 33658: keeps the sums below overflow

int64_t Time(int64_t ms) {
  return std::clamp<int64_t>(ms, 0, kMaxTimeMs);
}

}  // namespace

LookupWindow PlanLookupWindow(const MessageTiming& timing) {
  const int64_t sent = Time(timing.sent_ms);
  int64_t end = 0;
  if (timing.dlq_arrival_ms) {
    end = Time(*timing.dlq_arrival_ms);
  } else {
    const int64_t receives = std::clamp<int64_t>(timing.max_receive_count, 1, kMaxReceiveCount);
    const int64_t visibility = std::clamp<int64_t>(timing.visibility_timeout_ms, 0, kMaxVisibilityTimeoutMs);
    end = std::max(Time(timing.first_receive_ms.value_or(sent)), sent) + receives * visibility;
  }
  LookupWindow window;
  window.start_ms = std::max<int64_t>(sent - kClockSkewMarginMs, 0);
  window.end_ms = std::max(end, sent) + kClockSkewMarginMs;
  return window;
}

}  // namespace dlq
