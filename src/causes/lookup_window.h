// When to look for a message's processing in its consumer's logs: the time
// window FilterLogEvents is asked about. A pure function.
#pragma once

#include <cstdint>
#include <optional>

namespace dlq {

// Clocks differ: SQS stamps SentTimestamp, Lambda or the service's log agent
// stamps each log event, and a service on its own hosts may run a few seconds
// (rarely minutes) off. Both ends of the window are widened by this much: 5
// minutes costs FilterLogEvents little (it reads by time) and covers an EC2 or
// container clock that NTP has not yet corrected.
inline constexpr int64_t kClockSkewMarginMs = int64_t{5} * 60 * 1000;

struct MessageTiming {
  int64_t sent_ms = 0;                      // SentTimestamp
  std::optional<int64_t> dlq_arrival_ms;    // when it reached the DLQ (the daemon's ledger), if known
  std::optional<int64_t> first_receive_ms;  // ApproximateFirstReceiveTimestamp, if known
  int64_t max_receive_count = 1;            // the source queue's RedrivePolicy maxReceiveCount
  int64_t visibility_timeout_ms = 30'000;   // the source queue's VisibilityTimeout
};

struct LookupWindow {
  int64_t start_ms = 0;
  int64_t end_ms = 0;  // >= start_ms
};

// [SentTimestamp - margin, end + margin], where end is the DLQ arrival when
// known, else ApproximateFirstReceiveTimestamp (SentTimestamp when unknown)
// plus maxReceiveCount × VisibilityTimeout: the last receive cannot start
// later, and the consumer's invocation (its timeout at most the visibility
// timeout, as Lambda requires of an SQS trigger) ends within it. Negative or
// absurd inputs are clamped (maxReceiveCount to [1, 1000], the visibility
// timeout to [0, 12 h], SQS's limits, times to [0, 10^15]); start_ms is never below 0.
LookupWindow PlanLookupWindow(const MessageTiming& timing);

}  // namespace dlq
