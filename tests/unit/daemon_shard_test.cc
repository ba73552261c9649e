// Daemon replicas with `shard: {index, count}`: each queue is watched,
// alarmed, archived and notified by exactly one replica; /metrics and
// /api/queues show the shard; a reload that changes the shard count takes the
// queues over. Also Run()'s reload path (what SIGHUP triggers in `run`): a
// config that fails to load keeps the previous one and logs the error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "common/log.h"
#include "common/strings.h"
#include "monitor/daemon.h"
#include "monitor/daemon_metrics.h"
#include "monitor/shard.h"
#include "server/metrics.h"
#include "testing/fake_clock.h"
#include "testing/fake_notifier.h"
#include "testing/fake_object_store.h"
#include "testing/fake_queue.h"
#include "testing/scoped_capturing_logger.h"
#include "unit/daemon_fixture.h"

namespace dlq {
namespace {

using std::chrono::hours;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int kQueues = 24;

// One daemon replica with its own store, notifier and metrics over a shared SQS.
struct Replica {
  Replica(const MonitorConfig& config, FakeQueueClient& sqs, Clock& clock) : metrics(registry, "test") {
    DaemonOptions o;
    o.serve_http = false;
    daemon = std::make_unique<Daemon>(config, FakeGroupClients(sqs, store), notifier, clock, registry, metrics, o);
  }
  std::set<std::string> Watched() const {
    std::set<std::string> out;
    for (const QueueStatus& q : daemon->views().Queues()) out.insert(q.queue.name);
    return out;
  }
  std::set<std::string> Archived() const {  // queue names in the keys written
    std::set<std::string> out;
    for (const std::string& key : store.Keys()) {
      auto parts = Split(key, '/');  // dlq-archive/QUEUE/DAY/OBJECT
      if (parts.size() > 1) out.insert(std::string(parts[1]));
    }
    return out;
  }

  FakeObjectStore store;
  FakeNotifier notifier;
  metrics::Registry registry;
  DaemonMetrics metrics;
  std::unique_ptr<Daemon> daemon;
};

class DaemonShardTest : public ::testing::Test {
 protected:
  DaemonShardTest() : sqs_(clock_) {
    GroupConfig g = AlarmingGroup("all", {});
    g.prefixes = {"team-"};
    config_.groups.push_back(g);
    for (int i = 0; i < kQueues; ++i) {
      std::string name = "team-" + std::to_string(i) + "-dlq";
      auto url = sqs_.CreateQueue(name, {{"MessageRetentionPeriod", "345600"}});
      EXPECT_TRUE(url.ok());
      for (int m = 0; m < 2; ++m) {
        SendEntry e;
        e.id = std::to_string(m);
        e.body = name + " poison " + std::to_string(m);
        EXPECT_TRUE(sqs_.InjectMessage(*url, e, clock_.Now() - hours(95)).ok());
      }
      names_.insert(name);
    }
  }

  std::vector<std::unique_ptr<Replica>> Replicas(int count) {
    std::vector<std::unique_ptr<Replica>> out;
    for (int i = 0; i < count; ++i) {
      MonitorConfig c = config_;
      c.shard = ShardSpec{i, count};
      out.push_back(std::make_unique<Replica>(c, sqs_, clock_));
    }
    return out;
  }

  void Cycle(std::vector<std::unique_ptr<Replica>>& replicas) {
    clock_.Advance(seconds(60));
    for (auto& r : replicas) r->daemon->RunOnce();
    for (auto& r : replicas) r->daemon->WaitIdle();
  }

