// Guarded redrive (issue 32, doc/replay.md) end to end, on moto and fauxqs:
// a source queue whose RedrivePolicy sends a message to its DLQ after 2
// receives (VisibilityTimeout 1 s), a consumer on the source
// (dlq_test_consumer) that fails the bodies matching a pattern, and
// `dlq-archive replay` with a canary, a ramp and a backlog bound, from the
// archive and from the DLQ itself. moto resolves the destination with
// --to-source (ListDeadLetterSourceQueues); fauxqs has neither that call nor
// DeadLetterQueueSourceArn, so it takes --to-queue SOURCE --canary N.
// Both move a message to the DLQ on the receive after maxReceiveCount,
// keeping its message id (FauxqsAndMotoMoveAMessageToItsDlqAfterMaxReceiveCount).
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <simdjson.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <thread>
#include <tuple>
#include <vector>

#include "daemon_process.h"
#include "harness.h"

namespace dlq::it {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;
using SteadyClock = std::chrono::steady_clock;

// A source queue and its DLQ (maxReceiveCount 2, VisibilityTimeout 1 s).
struct Queues {
  std::string dlq, dlq_url, src, src_url;
};

Queues MakeQueues(AwsServices& svc, const std::string& base) {
  Queues q;
  q.dlq = UniqueName(base + "-dlq");
  q.src = UniqueName(base + "-src");
  auto dlq_url = svc.sqs().CreateQueue(q.dlq, {});
  EXPECT_TRUE(dlq_url.ok()) << dlq_url.status().ToString();
  if (!dlq_url.ok()) return q;
  q.dlq_url = *dlq_url;
  auto attrs = svc.sqs().GetQueueAttributes(q.dlq_url, {"QueueArn"});
  EXPECT_TRUE(attrs.ok()) << attrs.status().ToString();
  if (!attrs.ok()) return q;
  std::string policy = R"({"deadLetterTargetArn":")" + attrs->at("QueueArn") + R"(","maxReceiveCount":"2"})";
  auto src_url = svc.sqs().CreateQueue(q.src, {{"VisibilityTimeout", "1"}, {"RedrivePolicy", policy}});
  EXPECT_TRUE(src_url.ok()) << src_url.status().ToString();
  if (src_url.ok()) q.src_url = *src_url;
  return q;
}

std::string Body(const std::string& type, int n) {
  return fmt::format(R"({{"type":"{}","n":{}}})", type, n);
}

// Sends Body(type, n) for n in [from, to) to `url`, in order.
void SendTyped(AwsServices& svc, const std::string& url, const std::string& type, int from, int to) {
  for (int i = from; i < to; i += 10) {
    std::vector<SendEntry> batch;
    for (int j = i; j < std::min(to, i + 10); ++j) {
      SendEntry e;
      e.id = "e" + std::to_string(j - i);
      e.body = Body(type, j);
      batch.push_back(std::move(e));
    }
    auto r = svc.sqs().SendMessageBatch(url, batch);
    ASSERT_TRUE(r.ok() && r->failed.empty()) << r.status().ToString();
  }
}

std::set<std::string> Bodies(const std::string& type, int from, int to) {
  std::set<std::string> out;
  for (int i = from; i < to; ++i) out.insert(Body(type, i));
  return out;
}

// ApproximateNumberOfMessages (+ NotVisible when `all`); -1 on error.
int64_t Depth(AwsServices& svc, const std::string& url, bool all = true) {
  auto a = svc.sqs().GetQueueAttributes(url, {"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"});
  if (!a.ok()) return -1;
  int64_t n = std::stoll(a->at("ApproximateNumberOfMessages"));
  if (all) n += std::stoll(a->at("ApproximateNumberOfMessagesNotVisible"));
  return n;
}

std::string TempDir() {
  std::string d = "/tmp/dlq-redrive-it-" + RandomHex(4);
  fs::create_directories(d);
  return d;
}

std::string Bin(const StandIn& s, const std::string& command, const std::string& args) {
  return s.ShellEnv() + DLQ_BINARY + " " + command + " --endpoint-url " + s.endpoint() + " " + args;
}

void Archive(const StandIn& s, const std::string& queue, const std::string& dir) {
  auto r =
      RunShell(Bin(s, "archive", "--queue " + queue + " --to file://" + dir + " --progress never --log-level warn"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

// Where the replay sends: the source queue, resolved by the command on moto,
// named on fauxqs (which cannot resolve it).
std::string To(const StandIn& s, const Queues& q) {
  return s.name == "moto" ? "--to-source" : "--to-queue " + q.src;
}

// The archive form over every archived record of the DLQ.
std::string FromArchive(const StandIn& s, const Queues& q, const std::string& dir) {
  return "--from file://" + dir + " --queue " + q.dlq + " " + To(s, q);
}

// The live form, straight out of the DLQ.
std::string FromQueue(const StandIn& s, const Queues& q, const std::string& dir) {
  return "--from-queue " + q.dlq + " " + To(s, q) + " --audit-to file://" + dir;
}

// A field that may be absent: its value stays as initialised.
void Optional(simdjson::error_code /*absent_or_ok*/) {}

// One message as the consumer processed it.
struct Consumed {
  std::string message_id, body, outcome;
  int64_t t_ms = 0;
};

// dlq_test_consumer in the background on `queue_url`; SIGTERM on Stop.
// Its rate is read from DIR/rate ("max", "N/s", "0"), which SetRate rewrites.
class Consumer {
 public:
  Consumer(const StandIn& s, const std::string& queue_url, const std::string& dir, const std::string& fail,
           const std::string& rate = "max")
      : dir_(dir) {
    WriteFile(dir + "/rate", rate + "\n");
    std::vector<std::string> args = {DLQ_TEST_CONSUMER, "--queue-url",  queue_url,
                                     "--endpoint-url",  s.endpoint(),   "--rate-file",
                                     dir + "/rate",     "--count-file", dir + "/consumed.jsonl"};
    if (!fail.empty()) args.insert(args.end(), {"--fail", fail});
    // The test's environment with the stand-in's settings over it.
    std::map<std::string, std::string> env_map;
    for (char** e = environ; *e; ++e) {
      std::string kv = *e;
      auto eq = kv.find('=');
      if (eq != std::string::npos) env_map[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (const auto& [k, v] : s.env) env_map[k] = v;
    std::vector<std::string> env;
    for (const auto& [k, v] : env_map) env.push_back(k + "=" + v);
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    std::string log = dir + "/consumer.log";
    posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data()) != 0) {
      ADD_FAILURE() << "cannot start " << argv[0];
      pid_ = 0;
    }
    posix_spawn_file_actions_destroy(&actions);
  }
  ~Consumer() { Stop(); }
  Consumer(const Consumer&) = delete;
  Consumer& operator=(const Consumer&) = delete;

  // Replaces the rate file whole (the consumer never reads half of it).
  void SetRate(const std::string& rate) {
    WriteFile(dir_ + "/rate.tmp", rate + "\n");
    fs::rename(dir_ + "/rate.tmp", dir_ + "/rate");
  }

  // SIGTERM, then SIGKILL when it has not exited within 5 s; reaps it.
  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 50 && waitpid(pid_, &status, WNOHANG) == 0; ++i) {
      std::this_thread::sleep_for(milliseconds(100));
      if (i == 49) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
      }
    }
    pid_ = 0;
  }

  std::vector<Consumed> Seen() const {
    std::vector<Consumed> out;
    std::istringstream in(ReadFile(dir_ + "/consumed.jsonl"));
    std::string line;
    simdjson::dom::parser parser;
    while (std::getline(in, line)) {
      simdjson::dom::element e;
      if (parser.parse(line).get(e) != simdjson::SUCCESS) continue;  // a line being written
      Consumed c;
      std::string_view v;
      if (e["message_id"].get_string().get(v) == simdjson::SUCCESS) c.message_id = std::string(v);
      if (e["body"].get_string().get(v) == simdjson::SUCCESS) c.body = std::string(v);
      if (e["outcome"].get_string().get(v) == simdjson::SUCCESS) c.outcome = std::string(v);
      Optional(e["t_ms"].get_int64().get(c.t_ms));
      out.push_back(std::move(c));
    }
    return out;
  }
  // How many times each body was processed successfully.
  std::map<std::string, int> OkByBody() const {
    std::map<std::string, int> out;
    for (const auto& c : Seen()) {
      if (c.outcome == "ok") ++out[c.body];
    }
    return out;
  }
  std::set<std::string> BodiesSeen() const {
    std::set<std::string> out;
    for (const auto& c : Seen()) out.insert(c.body);
    return out;
  }
  std::set<std::string> IdsSeen() const {
    std::set<std::string> out;
    for (const auto& c : Seen()) out.insert(c.message_id);
    return out;
  }
  std::set<std::string> FailedIds() const {
    std::set<std::string> out;
    for (const auto& c : Seen()) {
      if (c.outcome == "failed") out.insert(c.message_id);
    }
    return out;
  }

 private:
  std::string dir_;
  pid_t pid_ = 0;
};

// `dlq-archive replay ARGS --progress always` in the background: stdout to
// DIR/<name>.out, stderr (the progress line with its phase) to DIR/<name>.err.
class BackgroundReplay {
 public:
  BackgroundReplay(const StandIn& s, const std::string& args, const std::string& dir, const std::string& name)
      : base_(dir + "/" + name) {
    // `args` holds no single quote; the stand-in's exports reach the inner shell.
    RunShell(s.ShellEnv() + "sh -c '" + DLQ_BINARY + " replay --endpoint-url " + s.endpoint() + " " + args +
             " --progress always > " + base_ + ".out 2> " + base_ + ".err & echo $! > " + base_ +
             ".pid; wait $!; echo $? > " + base_ + ".rc' > /dev/null 2>&1 &");
    for (int i = 0; i < 100 && pid_ <= 0; ++i) {
      pid_ = std::atoi(ReadFile(base_ + ".pid").c_str());
      if (pid_ <= 0) std::this_thread::sleep_for(milliseconds(50));
    }
  }
  ~BackgroundReplay() {
    if (!Finished()) Kill9();
  }
  BackgroundReplay(const BackgroundReplay&) = delete;
  BackgroundReplay& operator=(const BackgroundReplay&) = delete;

