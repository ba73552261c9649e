// The fixture of the `replay --to-origin` tests (replay_origin_test.cc,
// replay_origin_scenarios_test.cc): the dlq-archive binary run against moto
// and the fake Lambda with the fake's environment, a scratch archive
// directory, queues, EventBridge dead-letter attributes, SNS subscriptions
// with a RedrivePolicy, and what the fake saw of the test's function fn_.
// Each helper fails the calling test on an error.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <simdjson.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "fake_lambda.h"
#include "harness.h"
#include "moto_fixtures.h"
#include "sns_fixtures.h"

namespace dlq::it {

// A replay's --output json: its exit code, its buckets with a count (zeros
// left out; "selected" always there) and how often the origin throttled it.
struct ReplayJsonResult {
  int exit_code = -1;
  std::map<std::string, uint64_t> buckets;
  uint64_t throttled = 0;
  std::string text;  // stdout, for messages
};

class ReplayOriginFixture : public FakeLambdaFixture {
 protected:
  explicit ReplayOriginFixture(std::string prefix) : FakeLambdaFixture(std::move(prefix)) {}
  void SetUp() override {
    FakeLambdaFixture::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    dir_ = "/tmp/" + base_;
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!fn_.empty()) ClearLambdaRules(fn_);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // The binary with the fake-lambda stand-in's environment (no --endpoint-url).
  std::string Bin(const std::string& command, const std::string& args) const {
    return fake_.ShellEnv() + DLQ_BINARY + " " + command + " " + args;
  }
  // Where the replay reads: every message archived in dir_.
  virtual std::string From() const { return "--from file://" + dir_ + " --all"; }
  // `replay --to-origin` of From(), with `args`.
  std::string ReplayCommand(const std::string& args) const {
    return Bin("replay", From() + " --to-origin --progress never " + args);
  }
  std::string Replay(const std::string& args, int* exit_code) const {
    auto r = RunShell(ReplayCommand(args));
    *exit_code = r.exit_code;
    return r.out;
  }
  // Replay(args + " --output json"), parsed; the buckets must add up to "selected".
  ReplayJsonResult ReplayJson(const std::string& args) const {
    ReplayJsonResult out;
    auto r = RunShell(ReplayCommand(args + " --output json"), /*merge_stderr=*/false);
    out.exit_code = r.exit_code;
    out.text = r.out;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    simdjson::dom::object buckets;
    if (parser.parse(r.out).get(doc) != simdjson::SUCCESS || doc["buckets"].get(buckets) != simdjson::SUCCESS ||
        doc["throttled"].get(out.throttled) != simdjson::SUCCESS) {
      ADD_FAILURE() << "not a replay's JSON: " << r.out;
      return out;
    }
    uint64_t placed = 0;
    for (auto [key, value] : buckets) {
      uint64_t n = 0;
      EXPECT_EQ(value.get(n), simdjson::SUCCESS) << key;
      if (key != "selected") placed += n;
      if (n > 0 || key == "selected") out.buckets[std::string(key)] = n;
    }
    EXPECT_EQ(placed, out.buckets["selected"]) << "every selected message is in exactly one bucket: " << r.out;
    return out;
  }
  // Starts ReplayCommand(args) as a child process and kills it (SIGKILL)
  // once fn_ was invoked `at_least` times, or after 30 s; how many
  // invocations the fake had seen when the child was gone.
  size_t ReplayKilledAfter(const std::string& args, size_t at_least) const {
    const std::string cmd = ReplayCommand(args);
    pid_t pid = fork();
    EXPECT_GE(pid, 0);
    if (pid < 0) return 0;
    if (pid == 0) {
      // exec: the kill reaches dlq-archive itself, not a shell around it.
      const std::string child = fake_.ShellEnv() + "exec " + cmd.substr(fake_.ShellEnv().size()) + " >/dev/null 2>&1";
      execl("/bin/sh", "sh", "-c", child.c_str(), nullptr);
      _exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (LambdaInvocations(fn_).size() < at_least && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the replay ended before it was killed";
    return LambdaInvocations(fn_).size();
  }
  std::pair<std::string, std::string> Queue(const std::string& name) {
    auto url = svc_->sqs().CreateQueue(name, {});
    EXPECT_TRUE(url.ok()) << url.status().ToString();
    if (!url.ok()) return {};
    return {*url, QueueArn(*svc_, *url)};
  }
  // Archives the queue base_ + suffix into dir_ (it leaves the queue).
  void ArchiveQueue(const std::string& suffix) const {
    auto r = RunShell(Bin("archive", "--queue " + base_ + suffix + " --to file://" + dir_ + " --progress never"));
    ASSERT_EQ(r.exit_code, 0) << r.out;
  }
  // What EventBridge attaches to an event it could not deliver to `target`.
  MessageAttributes EventBridgeDeadLetter(const std::string& target) const {
    return {{"RULE_ARN", {"String", "arn:aws:events:us-east-1:123456789012:rule/" + base_, ""}},
            {"TARGET_ARN", {"String", target, ""}},
            {"ERROR_CODE", {"String", "SDK_CLIENT_ERROR", ""}},
            {"ERROR_MESSAGE", {"String", "Unable to deliver", ""}},
            {"RETRY_ATTEMPTS", {"String", "185", ""}}};
  }
  // Subscribes `endpoint` to `topic` with a RedrivePolicy naming `dlq_arn`; its ARN.
  std::string SubscribeWithDlq(AwsClient& sns_aws, const std::string& topic, const std::string& protocol,
                               const std::string& endpoint, const std::string& dlq_arn, bool raw) const {
    FormParams params = {
        {"TopicArn", topic}, {"Protocol", protocol}, {"Endpoint", endpoint}, {"ReturnSubscriptionArn", "true"}};
    if (raw) {
      params.emplace_back("Attributes.entry.1.key", "RawMessageDelivery");
      params.emplace_back("Attributes.entry.1.value", "true");
    }
    const std::string sub = XmlText(SnsCall(sns_aws, "Subscribe", params), "SubscriptionArn");
    EXPECT_FALSE(sub.empty());
    SnsCall(sns_aws, "SetSubscriptionAttributes",
            {{"SubscriptionArn", sub},
             {"AttributeName", "RedrivePolicy"},
             {"AttributeValue", fmt::format(R"({{"deadLetterTargetArn":"{}"}})", dlq_arn)}});
    return sub;
  }
  // The fake's invocations of fn_ by "type/outcome" ("Event/ok": 3).
  std::map<std::string, int> CountByType() const {
    std::map<std::string, int> n;
    for (const LambdaInvocation& i : LambdaInvocations(fn_)) ++n[i.type + "/" + i.outcome];
    return n;
  }
  // How many times fn_ was invoked with each payload (byte for byte), with
  // `outcome` ("ok", "throttled", ...) when given.
  std::map<std::string, int> TimesByPayload(const std::string& outcome = "") const {
    std::map<std::string, int> times;
    for (const LambdaInvocation& i : LambdaInvocations(fn_)) {
      if (outcome.empty() || i.outcome == outcome) ++times[i.payload];
    }
    return times;
  }
  // The event a function subscribed as `subscription` gets for an SNS
  // `envelope` (Records[0].Sns is the envelope as it is).
  static std::string SnsEventFor(const std::string& subscription, const std::string& envelope) {
    return R"({"Records":[{"EventSource":"aws:sns","EventVersion":"1.0","EventSubscriptionArn":")" + subscription +
           R"(","Sns":)" + envelope + "}]}";
  }
  // The bug still there: a guarded replay (canary 1) exits 5 with only the
  // canary invoked, synchronously and failing. Then, fixed: it exits 0, the
  // canary and the other `n` - 1 messages each invoked once.
  void ExpectCanaryStopsThenFixedDelivers(int n) {
    int code = 0;
    std::string out = Replay("--canary 1 --window 2s --check 1s", &code);
    EXPECT_EQ(code, 5) << out;
    EXPECT_EQ(CountByType(), (std::map<std::string, int>{{"RequestResponse/failed", 1}}));
    ClearLambdaRules(fn_);
    ClearLambdaInvocations(fn_);
    out = Replay("--canary 1 --window 2s --check 1s", &code);
    EXPECT_EQ(code, 0) << out;
    EXPECT_EQ(CountByType(), (std::map<std::string, int>{{"RequestResponse/ok", 1}, {"Event/ok", n - 1}}));
  }
  // After a kill and a resume: fn_ was invoked with exactly the payloads
  // `want`, each once or twice, and at most `batch` of them twice (the batch
  // in flight when the run was killed).
  void ExpectEachPayloadOnceAtMostABatchTwice(const std::set<std::string>& want, int batch) const {
    const std::map<std::string, int> times = TimesByPayload();
    std::set<std::string> got;
    int twice = 0;
    for (const auto& [payload, n] : times) {
      got.insert(payload);
      EXPECT_LE(n, 2) << payload;
      twice += n - 1;
    }
    EXPECT_EQ(got, want) << "every message reached the function, byte for byte";
    EXPECT_LE(twice, batch) << "at most the batch in flight when it was killed";
  }

  std::string dir_, fn_, fn_arn_;
};

}  // namespace dlq::it
