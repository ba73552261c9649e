// The daemon looks causes up for what it archives (issue 40): after an
// archive run, in the background, a sample of each failure group; the answers
// land in the archive's _causes/ sidecar, and the next alarm notification
// carries the top groups with their causes and dashboard links.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "causes/sidecar.h"
#include "common/time_util.h"
#include "monitor/daemon.h"
#include "testing/fake_lambda_api.h"
#include "testing/fake_logs.h"
#include "testing/fake_notifier.h"
#include "unit/daemon_fixture.h"

namespace dlq {
namespace {

using std::chrono::hours;

constexpr char kLogGroup[] = "/aws/lambda/orders-worker";

class DaemonCausesTest : public DaemonFixture {
 protected:
  void SetUp() override {
    FeedFromOneDaySource();
    source_arn_ = sqs_.GetQueueAttributes(*sqs_.GetQueueUrl("orders", ""), {"QueueArn"})->at("QueueArn");
    FunctionConfiguration f;
    f.function_name = "orders-worker";
    lambda_.AddFunction(f);
    lambda_.AddEventSourceMapping(
        {"esm-1", "arn:aws:lambda:us-east-1:123456789012:function:orders-worker", source_arn_, "Enabled", {}, 10});
    logs_.AddGroup(kLogGroup, 30);
    config_.dashboard_url = "https://dlq.example.com/";
  }

  // `n` messages that failed in the consumer (logged, with the message id),
  // sent 95 hours ago so the expiry alarm fires and they are archived.
  void FailInConsumer(int n) {
    const SystemTime sent = clock_.Now() - hours(95);
    for (int i = 0; i < n; ++i) {
      SendEntry e;
      e.id = std::to_string(i);
      e.body = fmt::format(R"({{"sku":"S{}"}})", i);
      auto id = sqs_.InjectMessage(url_, e, sent, {{"DeadLetterQueueSourceArn", source_arn_}});
      ASSERT_TRUE(id.ok());
      const int64_t at = ToUnixMillis(sent) + 60'000 + i;
      const std::string rid = fmt::format("req-{}", i), stream = fmt::format("2026/11/25/[$LATEST]s{}", i);
      logs_.AddEvent(kLogGroup, stream, at, fmt::format("START RequestId: {} Version: $LATEST\n", rid));
      logs_.AddEvent(kLogGroup, stream, at + 1, fmt::format("processing {}\n", *id));
      logs_.AddEvent(kLogGroup, stream, at + 2, fmt::format("[ERROR] ValueError: bad sku 'S{}'\n", i));
      logs_.AddEvent(kLogGroup, stream, at + 3, fmt::format("END RequestId: {}\n", rid));
    }
  }

  std::unique_ptr<Daemon> MakeDaemon() {
    DaemonOptions o;
    o.serve_http = false;
    auto factory = [this](const GroupConfig& g) -> Result<GroupClients> {
      GroupClients c;
      c.sqs = &sqs_;
      c.store = &store_;
      c.default_region = "us-east-1";
      if (g.causes != GroupConfig::Causes::kOff) {
        c.logs = &logs_;
        c.lambda = &lambda_;
      }
      return c;
    };
    return std::make_unique<Daemon>(config_, factory, notifier_, clock_, registry_, metrics_, std::move(o));
  }

  CauseIndex Kept() { return ReadCauseRecords(store_, "dlq-archive", {"orders-dlq"}).value(); }

