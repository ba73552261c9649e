// What the daemon's unit tests share: one "orders" group watching orders-dlq
// (4-day retention) with an expiry alarm at "may expire within an hour" and no
// depth alarm; a client factory over one fake SQS and one fake store; and the
// inject / one-collection-cycle helpers. Tests derive from DaemonFixture and
// add what is theirs (webhooks, a dashboard, replicas).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "monitor/daemon.h"
#include "monitor/daemon_metrics.h"
#include "server/metrics.h"
#include "testing/fake_clock.h"
#include "testing/fake_notifier.h"
#include "testing/fake_object_store.h"
#include "testing/fake_queue.h"

namespace dlq {

constexpr int64_t kFixtureRetentionSeconds = 345600;

// A group archiving to s3://archive-bucket/dlq-archive whose expiry alarm fires
// when a message may expire within an hour (evaluated every 60 s).
inline GroupConfig AlarmingGroup(std::string name, std::vector<std::string> queues) {
  GroupConfig g;
  g.name = std::move(name);
  g.destination = "s3://archive-bucket/dlq-archive";
  g.queues = std::move(queues);
  g.alarms.expiry.threshold_auto = false;
  g.alarms.expiry.threshold = kFixtureRetentionSeconds - 3600;
  g.alarms.expiry.period = std::chrono::seconds(60);
  g.alarms.depth.enabled = false;
  return g;
}

// Every group gets the same fake SQS and store.
inline GroupClientsFactory FakeGroupClients(QueueClient& sqs, ObjectStore& store) {
  return [&sqs, &store](const GroupConfig&) -> Result<GroupClients> {
    GroupClients c;
    c.sqs = &sqs;
    c.store = &store;
    c.default_region = "us-east-1";
    return c;
  };
}

// One collection cycle: the clock moves a minute, then the archive runs it started finish.
inline void CollectOnce(FakeClock& clock, Daemon& d) {
  clock.Advance(std::chrono::seconds(60));
  d.RunOnce();
  d.WaitIdle();
}

class DaemonFixture : public ::testing::Test {
 protected:
  DaemonFixture() : sqs_(clock_), store_("fake://archive", &clock_), metrics_(registry_, "test") {
    auto url = sqs_.CreateQueue("orders-dlq", {{"MessageRetentionPeriod", std::to_string(kFixtureRetentionSeconds)}});
    EXPECT_TRUE(url.ok());
    url_ = url.ok() ? *url : std::string();
    config_.collection_interval = std::chrono::seconds(60);
    config_.sweep_interval = std::chrono::seconds(300);
    config_.groups.push_back(AlarmingGroup("orders", {"orders-dlq"}));
  }

  std::unique_ptr<Daemon> NewDaemon(Notifier& notifier, DaemonOptions options) {
    options.serve_http = false;
    return std::make_unique<Daemon>(config_, FakeGroupClients(sqs_, store_), notifier, clock_, registry_, metrics_,
                                    std::move(options));
  }

  // N messages "poison 0" .. "poison N-1" into orders-dlq, sent at SENT_AT.
  void Inject(int n, SystemTime sent_at) {
    for (int i = 0; i < n; ++i) {
      SendEntry e;
      e.id = std::to_string(i);
      e.body = "poison " + std::to_string(i);
      ASSERT_TRUE(sqs_.InjectMessage(url_, e, sent_at).ok());
    }
  }

  void Cycle(Daemon& d) { CollectOnce(clock_, d); }

  // Feeds orders-dlq from "orders", a 1-day source redriving after 3
  // receives (so its messages arrive with at least 3 days left), and gives the
  // group the built-in alarms with the expiry alarm at "within an hour".
  void FeedFromOneDaySource() {
    auto arn = sqs_.GetQueueAttributes(url_, {"QueueArn"});
    ASSERT_TRUE(arn.ok());
    auto src = sqs_.CreateQueue("orders", {{"MessageRetentionPeriod", "86400"},
                                           {"RedrivePolicy", "{\"deadLetterTargetArn\":\"" + arn->at("QueueArn") +
                                                                 "\",\"maxReceiveCount\":\"3\"}"}});
    ASSERT_TRUE(src.ok());
    GroupConfig& g = config_.groups[0];
    g.alarms = AlarmsConfig{};  // the built-in defaults
    g.alarms.expiry.threshold_auto = false;
    g.alarms.expiry.threshold = kFixtureRetentionSeconds - 3600;
  }

  FakeClock clock_;
  FakeQueueClient sqs_;
  FakeObjectStore store_;
  metrics::Registry registry_;
  DaemonMetrics metrics_;
  MonitorConfig config_;
  std::string url_;
};

}  // namespace dlq
