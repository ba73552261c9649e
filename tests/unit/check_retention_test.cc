// `check` on the 4-day/4-day case (issue 31 §4): the one-line retention
// advice, `--fix-retention` plan and apply against the fake SQS, and the
// detection-delay and drain-time figures (§5).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "app/check_command.h"
#include "app/cli.h"
#include "monitor/safety.h"
#include "sqs/queue_client_wrapper.h"
#include "testing/fake_clock.h"
#include "testing/fake_object_store.h"
#include "testing/fake_queue.h"
#include "unit/daemon_fixture.h"

namespace dlq {
namespace {

using std::chrono::seconds;
constexpr int64_t kFourDays = 345600;

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

int CountOf(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// Two DLQs at AWS's default retention (4 days), each the target of a source
// queue at 4 days: the case of issue 31.
class CheckRetentionTest : public ::testing::Test {
 protected:
  CheckRetentionTest() : sqs_(clock_), store_("fake://archive", &clock_) {
    orders_dlq_ = AddPair("orders");
    billing_dlq_ = AddPair("billing");
    GroupConfig g;
    g.name = "all";
    g.destination = "s3://archive-bucket/dlq-archive";
    g.queues = {"orders-dlq", "billing-dlq"};
    config_.groups.push_back(g);
  }

  // Creates NAME-dlq and NAME (redriving to it), both at 4 days; returns the DLQ's URL.
  std::string AddPair(const std::string& name) {
    auto dlq = sqs_.CreateQueue(name + "-dlq", {{"MessageRetentionPeriod", std::to_string(kFourDays)}});
    EXPECT_TRUE(dlq.ok());
    auto arn = sqs_.GetQueueAttributes(*dlq, {"QueueArn"});
    EXPECT_TRUE(arn.ok());
    auto src = sqs_.CreateQueue(name, {{"MessageRetentionPeriod", std::to_string(kFourDays)},
                                       {"RedrivePolicy", "{\"deadLetterTargetArn\":\"" + arn->at("QueueArn") +
                                                             "\",\"maxReceiveCount\":\"3\"}"}});
    EXPECT_TRUE(src.ok());
    sources_.push_back(*src);
    return *dlq;
  }

  GroupClientsFactory Factory() { return FakeGroupClients(sqs_, store_); }

  int64_t Retention(const std::string& url) {
    auto a = sqs_.GetQueueAttributes(url, {"MessageRetentionPeriod"});
    EXPECT_TRUE(a.ok());
    return std::stoll(a->at("MessageRetentionPeriod"));
  }

  void InjectInto(const std::string& url, int n) {
    for (int i = 0; i < n; ++i) {
      SendEntry e;
      e.id = std::to_string(i);
      e.body = "m" + std::to_string(i);
      ASSERT_TRUE(sqs_.InjectMessage(url, e, clock_.Now()).ok());
    }
  }

  FakeClock clock_;
  FakeQueueClient sqs_;
  FakeObjectStore store_;
  MonitorConfig config_;
  std::string orders_dlq_, billing_dlq_;
  std::vector<std::string> sources_;
};

TEST_F(CheckRetentionTest, CheckSaysItInOneLinePerDlq) {
  std::string out;
  EXPECT_EQ(CheckConfig(config_, Factory(), "text", out), 1);
  const std::string line =
      "the DLQ keeps messages no longer than its source, so a message can arrive with no time left; raise the DLQ's "
      "retention to 4d 2h (352800 s) (at most 14 days)";
  EXPECT_EQ(CountOf(out, line), 2) << out;  // one per DLQ, no second line saying the same
  EXPECT_FALSE(Has(out, "not longer than the source retention")) << out;
  std::string js;
  CheckConfig(config_, Factory(), "json", js);
  EXPECT_TRUE(Has(js, "\"retention_fix\":{\"needed\":true,\"fixable\":true,\"current_s\":345600,\"proposed_s\":352800"))
      << js;
}

TEST_F(CheckRetentionTest, ProposedRetentionIsSourcePlusTheAlarmsMarginRoundedUpToTheHour) {
  QueueSafetyInput in = DefaultSafetyInput("q", false, seconds(kFourDays), seconds(kFourDays));
  in.sweep_interval = seconds(300);
  in.collection_interval = seconds(60);
  in.depth = 30;
  in.drain_rate = 10;
  in.required_margin = seconds(3600);
  RetentionAdvice a = AdviseRetention(in);
  ASSERT_TRUE(a.needed);
  ASSERT_TRUE(a.fixable);
  EXPECT_EQ(a.margin.count(), 300 + 60 + 3 + 3600);
  EXPECT_EQ(a.proposed.count(), kFourDays + 7200);  // 345600 + 3963 rounded up to the hour
  in.dlq_retention = a.proposed;
  EXPECT_FALSE(AdviseRetention(in).needed);
  auto rep = AnalyzeQueueSafety(in);
  ASSERT_TRUE(rep.ok());
  EXPECT_GE(rep->margin_s, rep->required_margin_s);
}

TEST_F(CheckRetentionTest, SourceTooLongForEvenFourteenDaysSaysLowerTheSource) {
  QueueSafetyInput in = DefaultSafetyInput("q", false, seconds(kFourDays), kSqsMaxRetention - seconds(600));
  RetentionAdvice a = AdviseRetention(in);
  ASSERT_TRUE(a.needed);
  EXPECT_FALSE(a.fixable);
  EXPECT_EQ(a.proposed, a.current);
  EXPECT_TRUE(Has(a.line, "even 14 days (the SQS maximum) cannot exceed source")) << a.line;
  EXPECT_TRUE(Has(a.line, "lower the source's retention to at most")) << a.line;
  in.source_retention = seconds(0);  // unknown: the maximum
  a = AdviseRetention(in);
  EXPECT_FALSE(a.fixable);
  EXPECT_TRUE(Has(a.line, "no source queue was found")) << a.line;
}

TEST_F(CheckRetentionTest, FifoDlqNeverNeedsARaise) {
  QueueSafetyInput in = DefaultSafetyInput("q.fifo", true, seconds(kFourDays), seconds(kFourDays));
  EXPECT_FALSE(AdviseRetention(in).needed);
}

TEST_F(CheckRetentionTest, PlanOnlyChangesNothing) {
  std::string out;
  EXPECT_EQ(FixRetention(config_, Factory(), /*apply=*/false, out), kFixPending);
  EXPECT_TRUE(Has(out, "orders-dlq")) << out;
  EXPECT_TRUE(Has(out, "4d (345600 s)")) << out;
  EXPECT_TRUE(Has(out, "4d 2h (352800 s)")) << out;
  EXPECT_TRUE(Has(out, "nothing changed: run again with --yes")) << out;
  EXPECT_TRUE(Has(out, "2 DLQs to change;")) << out;  // counted in words, not "DLQ(s)"
  EXPECT_EQ(sqs_.calls(FakeQueueClient::Operation::kSetQueueAttributes), 0);
  EXPECT_EQ(Retention(orders_dlq_), kFourDays);
}

TEST_F(CheckRetentionTest, YesRaisesTheDlqsAndNeverTouchesASource) {
  std::string out;
  EXPECT_EQ(FixRetention(config_, Factory(), /*apply=*/true, out), kFixNothingToDo) << out;
  EXPECT_EQ(Retention(orders_dlq_), 352800);
  EXPECT_EQ(Retention(billing_dlq_), 352800);
  for (const std::string& src : sources_) EXPECT_EQ(Retention(src), kFourDays);
  EXPECT_EQ(sqs_.calls(FakeQueueClient::Operation::kSetQueueAttributes), 2);
  EXPECT_TRUE(Has(out, "orders-dlq: MessageRetentionPeriod 345600 -> 352800")) << out;
  EXPECT_TRUE(Has(out, "every DLQ keeps messages long enough after they arrive")) << out;
  // And `check` agrees.
  std::string again;
  EXPECT_EQ(CheckConfig(config_, Factory(), "text", again), 0) << again;
  out.clear();
  EXPECT_EQ(FixRetention(config_, Factory(), /*apply=*/true, out), kFixNothingToDo) << out;
  EXPECT_TRUE(Has(out, "nothing to change")) << out;
  EXPECT_EQ(sqs_.calls(FakeQueueClient::Operation::kSetQueueAttributes), 2);
}

TEST_F(CheckRetentionTest, AFailingSetQueueAttributesIsReportedPerQueue) {
  sqs_.FailNext(FakeQueueClient::Operation::kSetQueueAttributes, PermissionDenied("AccessDenied: not authorized"));
  std::string out;
  EXPECT_EQ(FixRetention(config_, Factory(), /*apply=*/true, out), kFixPartial) << out;
  EXPECT_EQ(Retention(orders_dlq_), kFourDays);  // the first call failed
  EXPECT_EQ(Retention(billing_dlq_), 352800);
  EXPECT_TRUE(Has(out, "changed:\n  billing-dlq: MessageRetentionPeriod 345600 -> 352800")) << out;
  EXPECT_TRUE(Has(out, "not changed (SetQueueAttributes failed):\n  orders-dlq: still 345600 s: ")) << out;
  EXPECT_TRUE(Has(out, "AccessDenied")) << out;
  // The check again still names the one left short.
  EXPECT_TRUE(Has(out, "check again:\n  orders-dlq: the DLQ keeps messages no longer than its source")) << out;
}

// A signal during --yes (the stop flag set as the first change returns):
// that change stands, nothing more is changed, and the report names both.
class StopAfterFirstChange final : public QueueClientWrapper {
 public:
  StopAfterFirstChange(QueueClient& target, std::atomic<bool>& stop) : QueueClientWrapper(target), stop_(stop) {}
  Status SetQueueAttributes(const std::string& url, const std::map<std::string, std::string>& attributes) override {
    Status st = QueueClientWrapper::SetQueueAttributes(url, attributes);
    stop_.store(true);
    return st;
  }

 private:
  std::atomic<bool>& stop_;
};

TEST_F(CheckRetentionTest, ASignalBetweenTwoChangesStopsAndNamesBothSides) {
  std::atomic<bool> stop{false};
  StopAfterFirstChange sqs(sqs_, stop);
  std::string out;
  EXPECT_EQ(FixRetention(config_, FakeGroupClients(sqs, store_), /*apply=*/true, out, &stop), kFixStopped) << out;
  EXPECT_EQ(sqs_.calls(FakeQueueClient::Operation::kSetQueueAttributes), 1);
  EXPECT_EQ(Retention(orders_dlq_), 352800);
  EXPECT_EQ(Retention(billing_dlq_), kFourDays);
  EXPECT_TRUE(Has(out, "changed:\n  orders-dlq: MessageRetentionPeriod 345600 -> 352800\n")) << out;
  EXPECT_TRUE(Has(out, "not changed (stopped by a signal before its turn):\n  billing-dlq: still 345600 s\n")) << out;
  EXPECT_TRUE(Has(out, "stopped by a signal: the DLQs under \"changed\" were changed, the others were not")) << out;
  EXPECT_FALSE(Has(out, "check again:")) << out;
  // Running again finishes the job.
  stop.store(false);
  out.clear();
  EXPECT_EQ(FixRetention(config_, Factory(), /*apply=*/true, out, &stop), kFixNothingToDo) << out;
  EXPECT_EQ(Retention(billing_dlq_), 352800);
}

TEST_F(CheckRetentionTest, AQueueThatIsAlsoASourceIsNeverChanged) {
  // orders-dlq redrives to a last-chance DLQ: it is a source as well as a DLQ.
  auto last = sqs_.CreateQueue("last-dlq", {{"MessageRetentionPeriod", std::to_string(kFourDays)}});
  ASSERT_TRUE(last.ok());
  auto arn = sqs_.GetQueueAttributes(*last, {"QueueArn"});
  ASSERT_TRUE(arn.ok());
  ASSERT_TRUE(
      sqs_.SetQueueAttributes(orders_dlq_, {{"RedrivePolicy", "{\"deadLetterTargetArn\":\"" + arn->at("QueueArn") +
                                                                  "\",\"maxReceiveCount\":\"3\"}"}})
          .ok());
  config_.groups[0].queues.push_back("last-dlq");
  std::string out;
  EXPECT_EQ(FixRetention(config_, Factory(), /*apply=*/true, out), kFixPending) << out;
  EXPECT_EQ(Retention(orders_dlq_), kFourDays);
  EXPECT_EQ(Retention(billing_dlq_), 352800);
  EXPECT_EQ(Retention(*last), 352800);
  EXPECT_TRUE(Has(out, "orders-dlq: not changed: it is also the redrive source of " + arn->at("QueueArn"))) << out;
}

TEST_F(CheckRetentionTest, AGroupThatCannotBeReadIsAPartialFailure) {
  GroupConfig broken = config_.groups[0];
  broken.name = "broken";
  broken.queues = {"no-such-dlq"};
  config_.groups.push_back(broken);
  std::string out;
  EXPECT_EQ(FixRetention(config_, Factory(), /*apply=*/true, out), kFixPartial) << out;
  EXPECT_TRUE(Has(out, "group broken: ERROR: ")) << out;
  EXPECT_TRUE(Has(out, "no-such-dlq")) << out;
  EXPECT_EQ(Retention(orders_dlq_), 352800);  // the readable group is still fixed
  config_.groups.erase(config_.groups.begin());
  out.clear();
  EXPECT_EQ(FixRetention(config_, Factory(), /*apply=*/false, out), kFixPartial) << out;
  EXPECT_TRUE(Has(out, "nothing to change in the groups that could be read")) << out;
}

TEST_F(CheckRetentionTest, DetectionDelayAddsUp) {
  QueueSafetyInput in = DefaultSafetyInput("q", false, kSqsMaxRetention, seconds(kFourDays));
  in.sweep_interval = seconds(10);
  in.collection_interval = seconds(5);
  in.expiry_alarm.period = seconds(60);
  EXPECT_EQ(DetectionDelayText(in), "15 s (10 s sweep interval + 5 s collection interval + 0 s metric delay)");
  in.age_source = AgeSource::kCloudWatchAge;
  in.expiry_alarm.evaluation_periods = 2;
  in.expiry_alarm.datapoints_to_alarm = 2;
  EXPECT_EQ(DetectionDelayText(in), "300 s (120 s 2 x 60 s alarm periods + 180 s metric delay)");
  double sum = 0;
  for (const DelayTerm& t : DetectionDelayTerms(in)) sum += t.seconds;
  auto rep = AnalyzeQueueSafety(in);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(rep->detection_delay_s, sum);
}

TEST_F(CheckRetentionTest, DrainTimeComesFromTheDepthNowAndARateWithItsSource) {
  InjectInto(orders_dlq_, 30);
  config_.sweep_interval = seconds(10);
  config_.collection_interval = seconds(5);
  std::string out;
  CheckConfig(config_, Factory(), "text", out);
  EXPECT_TRUE(Has(out, "detection delay 15 s (10 s sweep interval + 5 s collection interval + 0 s metric delay)"))
      << out;
  EXPECT_TRUE(Has(out, "drain time 0 s (30 messages, queued now, at 400 msg/s, assumed: ")) << out;
  EXPECT_TRUE(Has(out, "drain time 0 s (0 messages, queued now, at 400 msg/s")) << out;  // billing-dlq
  out.clear();
  CheckConfig(config_, Factory(), "text", out, /*drain_rate=*/2);
  EXPECT_TRUE(Has(out, "drain time 15 s (30 messages, queued now, at 2 msg/s, configured: --drain-rate)")) << out;
}

TEST(CheckRetentionCliTest, YesWithoutFixRetentionIsAUsageError) {
  std::vector<std::string> storage = {"dlq-archive", "check", "--config", "/nonexistent.yaml", "--yes"};
  std::vector<char*> argv;
  for (std::string& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  testing::internal::CaptureStderr();
  const int code = RunCli(static_cast<int>(storage.size()), argv.data());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 2);
  EXPECT_TRUE(Has(err, "--yes applies --fix-retention's plan")) << err;
}

}  // namespace
}  // namespace dlq
