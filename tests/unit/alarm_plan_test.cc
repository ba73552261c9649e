#include "monitor/alarm_plan.h"

#include <gtest/gtest.h>

namespace dlq {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

constexpr seconds kFourDays{345600};

DiscoveredQueue Dlq(seconds retention, seconds source_retention) {
  DiscoveredQueue q;
  q.name = "shipping-dlq";
  q.retention = retention;
  RedriveSource src;
  src.name = "shipping";
  src.retention = source_retention;
  q.redrive_sources.push_back(src);
  return q;
}

GroupConfig AutoGroup() {
  GroupConfig g;
  g.name = "g";
  g.alarms.expiry.threshold_auto = true;
  return g;
}

// AWS's defaults: source and DLQ both keep messages 4 days. No threshold is
// safe for a message that arrives with no time left, but that is no reason
// to archive every message at once.
TEST(AlarmPlanTest, AutoThresholdOnAFourDayDlqOfAFourDaySourceAlarmsOnlyWithinTheArchiveWindow) {
  MonitorConfig config;
  const QueueAlarmPlan plan = PlanAlarms(config, AutoGroup(), Dlq(kFourDays, kFourDays), AlarmPlanOptions{});
  ASSERT_TRUE(plan.expiry);
  // retention - (detection + 2,000 s drain of the assumed backlog + 1 h margin)
  EXPECT_GT(plan.expiry->threshold, static_cast<double>(kFourDays.count()) - 2 * 3600 - 2000);
  EXPECT_LT(plan.expiry->threshold, static_cast<double>(kFourDays.count()) - 3600 - 2000);
  EXPECT_NE(plan.threshold_source.find("not safe for every message"), std::string::npos) << plan.threshold_source;
  EXPECT_EQ(plan.threshold_source.find("using 1 s"), std::string::npos) << plan.threshold_source;
  // The run it starts takes what expires within a few hours, not the whole DLQ.
  EXPECT_EQ(plan.expiry_selection.kind, SelectionKind::kExpiringWithin);
  EXPECT_LT(plan.expiry_selection.window, hours(3));
}

TEST(AlarmPlanTest, AutoThresholdOfASafeQueueIsTheDerivedOne) {
  MonitorConfig config;
  const QueueAlarmPlan plan = PlanAlarms(config, AutoGroup(), Dlq(seconds(1209600), kFourDays), AlarmPlanOptions{});
  ASSERT_TRUE(plan.expiry);
  EXPECT_GT(plan.expiry->threshold, 1209600.0 - 2 * 3600 - 2000);
  EXPECT_EQ(plan.threshold_source.find("not safe"), std::string::npos) << plan.threshold_source;
}

// The daemon passes the depth of the queue's last collection: 30 messages
// drain in 6 s at the assumed rate, not 10,000 in 2,000 s.
TEST(AlarmPlanTest, AutoThresholdDrainsTheQueuesOwnBacklogWhenItsDepthIsKnown) {
  MonitorConfig config;
  const DiscoveredQueue q = Dlq(seconds(1209600), kFourDays);
  const QueueAlarmPlan assumed = PlanAlarms(config, AutoGroup(), q, AlarmPlanOptions{});
  const QueueAlarmPlan known = PlanAlarms(config, AutoGroup(), q, AlarmPlanOptions{},
                                          {.depth = 30, .depth_source = "queued at the last collection"});
  ASSERT_TRUE(assumed.expiry);
  ASSERT_TRUE(known.expiry);
  EXPECT_DOUBLE_EQ(known.expiry->threshold - assumed.expiry->threshold, 2000.0 - 6.0);
  EXPECT_NE(known.threshold_source.find("30 messages, queued at the last collection, at 5 msg/s"), std::string::npos)
      << known.threshold_source;
  EXPECT_NE(assumed.threshold_source.find("10000 messages, the daemon's assumed backlog"), std::string::npos)
      << assumed.threshold_source;
  // The 4-day/4-day case too (no threshold is safe for every message; the drain still counts).
  const DiscoveredQueue same = Dlq(kFourDays, kFourDays);
  EXPECT_DOUBLE_EQ(PlanAlarms(config, AutoGroup(), same, AlarmPlanOptions{}, {.depth = 30}).expiry->threshold -
                       PlanAlarms(config, AutoGroup(), same, AlarmPlanOptions{}).expiry->threshold,
                   2000.0 - 6.0);
}

TEST(AlarmPlanTest, AutoThresholdOfARetentionShorterThanTheArchiveWindowTakesEverything) {
  MonitorConfig config;
  const QueueAlarmPlan plan = PlanAlarms(config, AutoGroup(), Dlq(seconds(1800), seconds(1800)), AlarmPlanOptions{});
  ASSERT_TRUE(plan.expiry);
  EXPECT_EQ(plan.expiry->threshold, 1);
  EXPECT_NE(plan.threshold_source.find("using 1 s"), std::string::npos) << plan.threshold_source;
}

}  // namespace
}  // namespace dlq
