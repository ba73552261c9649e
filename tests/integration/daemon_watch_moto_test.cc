// Issue 31 §2 against moto (SQS-like random receives): a daemon watching an
// idle and a growing DLQ for several sweeps receives a DLQ that keeps its
// messages longer than its source never, and one that keeps them no longer
// only in a learning pass per growth. Counted by SQS's own
// ApproximateReceiveCount, read by the test after the daemon stopped. And
// the archive's records split SQS's receive count into the consumer's and
// ours.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "archive/gzip.h"
#include "archive/record.h"
#include "common/strings.h"
#include "daemon_process.h"
#include "harness.h"

namespace dlq::it {
namespace {

// A DLQ keeping messages DLQ_RETENTION, fed by a source keeping them SOURCE_RETENTION; the DLQ's URL.
// The source is NAME-src, redriving after `max_receive_count` receives.
std::string DlqWithSource(AwsServices& svc, const std::string& name, int dlq_retention, int source_retention,
                          int max_receive_count = 3) {
  auto dlq = svc.sqs().CreateQueue(name, {{"MessageRetentionPeriod", std::to_string(dlq_retention)}});
  EXPECT_TRUE(dlq.ok()) << dlq.status().ToString();
  if (!dlq.ok()) return "";
  auto arn = svc.sqs().GetQueueAttributes(*dlq, {"QueueArn"});
  EXPECT_TRUE(arn.ok());
  auto src = svc.sqs().CreateQueue(
      name + "-src", {{"MessageRetentionPeriod", std::to_string(source_retention)},
                      {"RedrivePolicy", "{\"deadLetterTargetArn\":\"" + arn->at("QueueArn") +
                                            "\",\"maxReceiveCount\":\"" + std::to_string(max_receive_count) + "\"}"}});
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

int64_t Visible(AwsServices& svc, const std::string& url) {
  auto a = svc.sqs().GetQueueAttributes(url, {"ApproximateNumberOfMessages"});
  return a.ok() ? std::stoll(a->at("ApproximateNumberOfMessages")) : -1;
}

// Every record under PREFIX in BUCKET.
std::vector<ArchiveRecord> ArchivedRecords(AwsServices& svc, const std::string& bucket, const std::string& prefix) {
  std::vector<ArchiveRecord> records;
  ListObjectsV2Request req;
  req.prefix = prefix;
  auto listed = svc.s3_for(bucket).ListObjectsV2(bucket, req);
  EXPECT_TRUE(listed.ok()) << listed.status().ToString();
  if (!listed.ok()) return records;
  for (const auto& object : listed->objects) {
    auto gz = svc.s3_for(bucket).GetObject(bucket, object.key, std::nullopt);
    EXPECT_TRUE(gz.ok()) << object.key << ": " << gz.status().ToString();
    if (!gz.ok()) continue;
    auto text = GzipDecompress(*gz, 64 << 20);
    EXPECT_TRUE(text.ok()) << object.key << ": " << text.status().ToString();
    if (!text.ok()) continue;
    for (std::string_view line : Split(*text, '\n')) {
      if (line.empty()) continue;
      auto record = ParseRecordJson(line);
      EXPECT_TRUE(record.ok()) << object.key << ": " << record.status().ToString();
      if (record.ok()) records.push_back(*record);
    }
  }
  return records;
}

// The consumer receives each message twice in the source (maxReceiveCount 2),
// so it moves to the DLQ with ApproximateReceiveCount 2. The daemon, started
// on the non-empty DLQ whose retention does not exceed the source's, learns
// each expiry in one pass (ours: 1), then archives when the expiry alarm's
// threshold is crossed (ours: 2). The records say 4 as SQS reported, 2 ours.
TEST(DaemonWatchMotoTest, ArchiveRecordsSplitTheConsumersReceivesFromOurs) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  const std::string base = UniqueName("split");
  const std::string bucket = base + "-archive";
  ASSERT_TRUE(svc->s3_for(bucket).CreateBucket(bucket).ok());
  const std::string dlq = base + "-dlq";
  const std::string dlq_url = DlqWithSource(*svc, dlq, 345600, 345600, 2);  // R = S = 4 d
  ASSERT_FALSE(dlq_url.empty());
  auto src_url = svc->sqs().GetQueueUrl(dlq + "-src", "");
  ASSERT_TRUE(src_url.ok()) << src_url.status().ToString();
  SendTo(*svc, *src_url, 3, "poison");
  // The consumer: every receive fails (visibility 0); the third moves the message without delivering it.
  ReceiveOptions consumer;
  consumer.max_messages = 10;
  consumer.visibility_timeout = 0;
  std::map<std::string, int> consumer_receives;
  for (int i = 0; i < 60 && Visible(*svc, dlq_url) < 3; ++i) {
    auto got = svc->sqs().ReceiveMessages(*src_url, consumer);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    for (const Message& m : *got) ++consumer_receives[m.body];
  }
  ASSERT_EQ(Visible(*svc, dlq_url), 3);
  for (const auto& [body, n] : consumer_receives) ASSERT_EQ(n, 2) << body;

  const std::string dir = "/tmp/" + base;
  ASSERT_EQ(RunShell("mkdir -p " + dir).exit_code, 0);
  const int port = FreePort();
  const std::string config = WriteOneQueueConfig(moto, dir, port, bucket, dlq,
                                                 "      expiry: { threshold: 6s, period: 2s }\n"
                                                 "      depth: { enabled: false }\n");
  {
    BackgroundDaemon daemon(moto, dir, config);
    const std::string api = "http://127.0.0.1:" + std::to_string(port) + "/api/queues";
    auto archived = [](const std::string& b) { return Has(b, "\"archived\":3") && Has(b, "\"visible\":0,"); };
    const std::string body = PollUntil(api, archived, 45);
    EXPECT_TRUE(archived(body)) << body << "\n--- log:\n" << daemon.Log();
    EXPECT_EQ(daemon.Stop(), "0\n") << daemon.Log();
    const std::string log = daemon.Log();
    EXPECT_EQ(Count(log, "\"action\":\"learn\",\"requested\""), 1) << log;
    EXPECT_GE(Count(log, "\"action\":\"archive\",\"requested\""), 1) << log;  // a later one finds nothing
  }
  const std::vector<ArchiveRecord> records = ArchivedRecords(*svc, bucket, "dlq-archive/" + dlq + "/");
  ASSERT_EQ(records.size(), 3u);
  for (const ArchiveRecord& r : records) {
    EXPECT_EQ(r.receive_count, 4) << r.body;  // as SQS reported it: 2 the consumer's + 2 ours
    EXPECT_EQ(r.own_receive_count, 2) << r.body;
    EXPECT_EQ(ConsumerReceiveCount(r), 2) << r.body;
  }
  EXPECT_EQ(Visible(*svc, dlq_url), 0);
}

// Issue 37: a FIFO DLQ keeping messages as long as its source, holding 12
// messages of one group when the daemon starts, with a depth alarm whose
// action is archive. No learning pass holds them (FIFO would show it at most
// 10 of the group and keep the run waiting): the alarm's run archives all 12
// at once, and each record's only receive is the archive's.
TEST(DaemonWatchMotoTest, FifoDlqWithADueArchiveAlarmIsArchivedPromptlyWithoutLearning) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  const std::string base = UniqueName("fifo");
  const std::string bucket = base + "-archive";
  ASSERT_TRUE(svc->s3_for(bucket).CreateBucket(bucket).ok());
  const std::string dlq = base + "-dlq.fifo";
  auto dlq_url = svc->sqs().CreateQueue(dlq, {{"FifoQueue", "true"}, {"MessageRetentionPeriod", "345600"}});
  ASSERT_TRUE(dlq_url.ok()) << dlq_url.status().ToString();
  auto arn = svc->sqs().GetQueueAttributes(*dlq_url, {"QueueArn"});
  ASSERT_TRUE(arn.ok()) << arn.status().ToString();
  auto src = svc->sqs().CreateQueue(
      base + "-src.fifo",
      {{"FifoQueue", "true"},
       {"MessageRetentionPeriod", "345600"},
       {"RedrivePolicy", "{\"deadLetterTargetArn\":\"" + arn->at("QueueArn") + "\",\"maxReceiveCount\":\"3\"}"}});
  ASSERT_TRUE(src.ok()) << src.status().ToString();  // R = S = 4 d
  for (int i = 0; i < 12; ++i) {
    SendEntry e;
    e.body = "fifo " + std::to_string(i);
    e.message_group_id = "order-1";
    e.message_deduplication_id = base + "-" + std::to_string(i);
    ASSERT_TRUE(svc->sqs().SendMessage(*dlq_url, e).ok());
  }

