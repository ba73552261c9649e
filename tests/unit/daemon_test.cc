#include "monitor/daemon.h"

#include <gtest/gtest.h>

#include "app/check_command.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "testing/fake_notifier.h"
#include "testing/fake_object_store.h"
#include "testing/fake_queue.h"

namespace dlq {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

class DaemonTest : public ::testing::Test {
 protected:
  DaemonTest() : sqs_(clock_), store_("fake://archive", &clock_), metrics_(registry_, "test") {
    auto url = sqs_.CreateQueue("orders-dlq", {{"MessageRetentionPeriod", "345600"}});
    EXPECT_TRUE(url.ok());
    url_ = *url;
    config_.collection_interval = seconds(60);
    config_.sweep_interval = seconds(300);
    GroupConfig g;
    g.name = "orders";
    g.destination = "s3://archive-bucket/dlq-archive";
    g.queues = {"orders-dlq"};
    g.alarms.expiry.threshold_auto = false;
    g.alarms.expiry.threshold = 345600 - 3600;  // alarm when a message may expire within an hour
    g.alarms.expiry.period = seconds(60);
    g.alarms.depth.enabled = false;
    config_.groups.push_back(g);
  }

  std::unique_ptr<Daemon> MakeDaemon(uint64_t budget = 10000) {
    DaemonOptions o;
    o.max_messages_per_run = budget;
    o.serve_http = false;
    auto factory = [this](const GroupConfig&) -> Result<GroupClients> {
      GroupClients c;
      c.sqs = &sqs_;
      c.store = &store_;
      c.default_region = "us-east-1";
      return c;
    };
    return std::make_unique<Daemon>(config_, factory, notifier_, clock_, registry_, metrics_, o);
  }

  void Inject(int n, SystemTime sent_at) {
    for (int i = 0; i < n; ++i) {
      SendEntry e;
      e.id = std::to_string(i);
      e.body = "poison " + std::to_string(i);
      ASSERT_TRUE(sqs_.InjectMessage(url_, e, sent_at).ok());
    }
  }

  // One collection cycle, then wait for the archive runs it started.
  void Cycle(Daemon& d) {
    clock_.Advance(seconds(60));
    d.RunOnce();
    d.WaitIdle();
  }

  FakeClock clock_;
  FakeQueueClient sqs_;
  FakeObjectStore store_;
  FakeNotifier notifier_;
  metrics::Registry registry_;
  DaemonMetrics metrics_;
  MonitorConfig config_;
  std::string url_;
};

TEST_F(DaemonTest, ArchivesMessagesAboutToExpireAndAlarmReturnsToOk) {
  SystemTime expiry = clock_.Now() + minutes(30);
  Inject(8, expiry - seconds(345600));
  auto d = MakeDaemon();
  d->RunOnce();
  for (int i = 0; i < 4; ++i) Cycle(*d);
  EXPECT_LT(clock_.Now(), expiry);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
  EXPECT_EQ(sqs_.deleted_count(), 8);
  EXPECT_FALSE(store_.Keys().empty());
  auto queues = d->Queues();
  ASSERT_EQ(queues.size(), 1u);
  ASSERT_EQ(queues[0].alarms.size(), 1u);
  EXPECT_EQ(queues[0].alarms[0].second, AlarmState::kOk);
  EXPECT_EQ(queues[0].archived, 8u);
}

TEST_F(DaemonTest, NotifiesOncePerTransition) {
  Inject(3, clock_.Now() - hours(95));
  auto d = MakeDaemon();
  d->RunOnce();
  for (int i = 0; i < 5; ++i) Cycle(*d);
  auto n = notifier_.notifications();
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[0].old_state, "INSUFFICIENT_DATA");
  EXPECT_EQ(n[0].new_state, "ALARM");
  EXPECT_EQ(n[0].queue, "orders-dlq");
  EXPECT_EQ(n[0].alarm_name, "orders-dlq-expiry");
  EXPECT_EQ(n[1].old_state, "ALARM");
  EXPECT_EQ(n[1].new_state, "OK");
}

TEST_F(DaemonTest, RerunsWhileAlarmStaysInAlarmAfterPartialDrain) {
  Inject(12, clock_.Now() - hours(95));
  auto d = MakeDaemon(/*budget=*/5);
  d->RunOnce();
  Cycle(*d);  // ALARM: first slice
  EXPECT_EQ(sqs_.deleted_count(), 5);
  Cycle(*d);  // still ALARM (no new transition): re-run
  EXPECT_EQ(sqs_.deleted_count(), 10);
  Cycle(*d);
  EXPECT_EQ(sqs_.deleted_count(), 12);
  EXPECT_EQ(notifier_.calls(), 1);  // only the one transition into ALARM so far
  Cycle(*d);
  Cycle(*d);
  EXPECT_EQ(d->Queues()[0].alarms[0].second, AlarmState::kOk);
  EXPECT_GE(d->Queues()[0].runs, 3u);
}

