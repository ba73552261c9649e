// Three `dlq-archive run` replicas (--shard 0/3, 1/3, 2/3) on one stand-in
// (fauxqs) with 30 DLQs: each queue is archived and notified by exactly one
// replica, the one rendezvous hashing of its ARN names; each replica archives
// into its own file:// directory and posts to its own webhook path on one
// loopback server, so the test sees who did what. And SIGHUP: an invalid
// config is logged and the old one stays; a valid one takes over the queues.
#include "monitor/shard.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "daemon_process.h"
#include "harness.h"
#include "unit/loopback_http_server.h"

namespace dlq::it {
namespace {

constexpr int kQueues = 30;
constexpr int kReplicas = 3;

// ALARM notifications per (webhook path, queue).
class WebhookRecorder {
 public:
  WebhookRecorder()
      : server_([this](const LoopbackHttpServer::Request& r) {
          std::lock_guard lock(mu_);
          for (const std::string& q : queues_) {
            if (Has(r.body, "\"Queue\":\"" + q + "\"") && Has(r.body, "\"NewStateValue\":\"ALARM\"")) {
              ++alarms_[r.target][q];
            }
          }
          return LoopbackHttpServer::Reply{};
        }) {}
  void Watch(const std::vector<std::string>& queues) {
    std::lock_guard lock(mu_);
    queues_ = queues;
  }
  std::map<std::string, std::map<std::string, int>> alarms() const {
    std::lock_guard lock(mu_);
    return alarms_;
  }
  std::string url(const std::string& path) const { return server_.base_url() + path; }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> queues_;
  std::map<std::string, std::map<std::string, int>> alarms_;
  LoopbackHttpServer server_;
};

std::string ReplicaConfig(const StandIn& s, const std::string& dir, int port, const std::string& prefix,
                          const std::string& webhook, const std::string& shard_line) {
  return "listen: 127.0.0.1:" + std::to_string(port) +
         "\n"
         "collection_interval: 1s\n"
         "sweep_interval: 2s\n" +
         shard_line +
         "notify:\n"
         "  webhooks:\n"
         "    - url: " +
         webhook +
         "\n"
         "defaults:\n"
         "  destination: file://" +
         dir +
         "\n"
         "  visibility_timeout: 30s\n"
         "  batch: { max_age: 1s }\n"
         "groups:\n"
         "  - name: shard-it\n"
         "    endpoint_url: " +
         s.endpoint() +
         "\n"
         "    prefixes: [" +
         prefix +
         "]\n"
         "    alarms:\n"
         "      expiry: { threshold: 10s, period: 1s }\n"
         "      depth: { enabled: false }\n";
}

// Queue names whose archive objects are under `dir`.
std::set<std::string> ArchivedQueues(const std::string& dir, const std::vector<std::string>& queues) {
  std::string files = RunShell("find " + dir + " -type f -name '*.json.gz' 2>/dev/null", false).out;
  std::set<std::string> out;
  for (const std::string& q : queues) {
    if (Has(files, "/" + q + "/")) out.insert(q);
  }
  return out;
}

std::vector<std::string> CreateQueues(AwsServices& svc, const std::string& prefix, int n,
                                      std::map<std::string, std::string>* arns) {
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) {
    std::string name = prefix + (i < 10 ? "0" : "") + std::to_string(i);
    auto url = svc.sqs().CreateQueue(name, {{"MessageRetentionPeriod", "3600"}});
    EXPECT_TRUE(url.ok()) << url.status().ToString();
    if (!url.ok()) continue;
    SendEntry e;
    e.id = "0";
    e.body = "poison for " + name;
    EXPECT_TRUE(svc.sqs().SendMessage(*url, e).ok());
    auto attrs = svc.sqs().GetQueueAttributes(*url, {"QueueArn"});
    EXPECT_TRUE(attrs.ok());
    if (attrs.ok()) (*arns)[name] = attrs->at("QueueArn");
    names.push_back(name);
  }
  return names;
}

TEST(ShardIntegrationTest, ThreeReplicasArchiveAndNotifyEachQueueExactlyOnce) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  const std::string base = UniqueName("shard");
  const std::string prefix = base + "-q";
  std::map<std::string, std::string> arns;
  const std::vector<std::string> queues = CreateQueues(*svc, prefix, kQueues, &arns);
  ASSERT_EQ(queues.size(), static_cast<size_t>(kQueues));
  WebhookRecorder hooks;
  hooks.Watch(queues);

