// Issue 31 §2: the daemon watches DLQs without receiving their messages
// unless receiving is what makes an expiry known, and then once per arrival.
#include <gtest/gtest.h>

#include "archive/gzip.h"
#include "archive/record.h"
#include "common/strings.h"
#include "monitor/daemon.h"
#include "testing/fake_notifier.h"
#include "testing/fake_state_store.h"
#include "testing/scoped_capturing_logger.h"
#include "unit/daemon_fixture.h"

namespace dlq {
namespace {

using std::chrono::hours;
using std::chrono::seconds;
using Op = FakeQueueClient::Operation;

class DaemonWatchTest : public DaemonFixture {
 protected:
  // orders-dlq gets a source keeping messages `source_retention`.
  void AddSource(seconds source_retention) {
    auto arn = sqs_.GetQueueAttributes(url_, {"QueueArn"});
    ASSERT_TRUE(arn.ok());
    auto src = sqs_.CreateQueue("orders", {{"MessageRetentionPeriod", std::to_string(source_retention.count())},
                                           {"RedrivePolicy", "{\"deadLetterTargetArn\":\"" + arn->at("QueueArn") +
                                                                 "\",\"maxReceiveCount\":\"3\"}"}});
    ASSERT_TRUE(src.ok());
  }
  std::unique_ptr<Daemon> MakeDaemon() { return NewDaemon(notifier_, DaemonOptions{}); }
  int Receives() const { return sqs_.calls(Op::kReceiveMessages); }
  bool EverAlarmed() const {
    for (const auto& n : notifier_.notifications()) {
      if (n.new_state == "ALARM") return true;
    }
    return false;
  }
  void InjectOne(const std::string& id, SystemTime sent) {
    SendEntry e;
    e.id = id;
    e.body = "message " + id;
    ASSERT_TRUE(sqs_.InjectMessage(url_, e, sent).ok());
  }

  FakeNotifier notifier_;
};

TEST_F(DaemonWatchTest, DlqKeepingMessagesLongerThanItsSourceIsNeverReceivedWhileNothingNearsExpiry) {
  AddSource(hours(24));  // R = 4 days > S = 1 day + 1 h margin
  auto d = MakeDaemon();
  d->RunOnce();  // seen empty
  for (int i = 0; i < 30; ++i) {
    if (i % 10 == 0) InjectOne("m" + std::to_string(i), clock_.Now());
    Cycle(*d);
  }
  EXPECT_EQ(Receives(), 0);
  EXPECT_FALSE(EverAlarmed());
  EXPECT_EQ(sqs_.Depth(url_), 3u);
  auto q = d->views().Queue("orders-dlq");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->learning_passes, 0u);
  EXPECT_EQ(q->expiry_unknown, "");
  ASSERT_TRUE(q->nearest_expiry);
  // Bounded from the arrival: after the queue was last seen empty, plus R - S.
  EXPECT_GT(*q->nearest_expiry, clock_.Now() + hours(70));
}

TEST_F(DaemonWatchTest, DlqNearingExpiryByItsArrivalBoundIsArchivedOnlyForWhatIsDue) {
  AddSource(hours(24));
  auto d = MakeDaemon();
  d->RunOnce();                                             // seen empty
  InjectOne("early", clock_.Now() - hours(24) + hours(1));  // at most 1 day old when it arrived: 3 days left
  for (int i = 0; i < 70; ++i) {                            // 70 h: the bound (last empty + 3 days) is still 2 h away
    clock_.Advance(hours(1));
    d->RunOnce();
    d->WaitIdle();
  }
  EXPECT_EQ(Receives(), 0);
  for (int i = 0; i < 3 * 60; ++i) Cycle(*d);  // the bound comes within the alarm's hour: archive what is due
  EXPECT_GT(Receives(), 0);
  EXPECT_TRUE(EverAlarmed());
  EXPECT_EQ(sqs_.deleted_count(), 1);
}

TEST_F(DaemonWatchTest, DaemonStartedOnANonEmptyQueueLearnsEachMessageOnceThenOnlyWatches) {
  const SystemTime sent = clock_.Now() - hours(24);
  Inject(3, sent);
  auto d = MakeDaemon();
  d->RunOnce();
  d->WaitIdle();
  auto first = d->views().Queue("orders-dlq");
  ASSERT_TRUE(first);
  EXPECT_NE(first->expiry_unknown.find("not yet observed"), std::string::npos) << first->expiry_unknown;
  EXPECT_NE(d->views().OverviewJson().find("\"expiry_unknown\":\"not yet observed"),
            std::string::npos);  // the overview too
  EXPECT_EQ(first->learning_passes, 1u);
  const int after_learning = Receives();
  EXPECT_GT(after_learning, 0);
  for (int i = 0; i < 20; ++i) Cycle(*d);
  EXPECT_EQ(Receives(), after_learning);  // no pass while the count does not grow
  EXPECT_FALSE(EverAlarmed());
  EXPECT_EQ(sqs_.Depth(url_), 3u);
  EXPECT_EQ(sqs_.deleted_count(), 0);
  EXPECT_TRUE(store_.Keys().empty());
  auto q = d->views().Queue("orders-dlq");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->expiry_unknown, "");
  EXPECT_EQ(q->ledger_messages, 3u);
  EXPECT_EQ(q->runs, 0u);
  ASSERT_TRUE(q->nearest_expiry);
  EXPECT_EQ(*q->nearest_expiry, sent + seconds(kFixtureRetentionSeconds));  // exact, from SentTimestamp
}