  bool Finished() const { return !ReadFile(base_ + ".rc").empty(); }
  // The exit code, waiting up to `timeout`; -1 when still running.
  int Wait(seconds timeout) const {
    auto deadline = SteadyClock::now() + timeout;
    while (!Finished() && SteadyClock::now() < deadline) std::this_thread::sleep_for(milliseconds(100));
    return Finished() ? std::atoi(ReadFile(base_ + ".rc").c_str()) : -1;
  }
  // Waits until stderr shows "phase=NAME"; false after `timeout` or when the run ended first.
  bool WaitForPhase(const std::string& name, seconds timeout) const {
    auto deadline = SteadyClock::now() + timeout;
    while (SteadyClock::now() < deadline) {
      if (Has(Err(), "phase=" + name)) return true;
      if (Finished()) return Has(Err(), "phase=" + name);
      std::this_thread::sleep_for(milliseconds(50));
    }
    return false;
  }
  void Kill9() {
    if (pid_ > 0) kill(pid_, SIGKILL);
    Wait(seconds(10));
  }
  std::string Out() const { return ReadFile(base_ + ".out"); }
  std::string Err() const { return ReadFile(base_ + ".err"); }
  std::string Both() const { return "stdout:\n" + Out() + "\nstderr (tail):\n" + Tail(Err()); }