  const std::string dir = "/tmp/" + base;
  ASSERT_EQ(RunShell("mkdir -p " + dir).exit_code, 0);
  const int port = FreePort();
  const std::string config = WriteOneQueueConfig(moto, dir, port, bucket, dlq,
                                                 "      expiry: { action: notify }\n"
                                                 "      depth: { action: archive, threshold: 1, period: 2s }\n");
  {
    const auto started = std::chrono::steady_clock::now();
    BackgroundDaemon daemon(moto, dir, config);
    const std::string api = "http://127.0.0.1:" + std::to_string(port) + "/api/queues";
    auto archived = [](const std::string& b) { return Has(b, "\"archived\":12") && Has(b, "\"visible\":0,"); };
    // Before issue 37 a learning pass ran first and held the run back for ~2 minutes.
    const std::string body = PollUntil(api, archived, 30);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    EXPECT_TRUE(archived(body)) << body << "\n--- log:\n" << daemon.Log();
    std::printf("[ FIFO     ] 12 messages of one group archived %.1f s after the daemon started\n", took);
    EXPECT_EQ(daemon.Stop(), "0\n") << daemon.Log();
    const std::string log = daemon.Log();
    EXPECT_EQ(Count(log, "\"action\":\"learn\""), 0) << log;
    EXPECT_GE(Count(log, "\"action\":\"archive\",\"requested\""), 1) << log;
  }
  const std::vector<ArchiveRecord> records = ArchivedRecords(*svc, bucket, "dlq-archive/" + dlq + "/");
  ASSERT_EQ(records.size(), 12u);
  for (const ArchiveRecord& r : records) {
    EXPECT_EQ(r.receive_count, 1) << r.body;  // the archive's receive, no learning receive before it
    EXPECT_EQ(r.own_receive_count, 1) << r.body;
  }
  EXPECT_EQ(Visible(*svc, *dlq_url), 0);
}

}  // namespace
}  // namespace dlq::it