TEST_F(DaemonWatchTest, ARestartedDaemonKeepsItsLedgerAndReceivesNothingAgain) {
  const SystemTime sent = clock_.Now() - hours(24);
  Inject(3, sent);
  FakeStateStore state;
  DaemonOptions o;
  o.state_store = &state;
  {
    auto d = NewDaemon(notifier_, o);
    d->RunOnce();
    d->WaitIdle();
    Cycle(*d);  // saves the ledger the learning pass filled
    ASSERT_EQ(d->views().Queue("orders-dlq")->ledger_messages, 3u);
  }
  const int before_restart = Receives();
  ASSERT_GT(before_restart, 0);
  auto d = NewDaemon(notifier_, o);
  for (int i = 0; i < 10; ++i) Cycle(*d);
  EXPECT_EQ(Receives(), before_restart);  // every message is known: no learning pass
  auto q = d->views().Queue("orders-dlq");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->learning_passes, 0u);
  EXPECT_EQ(q->ledger_messages, 3u);
  EXPECT_EQ(q->expiry_unknown, "");
  ASSERT_TRUE(q->nearest_expiry);
  EXPECT_EQ(*q->nearest_expiry, sent + seconds(kFixtureRetentionSeconds));
}

TEST_F(DaemonWatchTest, GrowingDlqNoLongerThanItsSourceIsLearnedOncePerArrivalNotEverySweep) {
  AddSource(seconds(kFixtureRetentionSeconds));  // R = S
  auto d = MakeDaemon();
  d->RunOnce();  // seen empty
  InjectOne("a", clock_.Now());
  InjectOne("b", clock_.Now());
  for (int i = 0; i < 10; ++i) Cycle(*d);
  EXPECT_EQ(d->views().Queue("orders-dlq")->learning_passes, 1u);
  const int after_first = Receives();
  InjectOne("c", clock_.Now() - hours(96) + seconds(1800));  // arrives with 30 min left
  Cycle(*d);                                                 // learns it
  EXPECT_EQ(d->views().Queue("orders-dlq")->learning_passes, 2u);
  EXPECT_GT(Receives(), after_first);
  for (int i = 0; i < 5; ++i) Cycle(*d);  // the exact expiry puts the alarm in ALARM: c is archived
  EXPECT_TRUE(EverAlarmed());
  EXPECT_EQ(sqs_.deleted_count(), 1);
  EXPECT_EQ(sqs_.Depth(url_), 2u);
  const int after_archive = Receives();
  for (int i = 0; i < 10; ++i) Cycle(*d);
  EXPECT_EQ(Receives(), after_archive);
  EXPECT_EQ(d->views().Queue("orders-dlq")->learning_passes, 2u);
}