 private:
  static std::string Tail(const std::string& s) { return s.size() > 3000 ? s.substr(s.size() - 3000) : s; }

  std::string base_;
  int pid_ = 0;
};

// The replay's audit record (the only *.json under DIR/dlq-archive/_audit).
struct Audit {
  std::string text;
  std::string outcome;    // redrive.outcome
  int64_t refailed = -1;  // redrive.refailed
  double paused_s = -1;   // redrive.paused_s
  // messages[] with outcome failed-again: new_message_id -> message_id
  std::map<std::string, std::string> failed_again_new_ids;
};

Audit ReadAudit(const std::string& dir) {
  Audit a;
  fs::path audit = fs::path(dir) / "dlq-archive" / "_audit";
  std::vector<std::string> files;
  if (fs::exists(audit)) {
    for (const auto& e : fs::directory_iterator(audit)) {
      if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path().string());
    }
  }
  EXPECT_EQ(files.size(), 1u) << "audit records under " << audit;
  if (files.empty()) return a;
  a.text = ReadFile(files.back());
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(a.text).get(doc) != simdjson::SUCCESS) {
    ADD_FAILURE() << "audit is not JSON: " << a.text.substr(0, 500);
    return a;
  }
  simdjson::dom::element r;
  if (doc["redrive"].get(r) == simdjson::SUCCESS) {
    std::string_view v;
    if (r["outcome"].get_string().get(v) == simdjson::SUCCESS) a.outcome = std::string(v);
    Optional(r["refailed"].get_int64().get(a.refailed));
    Optional(r["paused_s"].get_double().get(a.paused_s));
  }
  simdjson::dom::array messages;
  if (doc["messages"].get_array().get(messages) == simdjson::SUCCESS) {
    for (simdjson::dom::element m : messages) {
      std::string_view outcome, id, original;
      if (m["outcome"].get_string().get(outcome) == simdjson::SUCCESS && outcome == "failed-again" &&
          m["new_message_id"].get_string().get(id) == simdjson::SUCCESS) {
        if (m["message_id"].get_string().get(original) != simdjson::SUCCESS) original = "";
        a.failed_again_new_ids[std::string(id)] = std::string(original);
      }
    }
  }
  return a;
}

std::string Names(const std::set<std::string>& s) {
  std::string out;
  for (const auto& x : s) out += x + " ";
  return out;
}

// Each of `bodies` processed successfully exactly once, and nothing else.
void ExpectEachConsumedOnce(const Consumer& consumer, const std::set<std::string>& bodies) {
  auto ok = consumer.OkByBody();
  for (const auto& b : bodies) EXPECT_EQ(ok[b], 1) << b;
  EXPECT_EQ(ok.size(), bodies.size());
  EXPECT_TRUE(consumer.FailedIds().empty());
}