  FakeClock clock_;
  FakeQueueClient sqs_;
  MonitorConfig config_;
  std::set<std::string> names_;
};

TEST_F(DaemonShardTest, EachQueueIsWatchedArchivedAndNotifiedByExactlyOneReplica) {
  auto replicas = Replicas(3);
  for (int i = 0; i < 3; ++i) Cycle(replicas);

  std::map<std::string, int> watched, archived, alarmed;
  for (auto& r : replicas) {
    std::set<std::string> w = r->Watched();
    EXPECT_GT(w.size(), 0u) << "a replica owns nothing";
    for (const std::string& q : w) ++watched[q];
    for (const std::string& q : r->Archived()) {
      ++archived[q];
      EXPECT_TRUE(w.count(q)) << q << " archived by a replica that does not own it";
    }
    for (const AlarmNotification& n : r->notifier.notifications()) {
      if (n.new_state == "ALARM") ++alarmed[n.queue];
      EXPECT_TRUE(w.count(n.queue)) << n.queue << " notified by a replica that does not own it";
    }
  }
  for (const std::string& q : names_) {
    EXPECT_EQ(watched[q], 1) << q;
    EXPECT_EQ(archived[q], 1) << q;
    EXPECT_EQ(alarmed[q], 1) << q;
  }
  EXPECT_EQ(watched.size(), names_.size());
  // Every message archived once and deleted: nothing left, nothing twice.
  EXPECT_EQ(sqs_.deleted_count(), 2 * kQueues);
}

// The control: replicas without shards each alarm and notify for every queue
// (what the issue reports), which the test above shows sharding prevents.
TEST_F(DaemonShardTest, UnshardedReplicasEachNotifyForEveryQueue) {
  std::vector<std::unique_ptr<Replica>> replicas;
  for (int i = 0; i < 3; ++i) replicas.push_back(std::make_unique<Replica>(config_, sqs_, clock_));
  for (int i = 0; i < 3; ++i) Cycle(replicas);
  std::map<std::string, int> alarmed;
  for (auto& r : replicas) {
    EXPECT_EQ(r->Watched(), names_);
    for (const AlarmNotification& n : r->notifier.notifications()) {
      if (n.new_state == "ALARM") ++alarmed[n.queue];
    }
  }
  for (const std::string& q : names_) EXPECT_EQ(alarmed[q], 3) << q;
}

TEST_F(DaemonShardTest, OwnershipFollowsTheRendezvousHashOfTheArn) {
  auto replicas = Replicas(3);
  Cycle(replicas);
  for (int i = 0; i < 3; ++i) {
    for (const QueueStatus& q : replicas[static_cast<size_t>(i)]->daemon->views().Queues()) {
      EXPECT_EQ(ShardOwner("arn:aws:sqs:us-east-1:" + q.queue.account_id + ":" + q.queue.name, 3), i) << q.queue.name;
    }
  }
}

TEST_F(DaemonShardTest, MetricsAndApiShowTheShard) {
  auto replicas = Replicas(3);
  Cycle(replicas);
  Replica& r1 = *replicas[1];
  const size_t owned = r1.Watched().size();
  const std::string text = r1.registry.Render();
  EXPECT_THAT(text, HasSubstr("dlq_archive_shard_info{index=\"1\",count=\"3\"} 1"));
  EXPECT_THAT(text, HasSubstr("dlq_archive_queues_watched " + std::to_string(owned) + "\n"));
  EXPECT_THAT(text, HasSubstr("dlq_archive_queues_other_shards " + std::to_string(kQueues - owned) + "\n"));
  const std::string json = r1.daemon->views().QueuesJson();
  EXPECT_THAT(json, HasSubstr("\"shard\":{\"index\":1,\"count\":3}"));
  EXPECT_THAT(
      json, HasSubstr("\"queues\":" + std::to_string(owned) + ",\"other_shards\":" + std::to_string(kQueues - owned)));
  // A group whose queues all belong to other shards is not "matching no queue".
  EXPECT_THAT(json, Not(HasSubstr("match no queue")));
}

TEST_F(DaemonShardTest, ReloadToOneShardTakesOverEveryQueue) {
  auto replicas = Replicas(3);
  Cycle(replicas);
  Replica& r0 = *replicas[0];
  ASSERT_LT(r0.Watched().size(), names_.size());
  MonitorConfig all = config_;
  all.shard = ShardSpec{0, 1};
  r0.daemon->Reload(all);
  clock_.Advance(seconds(60));
  r0.daemon->RunOnce();
  r0.daemon->WaitIdle();
  EXPECT_EQ(r0.Watched(), names_);
  const std::string text = r0.registry.Render();
  EXPECT_THAT(text, HasSubstr("dlq_archive_shard_info{index=\"0\",count=\"1\"} 1"));
  EXPECT_THAT(text, Not(HasSubstr("dlq_archive_shard_info{index=\"0\",count=\"3\"}")));
  EXPECT_THAT(text, HasSubstr("dlq_archive_queues_other_shards 0\n"));
}

// The daemon's Run loop waits on the fake clock between sweeps: each look
// moves it 100 ms (one of the loop's polls) and gives the loop's thread a
// real moment to run.
bool WaitFor(FakeClock& clock, const std::function<bool()>& done) {
  for (int i = 0; i < 200; ++i) {
    if (done()) return true;
    clock.Advance(std::chrono::milliseconds(100));
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return done();
}

TEST_F(DaemonShardTest, ReloadThatFailsToLoadKeepsThePreviousConfigAndLogsTheError) {
  ScopedCapturingLogger log;
  MonitorConfig two = config_;
  two.shard = ShardSpec{0, 2};
  Replica r(two, sqs_, clock_);
  std::atomic<bool> stop{false}, reload{false};
  std::atomic<int> attempt{0};
  auto load = [&]() -> Result<MonitorConfig> {
    if (attempt++ == 0) return InvalidArgument("dlq-archive.yaml:4:10: shard.index: 2 is not below shard.count (2)");
    MonitorConfig one = config_;  // the fixed file: one shard, every queue
    return one;
  };
  std::atomic<bool> returned{false};
  std::thread runner([&] {
    (void)r.daemon->Run(stop, reload, load);
    returned = true;
  });
  ASSERT_TRUE(WaitFor(clock_, [&] { return !r.Watched().empty(); }));
  const std::set<std::string> before = r.Watched();
  ASSERT_LT(before.size(), names_.size());

  reload = true;
  EXPECT_TRUE(WaitFor(clock_, [&] { return log->Contains("config_reload_failed"); }));
  EXPECT_TRUE(log->Contains("shard.index: 2 is not below shard.count (2)"));
  EXPECT_TRUE(log->Contains("previous configuration"));
  EXPECT_EQ(r.Watched(), before);
  EXPECT_THAT(r.registry.Render(), HasSubstr("dlq_archive_shard_info{index=\"0\",count=\"2\"} 1"));

  reload = true;
  EXPECT_TRUE(WaitFor(clock_, [&] { return log->Contains("config_reloaded"); }));
  EXPECT_TRUE(WaitFor(clock_, [&] { return r.Watched() == names_; }));
  stop = true;
  EXPECT_TRUE(WaitFor(clock_, [&] { return returned.load(); }));  // the loop sees the flag at its next look
  runner.join();
}

}  // namespace
}  // namespace dlq