TEST_F(DaemonWatchTest, ArchivedReceiveCountsSplitOursFromTheConsumers) {
  InjectOne("due", clock_.Now() - hours(96) + seconds(1800));  // 30 min left
  ReceiveOptions consumer;
  consumer.max_messages = 10;
  consumer.visibility_timeout = 0;
  for (int i = 0; i < 2; ++i) ASSERT_EQ(sqs_.ReceiveMessages(url_, consumer)->size(), 1u);  // the consumer: 2
  auto d = MakeDaemon();
  d->RunOnce();
  d->WaitIdle();                          // the learning pass: ours, 1
  for (int i = 0; i < 3; ++i) Cycle(*d);  // ALARM: the archive run, ours, 2
  ASSERT_EQ(sqs_.deleted_count(), 1);
  std::vector<ArchiveRecord> records;
  for (const auto& [key, object] : store_.Objects()) {
    auto text = GzipDecompress(object.data, 1 << 20);
    ASSERT_TRUE(text.ok());
    for (std::string_view line : Split(*text, '\n')) {
      if (line.empty()) continue;
      auto rec = ParseRecordJson(line);
      ASSERT_TRUE(rec.ok()) << rec.status().ToString();
      records.push_back(*rec);
    }
  }
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].receive_count, 4);  // as SQS reported it
  EXPECT_EQ(records[0].own_receive_count, 2);
  EXPECT_EQ(ConsumerReceiveCount(records[0]), 2);
}

TEST_F(DaemonWatchTest, AutoThresholdFollowsTheQueuesDepthAndTheAlarmKeepsItsState) {
  config_.discovery_interval = seconds(180);
  config_.groups[0].alarms.expiry.threshold_auto = true;
  Inject(3, clock_.Now());
  auto d = MakeDaemon();
  d->RunOnce();  // discovered before any collection: the assumed backlog (10,000 messages)
  d->WaitIdle();
  const double assumed = d->views().Queue("orders-dlq")->expiry_threshold_s;
  for (int i = 0; i < 6; ++i) Cycle(*d);  // discovered again at 180 s and 360 s: 3 messages queued
  auto q = d->views().Queue("orders-dlq");
  ASSERT_TRUE(q);
  EXPECT_NEAR(q->expiry_threshold_s - assumed, 2000.0 - 0.6, 1.0);  // drain 3 messages at 5 msg/s, not 10,000
  ASSERT_FALSE(q->alarms.empty());
  EXPECT_EQ(q->alarms[0].second, AlarmState::kOk);
  // The alarm went INSUFFICIENT_DATA -> OK once; the new threshold did not start it over.
  int expiry_transitions = 0;
  for (const auto& n : notifier_.notifications()) expiry_transitions += n.alarm_name == q->alarms[0].first.name;
  EXPECT_EQ(expiry_transitions, 1);
}

TEST_F(DaemonWatchTest, AlarmConfiguredIsLoggedWhenTheThresholdMovesNotOnEveryDrift) {
  config_.discovery_interval = seconds(180);
  config_.groups[0].alarms.expiry.threshold_auto = true;
  Inject(3, clock_.Now());
  ScopedCapturingLogger log;
  auto configured = [&log] {
    int n = 0;
    for (const auto& e : log->entries()) n += e.event == "alarm_configured";
    return n;
  };
  auto d = MakeDaemon();
  d->RunOnce();  // the assumed backlog (10,000 messages)
  d->WaitIdle();
  EXPECT_EQ(configured(), 1);
  for (int i = 0; i < 3; ++i) Cycle(*d);  // discovered again: 3 messages, the threshold moves by ~2,000 s
  EXPECT_EQ(configured(), 2);
  for (int i = 0; i < 20; ++i) InjectOne("late" + std::to_string(i), clock_.Now());
  for (int i = 0; i < 6; ++i) Cycle(*d);  // 23 messages: the threshold drifts by 4 s
  EXPECT_EQ(configured(), 2);
}

TEST_F(DaemonWatchTest, ARestartKeepsTheAutoThresholdAlarmsStateThoughItsThresholdMoved) {
  config_.discovery_interval = seconds(3600);
  config_.groups[0].alarms.expiry.threshold_auto = true;
  Inject(3, clock_.Now());
  FakeStateStore state;
  DaemonOptions o;
  o.state_store = &state;
  auto expiry_notifications = [&] {
    int n = 0;
    for (const auto& note : notifier_.notifications()) n += note.alarm_name == "orders-dlq-expiry";
    return n;
  };
  double before = 0;
  {
    auto d = NewDaemon(notifier_, o);
    d->RunOnce();  // its threshold: the assumed backlog's, kept until the next discovery an hour later
    d->WaitIdle();
    for (int i = 0; i < 2; ++i) Cycle(*d);
    before = d->views().Queue("orders-dlq")->expiry_threshold_s;
    ASSERT_EQ(d->views().Queue("orders-dlq")->alarms[0].second, AlarmState::kOk);
    ASSERT_EQ(expiry_notifications(), 1);
  }
  auto d = NewDaemon(notifier_, o);
  for (int i = 0; i < 3; ++i) Cycle(*d);
  auto q = d->views().Queue("orders-dlq");
  ASSERT_TRUE(q);
  EXPECT_GT(q->expiry_threshold_s, before + 1900);  // the kept depth (3), not the assumed backlog
  EXPECT_EQ(q->alarms[0].second, AlarmState::kOk);
  EXPECT_EQ(expiry_notifications(), 1);  // restored, not started over
}