// Waits until `pred` holds or `timeout` passes; returns pred().
bool Eventually(const std::function<bool()>& pred, seconds timeout) {
  auto deadline = SteadyClock::now() + timeout;
  while (!pred() && SteadyClock::now() < deadline) std::this_thread::sleep_for(milliseconds(200));
  return pred();
}

class RedriveTest : public ::testing::TestWithParam<std::string> {};

INSTANTIATE_TEST_SUITE_P(StandIns, RedriveTest, ::testing::Values("moto", "fauxqs"),
                         [](const auto& info) { return info.param; });

#define DLQ_REDRIVE_SETUP(base)              \
  DLQ_REQUIRE_STAND_IN(GetParam(), standin); \
  auto svc = Services(standin);              \
  ASSERT_TRUE(svc);                          \
  Queues q = MakeQueues(*svc, base);         \
  ASSERT_FALSE(q.src_url.empty());           \
  std::string dir = TempDir()

// The premise of every scenario: the stand-in moves a message its consumer
// keeps failing to the DLQ after maxReceiveCount (2) receives, with the same
// message id (which is how a re-failure is recognised).
TEST_P(RedriveTest, FauxqsAndMotoMoveAMessageToItsDlqAfterMaxReceiveCount) {
  DLQ_REDRIVE_SETUP("rd-premise");
  SendTyped(*svc, q.src_url, "bad", 0, 3);
  Consumer consumer(standin, q.src_url, dir, "bad");
  ASSERT_TRUE(Eventually([&] { return Depth(*svc, q.dlq_url) == 3; }, seconds(20)))
      << "DLQ holds " << Depth(*svc, q.dlq_url);
  consumer.Stop();
  EXPECT_EQ(Depth(*svc, q.src_url), 0);
  EXPECT_EQ(consumer.FailedIds().size(), 3u);
  ReceiveOptions o;
  o.max_messages = 10;
  o.wait_time_seconds = 1;
  std::set<std::string> in_dlq;
  for (int i = 0; i < 5 && in_dlq.size() < 3; ++i) {
    auto got = svc->sqs().ReceiveMessages(q.dlq_url, o);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    for (const auto& m : *got) in_dlq.insert(m.message_id);
  }
  EXPECT_EQ(in_dlq, consumer.FailedIds());
  fs::remove_all(dir);
}

// The consumer itself: it holds its --rate, picks up a new rate from its
// rate file while running, and deletes only what does not match --fail.
TEST(RedriveConsumer, HoldsItsRateAndFollowsARateChange) {
  DLQ_REQUIRE_STAND_IN("fauxqs", standin);
  auto svc = Services(standin);
  ASSERT_TRUE(svc);
  Queues q = MakeQueues(*svc, "rd-consumer");
  ASSERT_FALSE(q.src_url.empty());
  std::string dir = TempDir();
  SendTyped(*svc, q.src_url, "slow", 0, 40);
  Consumer consumer(standin, q.src_url, dir, "", "5/s");
  std::this_thread::sleep_for(seconds(3));
  size_t slow = consumer.OkByBody().size();
  // 5/s for 3 s, plus the bucket's first token and start-up slack.
  EXPECT_GE(slow, 8u);
  EXPECT_LE(slow, 17u);
  consumer.SetRate("max");
  EXPECT_TRUE(Eventually([&] { return consumer.OkByBody().size() == 40; }, seconds(5)))
      << consumer.OkByBody().size() << " consumed";
  consumer.Stop();
  ExpectEachConsumedOnce(consumer, Bodies("slow", 0, 40));
  EXPECT_EQ(Depth(*svc, q.src_url), 0);
  fs::remove_all(dir);
}