  const std::string dir = "/tmp/" + base;
  std::vector<std::unique_ptr<BackgroundDaemon>> replicas;
  std::vector<int> ports;
  for (int i = 0; i < kReplicas; ++i) {
    std::string rdir = dir + "/replica-" + std::to_string(i);
    ASSERT_EQ(RunShell("mkdir -p " + rdir + "/archive").exit_code, 0);
    int port = FreePort();
    ASSERT_GT(port, 0);
    ports.push_back(port);
    WriteFile(rdir + "/dlq-archive.yaml",
              ReplicaConfig(fauxqs, rdir + "/archive", port, prefix, hooks.url("/replica-" + std::to_string(i)), ""));
    replicas.push_back(std::make_unique<BackgroundDaemon>(fauxqs, rdir, rdir + "/dlq-archive.yaml",
                                                          "--shard " + std::to_string(i) + "/3"));
  }

  // Until every queue is archived somewhere and alarmed somewhere.
  std::vector<std::set<std::string>> archived(kReplicas);
  std::map<std::string, std::map<std::string, int>> alarms;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    size_t archived_total = 0;
    for (int i = 0; i < kReplicas; ++i) {
      archived[static_cast<size_t>(i)] = ArchivedQueues(dir + "/replica-" + std::to_string(i) + "/archive", queues);
      archived_total += archived[static_cast<size_t>(i)].size();
    }
    alarms = hooks.alarms();
    size_t alarmed = 0;
    for (const auto& [path, per_queue] : alarms) alarmed += per_queue.size();
    if (archived_total >= static_cast<size_t>(kQueues) && alarmed >= static_cast<size_t>(kQueues)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));  // more sweeps: nobody else may pick a queue up
  for (int i = 0; i < kReplicas; ++i) {
    archived[static_cast<size_t>(i)] = ArchivedQueues(dir + "/replica-" + std::to_string(i) + "/archive", queues);
  }
  alarms = hooks.alarms();

  for (const std::string& q : queues) {
    const int owner = ShardOwner(arns[q], kReplicas);
    int archivers = 0, notifiers = 0;
    for (int i = 0; i < kReplicas; ++i) {
      const bool archived_here = archived[static_cast<size_t>(i)].count(q) > 0;
      const bool notified_here = alarms["/replica-" + std::to_string(i)].count(q) > 0;
      archivers += archived_here ? 1 : 0;
      notifiers += notified_here ? 1 : 0;
      if (archived_here) {
        EXPECT_EQ(i, owner) << q << " archived by replica " << i;
      }
      if (notified_here) {
        EXPECT_EQ(i, owner) << q << " notified by replica " << i;
      }
    }
    EXPECT_EQ(archivers, 1) << q;
    EXPECT_EQ(notifiers, 1) << q;
  }
  for (int i = 0; i < kReplicas; ++i) {
    EXPECT_FALSE(archived[static_cast<size_t>(i)].empty()) << "replica " << i << " archived nothing";
    const std::string api = "http://127.0.0.1:" + std::to_string(ports[static_cast<size_t>(i)]);
    std::string body = RunShell("curl -s --max-time 2 " + api + "/api/queues", false).out;
    EXPECT_TRUE(Has(body, "\"shard\":{\"index\":" + std::to_string(i) + ",\"count\":3}")) << body;
    std::string metrics = RunShell("curl -s --max-time 2 " + api + "/metrics", false).out;
    EXPECT_TRUE(Has(metrics, "dlq_archive_shard_info{index=\"" + std::to_string(i) + "\",count=\"3\"} 1"));
    EXPECT_TRUE(
        Has(metrics, "dlq_archive_queues_watched " + std::to_string(archived[static_cast<size_t>(i)].size()) + "\n"))
        << metrics;
  }
  for (int i = 0; i < kReplicas; ++i) {
    auto& r = *replicas[static_cast<size_t>(i)];
    EXPECT_EQ(r.Stop(), "0\n") << r.Log();
  }
}