TEST_F(DaemonWatchTest, AFailedLearningPassFallsBackToAssumingTheWorst) {
  Inject(2, clock_.Now() - hours(24));
  sqs_.FailNext(Op::kReceiveMessages, PermissionDenied("AccessDenied"), 1000);
  auto d = MakeDaemon();
  d->RunOnce();
  d->WaitIdle();
  Cycle(*d);
  Cycle(*d);
  auto q = d->views().Queue("orders-dlq");
  ASSERT_TRUE(q);
  EXPECT_NE(q->expiry_unknown, "");
  EXPECT_TRUE(EverAlarmed());  // may expire now: the expiry alarm says so
}

// Issue 37: a FIFO DLQ (4-day retention, no source) watched instead of
// orders-dlq, holding `n` messages of one group sent an hour ago; the expiry
// alarm only notifies, so any archive run is the depth alarm's.
class FifoDaemonWatchTest : public DaemonWatchTest {
 protected:
  void WatchFifoWithOneGroup(int n) {
    auto url =
        sqs_.CreateQueue("orders-dlq.fifo",
                         {{"FifoQueue", "true"}, {"MessageRetentionPeriod", std::to_string(kFixtureRetentionSeconds)}});
    ASSERT_TRUE(url.ok()) << url.status().ToString();
    fifo_url_ = *url;
    config_.groups[0].queues = {"orders-dlq.fifo"};
    config_.groups[0].alarms.expiry.action = AlarmSettings::Action::kNotify;
    for (int i = 0; i < n; ++i) {
      SendEntry e;
      e.id = std::to_string(i);
      e.body = "fifo " + std::to_string(i);
      e.message_group_id = "g1";
      e.message_deduplication_id = "d" + std::to_string(i);
      ASSERT_TRUE(sqs_.InjectMessage(fifo_url_, e, clock_.Now() - hours(1)).ok());
    }
  }
  std::string fifo_url_;
};

TEST_F(FifoDaemonWatchTest, AFifoDlqIsNeverHeldToLearnItsExpiry) {
  WatchFifoWithOneGroup(12);
  auto d = MakeDaemon();
  d->RunOnce();
  d->WaitIdle();
  for (int i = 0; i < 5; ++i) Cycle(*d);
  EXPECT_EQ(Receives(), 0);
  EXPECT_EQ(sqs_.Depth(fifo_url_), 12u);
  auto q = d->views().Queue("orders-dlq.fifo");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->learning_passes, 0u);
  // Nothing bounds when the messages moved in: one may expire now, and the alarm says so.
  EXPECT_NE(q->expiry_unknown.find("FIFO"), std::string::npos) << q->expiry_unknown;
  EXPECT_TRUE(EverAlarmed());
}

TEST_F(FifoDaemonWatchTest, AFifoDlqWhoseDepthAlarmArchivesIsArchivedInTheFirstSweep) {
  WatchFifoWithOneGroup(12);
  GroupConfig& g = config_.groups[0];
  g.alarms.depth.enabled = true;
  g.alarms.depth.action = AlarmSettings::Action::kArchive;
  g.alarms.depth.threshold = 1;
  g.alarms.depth.period = seconds(60);
  g.alarms.depth.evaluation_periods = 1;
  g.alarms.depth.datapoints_to_alarm = 1;
  auto d = MakeDaemon();
  d->RunOnce();
  d->WaitIdle();
  EXPECT_EQ(d->views().Queue("orders-dlq.fifo")->learning_passes, 0u);  // nothing queued ahead of the alarm's run
  Cycle(*d);
  Cycle(*d);  // the depth alarm's first period completes: ALARM, and its run
  auto q = d->views().Queue("orders-dlq.fifo");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->learning_passes, 0u);
  EXPECT_EQ(q->runs, 1u);
  EXPECT_EQ(q->archived, 12u);
  EXPECT_EQ(sqs_.Depth(fifo_url_), 0u);
}

}  // namespace
}  // namespace dlq
