// `dlq-archive run` with state_dir against moto: the state survives SIGTERM
// and kill -9 (a restarted daemon shows the alarm history and does not
// notify an unchanged alarm again), and a corrupt state file is moved aside
// with one log line.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "daemon_process.h"
#include "harness.h"

namespace dlq::it {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

TEST(DaemonStateTest, StateSurvivesSigtermAndKill9AndACorruptFileIsMovedAside) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  const std::string base = UniqueName("state");
  const std::string bucket = base + "-archive";
  ASSERT_TRUE(svc->s3_for(bucket).CreateBucket(bucket).ok());
  auto url = svc->sqs().CreateQueue(base + "-dlq", {{"MessageRetentionPeriod", "3600"}});
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  for (int i = 0; i < 4; ++i) {
    SendEntry e;
    e.id = std::to_string(i);
    e.body = "poison " + std::to_string(i);
    ASSERT_TRUE(svc->sqs().SendMessage(*url, e).ok());
  }
  const std::string dir = "/tmp/" + base;
  const std::string state = dir + "/state";
  ASSERT_EQ(RunShell("mkdir -p " + dir).exit_code, 0);
  const int port = FreePort();
  const std::string api = "http://127.0.0.1:" + std::to_string(port) + "/api/queues";
  const std::string config = dir + "/dlq-archive.yaml";
  // A depth alarm that notifies (the DLQ keeps its messages, the alarm stays in ALARM).
  WriteFile(config, fmt::format(R"(listen: 127.0.0.1:{}
collection_interval: 1s
state_dir: {}
defaults:
  destination: s3://{}/dlq-archive
  alarms:
    expiry: {{ enabled: false }}
    depth: {{ threshold: 1, period: 2s, evaluation_periods: 1, datapoints_to_alarm: 1 }}
groups:
  - name: it
    endpoint_url: {}
    queues: [{}-dlq]
)",
                                port, state, bucket, moto.endpoint(), base));
  auto alarmed = [](const std::string& b) { return Has(b, "\"to\":\"ALARM\""); };
  // A run in DIR/NAME; returns its log after `stop` ("TERM" or "KILL").
  auto run = [&](const std::string& name, const std::string& stop, const std::function<bool(const std::string&)>& ok,
                 int settle_s) {
    const std::string run_dir = dir + "/" + name;
    EXPECT_EQ(RunShell("mkdir -p " + run_dir).exit_code, 0);
    BackgroundDaemon daemon(moto, run_dir, config);
    std::string body = PollUntil(api, ok, 30);
    EXPECT_TRUE(ok(body)) << name << ": " << body << "\n--- log:\n" << daemon.Log();
    std::this_thread::sleep_for(std::chrono::seconds(settle_s));  // cycles after the restore
    if (stop == "KILL") {
      daemon.Signal("KILL");
      EXPECT_EQ(daemon.Stop(), "137\n") << name;
    } else {
      EXPECT_EQ(daemon.Stop(), "0\n") << name << daemon.Log();
    }
    return daemon.Log();
  };

  const std::string first = run("first", "TERM", alarmed, 1);
  EXPECT_EQ(Count(first, "\"event\":\"state_opened\""), 1u) << first;
  EXPECT_EQ(Count(first, "\"to\":\"ALARM\""), 1u) << first;
  ASSERT_TRUE(std::filesystem::exists(state + "/state.sqlite"));

  // After SIGTERM: the history is there at once and nothing is notified again.
  const std::string second = run("after-sigterm", "KILL", alarmed, 3);
  EXPECT_EQ(Count(second, "\"event\":\"alarm_transition\""), 0u) << second;
  EXPECT_TRUE(Has(second, "\"state\":\"restored\"")) << second;

  // After kill -9: the file opens, nothing is moved aside, still no re-notification.
  const std::string third = run("after-kill", "TERM", alarmed, 3);
  EXPECT_EQ(Count(third, "\"event\":\"alarm_transition\""), 0u) << third;
  EXPECT_EQ(Count(third, "state_file_corrupt"), 0u) << third;
  EXPECT_TRUE(Has(third, "\"state\":\"restored\"")) << third;

  // A corrupt file: moved aside with one line; the daemon starts fresh (and so notifies).
  std::filesystem::remove(state + "/state.sqlite-wal");
  WriteFile(state + "/state.sqlite", std::string(4096, 'x'));
  const std::string fourth = run("after-corruption", "TERM", alarmed, 0);
  EXPECT_EQ(Count(fourth, "\"event\":\"state_file_corrupt\""), 1u) << fourth;
  EXPECT_EQ(Count(fourth, "\"to\":\"ALARM\""), 1u) << fourth;
  size_t aside = 0;
  for (const auto& e : std::filesystem::directory_iterator(state)) {
    aside += e.path().filename().string().starts_with("state.sqlite.corrupt-") ? 1 : 0;
  }
  EXPECT_EQ(aside, 1u);
  RunShell("rm -rf " + dir);
}

}  // namespace
}  // namespace dlq::it
