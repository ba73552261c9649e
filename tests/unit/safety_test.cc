#include "monitor/safety.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <string>

namespace dlq {
namespace {

using std::chrono::seconds;

constexpr seconds kFourDays{345600};
constexpr seconds kFourteenDays{1209600};

bool AnyReasonHas(const SafetyReport& r, const std::string& text) {
  for (const std::string& reason : r.reasons) {
    if (reason.find(text) != std::string::npos) return true;
  }
  return false;
}

// The reference design: one ApproximateAgeOfOldestMessage alarm at 345,000 s
// (300 s period, 1 of 1) on a 4-day standard DLQ fed by a 4-day source queue;
// the Lambda runs once per transition into ALARM and receives 100 messages.
QueueSafetyInput Reference(int64_t depth) {
  QueueSafetyInput in;
  in.queue = "orders-dlq";
  in.fifo = false;
  in.dlq_retention = kFourDays;
  in.source_retention = kFourDays;
  in.age_source = AgeSource::kCloudWatchAge;
  in.expiry_alarm = DefaultExpiryAlarm("orders-dlq", 345000);
  in.expiry_alarm.metric = "ApproximateAgeOfOldestMessage";
  in.expiry_alarm.missing = MissingData::kMissing;
  in.sweep_interval = seconds(0);
  in.rerun_while_alarm = false;
  in.drain_rate = 10;
  in.depth = depth;
  in.max_messages_per_run = 100;
  return in;
}

TEST(SafetyTest, ReferenceDesignIsUnsafeWithNumbers) {
  auto rep = AnalyzeQueueSafety(Reference(/*depth=*/10));
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  EXPECT_FALSE(rep->safe);
  EXPECT_EQ(rep->detection_delay_s, 720);              // 1 x 300 s period + (300 s + 120 s) metric delay
  EXPECT_EQ(rep->drain_time_s, 1);                     // 10 messages at 10/s
  EXPECT_EQ(rep->earliest_expiry_after_arrival_s, 0);  // 4-day source retention used up before the move
  EXPECT_EQ(rep->worst_case_arrival_to_archive_s, 345721);
  EXPECT_EQ(rep->margin_s, -345721);
  EXPECT_TRUE(AnyReasonHas(*rep, "leaves 600 s before expiry, less than detection delay 720 s"));
  EXPECT_TRUE(AnyReasonHas(*rep, "skips messages received 3 or more times"));
  EXPECT_TRUE(AnyReasonHas(*rep, "restarts on the move to the DLQ"));
  EXPECT_TRUE(AnyReasonHas(
      *rep, "the DLQ keeps messages no longer than its source, so a message can arrive with no time left"));
  EXPECT_NE(rep->ToString().find("orders-dlq: UNSAFE"), std::string::npos) << rep->ToString();
}

TEST(SafetyTest, ReferencePartialDrainWithoutRerunIsUnbounded) {
  auto rep = AnalyzeQueueSafety(Reference(/*depth=*/1000));
  ASSERT_TRUE(rep.ok());
  EXPECT_FALSE(rep->safe);
  EXPECT_TRUE(std::isinf(rep->drain_time_s));
  EXPECT_TRUE(std::isinf(rep->worst_case_arrival_to_archive_s));
  EXPECT_TRUE(AnyReasonHas(*rep, "at most 100 messages but 1000"));
}

TEST(SafetyTest, ReferenceThresholdIsUnsafeEvenOnAFifoQueue) {
  QueueSafetyInput in = Reference(10);
  in.fifo = true;  // the clock restarts on the move: no source-retention problem
  auto rep = AnalyzeQueueSafety(in);
  ASSERT_TRUE(rep.ok());
  EXPECT_FALSE(rep->safe);
  EXPECT_EQ(rep->earliest_expiry_after_arrival_s, 345600);
  EXPECT_EQ(rep->margin_s, 345600 - 345000 - 720 - 1);  // -121 s: 600 s < two periods + delay
  EXPECT_FALSE(AnyReasonHas(*rep, "restarts on the move"));
}

TEST(SafetyTest, OurDefaultsAreSafeForStandardQueueWithLongerDlqRetention) {
  QueueSafetyInput in = DefaultSafetyInput("orders-dlq", false, kFourteenDays, kFourDays);
  // detection 300 s sweep + 60 s look; drain 10,000 / 5 = 2,000 s; margin 3,600 s.
  EXPECT_EQ(in.expiry_alarm.threshold, 1209600 - 5960);
  auto rep = AnalyzeQueueSafety(in);
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  EXPECT_TRUE(rep->safe) << rep->ToString();
  EXPECT_EQ(rep->margin_s, 3600);
  EXPECT_EQ(rep->earliest_expiry_after_arrival_s, 1209600 - 345600);
  EXPECT_NE(rep->ToString().find("orders-dlq: SAFE"), std::string::npos);
}

TEST(SafetyTest, OurDefaultsAreSafeForFifoWithReferenceRetention) {
  auto rep = AnalyzeQueueSafety(DefaultSafetyInput("jobs.fifo", true, kFourDays, seconds(0)));
  ASSERT_TRUE(rep.ok());
  EXPECT_TRUE(rep->safe) << rep->ToString();
  EXPECT_EQ(rep->earliest_expiry_after_arrival_s, 345600);
  EXPECT_GE(rep->margin_s, 3600);
}

TEST(SafetyTest, StandardQueueWithEqualRetentionCannotBeMadeSafe) {
  QueueSafetyInput in = DefaultSafetyInput("orders-dlq", false, kFourDays, kFourDays);
  auto rep = AnalyzeQueueSafety(in);
  ASSERT_TRUE(rep.ok());
  EXPECT_FALSE(rep->safe);
  EXPECT_TRUE(AnyReasonHas(*rep, "raise the DLQ's retention to"));
  auto plan = DeriveExpiryThreshold(in);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(plan.status().message().find("at least 351560 s"), std::string::npos) << plan.status().message();
}

TEST(SafetyTest, UnknownSourceRetentionAssumesTheSqsMaximum) {
  QueueSafetyInput in = DefaultSafetyInput("orders-dlq", false, kFourteenDays, seconds(0));
  auto rep = AnalyzeQueueSafety(in);
  ASSERT_TRUE(rep.ok());
  EXPECT_FALSE(rep->safe);
  EXPECT_EQ(rep->earliest_expiry_after_arrival_s, 0);
  EXPECT_TRUE(AnyReasonHas(*rep, "source queue retention unknown: assumed the SQS maximum 1209600 s"));
}

TEST(SafetyTest, DerivedCloudWatchThresholdAccountsForTheSourceQueueClock) {
  QueueSafetyInput in = Reference(10000);
  in.dlq_retention = kFourteenDays;
  in.rerun_while_alarm = true;
  in.archive_on_depth_alarm = true;
  in.drain_rate = 5;
  in.max_messages_per_run = 0;
  in.expiry_alarm.threshold = 1;
  auto plan = DeriveExpiryThreshold(in);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->detection_delay_s, 720);
  EXPECT_EQ(plan->drain_time_s, 2000);
  EXPECT_EQ(plan->archive_window_s, 720 + 2000 + 3600);
  // Age counts from the DLQ arrival, so the source queue's 4 days are subtracted.
  EXPECT_EQ(plan->age_threshold_s, 1209600 - 345600 - 6320);
  in.expiry_alarm.threshold = plan->age_threshold_s;
  auto rep = AnalyzeQueueSafety(in);
  ASSERT_TRUE(rep.ok());
  EXPECT_TRUE(rep->safe) << rep->ToString();
  EXPECT_EQ(rep->margin_s, 3600);
}

TEST(SafetyTest, RerunsBoundAPartialDrain) {
  QueueSafetyInput in = DefaultSafetyInput("q", true, kFourDays, seconds(0));
  in.max_messages_per_run = 100;
  in.depth = 1000;
  in.drain_rate = 100;
  auto rep = AnalyzeQueueSafety(in);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(rep->drain_time_s, 9 * 300);  // 10 runs, one per 300 s sweep
}

TEST(SafetyTest, RejectsBadInput) {
  QueueSafetyInput in = DefaultSafetyInput("q", false, kFourteenDays, kFourDays);
  in.drain_rate = 0;
  auto rep = AnalyzeQueueSafety(in);
  ASSERT_FALSE(rep.ok());
  EXPECT_EQ(rep.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(rep.status().message().find("queue q"), std::string::npos);
  in = DefaultSafetyInput("q", false, seconds(2000000), kFourDays);
  EXPECT_FALSE(AnalyzeQueueSafety(in).ok());
}

TEST(SafetyTest, FormatSpanShowsTwoUnitsAndTheSeconds) {
  EXPECT_EQ(FormatSpan(1206000), "13d 23h (1206000 s)");
  EXPECT_EQ(FormatSpan(1209600), "14d (1209600 s)");
  EXPECT_EQ(FormatSpan(1216800), "14d 2h (1216800 s)");
  EXPECT_EQ(FormatSpan(3600), "1h (3600 s)");
  EXPECT_EQ(FormatSpan(3900), "1h 5m (3900 s)");
  EXPECT_EQ(FormatSpan(90), "1m 30s (90 s)");
  EXPECT_EQ(FormatSpan(45), "45 s");
  EXPECT_EQ(FormatSpan(-345721), "-4d (-345721 s)");
  EXPECT_EQ(FormatSpan(std::numeric_limits<double>::infinity()), "unbounded");
}

// Issue 13: "SAFE" next to "arrival to archive 1206000 s, earliest expiry
// 864000 s after arrival" read as archiving after expiry. Both times are now
// on one clock (SentTimestamp) and the verdict says it in words.
TEST(SafetyTest, SafeVerdictCannotBeReadAsArchivingAfterExpiry) {
  QueueSafetyInput in =
      DefaultSafetyInput("orders-dlq", false, std::chrono::seconds(1209600), std::chrono::seconds(345600));
  in.expiry_alarm.period = std::chrono::seconds(60);
  auto plan = DeriveExpiryThreshold(in);
  ASSERT_TRUE(plan.ok());
  in.expiry_alarm.threshold = plan->age_threshold_s;
  auto rep = AnalyzeQueueSafety(in);
  ASSERT_TRUE(rep.ok());
  ASSERT_TRUE(rep->safe) << rep->ToString();
  std::string text = rep->ToString();
  EXPECT_NE(text.find("orders-dlq: SAFE: in the worst case a message is archived 1h (3600 s) before it expires"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("counted from its SentTimestamp: archived at the latest after 13d 23h (1206000 s), expires "
                      "after 14d (1209600 s)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("arrival to archive"), std::string::npos) << text;
  EXPECT_EQ(rep->expires_s - rep->latest_archive_s, rep->margin_s);
}

TEST(SafetyTest, UnsafeVerdictSaysHowLongBeforeArchivingAMessageExpires) {
  QueueSafetyInput in =
      DefaultSafetyInput("orders-dlq", false, std::chrono::seconds(345600), std::chrono::seconds(345600));
  in.age_source = AgeSource::kCloudWatchAge;
  in.archive_on_depth_alarm = true;
  in.expiry_alarm.threshold = 345000;
  auto rep = AnalyzeQueueSafety(in);
  ASSERT_TRUE(rep.ok());
  EXPECT_FALSE(rep->safe);
  EXPECT_NE(rep->ToString().find("orders-dlq: UNSAFE: in the worst case a message can expire"), std::string::npos)
      << rep->ToString();
  EXPECT_NE(rep->ToString().find("before it is archived"), std::string::npos);
}

TEST(SafetyTest, ExpiryAlarmThatOnlyNotifiesIsUnsafe) {
  QueueSafetyInput in =
      DefaultSafetyInput("orders-dlq", false, std::chrono::seconds(1209600), std::chrono::seconds(345600));
  in.expiry_alarm_archives = false;
  auto rep = AnalyzeQueueSafety(in);
  ASSERT_TRUE(rep.ok());
  EXPECT_FALSE(rep->safe);
  EXPECT_TRUE(AnyReasonHas(*rep, "no alarm has action archive"));
}

}  // namespace
}  // namespace dlq