// A canary needs a DLQ to find re-failures in: a destination without a
// RedrivePolicy is refused before anything is sent (exit 2), naming the
// queue and --no-canary.
TEST(RedriveCli, CanaryToAQueueWithoutADlqIsRefusedBeforeSending) {
  DLQ_REQUIRE_STAND_IN("fauxqs", standin);
  auto svc = Services(standin);
  ASSERT_TRUE(svc);
  std::string dlq = UniqueName("rd-nodlq-dlq"), plain = UniqueName("rd-nodlq-to");
  auto dlq_url = svc->sqs().CreateQueue(dlq, {});
  auto plain_url = svc->sqs().CreateQueue(plain, {});
  ASSERT_TRUE(dlq_url.ok() && plain_url.ok());
  SendTyped(*svc, *dlq_url, "order", 0, 5);
  std::string dir = TempDir();
  Archive(standin, dlq, dir);
  auto r = RunShell(
      Bin(standin, "replay", "--from file://" + dir + " --all --to-queue " + plain + " --canary 2 --progress never"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(Has(r.out, plain)) << r.out;
  EXPECT_TRUE(Has(r.out, "--no-canary")) << r.out;
  EXPECT_EQ(Depth(*svc, *plain_url), 0);
  fs::remove_all(dir);
}

// Bug still there: every replayed message fails again. The canary's
// re-failures stop the run (exit 5) before anything past the canary is sent;
// the rest stays in the archive.
TEST_P(RedriveTest, BugStillThereCanaryStopsTheRunFromTheArchive) {
  DLQ_REDRIVE_SETUP("rd-bug");
  SendTyped(*svc, q.dlq_url, "order", 0, 30);
  Archive(standin, q.dlq, dir);
  Consumer consumer(standin, q.src_url, dir, "order");
  BackgroundReplay run(standin, FromArchive(standin, q, dir) + " --all --canary 5 --window 6s", dir, "replay");
  int rc = run.Wait(seconds(60));
  consumer.Stop();
  EXPECT_EQ(rc, 5) << run.Both();
  EXPECT_TRUE(Has(run.Err(), "phase=stopped")) << run.Both();
  EXPECT_LE(consumer.BodiesSeen().size(), 5u) << "exposed beyond the canary";
  EXPECT_EQ(consumer.IdsSeen().size(), consumer.BodiesSeen().size()) << "a message sent twice";
  Audit audit = ReadAudit(dir);
  EXPECT_EQ(audit.outcome, "stopped") << audit.text;
  EXPECT_GE(audit.refailed, 1) << audit.text;
  // Whatever the run reported as failed again, the consumer did fail.
  for (const auto& [id, original] : audit.failed_again_new_ids) EXPECT_EQ(consumer.FailedIds().count(id), 1u) << id;
  fs::remove_all(dir);
}

// The same, live: the messages past the canary are never taken out of the
// DLQ; the canary's are back in it (failed again).
TEST_P(RedriveTest, BugStillThereCanaryStopsTheLiveRunAndLeavesTheRestInTheDlq) {
  DLQ_REDRIVE_SETUP("rd-bug-live");
  SendTyped(*svc, q.dlq_url, "order", 0, 30);
  Consumer consumer(standin, q.src_url, dir, "order");
  BackgroundReplay run(standin, FromQueue(standin, q, dir) + " --canary 5 --window 6s", dir, "replay");
  int rc = run.Wait(seconds(60));
  EXPECT_EQ(rc, 5) << run.Both();
  EXPECT_LE(consumer.BodiesSeen().size(), 5u) << "exposed beyond the canary";
  // The canary's messages fail their second receive and move back: all 30
  // end in the DLQ, none in the source.
  EXPECT_TRUE(Eventually([&] { return Depth(*svc, q.dlq_url) == 30; }, seconds(15)))
      << "DLQ holds " << Depth(*svc, q.dlq_url) << "\n"
      << run.Both();
  consumer.Stop();
  EXPECT_EQ(Depth(*svc, q.src_url), 0);
  EXPECT_EQ(ReadAudit(dir).outcome, "stopped");
  fs::remove_all(dir);
}

// Bug fixed: canary, every ramp step and the final window pass; each
// message is consumed exactly once and nothing is back in the DLQ.
TEST_P(RedriveTest, BugFixedRampCompletesAndEveryMessageIsConsumedOnce) {
  DLQ_REDRIVE_SETUP("rd-fixed");
  SendTyped(*svc, q.dlq_url, "order", 0, 40);
  Archive(standin, q.dlq, dir);
  Consumer consumer(standin, q.src_url, dir, "");
  BackgroundReplay run(standin, FromArchive(standin, q, dir) + " --all --canary 5 --window 4s --check 2s", dir,
                       "replay");
  int rc = run.Wait(seconds(90));
  EXPECT_EQ(rc, 0) << run.Both();
  EXPECT_TRUE(Has(run.Err(), "phase=ramp")) << run.Both();
  EXPECT_TRUE(Has(run.Err(), "phase=final-check")) << run.Both();
  EXPECT_TRUE(Eventually([&] { return consumer.OkByBody().size() == 40; }, seconds(10)));
  consumer.Stop();
  ExpectEachConsumedOnce(consumer, Bodies("order", 0, 40));
  EXPECT_EQ(Depth(*svc, q.dlq_url), 0);
  EXPECT_EQ(Depth(*svc, q.src_url), 0);
  Audit audit = ReadAudit(dir);
  EXPECT_EQ(audit.outcome, "done") << audit.text;
  EXPECT_EQ(audit.refailed, 0) << audit.text;
  fs::remove_all(dir);
}

TEST_P(RedriveTest, BugFixedLiveRampEmptiesTheDlqAndEveryMessageIsConsumedOnce) {
  DLQ_REDRIVE_SETUP("rd-fixed-live");
  SendTyped(*svc, q.dlq_url, "order", 0, 40);
  Consumer consumer(standin, q.src_url, dir, "");
  BackgroundReplay run(standin, FromQueue(standin, q, dir) + " --canary 5 --window 4s --check 2s", dir, "replay");
  int rc = run.Wait(seconds(90));
  EXPECT_EQ(rc, 0) << run.Both();
  EXPECT_TRUE(Eventually([&] { return consumer.OkByBody().size() == 40; }, seconds(10)));
  consumer.Stop();
  ExpectEachConsumedOnce(consumer, Bodies("order", 0, 40));
  EXPECT_EQ(Depth(*svc, q.dlq_url), 0);
  EXPECT_EQ(Depth(*svc, q.src_url), 0);
  EXPECT_EQ(ReadAudit(dir).outcome, "done");
  fs::remove_all(dir);
}

// Fixed for some types only: the archive holds 20 "a" (fixed) then 20 "b"
// (still failing) records, in two objects whose keys sort a before b. With
// --ramp 25,50,75,100 the canary (5) and the steps to 10 and 20 send only
// a's; the step to 30 sends 10 b's, whose re-failures exceed the bound
// (1% of 30, i.e. 0): the run stops there and reports exactly those 10 b's;
// the other 10 b's are never sent.
TEST_P(RedriveTest, FixedForSomeTypesStopsAtTheFirstBadStepAndReportsExactlyTheMessagesThatFailed) {
  DLQ_REDRIVE_SETUP("rd-types");
  SendTyped(*svc, q.dlq_url, "a", 0, 20);
  Archive(standin, q.dlq, dir);
  std::this_thread::sleep_for(milliseconds(1100));  // the next object's key has a later {hhmmss}
  SendTyped(*svc, q.dlq_url, "b", 20, 40);
  Archive(standin, q.dlq, dir);
  Consumer consumer(standin, q.src_url, dir, R"("type":"b")");
  BackgroundReplay run(standin,
                       FromArchive(standin, q, dir) + " --all --canary 5 --ramp 25,50,75,100 --window 5s --check 5s",
                       dir, "replay");
  int rc = run.Wait(seconds(120));
  consumer.Stop();
  EXPECT_EQ(rc, 5) << run.Both();
  EXPECT_TRUE(Has(run.Err(), "step=3/4")) << run.Both();
  EXPECT_FALSE(Has(run.Err(), "step=4/4")) << run.Both();
  // The step that breached is the one reported: its own messages failed.
  EXPECT_TRUE(Has(run.Err(), "failed again in ramp step 3 of 4")) << run.Both();
  EXPECT_FALSE(Has(run.Err(), "of them sent in")) << run.Both();
  // All 20 a's and 10 of the b's (the archive's line order within an
  // object is the order the archiver received them, not the send order).
  std::set<std::string> seen = consumer.BodiesSeen(), a = Bodies("a", 0, 20), b_seen;
  for (const auto& body : a) EXPECT_EQ(seen.count(body), 1u) << body;
  for (const auto& body : seen) {
    if (Has(body, R"("type":"b")")) b_seen.insert(body);
  }
  EXPECT_EQ(b_seen.size(), 10u) << "the other 10 b's must stay in the archive: " << Names(b_seen);
  EXPECT_EQ(seen.size(), a.size() + b_seen.size());
  // Every b sent failed, and the run reports exactly those (never an a):
  // after the breach it sends nothing and looks on until one window after
  // its last send, so it finds the b's that fail after the first look.
  EXPECT_EQ(consumer.FailedIds().size(), 10u);
  Audit audit = ReadAudit(dir);
  EXPECT_EQ(audit.outcome, "stopped") << audit.text;
  EXPECT_EQ(audit.refailed, 10) << audit.text;
  std::set<std::string> reported;
  for (const auto& [new_id, original_id] : audit.failed_again_new_ids) reported.insert(new_id);
  EXPECT_EQ(reported, consumer.FailedIds()) << audit.text;
  for (const auto& [new_id, original_id] : audit.failed_again_new_ids) {
    EXPECT_EQ(consumer.FailedIds().count(new_id), 1u) << "reported but never failed: " << new_id;
    EXPECT_TRUE(Has(run.Out() + run.Err(), original_id) || Has(run.Out() + run.Err(), new_id))
        << "not in the run's report: " << original_id << " / " << new_id << "\n"
        << run.Both();
  }
  fs::remove_all(dir);
}

// Issue 37: with the default --check (the whole processing window) a ramp
// step whose messages fail again stops the run before the next step is
// sent, and the report names that step. The canary (4 a's) is clean; ramp
// step 1 (records 5..10 of 40) holds 3 b's, over the bound of 2; steps 2
// and 3 are never sent.
TEST_P(RedriveTest, AStepsReFailuresStopTheRunBeforeTheNextStepIsSent) {
  DLQ_REDRIVE_SETUP("rd-judged");
  const std::vector<std::tuple<std::string, int, int>> objects = {
      {"a", 0, 4}, {"b", 4, 7}, {"a", 7, 10}, {"a", 10, 20}, {"a", 20, 40}};
  for (const auto& [type, from, to] : objects) {
    SendTyped(*svc, q.dlq_url, type, from, to);
    Archive(standin, q.dlq, dir);
    std::this_thread::sleep_for(milliseconds(1100));  // the next object's key has a later {hhmmss}
  }
  Consumer consumer(standin, q.src_url, dir, R"("type":"b")");
  BackgroundReplay run(
      standin,
      FromArchive(standin, q, dir) + " --all --canary 4 --ramp 25,50,100 --canary-max-refailures 2 --max-refailures 2",
      dir, "replay");
  int rc = run.Wait(seconds(150));
  consumer.Stop();
  EXPECT_EQ(rc, 5) << run.Both();
  EXPECT_TRUE(Has(run.Err(), "3 of 10 messages sent failed again in ramp step 1 of 3 (bound 2)")) << run.Both();
  EXPECT_FALSE(Has(run.Err(), "step=2/3")) << run.Both();
  EXPECT_EQ(consumer.BodiesSeen().size(), 10u) << Names(consumer.BodiesSeen());  // the canary and step 1 only
  EXPECT_EQ(consumer.FailedIds().size(), 3u);
  // The summary's buckets add up to the 40 selected.
  EXPECT_TRUE(Has(run.Out(), "selected 40, sent 7, failed 0, failed again 3, not sent 30 (still in the archive)"))
      << run.Both();
  fs::remove_all(dir);
}

// Slow consumer: 100 messages at --rate 20/s into a consumer doing 2/s, with
// --max-backlog 20. Sampled every 200 ms, the source's visible backlog never
// goes past the bound (the guard projects the count between its samples,
// counting what the engine holds); without the bound it would reach ~90.
// When the consumer speeds up, the run resumes and finishes at least twice
// as fast as the slow consumer could have.
TEST_P(RedriveTest, SlowConsumerBacklogStaysUnderTheBoundAndTheRateRecovers) {
  DLQ_REDRIVE_SETUP("rd-slow");
  constexpr int kMessages = 100, kBound = 20, kRate = 20, kSlow = 2;
  SendTyped(*svc, q.dlq_url, "order", 0, kMessages);
  Archive(standin, q.dlq, dir);
  Consumer consumer(standin, q.src_url, dir, "", std::to_string(kSlow) + "/s");
  BackgroundReplay run(standin,
                       FromArchive(standin, q, dir) + fmt::format(" --all --canary 5 --ramp 100 --window 3s --check 2s "
                                                                  "--rate {}/s --max-backlog {}",
                                                                  kRate, kBound),
                       dir, "replay");
  int64_t peak = 0;
  auto sample_until = [&](const std::function<bool()>& stop, seconds timeout) {
    auto deadline = SteadyClock::now() + timeout;
    while (!stop() && !run.Finished() && SteadyClock::now() < deadline) {
      peak = std::max(peak, Depth(*svc, q.src_url, false));
      std::this_thread::sleep_for(milliseconds(200));
    }
  };
  // Slow phase: until the run has paused and stayed paused a few seconds.
  sample_until([&] { return Has(run.Err(), "phase=paused"); }, seconds(40));
  ASSERT_TRUE(Has(run.Err(), "phase=paused")) << run.Both();
  sample_until([] { return false; }, seconds(4));
  size_t consumed_at_speedup = consumer.OkByBody().size();
  auto speedup = SteadyClock::now();
  consumer.SetRate("max");
  sample_until([] { return false; }, seconds(60));
  int rc = run.Wait(seconds(5));
  double after_speedup = std::chrono::duration<double>(SteadyClock::now() - speedup).count();
  EXPECT_EQ(rc, 0) << run.Both();
  EXPECT_LE(peak, kBound) << run.Both();
  RecordProperty("backlog_peak", static_cast<int>(peak));
  double slow_seconds = static_cast<double>(kMessages - consumed_at_speedup) / kSlow;
  // The final window (3 s) is part of the run after the speed-up.
  EXPECT_LT(after_speedup, slow_seconds / 2 + 3) << "consumed at speed-up: " << consumed_at_speedup;
  EXPECT_TRUE(Eventually([&] { return consumer.OkByBody().size() == kMessages; }, seconds(10)));
  consumer.Stop();
  ExpectEachConsumedOnce(consumer, Bodies("order", 0, kMessages));
  Audit audit = ReadAudit(dir);
  EXPECT_GT(audit.paused_s, 0) << audit.text;
  fs::remove_all(dir);
}

// kill -9 in a phase, then the same command again: the second run resumes
// from --checkpoint, sends nothing twice and still runs its checks.
struct KillCase {
  std::string phase;  // killed when stderr first shows phase=<phase>
  std::string fail;   // consumer's --fail
  std::string rate;   // consumer's rate before the kill ("0": stopped)
  std::string flags;  // replay flags besides the source and destination
  int messages;       // in the archive
  int expected_rc;    // of the resumed run
  bool live = false;  // --from-queue DLQ instead of the archive
};

// Returns the bodies the consumer saw over both runs.
std::set<std::string> RunKillAndResume(const StandIn& standin, AwsServices& svc, const Queues& q,
                                       const std::string& dir, const KillCase& c) {
  SendTyped(svc, q.dlq_url, "order", 0, c.messages);
  if (::testing::Test::HasFatalFailure()) return {};
  if (!c.live) Archive(standin, q.dlq, dir);
  Consumer consumer(standin, q.src_url, dir, c.fail, c.rate);
  std::string args = (c.live ? FromQueue(standin, q, dir) : FromArchive(standin, q, dir) + " --all") +
                     " --checkpoint " + dir + "/checkpoint " + c.flags;
  {
    BackgroundReplay first(standin, args, dir, "first");
    EXPECT_TRUE(first.WaitForPhase(c.phase, seconds(60))) << first.Both();
    std::this_thread::sleep_for(milliseconds(700));
    EXPECT_FALSE(first.Finished()) << first.Both();
    first.Kill9();
  }
  consumer.SetRate("max");
  BackgroundReplay second(standin, args, dir, "second");
  int rc = second.Wait(seconds(90));
  EXPECT_EQ(rc, c.expected_rc) << second.Both();
  if (c.expected_rc == 0) {
    // Checks not skipped: the resumed run still waits its final window.
    EXPECT_TRUE(Has(second.Err(), "phase=final-check")) << second.Both();
    EXPECT_TRUE(Eventually([&] { return consumer.OkByBody().size() == static_cast<size_t>(c.messages); }, seconds(10)));
    consumer.Stop();
    ExpectEachConsumedOnce(consumer, Bodies("order", 0, c.messages));
  } else {
    consumer.Stop();
  }
  // Nothing resent: a message sent again would reach the consumer under a new id.
  EXPECT_EQ(consumer.IdsSeen().size(), consumer.BodiesSeen().size()) << "a message sent twice";
  return consumer.BodiesSeen();
}

TEST_P(RedriveTest, KillDuringCanaryResumesWithoutResendingAndStillWaitsTheWindow) {
  DLQ_REDRIVE_SETUP("rd-kill-canary");
  RunKillAndResume(standin, *svc, q, dir,
                   {"canary", "", "max", "--canary 10 --rate 2/s --window 4s --check 2s", 20, 0});
  fs::remove_all(dir);
}

// Killed while the canary's window runs, with a consumer that still fails
// everything: the resumed run must still find the canary's re-failures and
// stop (exit 5) without sending more than the canary.
TEST_P(RedriveTest, KillDuringCanaryWindowResumesAndStillCatchesTheRefailures) {
  DLQ_REDRIVE_SETUP("rd-kill-wait");
  auto seen = RunKillAndResume(standin, *svc, q, dir, {"waiting", "order", "max", "--canary 5 --window 6s", 20, 5});
  EXPECT_LE(seen.size(), 5u) << "exposed beyond the canary";
  fs::remove_all(dir);
}

// The same, live: the resumed run still stops, and every message is in the
// DLQ again (the canary's failed back, the rest never left or was released).
TEST_P(RedriveTest, KillDuringLiveCanaryWindowResumesAndStillCatchesTheRefailures) {
  DLQ_REDRIVE_SETUP("rd-kill-live");
  auto seen =
      RunKillAndResume(standin, *svc, q, dir, {"waiting", "order", "max", "--canary 5 --window 6s", 20, 5, true});
  EXPECT_LE(seen.size(), 5u) << "exposed beyond the canary";
  EXPECT_TRUE(Eventually([&] { return Depth(*svc, q.dlq_url) == 20; }, seconds(15)))
      << "DLQ holds " << Depth(*svc, q.dlq_url);
  fs::remove_all(dir);
}

TEST_P(RedriveTest, KillDuringRampResumesWithoutResending) {
  DLQ_REDRIVE_SETUP("rd-kill-ramp");
  RunKillAndResume(standin, *svc, q, dir,
                   {"ramp", "", "max", "--canary 5 --ramp 50,100 --rate 5/s --window 4s --check 2s", 40, 0});
  fs::remove_all(dir);
}

// The consumer is stopped, so after the canary the backlog (5) is over the
// bound (4) and the ramp pauses; killed there, the resumed run finds the
// consumer back and finishes.
TEST_P(RedriveTest, KillWhilePausedForBacklogResumesWithoutResending) {
  DLQ_REDRIVE_SETUP("rd-kill-paused");
  RunKillAndResume(standin, *svc, q, dir,
                   {"paused", "", "0", "--canary 5 --ramp 100 --max-backlog 4 --window 3s --check 2s", 20, 0});
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dlq::it
