#include "monitor/alarm.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/time_util.h"

namespace dlq {
namespace {

using std::chrono::seconds;

constexpr double kThreshold = 10;
// 2026-01-01T00:00:00Z, a multiple of every period used here.
const SystemTime kBase = SystemTime(seconds(1767225600));

AlarmSpec Spec(int m, int n, MissingData missing, int period_s = 60) {
  AlarmSpec s;
  s.name = "test";
  s.metric = "ApproximateAgeOfOldestMessage";
  s.period = seconds(period_s);
  s.evaluation_periods = n;
  s.datapoints_to_alarm = m;
  s.threshold = kThreshold;
  s.comparison = Comparison::kGreaterThanOrEqualToThreshold;
  s.missing = missing;
  return s;
}

// Feeds "0 - X" (oldest first; 0 = not breaching, X = breaching, - = missing)
// into consecutive periods starting at period index `first`; returns the time
// right after the last one.
SystemTime Feed(Alarm& a, const std::string& pattern, int64_t first) {
  std::istringstream in(pattern);
  std::string tok;
  int64_t i = first;
  const int64_t p = a.spec().period.count();
  while (in >> tok) {
    SystemTime start = kBase + seconds(i * p);
    if (tok == "X") a.AddSample(start + seconds(1), kThreshold + 5);
    if (tok == "0") a.AddSample(start + seconds(1), kThreshold - 5);
    ++i;
  }
  return kBase + seconds(i * p);
}

// Puts the alarm into `state` using periods far before the case's range.
void Prime(Alarm& a, AlarmState state) {
  if (state == AlarmState::kInsufficientData) return;
  std::string pattern;
  for (int i = 0; i < a.spec().evaluation_periods; ++i) pattern += state == AlarmState::kAlarm ? "X " : "0 ";
  SystemTime end = Feed(a, pattern, 0);
  a.Evaluate(end);
  ASSERT_EQ(a.state(), state);
}

struct Case {
  const char* name;
  int m;
  int n;
  MissingData missing;
  AlarmState before;
  const char* points;  // the evaluation range (N + 2 periods), oldest first
  AlarmState expected;
};

constexpr AlarmState I = AlarmState::kInsufficientData;
constexpr AlarmState O = AlarmState::kOk;
constexpr AlarmState A = AlarmState::kAlarm;
constexpr MissingData kMiss = MissingData::kMissing;
constexpr MissingData kIgn = MissingData::kIgnore;
constexpr MissingData kBr = MissingData::kBreaching;
constexpr MissingData kNb = MissingData::kNotBreaching;

// Rows 1-5 per mode are the 3-of-3 table of the CloudWatch guide ("How alarm
// state is evaluated when data is missing"); IGNORE "retain" rows are run from
// both OK and ALARM.
const Case kCases[] = {
    {"doc1_missing", 3, 3, kMiss, I, "0 - X - X", O},
    {"doc1_ignore", 3, 3, kIgn, I, "0 - X - X", O},
    {"doc1_breaching", 3, 3, kBr, I, "0 - X - X", O},
    {"doc1_notbreaching", 3, 3, kNb, I, "0 - X - X", O},
    {"doc2_missing", 3, 3, kMiss, I, "- - - - 0", O},
    {"doc2_ignore", 3, 3, kIgn, A, "- - - - 0", O},
    {"doc2_breaching", 3, 3, kBr, I, "- - - - 0", O},
    {"doc2_notbreaching", 3, 3, kNb, I, "- - - - 0", O},
    {"doc3_missing_all_missing", 3, 3, kMiss, O, "- - - - -", I},
    {"doc3_ignore_keeps_ok", 3, 3, kIgn, O, "- - - - -", O},
    {"doc3_ignore_keeps_alarm", 3, 3, kIgn, A, "- - - - -", A},
    {"doc3_breaching", 3, 3, kBr, O, "- - - - -", A},
    {"doc3_notbreaching", 3, 3, kNb, A, "- - - - -", O},
    {"doc4_missing", 3, 3, kMiss, I, "0 X X - X", A},
    {"doc4_ignore", 3, 3, kIgn, I, "0 X X - X", A},
    {"doc4_breaching", 3, 3, kBr, I, "0 X X - X", A},
    {"doc4_notbreaching", 3, 3, kNb, I, "0 X X - X", A},
    {"doc5_missing", 3, 3, kMiss, O, "- - X - -", A},
    {"doc5_ignore_keeps_ok", 3, 3, kIgn, O, "- - X - -", O},
    {"doc5_ignore_keeps_alarm", 3, 3, kIgn, A, "- - X - -", A},
    {"doc5_breaching", 3, 3, kBr, O, "- - X - -", A},
    {"doc5_notbreaching", 3, 3, kNb, A, "- - X - -", O},
    // M of N with complete data: only the newest N datapoints count.
    {"2of3_two_breach", 2, 3, kMiss, I, "0 0 0 X X", A},
    {"2of3_one_breach", 2, 3, kMiss, I, "X X 0 X 0", O},
    {"2of3_not_consecutive", 2, 3, kMiss, I, "0 0 X 0 X", A},
    {"3of3_newest_ok", 3, 3, kMiss, I, "X X X X 0", O},
    {"3of3_all_breach", 3, 3, kMiss, I, "0 0 X X X", A},
    {"1of1_breach", 1, 1, kMiss, I, "0 0 X", A},
    {"1of1_ok", 1, 1, kMiss, I, "X X 0", O},
    // Looks back past a missing newest period to the last real datapoint.
    {"1of1_looks_back", 1, 1, kMiss, O, "X - -", A},
    {"1of1_all_missing", 1, 1, kMiss, A, "- - -", I},
    // Partly missing windows, 2 of 3.
    {"2of3_partly_missing_notbreaching_two_real", 2, 3, kNb, I, "- - X - X", A},
    {"2of3_partly_missing_notbreaching", 2, 3, kNb, A, "- - X - -", O},
    {"2of3_partly_missing_breaching", 2, 3, kBr, O, "- - 0 - -", A},
    {"2of3_partly_missing_ignore_undecided", 2, 3, kIgn, O, "- - X - -", O},
    {"2of3_partly_missing_ignore_decided_ok", 2, 3, kIgn, A, "- - 0 0 -", O},
    {"2of3_partly_missing_missing_real_mixed", 2, 3, kMiss, A, "- - 0 - X", O},
    {"2of3_all_missing_breaching", 2, 3, kBr, O, "- - - - -", A},
    {"2of3_all_missing_notbreaching", 2, 3, kNb, A, "- - - - -", O},
};

class AlarmTableTest : public ::testing::TestWithParam<Case> {};

TEST_P(AlarmTableTest, MatchesCloudWatch) {
  const Case& c = GetParam();
  Alarm alarm(Spec(c.m, c.n, c.missing));
  Prime(alarm, c.before);
  SystemTime end = Feed(alarm, c.points, 100);
  auto transition = alarm.Evaluate(end);
  EXPECT_EQ(AlarmStateName(alarm.state()), AlarmStateName(c.expected))
      << c.points << " reason: " << alarm.last_reason();
  EXPECT_EQ(transition.has_value(), c.before != c.expected);
}

INSTANTIATE_TEST_SUITE_P(CloudWatchCases, AlarmTableTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(AlarmTest, StartsInInsufficientDataAndStaysWithoutData) {
  Alarm alarm(Spec(1, 1, kMiss));
  EXPECT_EQ(alarm.state(), AlarmState::kInsufficientData);
  EXPECT_FALSE(alarm.Evaluate(kBase + seconds(600)).has_value());
  EXPECT_EQ(alarm.state(), AlarmState::kInsufficientData);
  EXPECT_TRUE(alarm.history().empty());
  EXPECT_NE(alarm.last_reason().find("Insufficient Data"), std::string::npos);
}

TEST(AlarmTest, IncompletePeriodIsNotEvaluated) {
  Alarm alarm(Spec(1, 1, kMiss, 300));
  alarm.AddSample(kBase + seconds(10), 50);
  EXPECT_FALSE(alarm.Evaluate(kBase + seconds(299)).has_value());
  auto t = alarm.Evaluate(kBase + seconds(300));
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->to, AlarmState::kAlarm);
}

TEST(AlarmTest, RecordsTransitionsWithCloudWatchStyleReasons) {
  AlarmSpec spec = Spec(1, 1, kMiss, 300);
  spec.threshold = 345000;
  Alarm alarm(spec);
  const SystemTime t0 = *ParseIso8601("2026-11-22T10:05:00Z");
  alarm.AddSample(t0 + seconds(30), 345600);
  auto up = alarm.Evaluate(t0 + seconds(300));
  ASSERT_TRUE(up.has_value());
  EXPECT_EQ(up->from, AlarmState::kInsufficientData);
  EXPECT_EQ(up->to, AlarmState::kAlarm);
  EXPECT_EQ(up->reason,
            "Threshold Crossed: 1 out of the last 1 datapoint [345600.0 (22/11/26 10:05:00)] was greater than or "
            "equal to the threshold (345000.0) (minimum 1 datapoint for INSUFFICIENT_DATA -> ALARM transition).");
  alarm.AddSample(t0 + seconds(330), 100);
  auto down = alarm.Evaluate(t0 + seconds(600));
  ASSERT_TRUE(down.has_value());
  EXPECT_EQ(down->to, AlarmState::kOk);
  EXPECT_NE(down->reason.find("was not greater than or equal to the threshold (345000.0)"), std::string::npos)
      << down->reason;
  ASSERT_EQ(alarm.history().size(), 2u);
  EXPECT_EQ(alarm.history()[0].to, AlarmState::kAlarm);
  EXPECT_EQ(alarm.history()[1].from, AlarmState::kAlarm);
  EXPECT_EQ(alarm.history()[1].time, t0 + seconds(600));
}

TEST(AlarmTest, AnAlarmThatStaysInAlarmReportsNoTransition) {
  AlarmSpec spec = Spec(1, 1, kMiss, 300);
  spec.threshold = 345000;
  Alarm alarm(spec);
  const SystemTime t0 = *ParseIso8601("2026-11-22T10:05:00Z");
  alarm.AddSample(t0 + seconds(30), 345600);
  ASSERT_TRUE(alarm.Evaluate(t0 + seconds(300)).has_value());
  alarm.AddSample(t0 + seconds(330), 345700);
  EXPECT_FALSE(alarm.Evaluate(t0 + seconds(600)).has_value());
  EXPECT_EQ(alarm.state(), AlarmState::kAlarm);
  EXPECT_EQ(alarm.last_reason(),
            "Threshold Crossed: 1 out of the last 1 datapoint [345700.0 (22/11/26 10:10:00)] was greater than or "
            "equal to the threshold (345000.0) (minimum 1 datapoint for ALARM; state kept).");
  EXPECT_EQ(alarm.history().size(), 1u);
}

TEST(AlarmTest, StayingInAlarmProducesNoNewTransition) {
  // The reference design's trap: a partial drain leaves the age above the
  // threshold, so there is no second OK -> ALARM edge to start another run.
  Alarm alarm(Spec(1, 1, kMiss));
  alarm.AddSample(kBase, 20);
  ASSERT_TRUE(alarm.Evaluate(kBase + seconds(60)).has_value());
  alarm.AddSample(kBase + seconds(60), 19);
  EXPECT_FALSE(alarm.Evaluate(kBase + seconds(120)).has_value());
  EXPECT_EQ(alarm.state(), AlarmState::kAlarm);
  EXPECT_EQ(alarm.history().size(), 1u);
}

TEST(AlarmTest, HistoryIsBounded) {
  Alarm alarm(Spec(1, 1, kMiss), /*history_limit=*/3);
  for (int i = 0; i < 6; ++i) {
    alarm.AddSample(kBase + seconds(60 * i), i % 2 == 0 ? 20 : 0);
    ASSERT_TRUE(alarm.Evaluate(kBase + seconds(60 * (i + 1))).has_value());
  }
  ASSERT_EQ(alarm.history().size(), 3u);
  EXPECT_EQ(alarm.history().back().time, kBase + seconds(360));
}

TEST(AlarmTest, AggregatesRawSamplesByStatistic) {
  struct S {
    Statistic stat;
    double expected;
  };
  for (S s : {S{Statistic::kMaximum, 7}, S{Statistic::kMinimum, 1}, S{Statistic::kAverage, 4}, S{Statistic::kSum, 12},
              S{Statistic::kSampleCount, 3}}) {
    AlarmSpec spec = Spec(1, 1, kMiss);
    spec.statistic = s.stat;
    Alarm alarm(spec);
    alarm.AddSample(kBase + seconds(5), 4);
    alarm.AddSample(kBase + seconds(50), 7);
    alarm.AddSample(kBase + seconds(1), 1);
    alarm.AddSample(kBase + seconds(60), 100);  // next period
    EXPECT_EQ(alarm.Datapoint(kBase), s.expected) << StatisticName(s.stat);
  }
}

TEST(AlarmTest, ComparisonOperators) {
  EXPECT_TRUE(Breaches(Comparison::kGreaterThanOrEqualToThreshold, 10, 10));
  EXPECT_FALSE(Breaches(Comparison::kGreaterThanThreshold, 10, 10));
  EXPECT_TRUE(Breaches(Comparison::kLessThanOrEqualToThreshold, 10, 10));
  EXPECT_FALSE(Breaches(Comparison::kLessThanThreshold, 10, 10));
  EXPECT_TRUE(Breaches(Comparison::kLessThanThreshold, 9, 10));
}

TEST(AlarmTest, ParsesAndFormatsCloudWatchNames) {
  for (const char* name :
       {"GreaterThanOrEqualToThreshold", "GreaterThanThreshold", "LessThanThreshold", "LessThanOrEqualToThreshold"}) {
    auto c = ParseComparison(name);
    ASSERT_TRUE(c.ok()) << name;
    EXPECT_EQ(ComparisonName(*c), name);
  }
  for (const char* name : {"missing", "notBreaching", "breaching", "ignore"}) {
    auto m = ParseMissingData(name);
    ASSERT_TRUE(m.ok()) << name;
    EXPECT_EQ(MissingDataName(*m), name);
  }
  for (const char* name : {"Maximum", "Minimum", "Average", "Sum", "SampleCount"}) {
    auto s = ParseStatistic(name);
    ASSERT_TRUE(s.ok()) << name;
    EXPECT_EQ(StatisticName(*s), name);
  }
  EXPECT_EQ(*ParseAlarmState("INSUFFICIENT_DATA"), AlarmState::kInsufficientData);
  auto bad = ParseMissingData("NotBreaching");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("notBreaching"), std::string::npos);  // lists the valid names
}

TEST(AlarmTest, ValidateRejectsBadSpecs) {
  EXPECT_TRUE(Spec(2, 3, kMiss).Validate().ok());
  AlarmSpec s = Spec(4, 3, kMiss);
  Status st = s.Validate();
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("datapoints_to_alarm"), std::string::npos);
  s = Spec(1, 1, kMiss);
  s.period = seconds(0);
  EXPECT_FALSE(s.Validate().ok());
  s = Spec(1, 0, kMiss);
  EXPECT_FALSE(s.Validate().ok());
  s = Spec(1, 1, kMiss);
  s.metric.clear();
  EXPECT_FALSE(s.Validate().ok());
}

}  // namespace
}  // namespace dlq
