// `dlq-archive run` end to end against moto: a short-retention DLQ with a few
// messages goes into ALARM, gets archived to S3, and the alarm returns to OK;
// /metrics passes promtool; SIGTERM stops the daemon with exit 0. And
// `dlq-archive check` flags a reference-like config as UNSAFE.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <thread>
#include <vector>

#include "daemon_process.h"
#include "harness.h"

namespace dlq::it {
namespace {

// A queue with RETENTION_SECONDS holding N messages "poison 0" .. "poison N-1"; its URL.
std::string QueueWithPoison(AwsServices& svc, const std::string& name, int retention_seconds, int n) {
  auto url = svc.sqs().CreateQueue(name, {{"MessageRetentionPeriod", std::to_string(retention_seconds)}});
  EXPECT_TRUE(url.ok()) << url.status().ToString();
  if (!url.ok()) return "";
  for (int i = 0; i < n; ++i) {
    SendEntry e;
    e.id = std::to_string(i);
    e.body = "poison " + std::to_string(i);
    EXPECT_TRUE(svc.sqs().SendMessage(*url, e).ok()) << name;
  }
  return *url;
}

// A working directory /tmp/BASE for one daemon, and a free port for its listener.
struct DaemonDir {
  explicit DaemonDir(const std::string& base) : dir("/tmp/" + base), config(dir + "/dlq-archive.yaml") {
    EXPECT_EQ(RunShell("mkdir -p " + dir).exit_code, 0);
    EXPECT_GT(port, 0);
  }
  std::string Api() const { return "http://127.0.0.1:" + std::to_string(port); }

  int port = FreePort();
  std::string dir;
  std::string config;
};

TEST(DaemonMotoTest, AlarmArchivesShortRetentionDlqAndReturnsToOk) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  std::string base = UniqueName("daemon");
  std::string bucket = base + "-archive";
  ASSERT_TRUE(svc->s3_for(bucket).CreateBucket(bucket).ok());
  std::string dlq_name = base + "-dlq";
  ASSERT_FALSE(QueueWithPoison(*svc, dlq_name, 120, 5).empty());

  DaemonDir d(base);
  WriteOneQueueConfig(moto, d.dir, d.port, bucket, dlq_name,
                      "      expiry: { threshold: 10s, period: 2s }\n"
                      "      depth: { enabled: false }\n");
  auto check_config = RunShell(moto.ShellEnv() + DLQ_BINARY + " check --config " + d.config);
  EXPECT_NE(check_config.out.find(dlq_name), std::string::npos) << check_config.out;

  BackgroundDaemon daemon(moto, d.dir, d.config);
  // The queue can read empty (and the alarm OK) while the run is still
  // proving the end of the queue: the run's counts, and so the metrics, come
  // when it returns. Wait for them too.
  auto alarmed_archived_and_ok = [](const std::string& b) {
    return Has(b, "\"to\":\"ALARM\"") && Has(b, "\"from\":\"ALARM\",\"to\":\"OK\"") &&
           Has(b, "\"visible\":0,\"not_visible\":0") && Has(b, "\"archived\":5");
  };
  std::string body = PollUntil(d.Api() + "/api/queues", alarmed_archived_and_ok, 45);
  EXPECT_TRUE(alarmed_archived_and_ok(body)) << body << "\n--- log:\n" << daemon.Log();
  EXPECT_EQ(RunShell("curl -s --max-time 2 " + d.Api() + "/readyz", false).out.rfind("ready", 0), 0u);

  ListObjectsV2Request req;
  req.prefix = "dlq-archive/" + dlq_name + "/";
  auto listed = svc->s3_for(bucket).ListObjectsV2(bucket, req);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_FALSE(listed->objects.empty());

  auto metrics = RunShell("curl -s --max-time 2 " + d.Api() + "/metrics > " + d.dir +
                          "/metrics.txt && promtool check metrics < " + d.dir + "/metrics.txt");
  EXPECT_EQ(metrics.exit_code, 0) << metrics.out;
  EXPECT_TRUE(Has(ReadFile(d.dir + "/metrics.txt"),
                  "dlq_archive_messages_archived_total{queue=\"" + dlq_name + "\",region=\"us-east-1\"} 5"))
      << ReadFile(d.dir + "/metrics.txt");