  FakeLambdaApi lambda_;
  FakeLogsClient logs_;
  FakeNotifier notifier_;
  std::string source_arn_;
};

TEST_F(DaemonCausesTest, AnArchiveRunIsFollowedByALookupOfASamplePerGroup) {
  FailInConsumer(5);
  auto d = MakeDaemon();
  d->RunOnce();
  for (int i = 0; i < 5; ++i) Cycle(*d);
  ASSERT_EQ(sqs_.Depth(url_), 0u);
  ASSERT_FALSE(store_.Keys().empty());

  const CauseIndex kept = Kept();
  ASSERT_EQ(kept.size(), 3u);  // cause_samples, not all five
  for (const CauseRecord* r : kept.All()) {
    EXPECT_EQ(r->status, CauseStatus::kFound) << r->reason;
    ASSERT_TRUE(r->cause.has_value());
    EXPECT_EQ(r->cause->type, "ValueError");
    // The window ends at the daemon's first sight of the message, not at its archiving.
    EXPECT_GT(r->window_end_ms, 0);
  }
  const std::string metrics = registry_.Render();
  EXPECT_NE(metrics.find(R"(dlq_archive_cause_lookups_total{queue="orders-dlq",region="us-east-1",status="found"} 3)"),
            std::string::npos)
      << metrics;
}

TEST_F(DaemonCausesTest, TheNextAlarmNotificationCarriesTheTopGroupsWithTheirCausesAndLinks) {
  FailInConsumer(4);
  auto d = MakeDaemon();
  d->RunOnce();
  for (int i = 0; i < 5; ++i) Cycle(*d);
  auto n = notifier_.notifications();
  // depth: INSUFFICIENT_DATA -> OK; expiry: -> ALARM, then -> OK once archived.
  ASSERT_EQ(n.size(), 3u);
  // Into ALARM before anything was archived: no group known yet, the messages counted.
  EXPECT_EQ(n[1].alarm_name, "orders-dlq-expiry");
  EXPECT_EQ(n[1].new_state, "ALARM");
  EXPECT_TRUE(n[1].top_groups.empty());
  ASSERT_TRUE(n[1].messages.has_value());
  EXPECT_EQ(*n[1].messages, 4);
  EXPECT_EQ(n[1].dashboard_url, "https://dlq.example.com/#/queue/orders-dlq");
  // Back to OK after the archive run and its lookups.
  const AlarmNotification& ok = n.back();
  EXPECT_EQ(ok.new_state, "OK");
  ASSERT_EQ(ok.top_groups.size(), 1u) << ok.ToJson();
  EXPECT_EQ(ok.top_groups[0].messages, 4u);
  EXPECT_EQ(ok.top_groups[0].found, 3u);
  EXPECT_EQ(ok.top_groups[0].cause.rfind("ValueError: bad sku", 0), 0u) << ok.top_groups[0].cause;
  EXPECT_EQ(ok.top_groups[0].url.rfind("https://dlq.example.com/#/queue/orders-dlq/message/", 0), 0u)
      << ok.top_groups[0].url;
  EXPECT_NE(ok.Summary().find("4 x ValueError: bad sku"), std::string::npos) << ok.Summary();
}

TEST_F(DaemonCausesTest, CausesOffMakesNoLogsOrLambdaCall) {
  config_.groups[0].causes = GroupConfig::Causes::kOff;
  FailInConsumer(3);
  auto d = MakeDaemon();
  d->RunOnce();
  for (int i = 0; i < 5; ++i) Cycle(*d);
  ASSERT_EQ(sqs_.Depth(url_), 0u);
  EXPECT_TRUE(Kept().empty());
  EXPECT_EQ(logs_.filter_calls(), 0);
  EXPECT_EQ(lambda_.calls("ListEventSourceMappings"), 0);
}

TEST_F(DaemonCausesTest, AutoStopsLookingAfterAnAccessDenialAndArchivingGoesOn) {
  logs_.Deny("FilterLogEvents");
  FailInConsumer(2);
  auto d = MakeDaemon();
  d->RunOnce();
  for (int i = 0; i < 5; ++i) Cycle(*d);
  ASSERT_EQ(sqs_.Depth(url_), 0u);
  const int calls = logs_.filter_calls();
  EXPECT_GT(calls, 0);
  // More messages fail and are archived (someone asks for it); no lookup is tried again.
  FailInConsumer(2);
  ASSERT_TRUE(d->ArchiveNow("orders-dlq", "test").ok());
  for (int i = 0; i < 3; ++i) Cycle(*d);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
  EXPECT_EQ(logs_.filter_calls(), calls);
}

TEST_F(DaemonCausesTest, AReloadTurnsAutoLookupsOnAgain) {
  logs_.Deny("FilterLogEvents");
  FailInConsumer(2);
  auto d = MakeDaemon();
  d->RunOnce();
  for (int i = 0; i < 5; ++i) Cycle(*d);
  const int calls = logs_.filter_calls();
  ASSERT_GT(calls, 0);
  d->Reload(config_);
  FailInConsumer(2);
  ASSERT_TRUE(d->ArchiveNow("orders-dlq", "test").ok());
  for (int i = 0; i < 3; ++i) Cycle(*d);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
  EXPECT_GT(logs_.filter_calls(), calls);
}

}  // namespace
}  // namespace dlq
