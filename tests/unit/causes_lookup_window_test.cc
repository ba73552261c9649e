#include <gtest/gtest.h>

#include <limits>

#include "causes/lookup_window.h"

namespace dlq {
namespace {

constexpr int64_t kSent = 1'714'557'600'000;  // 2024-05-01T10:00:00Z

TEST(CausesLookupWindow, EndsAtTheDlqArrivalWhenKnown) {
  MessageTiming t;
  t.sent_ms = kSent;
  t.dlq_arrival_ms = kSent + 95'000;
  t.first_receive_ms = kSent + 1'000;
  t.max_receive_count = 5;
  t.visibility_timeout_ms = 60'000;
  const LookupWindow w = PlanLookupWindow(t);
  EXPECT_EQ(w.start_ms, kSent - kClockSkewMarginMs);
  EXPECT_EQ(w.end_ms, kSent + 95'000 + kClockSkewMarginMs);
}

TEST(CausesLookupWindow, ElseEndsMaxReceiveCountVisibilityTimeoutsAfterTheFirstReceive) {
  MessageTiming t;
  t.sent_ms = kSent;
  t.first_receive_ms = kSent + 40'000;  // it waited in the queue first
  t.max_receive_count = 3;
  t.visibility_timeout_ms = 30'000;
  EXPECT_EQ(PlanLookupWindow(t).end_ms, kSent + 40'000 + 3 * 30'000 + kClockSkewMarginMs);
  t.first_receive_ms.reset();  // unknown: from the send
  EXPECT_EQ(PlanLookupWindow(t).end_ms, kSent + 3 * 30'000 + kClockSkewMarginMs);
}

TEST(CausesLookupWindow, ClampsNonsense) {
  MessageTiming t;
  t.sent_ms = 1'000;
  t.dlq_arrival_ms = -5;  // before the send
  LookupWindow w = PlanLookupWindow(t);
  EXPECT_EQ(w.start_ms, 0);
  EXPECT_EQ(w.end_ms, 1'000 + kClockSkewMarginMs);

  t = MessageTiming{};
  t.sent_ms = std::numeric_limits<int64_t>::max();
  t.max_receive_count = std::numeric_limits<int64_t>::max();
  t.visibility_timeout_ms = std::numeric_limits<int64_t>::max();
  w = PlanLookupWindow(t);  // no overflow
  EXPECT_LE(w.start_ms, w.end_ms);
  EXPECT_GT(w.end_ms, 0);

  t = MessageTiming{};
  t.sent_ms = kSent;
  t.max_receive_count = 0;
  t.visibility_timeout_ms = -1;
  EXPECT_EQ(PlanLookupWindow(t).end_ms, kSent + kClockSkewMarginMs);
}

}  // namespace
}  // namespace dlq