TEST_F(DaemonTest, UnknownExpiryOnNonEmptyQueueIsTreatedAsImminent) {
  // Messages with 3 days left: the daemon cannot know until it looks, so it archives.
  Inject(2, clock_.Now() - hours(24));
  auto d = MakeDaemon();
  d->RunOnce();
  Cycle(*d);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
}

TEST_F(DaemonTest, EmptyQueueStaysOkAndArchivesNothing) {
  auto d = MakeDaemon();
  d->RunOnce();
  Cycle(*d);
  Cycle(*d);
  EXPECT_EQ(d->Queues()[0].alarms[0].second, AlarmState::kOk);
  EXPECT_EQ(d->Queues()[0].runs, 0u);
  EXPECT_TRUE(store_.Keys().empty());
}

TEST_F(DaemonTest, MetricsContainTheQueueSeries) {
  Inject(4, clock_.Now() - hours(95));
  auto d = MakeDaemon();
  d->RunOnce();
  Cycle(*d);
  std::string text = registry_.Render();
  EXPECT_NE(text.find("dlq_archive_queue_messages{queue=\"orders-dlq\",region=\"us-east-1\",state=\"visible\"} 4"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("dlq_archive_alarm_state{queue=\"orders-dlq\",region=\"us-east-1\",alarm=\"orders-dlq-expiry\","
                      "state=\"ALARM\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("dlq_archive_messages_archived_total{queue=\"orders-dlq\",region=\"us-east-1\"} 4"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("dlq_archive_queue_retention_seconds{queue=\"orders-dlq\",region=\"us-east-1\"} 345600"),
            std::string::npos);
}

TEST_F(DaemonTest, ApiQueuesJsonShowsQueueAlarmAndHistory) {
  Inject(1, clock_.Now() - hours(95));
  auto d = MakeDaemon();
  d->RunOnce();
  Cycle(*d);
  HttpRouteHandler h = MakeJsonHandler([&] { return d->QueuesJson(); });
  HttpServerResponse r = h(HttpServerRequest{.method = "GET", .path = "/api/queues"});
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("\"queue\":\"orders-dlq\""), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"name\":\"orders-dlq-expiry\""), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"from\":\"INSUFFICIENT_DATA\",\"to\":\"ALARM\""), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"retention_s\":345600"), std::string::npos) << r.body;
}

TEST_F(DaemonTest, CheckFlagsReferenceLikeConfigUnsafeWithNumbers) {
  GroupConfig& g = config_.groups[0];
  g.cloudwatch_age = true;
  g.alarms.expiry.threshold = 345000;
  g.alarms.expiry.period = seconds(300);
  auto factory = [this](const GroupConfig&) -> Result<GroupClients> {
    GroupClients c;
    c.sqs = &sqs_;
    c.store = &store_;
    return c;
  };
  std::string out;
  EXPECT_EQ(CheckConfig(config_, factory, "text", out), 1);
  EXPECT_NE(out.find("orders-dlq: UNSAFE"), std::string::npos) << out;
  EXPECT_NE(out.find("GreaterThanOrEqualToThreshold 345000"), std::string::npos) << out;
  EXPECT_NE(out.find("margin -"), std::string::npos) << out;
  std::string js;
  EXPECT_EQ(CheckConfig(config_, factory, "json", js), 1);
  EXPECT_NE(js.find("\"safe\":false"), std::string::npos) << js;
}

TEST_F(DaemonTest, ReloadKeepsAlarmStateOfQueuesStillWatched) {
  Inject(1, clock_.Now() - hours(95));
  auto d = MakeDaemon();
  d->RunOnce();
  clock_.Advance(seconds(60));
  d->RunOnce();
  d->WaitIdle();
  ASSERT_EQ(d->Queues()[0].alarms[0].second, AlarmState::kAlarm);
  MonitorConfig next = config_;
  next.sweep_interval = seconds(120);
  d->Reload(next);
  clock_.Advance(seconds(1));
  d->RunOnce();
  d->WaitIdle();
  ASSERT_EQ(d->Queues().size(), 1u);
  EXPECT_EQ(d->Queues()[0].alarms[0].second, AlarmState::kAlarm);
}

}  // namespace
}  // namespace dlq
