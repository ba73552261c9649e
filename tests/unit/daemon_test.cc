#include "monitor/daemon.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "app/check_command.h"
#include "monitor/daemon_metrics.h"
#include "server/health.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "testing/fake_clock.h"
#include "testing/fake_notifier.h"
#include "testing/fake_object_store.h"
#include "testing/fake_queue.h"
#include "unit/daemon_fixture.h"

namespace dlq {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

class DaemonTest : public DaemonFixture {
 protected:
  std::unique_ptr<Daemon> MakeDaemon(uint64_t budget = 10000) {
    DaemonOptions o;
    o.plan.max_messages_per_run = budget;
    return NewDaemon(notifier_, o);
  }

  FakeNotifier notifier_;
};

TEST_F(DaemonTest, ArchivesMessagesAboutToExpireAndAlarmReturnsToOk) {
  SystemTime expiry = clock_.Now() + minutes(30);
  Inject(8, expiry - seconds(345600));
  auto d = MakeDaemon();
  d->RunOnce();
  d->WaitIdle();
  Cycle(*d);  // the learning pass has reported: the expiries are known
  for (int i = 0; i < 4; ++i) Cycle(*d);
  EXPECT_LT(clock_.Now(), expiry);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
  EXPECT_EQ(sqs_.deleted_count(), 8);
  EXPECT_FALSE(store_.Keys().empty());
  auto queues = d->views().Queues();
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
  d->WaitIdle();
  Cycle(*d);  // the learning pass has reported: the expiries are known
  Cycle(*d);  // ALARM: first slice
  EXPECT_EQ(sqs_.deleted_count(), 5);
  Cycle(*d);  // still ALARM (no new transition): re-run
  EXPECT_EQ(sqs_.deleted_count(), 10);
  Cycle(*d);
  EXPECT_EQ(sqs_.deleted_count(), 12);
  EXPECT_EQ(notifier_.calls(), 1);  // only the one transition into ALARM so far
  Cycle(*d);
  Cycle(*d);
  EXPECT_EQ(d->views().Queues()[0].alarms[0].second, AlarmState::kOk);
  EXPECT_GE(d->views().Queues()[0].runs, 3u);
}

TEST_F(DaemonTest, UnknownExpiryOnNonEmptyQueueIsLearnedWithoutArchiving) {
  // Messages with 3 days left: the daemon cannot know until it looks, so a
  // learning pass receives each once and keeps it; no archive run, no alarm.
  Inject(2, clock_.Now() - hours(24));
  auto d = MakeDaemon();
  d->RunOnce();
  d->WaitIdle();
  Cycle(*d);  // the learning pass has reported: the expiries are known
  Cycle(*d);
  Cycle(*d);
  EXPECT_EQ(d->views().Queues()[0].runs, 0u);
  EXPECT_EQ(d->views().Queues()[0].learning_passes, 1u);
  EXPECT_GE(sqs_.calls(FakeQueueClient::Operation::kReceiveMessages), 1);
  EXPECT_EQ(sqs_.Depth(url_), 2u);
  EXPECT_EQ(d->views().Queues()[0].alarms[0].second, AlarmState::kOk);
}

TEST_F(DaemonTest, ReferencePolicySelectAllArchivesTheWholeQueue) {
  config_.groups[0].policy_by_alarm = false;
  config_.groups[0].policy = {SelectionKind::kAll, seconds(0)};
  Inject(2, clock_.Now() - hours(95));  // due: the alarm fires
  SendEntry fresh;
  fresh.id = "fresh";
  fresh.body = "four days left";
  ASSERT_TRUE(sqs_.InjectMessage(url_, fresh, clock_.Now()).ok());
  auto d = MakeDaemon();
  d->RunOnce();
  d->WaitIdle();
  Cycle(*d);  // the learning pass has reported: the expiries are known
  Cycle(*d);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
}

TEST_F(DaemonTest, EmptyQueueStaysOkAndArchivesNothing) {
  auto d = MakeDaemon();
  d->RunOnce();
  Cycle(*d);
  Cycle(*d);
  EXPECT_EQ(d->views().Queues()[0].alarms[0].second, AlarmState::kOk);
  EXPECT_EQ(d->views().Queues()[0].runs, 0u);
  EXPECT_TRUE(store_.Keys().empty());
}

TEST_F(DaemonTest, MetricsContainTheQueueSeries) {
  Inject(4, clock_.Now() - hours(95));
  auto d = MakeDaemon();
  d->RunOnce();
  d->WaitIdle();
  Cycle(*d);  // the learning pass has reported: the expiries are known
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

// A run's archived, deleted and object counts reach the metrics while it
// goes (every progress_interval), not only when it returns: here the last
// object's upload waits until a scrape shows the earlier objects, then the
// totals are exact at the end (nothing counted twice).
TEST_F(DaemonTest, MetricsShowARunsProgressWhileItGoes) {
  config_.groups[0].batch.max_messages = 2;
  config_.groups[0].receivers = 1;
  Inject(6, clock_.Now() - hours(95));
  DaemonOptions o;
  o.progress_interval = std::chrono::milliseconds(10);
  auto d = NewDaemon(notifier_, o);
  const std::string archived = "dlq_archive_messages_archived_total{queue=\"orders-dlq\",region=\"us-east-1\"} ";
  auto shown = [&]() -> std::string {
    std::string text = registry_.Render();
    size_t at = text.find(archived);
    return at == std::string::npos ? "" : text.substr(at + archived.size(), text.find('\n', at) - at - archived.size());
  };
  std::atomic<int> puts{0};
  std::string during;      // what a scrape showed while the third object was uploading
  std::string api_during;  // and /api/queues
  store_.SetPutHook([&](const std::string&, std::string_view) {
    if (++puts == 3) {
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      // The publisher ticks on the daemon's (fake) clock: move it one
      // progress_interval per look.
      while ((during = shown()) != "4" && std::chrono::steady_clock::now() < give_up) {
        clock_.Advance(std::chrono::milliseconds(10));
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      api_during = d->views().QueuesJson();
    }
    return Status::Ok();
  });
  d->RunOnce();
  d->WaitIdle();
  Cycle(*d);  // the learning pass has reported: the expiries are known
  Cycle(*d);
  EXPECT_EQ(puts.load(), 3);
  EXPECT_EQ(during, "4") << "the first two objects' messages, shown before the run returned";
  EXPECT_NE(api_during.find("\"runs\":0,\"archived\":4,"), std::string::npos) << api_during;
  EXPECT_EQ(shown(), "6");
  const std::string api = d->views().QueuesJson();
  EXPECT_NE(api.find("\"runs\":1,\"archived\":6,"), std::string::npos) << api;  // counted once, not 4 + 6
  std::string text = registry_.Render();
  EXPECT_NE(text.find("dlq_archive_objects_total{queue=\"orders-dlq\",region=\"us-east-1\"} 3"), std::string::npos)
      << text;
  EXPECT_NE(text.find("dlq_archive_messages_deleted_total{queue=\"orders-dlq\",region=\"us-east-1\"} 6"),
            std::string::npos)
      << text;
}

TEST_F(DaemonTest, ApiQueuesJsonShowsQueueAlarmAndHistory) {
  Inject(1, clock_.Now() - hours(95));
  auto d = MakeDaemon();
  d->RunOnce();
  d->WaitIdle();
  Cycle(*d);  // the learning pass has reported: the expiries are known
  Cycle(*d);
  HttpRouteHandler h = MakeJsonHandler([&] { return d->views().QueuesJson(); });
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
  EXPECT_NE(out.find("orders-dlq: UNSAFE: in the worst case a message can expire"), std::string::npos) << out;
  EXPECT_NE(out.find("GreaterThanOrEqualToThreshold 345000"), std::string::npos) << out;
  EXPECT_NE(out.find("before it is archived"), std::string::npos) << out;
  std::string js;
  EXPECT_EQ(CheckConfig(config_, factory, "json", js), 1);
  EXPECT_NE(js.find("\"safe\":false"), std::string::npos) << js;
}

TEST_F(DaemonTest, ReloadKeepsAlarmStateOfQueuesStillWatched) {
  Inject(1, clock_.Now() - hours(95));
  auto d = MakeDaemon();
  d->RunOnce();
  d->WaitIdle();
  Cycle(*d);  // the learning pass has reported: the expiries are known
  clock_.Advance(seconds(60));
  d->RunOnce();
  d->WaitIdle();
  ASSERT_EQ(d->views().Queues()[0].alarms[0].second, AlarmState::kAlarm);
  MonitorConfig next = config_;
  next.sweep_interval = seconds(120);
  d->Reload(next);
  clock_.Advance(seconds(1));
  d->RunOnce();
  d->WaitIdle();
  ASSERT_EQ(d->views().Queues().size(), 1u);
  EXPECT_EQ(d->views().Queues()[0].alarms[0].second, AlarmState::kAlarm);
}

}  // namespace
}  // namespace dlq

// ---- Operator experience (issue 13): failures show, destinations are
// checked first, alarm actions keep the DLQ useful, `check` reads clearly.

namespace dlq {
namespace {

// Forwards to a FakeObjectStore but answers CheckWritable "could not tell"
// (as S3 does when HeadBucket is denied).
class UnconfirmedStore final : public ObjectStore {
 public:
  explicit UnconfirmedStore(ObjectStore& inner) : inner_(inner) {}
  Status Put(const std::string& key, std::string_view data, const PutOptions& o) override {
    return inner_.Put(key, data, o);
  }
  Result<std::string> Get(const std::string& key, std::optional<std::pair<uint64_t, uint64_t>> range) override {
    return inner_.Get(key, range);
  }
  Result<ObjectInfo> Head(const std::string& key) override { return inner_.Head(key); }
  Result<ListPage> List(const std::string& p, const std::string& d, const std::string& t) override {
    return inner_.List(p, d, t);
  }
  Status Delete(const std::string& key) override { return inner_.Delete(key); }
  Result<DestinationCheck> CheckWritable() override {
    return DestinationCheck{.confirmed = false, .note = "HeadBucket was denied (403)"};
  }
  std::string Describe() const override { return inner_.Describe(); }