TEST(ShardIntegrationTest, SighupReloadsTheConfigAndKeepsItWhenTheNewOneIsInvalid) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  const std::string base = UniqueName("hup");
  const std::string prefix = base + "-q";
  std::map<std::string, std::string> arns;
  const std::vector<std::string> queues = CreateQueues(*svc, prefix, 6, &arns);
  ASSERT_EQ(queues.size(), 6u);
  const std::string dir = "/tmp/" + base;
  ASSERT_EQ(RunShell("mkdir -p " + dir + "/archive").exit_code, 0);
  const int port = FreePort();
  ASSERT_GT(port, 0);
  WebhookRecorder hooks;
  const std::string config = dir + "/dlq-archive.yaml";
  auto write = [&](const std::string& shard_line) {
    WriteFile(config, ReplicaConfig(fauxqs, dir + "/archive", port, prefix, hooks.url("/hook"), shard_line));
  };
  write("shard: { index: 0, count: 3 }\n");
  BackgroundDaemon daemon(fauxqs, dir, config);
  const std::string api = "http://127.0.0.1:" + std::to_string(port);
  std::string body = PollUntil(
      api + "/api/queues", [](const std::string& b) { return Has(b, "\"shard\":{\"index\":0,\"count\":3}"); }, 20);
  ASSERT_TRUE(Has(body, "\"shard\":{\"index\":0,\"count\":3}")) << body << daemon.Log();

  WriteFile(config, "listen: [this is not yaml\n");
  daemon.Signal("HUP");
  for (int i = 0; i < 50 && !Has(daemon.Log(), "config_reload_failed"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::string log = daemon.Log();
  EXPECT_TRUE(Has(log, "\"event\":\"config_reload_failed\"")) << log;
  EXPECT_TRUE(Has(log, "previous configuration")) << log;
  body = RunShell("curl -s --max-time 2 " + api + "/api/queues", false).out;
  EXPECT_TRUE(Has(body, "\"shard\":{\"index\":0,\"count\":3}")) << body;
  EXPECT_EQ(RunShell("curl -s --max-time 2 " + api + "/readyz", false).out.rfind("ready", 0), 0u);

  write("");  // one replica: every queue
  daemon.Signal("HUP");
  body = PollUntil(
      api + "/api/queues",
      [&](const std::string& b) {
        if (!Has(b, "\"shard\":{\"index\":0,\"count\":1}")) return false;
        for (const std::string& q : queues) {
          if (!Has(b, "\"queue\":\"" + q + "\"")) return false;
        }
        return true;
      },
      20);
  for (const std::string& q : queues) EXPECT_TRUE(Has(body, "\"queue\":\"" + q + "\"")) << q << "\n" << body;
  EXPECT_TRUE(Has(daemon.Log(), "\"event\":\"config_reloaded\""));
  EXPECT_EQ(daemon.Stop(), "0\n") << daemon.Log();
}

}  // namespace
}  // namespace dlq::it

namespace dlq::it {
namespace {

TEST(ShardIntegrationTest, BadShardFlagIsAUsageErrorNamingTheRange) {
  const std::string dir = "/tmp/" + UniqueName("shard-flag");
  ASSERT_EQ(RunShell("mkdir -p " + dir).exit_code, 0);
  WriteFile(dir + "/c.yaml", "groups:\n  - name: g\n    queues: [q]\n    destination: file://" + dir + "\n");
  auto r = RunShell(std::string(DLQ_BINARY) + " run --config " + dir + "/c.yaml --shard 3/3");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(Has(r.out, "--shard: shard 3/3: INDEX must be in 0..2")) << r.out;
  WriteFile(dir + "/bad.yaml", "shard: { index: 3, count: 3 }\n" + ReadFile(dir + "/c.yaml"));
  r = RunShell(std::string(DLQ_BINARY) + " run --config " + dir + "/bad.yaml");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(Has(r.out, "shard.index: 3 is not below shard.count (3)")) << r.out;
}

}  // namespace
}  // namespace dlq::it