  EXPECT_EQ(daemon.Stop(), "0\n") << daemon.Log();
  EXPECT_TRUE(Has(daemon.Log(), "\"event\":\"alarm_transition\""));
}

TEST(DaemonMotoTest, CheckFlagsReferenceConfigUnsafe) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  std::string base = UniqueName("refcheck");
  auto dlq = svc->sqs().CreateQueue(base + "-dlq", {{"MessageRetentionPeriod", "345600"}});
  ASSERT_TRUE(dlq.ok());
  auto attrs = svc->sqs().GetQueueAttributes(*dlq, {"QueueArn"});
  ASSERT_TRUE(attrs.ok());
  auto src = svc->sqs().CreateQueue(
      base + "-src",
      {{"MessageRetentionPeriod", "345600"},
       {"RedrivePolicy", "{\"deadLetterTargetArn\":\"" + attrs->at("QueueArn") + "\",\"maxReceiveCount\":\"3\"}"}});
  ASSERT_TRUE(src.ok());
  std::string config = "/tmp/" + base + ".yaml";
  WriteFile(config,
            "defaults:\n"
            "  destination: s3://" +
                base +
                "-archive/dlq-archive\n"
                "  cloudwatch_age: true\n"
                "  alarms:\n"
                "    expiry: { threshold: 345000s, period: 5m }\n"
                "groups:\n"
                "  - name: reference\n"
                "    endpoint_url: " +
                moto.endpoint() +
                "\n"
                "    queues: [" +
                base + "-dlq]\n");
  auto r = RunShell(moto.ShellEnv() + DLQ_BINARY + " check --config " + config);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find(base + "-dlq: UNSAFE: in the worst case a message can expire"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("retention 4d (345600 s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("345000"), std::string::npos) << r.out;
  std::remove(config.c_str());
}

// Issue 13, items 1 and 2: with a bucket that does not exist the daemon checks
// the destination first, receives nothing, and the failure shows in
// /api/queues, the metrics the alert rule reads, and the logs.
TEST(DaemonMotoTest, MissingBucketIsCheckedFirstAndShowsAsFailingRuns) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  std::string base = UniqueName("nobucket");
  std::string dlq_name = base + "-dlq";
  std::string dlq = QueueWithPoison(*svc, dlq_name, 120, 3);
  ASSERT_FALSE(dlq.empty());
  DaemonDir d(base);
  WriteFile(d.config, fmt::format(R"(listen: 127.0.0.1:{}
collection_interval: 1s
sweep_interval: 2s
defaults:
  destination: s3://{}-no-such-bucket/archive
groups:
  - name: it
    endpoint_url: {}
    queues: [{}]
    alarms:
      expiry: {{ threshold: 10s, period: 2s }}
      depth: {{ enabled: false }}
)",
                                  d.port, base, moto.endpoint(), dlq_name));

  auto check = RunShell(moto.ShellEnv() + DLQ_BINARY + " check --config " + d.config);
  EXPECT_EQ(check.exit_code, 1) << check.out;
  EXPECT_TRUE(Has(check.out, "ERROR: destination s3://" + base + "-no-such-bucket/archive failed its check"))
      << check.out;
  EXPECT_TRUE(Has(check.out, dlq_name + ": UNSAFE: nothing can be archived")) << check.out;
  EXPECT_FALSE(Has(check.out, dlq_name + ": SAFE")) << check.out;

  BackgroundDaemon daemon(moto, d.dir, d.config);
  std::string api = d.Api();
  std::string body = PollUntil(
      api + "/api/queues", [](const std::string& b) { return Has(b, "\"failing\":[{\"group\":\"it\""); }, 30);
  EXPECT_TRUE(Has(body, "\"failing\":[{\"group\":\"it\",\"queue\":\"" + dlq_name + "\"}]")) << body << daemon.Log();
  EXPECT_TRUE(Has(body, "\"class\":\"NotFound\"")) << body;
  EXPECT_TRUE(Has(body, "NoSuchBucket")) << body;
  EXPECT_TRUE(Has(body, "\"ok\":false")) << body;
  EXPECT_FALSE(Has(body, "\"last_error\":null")) << body;

  std::string metrics = RunShell("curl -s --max-time 2 " + api + "/metrics", false).out;
  EXPECT_TRUE(Has(metrics, "dlq_archive_destination_up{group=\"it\"} 0")) << metrics;
  EXPECT_TRUE(Has(metrics, "dlq_archive_archive_failures_total{queue=\"" + dlq_name +
                               "\",region=\"us-east-1\",class=\"NotFound\"}"))
      << metrics;
  EXPECT_FALSE(Has(
      metrics, "dlq_archive_archive_runs_total{queue=\"" + dlq_name + "\",region=\"us-east-1\",result=\"error\"} 0\n"))
      << metrics;
  EXPECT_EQ(RunShell("curl -s --max-time 2 " + api + "/readyz", false).out.rfind("ready", 0), 0u);

  // Nothing was received: no message is in flight, all three are still there.
  auto attrs =
      svc->sqs().GetQueueAttributes(dlq, {"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"});
  ASSERT_TRUE(attrs.ok());
  EXPECT_EQ(attrs->at("ApproximateNumberOfMessages"), "3");
  EXPECT_EQ(attrs->at("ApproximateNumberOfMessagesNotVisible"), "0");
  EXPECT_EQ(daemon.Stop(), "0\n");
  std::string log = daemon.Log();
  EXPECT_TRUE(Has(log, "\"event\":\"destination_check_failed\"")) << log;
  EXPECT_TRUE(Has(log, "\"event\":\"archive_blocked\"")) << log;
  EXPECT_TRUE(Has(log, "\"queue\":\"" + dlq_name + "\"")) << log;
}

