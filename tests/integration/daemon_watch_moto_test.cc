// Issue 31 §2 against moto (SQS-like random receives): a daemon watching an
// idle and a growing DLQ for several sweeps receives a DLQ that keeps its
// messages longer than its source never, and one that keeps them no longer
// only in a learning pass per growth. Counted by SQS's own
// ApproximateReceiveCount, read by the test after the daemon stopped.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>

#include "daemon_process.h"
#include "harness.h"

namespace dlq::it {
namespace {

// A DLQ keeping messages DLQ_RETENTION, fed by a source keeping them SOURCE_RETENTION; the DLQ's URL.
std::string DlqWithSource(AwsServices& svc, const std::string& name, int dlq_retention, int source_retention) {
  auto dlq = svc.sqs().CreateQueue(name, {{"MessageRetentionPeriod", std::to_string(dlq_retention)}});
  EXPECT_TRUE(dlq.ok()) << dlq.status().ToString();
  if (!dlq.ok()) return "";
  auto arn = svc.sqs().GetQueueAttributes(*dlq, {"QueueArn"});
  EXPECT_TRUE(arn.ok());
  auto src = svc.sqs().CreateQueue(
      name + "-src",
      {{"MessageRetentionPeriod", std::to_string(source_retention)},
       {"RedrivePolicy", "{\"deadLetterTargetArn\":\"" + arn->at("QueueArn") + "\",\"maxReceiveCount\":\"3\"}"}});
  EXPECT_TRUE(src.ok()) << src.status().ToString();
  return *dlq;
}

void SendTo(AwsServices& svc, const std::string& url, int n, const std::string& tag) {
  for (int i = 0; i < n; ++i) {
    SendEntry e;
    e.id = std::to_string(i);
    e.body = tag + " " + std::to_string(i);
    EXPECT_TRUE(svc.sqs().SendMessage(url, e).ok());
  }
}

// ApproximateReceiveCount of every message, as the test's own receive (its first or later) sees it.
std::map<std::string, int> ReceiveCounts(AwsServices& svc, const std::string& url, size_t expect) {
  std::map<std::string, int> out;
  ReceiveOptions ro;
  ro.max_messages = 10;
  ro.visibility_timeout = 60;
  for (int attempt = 0; attempt < 30 && out.size() < expect; ++attempt) {
    auto got = svc.sqs().ReceiveMessages(url, ro);
    if (!got.ok()) continue;
    for (const Message& m : *got) out[m.body] = std::stoi(m.attributes.at("ApproximateReceiveCount"));
  }
  return out;
}

int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(DaemonWatchMotoTest, LooksOnlyWhenLookingIsNeeded) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  const std::string base = UniqueName("watch");
  const std::string bucket = base + "-archive";
  ASSERT_TRUE(svc->s3_for(bucket).CreateBucket(bucket).ok());
  const std::string longer = base + "-long-dlq";  // R = 14 d > S = 1 d + 1 h
  const std::string same = base + "-same-dlq";    // R = S = 4 d
  const std::string long_url = DlqWithSource(*svc, longer, 1209600, 86400);
  const std::string same_url = DlqWithSource(*svc, same, 345600, 345600);
  ASSERT_FALSE(long_url.empty());
  ASSERT_FALSE(same_url.empty());

  const std::string dir = "/tmp/" + base;
  ASSERT_EQ(RunShell("mkdir -p " + dir).exit_code, 0);
  const int port = FreePort();
  const std::string config = dir + "/dlq-archive.yaml";
  WriteFile(config, fmt::format(R"(listen: 127.0.0.1:{}
collection_interval: 1s
sweep_interval: 2s
defaults:
  destination: s3://{}/dlq-archive
  visibility_timeout: 30s
groups:
  - name: it
    endpoint_url: {}
    queues: [{}, {}]
    alarms:
      depth: {{ enabled: false }}
)",
                                port, bucket, moto.endpoint(), longer, same));
  {
    BackgroundDaemon daemon(moto, dir, config);
    const std::string api = "http://127.0.0.1:" + std::to_string(port) + "/api/queues";
    (void)PollUntil(
        api, [](const std::string& b) { return Has(b, "\"last_empty\":\"2"); }, 20);  // both seen empty
    SendTo(*svc, long_url, 2, "long");
    SendTo(*svc, same_url, 2, "same");
    std::this_thread::sleep_for(std::chrono::seconds(6));  // several collections and sweeps
    SendTo(*svc, long_url, 1, "long-late");
    SendTo(*svc, same_url, 1, "same-late");
    std::this_thread::sleep_for(std::chrono::seconds(6));
    EXPECT_EQ(daemon.Stop(), "0\n") << daemon.Log();
    const std::string log = daemon.Log();
    EXPECT_EQ(Count(log, "\"action\":\"learn\",\"requested\""), 2) << log;     // one learning pass per growth
    EXPECT_FALSE(Has(log, "\"queue\":\"" + longer + "\",\"budget\"")) << log;  // nothing submitted for it
  }
  // R > S: never received by the daemon; the test's receive is each message's first.
  for (const auto& [body, count] : ReceiveCounts(*svc, long_url, 3)) EXPECT_EQ(count, 1) << body;
  // R = S: received by the learning passes only (at most one per growth), never archived.
  auto same_counts = ReceiveCounts(*svc, same_url, 3);
  ASSERT_EQ(same_counts.size(), 3u);
  for (const auto& [body, count] : same_counts) {
    EXPECT_GE(count, 2) << body;
    EXPECT_LE(count, 3) << body;
  }
}

}  // namespace
}  // namespace dlq::it
