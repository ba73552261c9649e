#include "archive/expiry.h"

#include <gtest/gtest.h>

#include "common/time_util.h"

namespace dlq {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

const seconds kFourDays = std::chrono::duration_cast<seconds>(hours(96));
const SystemTime kNow = FromUnixMillis(1757600000000);

Message WithSent(int64_t sent_ms) {
  Message m;
  m.message_id = "m";
  m.attributes["SentTimestamp"] = std::to_string(sent_ms);
  return m;
}

TEST(Expiry, StandardQueueKeepsTheOriginalSentTimestamp) {
  // Spent a day in the source queue: expires 3 days after the move, i.e. 4 days after sending.
  Message m = WithSent(1757507400123);
  m.attributes["ApproximateFirstReceiveTimestamp"] = std::to_string(1757507400123 + 86400000);
  EXPECT_EQ(ToUnixMillis(ComputeExpiry(m, false, kFourDays, kNow)), 1757507400123 + 4 * 86400000LL);
}

TEST(Expiry, FifoQueueUsesTheEarliestPlausibleExpiry) {
  // SQS restarts the clock on the move to a FIFO DLQ but reports no move time;
  // the move happened at or after SentTimestamp, so that bound is never late.
  Message m = WithSent(1757507400123);
  m.attributes["ApproximateFirstReceiveTimestamp"] = std::to_string(1757507400123 + 86400000);
  SystemTime fifo = ComputeExpiry(m, true, kFourDays, kNow);
  EXPECT_EQ(ToUnixMillis(fifo), 1757507400123 + 4 * 86400000LL);
  EXPECT_LE(fifo, FromUnixMillis(1757507400123 + 86400000) + kFourDays);
}

TEST(Expiry, UsesTheDlqRetention) {
  EXPECT_EQ(ComputeExpiry(WithSent(1000), false, seconds(60), kNow), FromUnixMillis(61000));
  EXPECT_EQ(ComputeExpiry(WithSent(1000), true, seconds(1209600), kNow), FromUnixMillis(1000 + 1209600000LL));
}

TEST(Expiry, UnknownSentTimestampMeansDueNow) {
  Message m;
  EXPECT_EQ(ComputeExpiry(m, false, kFourDays, kNow), kNow);
  m.attributes["SentTimestamp"] = "not-a-number";
  EXPECT_EQ(ComputeExpiry(m, true, kFourDays, kNow), kNow);
  m.attributes["SentTimestamp"] = "-5";
  EXPECT_EQ(ComputeExpiry(m, false, kFourDays, kNow), kNow);
  m.attributes["SentTimestamp"] = "99999999999999999";  // would overflow a nanosecond time_point
  EXPECT_EQ(ComputeExpiry(m, false, kFourDays, kNow), kNow);
  m.attributes["SentTimestamp"] = "12abc";
  EXPECT_FALSE(AttributeMillis(m, "SentTimestamp").has_value());
}

}  // namespace
}  // namespace dlq