 private:
  ObjectStore& inner_;
};

Status NoSuchBucket() {
  return NotFound("put s3://no-such-bucket/k: The specified bucket does not exist")
      .WithAws(AwsErrorInfo{"NoSuchBucket", 404, "REQ1"});
}

bool Has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

TEST_F(DaemonTest, FailingArchiveShowsInApiMetricsAndQueueStatus) {
  store_.FailNextPut(NoSuchBucket(), 1000);
  Inject(3, clock_.Now() - hours(95));
  auto d = MakeDaemon();
  d->RunOnce();
  d->WaitIdle();
  Cycle(*d);  // the learning pass has reported: the expiries are known
  Cycle(*d);
  Cycle(*d);
  ASSERT_EQ(sqs_.deleted_count(), 0);
  QueueStatus q = d->views().Queues()[0];
  EXPECT_GE(q.failed_runs, 1u);
  EXPECT_TRUE(q.failing);
  ASSERT_TRUE(q.last_error.has_value());
  EXPECT_EQ(q.last_error->code, "NoSuchBucket");
  EXPECT_EQ(q.last_error->error_class, "NotFound");
  EXPECT_TRUE(Has(q.last_error->message, "bucket does not exist")) << q.last_error->message;
  EXPECT_TRUE(q.collect_error.empty());  // a later successful collection does not wipe the archive error

  std::string js = d->views().QueuesJson();
  EXPECT_TRUE(Has(js, "\"failing\":[{\"group\":\"orders\",\"queue\":\"orders-dlq\"}]")) << js;
  EXPECT_TRUE(Has(js, "\"code\":\"NoSuchBucket\",\"class\":\"NotFound\",\"message\":")) << js;
  EXPECT_TRUE(Has(js, "\"failing\":true")) << js;

  std::string m = registry_.Render();
  EXPECT_TRUE(
      Has(m, "dlq_archive_archive_failures_total{queue=\"orders-dlq\",region=\"us-east-1\",class=\"NotFound\"}"))
      << m;
  EXPECT_TRUE(Has(m, "dlq_archive_archive_runs_total{queue=\"orders-dlq\",region=\"us-east-1\",result=\"error\"}"));
  // The messages the failed runs received went back to the DLQ unarchived.
  EXPECT_FALSE(Has(m, "dlq_archive_messages_failed_total{queue=\"orders-dlq\",region=\"us-east-1\"} 0\n")) << m;
  // Decision (doc/operations.md): a failing destination does not make the
  // process unready; it shows in metrics, /api/queues and logs instead.
  EXPECT_TRUE(d->health().ready());
}

TEST_F(DaemonTest, ErrorSeriesExistAtZeroBeforeTheFirstFailure) {
  auto d = MakeDaemon();
  d->RunOnce();
  EXPECT_TRUE(Has(registry_.Render(),
                  "dlq_archive_archive_runs_total{queue=\"orders-dlq\",region=\"us-east-1\",result=\"error\"} 0\n"));
}

TEST_F(DaemonTest, FailedDestinationCheckArchivesNothingAndCountsBlockedRuns) {
  store_.FailNextCheck(NotFound("bucket s3://no-such-bucket does not exist (NoSuchBucket)")
                           .WithAws(AwsErrorInfo{"NoSuchBucket", 404, ""}));
  Inject(3, clock_.Now() - hours(95));
  auto d = MakeDaemon();
  EXPECT_EQ(store_.check_calls(), 1);
  auto dest = d->views().Destination("orders");
  ASSERT_TRUE(dest.has_value());
  EXPECT_FALSE(dest->ok);
  EXPECT_EQ(dest->code, "NoSuchBucket");
  d->RunOnce();
  d->WaitIdle();
  Cycle(*d);  // the learning pass has reported: the expiries are known
  // Only the learning pass received (it writes nothing and keeps every message).
  const int learning_receives = sqs_.calls(FakeQueueClient::Operation::kReceiveMessages);
  Cycle(*d);
  EXPECT_EQ(sqs_.calls(FakeQueueClient::Operation::kReceiveMessages), learning_receives);
  EXPECT_EQ(sqs_.Depth(url_), 3u);
  EXPECT_EQ(sqs_.deleted_count(), 0);
  QueueStatus q = d->views().Queues()[0];
  EXPECT_EQ(q.learning_passes, 1u);
  EXPECT_EQ(q.failed_runs, 1u);
  ASSERT_TRUE(q.last_error.has_value());
  EXPECT_EQ(q.last_error->code, "NoSuchBucket");
  EXPECT_TRUE(Has(q.last_error->message, "archive not started")) << q.last_error->message;
  std::string m = registry_.Render();
  EXPECT_TRUE(Has(m, "dlq_archive_destination_up{group=\"orders\"} 0")) << m;
  EXPECT_TRUE(Has(m, "dlq_archive_archive_runs_total{queue=\"orders-dlq\",region=\"us-east-1\",result=\"error\"} 1"))
      << m;
  EXPECT_TRUE(Has(d->views().QueuesJson(),
                  "\"destination\":{\"uri\":\"s3://archive-bucket/dlq-archive\",\"checked\":true,"
                  "\"ok\":false"))
      << d->views().QueuesJson();
  Cycle(*d);  // within the sweep interval: no second blocked run
  EXPECT_EQ(d->views().Queues()[0].failed_runs, 1u);

  // The check is repeated on the next discovery; once it passes, archiving resumes.
  clock_.Advance(config_.discovery_interval);
  Cycle(*d);
  Cycle(*d);
  EXPECT_TRUE(d->views().Destination("orders")->ok);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
  EXPECT_FALSE(d->views().Queues()[0].failing);
  EXPECT_TRUE(d->views().Queues()[0].last_error.has_value());  // kept for the record
}

TEST_F(DaemonTest, ReloadChecksTheDestinationAgain) {
  auto d = MakeDaemon();
  d->RunOnce();
  EXPECT_TRUE(d->views().Destination("orders")->ok);
  store_.FailNextCheck(PermissionDenied("AccessDenied on s3://archive-bucket"));
  d->Reload(config_);
  EXPECT_EQ(store_.check_calls(), 2);
  EXPECT_FALSE(d->views().Destination("orders")->ok);
  EXPECT_EQ(d->views().Destination("orders")->error_class, "PermissionDenied");
}

TEST_F(DaemonTest, UnconfirmedDestinationIsAWarningAndArchives) {
  UnconfirmedStore unconfirmed(store_);
  DaemonOptions o;
  o.serve_http = false;
  Daemon d(config_, FakeGroupClients(sqs_, unconfirmed), notifier_, clock_, registry_, metrics_, o);
  auto dest = d.views().Destination("orders");
  ASSERT_TRUE(dest.has_value());
  EXPECT_TRUE(dest->ok);
  EXPECT_FALSE(dest->confirmed);
  EXPECT_TRUE(Has(dest->note, "denied"));
  Inject(2, clock_.Now() - hours(95));
  d.RunOnce();
  d.WaitIdle();
  Cycle(d);  // the learning pass has reported: the expiries are known
  Cycle(d);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
}

TEST_F(DaemonTest, GroupMatchingNoQueueIsAWarningInRun) {
  config_.groups[0].queues.clear();
  config_.groups[0].prefixes = {"nothing-matches-"};
  auto d = MakeDaemon();
  d->RunOnce();
  EXPECT_TRUE(d->views().Queues().empty());
  EXPECT_TRUE(Has(d->views().QueuesJson(), "\"warning\":\"the group's selectors match no queue\""))
      << d->views().QueuesJson();
  EXPECT_TRUE(d->health().ready());
}

// The control thread records failed discoveries while API readers (HTTP
// threads) render /api/queues: the group's error shows, and the next
// successful discovery clears it. (Under TSan: no race on the group's error.)
TEST_F(DaemonTest, DiscoveryErrorShowsInApiWhileReadersRun) {
  auto d = MakeDaemon();
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done) (void)d->views().QueuesJson();
  });
  for (int i = 0; i < 20; ++i) {
    sqs_.FailNext(FakeQueueClient::Operation::kGetQueueUrl, Unavailable("sqs endpoint unreachable"));
    clock_.Advance(config_.discovery_interval);
    d->RunOnce();
    // The reader keeps rendering between cycles: an error written without
    // the daemon's lock would race with it here (TSan reports it).
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const std::string failed = d->views().QueuesJson();
  clock_.Advance(config_.discovery_interval);
  d->RunOnce();
  done = true;
  reader.join();
  EXPECT_TRUE(Has(failed, "sqs endpoint unreachable")) << failed;
  const std::string recovered = d->views().QueuesJson();
  EXPECT_FALSE(Has(recovered, "sqs endpoint unreachable")) << recovered;
  EXPECT_TRUE(Has(recovered, "\"queue\":\"orders-dlq\"")) << recovered;
}

// A DLQ fed by a 1-day source queue: messages arrive with at least 3 days left.
class DaemonActionTest : public DaemonTest {
 protected:
  DaemonActionTest() { FeedFromOneDaySource(); }
};

TEST_F(DaemonActionTest, DepthAlarmNotifiesByDefaultAndTheDlqKeepsItsMessages) {
  auto d = MakeDaemon();
  d->RunOnce();  // seen empty
  Inject(5, clock_.Now());
  for (int i = 0; i < 25; ++i) Cycle(*d);  // 25 min: 3 x 5 min periods breach
  bool depth_alarm = false;
  for (const auto& n : notifier_.notifications()) {
    if (n.alarm_name == "orders-dlq-depth" && n.new_state == "ALARM") depth_alarm = true;
  }
  EXPECT_TRUE(depth_alarm);
  EXPECT_EQ(sqs_.Depth(url_), 5u);
  EXPECT_EQ(sqs_.deleted_count(), 0);
  EXPECT_EQ(sqs_.calls(FakeQueueClient::Operation::kReceiveMessages), 0);
  EXPECT_TRUE(store_.Keys().empty());
  EXPECT_TRUE(Has(d->views().QueuesJson(), "\"name\":\"orders-dlq-depth\"")) << d->views().QueuesJson();
  EXPECT_TRUE(Has(d->views().QueuesJson(), "\"action\":\"notify\"")) << d->views().QueuesJson();
}

TEST_F(DaemonActionTest, ExpiryAlarmWindowLeavesLaterMessagesInTheDlq) {
  // Never seen empty: the nearest expiry is unknown, the alarm fires, the run
  // archives what is inside the 1 h 5 min lead window and nothing else.
  Inject(3, clock_.Now() + minutes(30) - seconds(345600));
  SendEntry late;
  late.id = "late";
  late.body = "three days left";
  ASSERT_TRUE(sqs_.InjectMessage(url_, late, clock_.Now() - hours(24)).ok());
  auto d = MakeDaemon();
  d->RunOnce();
  d->WaitIdle();
  Cycle(*d);  // the learning pass has reported: the expiries are known
  Cycle(*d);
  Cycle(*d);
  EXPECT_EQ(sqs_.deleted_count(), 3);
  EXPECT_EQ(sqs_.Depth(url_), 1u);
  auto queues = d->views().Queues();
  EXPECT_EQ(queues[0].archived, 3u);
}

TEST_F(DaemonActionTest, CopyActionArchivesACopyOncePerTransitionAndDeletesNothing) {
  GroupConfig& g = config_.groups[0];
  g.alarms.expiry.enabled = false;
  g.alarms.depth.action = AlarmSettings::Action::kCopy;
  g.alarms.depth.period = seconds(60);
  g.alarms.depth.evaluation_periods = 1;
  g.alarms.depth.datapoints_to_alarm = 1;
  Inject(4, clock_.Now());
  auto d = MakeDaemon();
  d->RunOnce();
  Cycle(*d);
  Cycle(*d);
  ASSERT_EQ(d->views().Queues()[0].alarms[0].second, AlarmState::kAlarm);
  EXPECT_EQ(sqs_.deleted_count(), 0);
  EXPECT_EQ(sqs_.Depth(url_), 4u);
  EXPECT_EQ(d->views().Queues()[0].archived, 4u);
  const int puts = store_.successful_puts();
  for (int i = 0; i < 10; ++i) Cycle(*d);  // still in ALARM: no second copy
  EXPECT_EQ(store_.successful_puts(), puts);
  EXPECT_EQ(d->views().Queues()[0].runs, 1u);
}

TEST_F(DaemonActionTest, DepthAlarmWithArchiveActionDrainsEverything) {
  GroupConfig& g = config_.groups[0];
  g.alarms.depth.action = AlarmSettings::Action::kArchive;
  g.alarms.depth.period = seconds(60);
  g.alarms.depth.evaluation_periods = 1;
  g.alarms.depth.datapoints_to_alarm = 1;
  auto d = MakeDaemon();
  d->RunOnce();  // seen empty
  Inject(4, clock_.Now());
  Cycle(*d);
  Cycle(*d);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
}

// ---- check

class CheckTest : public DaemonTest {
 protected:
  GroupClientsFactory Factory() { return FakeGroupClients(sqs_, store_); }
};

TEST_F(CheckTest, MissingBucketIsAnErrorNotSafe) {
  store_.FailNextCheck(NotFound("bucket s3://archive-bucket does not exist (NoSuchBucket): check the name"));
  std::string out;
  EXPECT_EQ(CheckConfig(config_, Factory(), "text", out), 1);
  EXPECT_TRUE(Has(out, "ERROR: destination s3://archive-bucket/dlq-archive failed its check: NotFound: bucket")) << out;
  EXPECT_TRUE(Has(out, "orders-dlq: UNSAFE: nothing can be archived")) << out;
  EXPECT_FALSE(Has(out, "orders-dlq: SAFE")) << out;
  EXPECT_EQ(sqs_.calls(FakeQueueClient::Operation::kReceiveMessages), 0);
  store_.FailNextCheck(NotFound("bucket missing"));
  std::string js;
  EXPECT_EQ(CheckConfig(config_, Factory(), "json", js), 1);
  EXPECT_TRUE(Has(js, "\"destination\":{\"uri\":\"s3://archive-bucket/dlq-archive\",\"ok\":false")) << js;
  EXPECT_TRUE(Has(js, "\"safe\":false")) << js;
}

TEST_F(CheckTest, WorkingDestinationAndSafeQueueExitZero) {
  std::string out;
  config_.groups[0].alarms.expiry.threshold_auto = true;
  EXPECT_EQ(sqs_.SetQueueAttributes(url_, {{"MessageRetentionPeriod", "1209600"}}).ok(), true);
  auto arn = sqs_.GetQueueAttributes(url_, {"QueueArn"});
  ASSERT_TRUE(arn.ok());
  ASSERT_TRUE(sqs_.CreateQueue("orders", {{"MessageRetentionPeriod", "345600"},
                                          {"RedrivePolicy", "{\"deadLetterTargetArn\":\"" + arn->at("QueueArn") +
                                                                "\",\"maxReceiveCount\":\"3\"}"}})
                  .ok());
  EXPECT_EQ(CheckConfig(config_, Factory(), "text", out), 0) << out;
  EXPECT_TRUE(Has(out, "destination s3://archive-bucket/dlq-archive: exists and can be written")) << out;
  EXPECT_TRUE(Has(out, "orders-dlq: SAFE: in the worst case a message is archived")) << out;
  // Item 4: durations for people, seconds in brackets, one clock for both times.
  EXPECT_TRUE(Has(out, "retention 14d (1209600 s)")) << out;
  EXPECT_TRUE(Has(out, "counted from its SentTimestamp: archived at the latest after")) << out;
  EXPECT_TRUE(Has(out, "expires after 14d (1209600 s)")) << out;
  EXPECT_FALSE(Has(out, "arrival to archive")) << out;
  EXPECT_EQ(store_.check_calls(), 1);
}

TEST_F(CheckTest, PrintsEachAlarmsAction) {
  config_.groups[0].alarms = AlarmsConfig{};
  std::string out;
  CheckConfig(config_, Factory(), "text", out);
  EXPECT_TRUE(Has(out, "action archive: archive, then delete, the messages expiring within")) << out;
  EXPECT_TRUE(Has(out, "action notify: webhook and log only, nothing is archived")) << out;
  std::string js;
  CheckConfig(config_, Factory(), "json", js);
  EXPECT_TRUE(Has(js, "\"action\":\"archive\",\"select\":\"expiring-within\"")) << js;
  EXPECT_TRUE(Has(js, "\"action\":\"notify\",\"select\":\"all\"")) << js;
}

TEST_F(CheckTest, UnconfirmedDestinationIsAWarning) {
  UnconfirmedStore unconfirmed(store_);
  auto factory = [&](const GroupConfig&) -> Result<GroupClients> {
    GroupClients c;
    c.sqs = &sqs_;
    c.store = &unconfirmed;
    return c;
  };
  std::string out;
  CheckConfig(config_, factory, "text", out);
  EXPECT_TRUE(Has(out, "WARNING: destination s3://archive-bucket/dlq-archive not confirmed: HeadBucket was denied"))
      << out;
  EXPECT_TRUE(Has(out, "1 queue, 1 unsafe, 0 groups failed, 1 warning\n")) << out;
}

TEST_F(CheckTest, GroupMatchingNoQueueFailsUnlessAllowEmpty) {
  config_.groups[0].queues.clear();
  config_.groups[0].prefixes = {"nothing-matches-"};
  std::string out;
  EXPECT_EQ(CheckConfig(config_, Factory(), "text", out), 1);
  EXPECT_TRUE(Has(out, "ERROR: no queue matches the group's selectors")) << out;
  config_.groups[0].allow_empty = true;
  out.clear();
  EXPECT_EQ(CheckConfig(config_, Factory(), "text", out), 0) << out;
  EXPECT_TRUE(Has(out, "allowed by allow_empty: true")) << out;
}

}  // namespace
}  // namespace dlq