// Issue 13, item 2: `check` wants every group to match a queue unless allow_empty.
TEST(DaemonMotoTest, CheckFailsOnAGroupMatchingNoQueueUnlessAllowed) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  std::string base = UniqueName("emptygrp");
  ASSERT_TRUE(svc->s3_for(base).CreateBucket(base).ok());
  std::string config = "/tmp/" + base + ".yaml";
  std::string text =
      "defaults:\n"
      "  destination: s3://" +
      base +
      "/archive\n"
      "groups:\n"
      "  - name: empty\n"
      "    endpoint_url: " +
      moto.endpoint() +
      "\n"
      "    prefixes: [" +
      base + "-none-]\n";
  WriteFile(config, text);
  auto r = RunShell(moto.ShellEnv() + DLQ_BINARY + " check --config " + config);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(Has(r.out, "ERROR: no queue matches the group's selectors")) << r.out;
  EXPECT_TRUE(Has(r.out, "destination s3://" + base + "/archive: exists and can be written")) << r.out;
  WriteFile(config, text + "    allow_empty: true\n");
  r = RunShell(moto.ShellEnv() + DLQ_BINARY + " check --config " + config);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  std::remove(config.c_str());
}

// Issue 13, item 3: the depth alarm notifies by default and the DLQ keeps its
// messages; with action copy they are archived and still stay in the DLQ.
TEST(DaemonMotoTest, DepthAlarmNotifiesByDefaultAndCopyKeepsMessages) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  std::string base = UniqueName("actions");
  std::string bucket = base + "-archive";
  ASSERT_TRUE(svc->s3_for(bucket).CreateBucket(bucket).ok());
  std::vector<std::string> urls;
  for (const std::string& name : {base + "-notify-dlq", base + "-copy-dlq"}) {
    urls.push_back(QueueWithPoison(*svc, name, 3600, 4));
    ASSERT_FALSE(urls.back().empty());
  }
  DaemonDir d(base);
  WriteFile(d.config, fmt::format(R"(listen: 127.0.0.1:{0}
collection_interval: 1s
sweep_interval: 2s
defaults:
  destination: s3://{1}/dlq-archive
  batch: {{ max_age: 1s }}
  alarms:
    expiry: {{ enabled: false }}
    depth: {{ period: 2s, evaluation_periods: 1, datapoints_to_alarm: 1 }}
groups:
  - name: notify
    endpoint_url: {2}
    queues: [{3}-notify-dlq]
  - name: copy
    endpoint_url: {2}
    queues: [{3}-copy-dlq]
    alarms: {{ depth: {{ action: copy }} }}
)",
                                  d.port, bucket, moto.endpoint(), base));
  auto check = RunShell(moto.ShellEnv() + DLQ_BINARY + " check --config " + d.config);
  EXPECT_TRUE(Has(check.out, "action notify: webhook and log only")) << check.out;
  EXPECT_TRUE(Has(check.out, "action copy: once per transition into ALARM")) << check.out;

  BackgroundDaemon daemon(moto, d.dir, d.config);
  std::string api = d.Api();
  std::string body = PollUntil(
      api + "/api/queues",
      [](const std::string& b) {
        size_t alarms = 0;
        for (size_t p = b.find("\"to\":\"ALARM\""); p != std::string::npos; p = b.find("\"to\":\"ALARM\"", p + 1)) {
          ++alarms;
        }
        return alarms >= 2 && Has(b, "\"archived\":4");
      },
      40);
  EXPECT_TRUE(Has(body, "\"action\":\"notify\"")) << body;
  EXPECT_TRUE(Has(body, "\"action\":\"copy\"")) << body;
  EXPECT_TRUE(Has(body, "\"archived\":4")) << body << daemon.Log();
  std::this_thread::sleep_for(std::chrono::seconds(3));  // more sweeps while in ALARM
  EXPECT_EQ(daemon.Stop(), "0\n");

  for (const std::string& url : urls) {
    auto attrs =
        svc->sqs().GetQueueAttributes(url, {"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"});
    ASSERT_TRUE(attrs.ok());
    EXPECT_EQ(std::stoi(attrs->at("ApproximateNumberOfMessages")) +
                  std::stoi(attrs->at("ApproximateNumberOfMessagesNotVisible")),
              4)
        << url;
  }
  ListObjectsV2Request req;
  req.prefix = "dlq-archive/" + base + "-notify-dlq/";
  auto notify_objects = svc->s3_for(bucket).ListObjectsV2(bucket, req);
  ASSERT_TRUE(notify_objects.ok());
  EXPECT_TRUE(notify_objects->objects.empty());
  req.prefix = "dlq-archive/" + base + "-copy-dlq/";
  auto copy_objects = svc->s3_for(bucket).ListObjectsV2(bucket, req);
  ASSERT_TRUE(copy_objects.ok());
  EXPECT_FALSE(copy_objects->objects.empty());
}

}  // namespace
}  // namespace dlq::it
