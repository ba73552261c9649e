// `dlq-archive replay` end to end: messages sent by boto3 are archived with
// the archiver, replayed with the binary, and received again with boto3,
// comparing body, attributes and MD5s. On fauxqs (fast SQS, file:// archive)
// and moto (FIFO order per group, redrive sources for --to-source). Also:
// kill -9 during a replay and resume (no loss, duplicates within one batch),
// --transform, the audit record, a missing queue (nothing sent), and the live
// --from-queue form.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "daemon_process.h"
#include "harness.h"
#include "query/scan.h"
#include "s3/local_object_store.h"
#include "sqs/md5.h"

namespace dlq::it {
namespace {

namespace fs = std::filesystem;

struct Received {
  std::string body, md5_of_body, body_md5, md5_of_message_attributes, group, dedup;
  std::map<std::string, std::string> attrs;  // name -> DataType + value (base64 for binary)
};

std::string ArchiveDir() {
  std::string d = "/tmp/dlq-replay-it-" + RandomHex(4);
  fs::create_directories(d);
  return d;
}

std::string Bin(const StandIn& s, const std::string& command, const std::string& args) {
  return s.ShellEnv() + DLQ_BINARY + " " + command + " --endpoint-url " + s.endpoint() + " " + args;
}

// Parses receive_all.py / send_poison.py output.
std::vector<Received> ParseMessages(const std::string& json) {
  std::vector<Received> out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json).get(doc) != simdjson::SUCCESS) {
    ADD_FAILURE() << "not JSON: " << json.substr(0, 500);
    return out;
  }
  for (simdjson::dom::element m : doc.get_array()) {
    Received r;
    auto str = [&](const char* k) {
      std::string_view v;
      return m[k].get_string().get(v) == simdjson::SUCCESS ? std::string(v) : std::string();
    };
    r.body = str("body");
    r.md5_of_body = str("md5_of_body");
    r.body_md5 = str("body_md5");
    r.md5_of_message_attributes = str("md5_of_message_attributes");
    r.group = str("message_group_id");
    r.dedup = str("message_deduplication_id");
    simdjson::dom::object attrs;
    if (m["message_attributes"].get_object().get(attrs) == simdjson::SUCCESS) {
      for (auto [name, v] : attrs) r.attrs[std::string(name)] = std::string(simdjson::minify(v));
    }
    simdjson::dom::object sys;
    if (m["attributes"].get_object().get(sys) == simdjson::SUCCESS) {
      std::string_view v;
      if (r.group.empty() && sys["MessageGroupId"].get_string().get(v) == simdjson::SUCCESS) r.group = std::string(v);
      if (r.dedup.empty() && sys["MessageDeduplicationId"].get_string().get(v) == simdjson::SUCCESS) {
        r.dedup = std::string(v);
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<Received> ReceiveAll(const StandIn& s, const std::string& url, const std::string& python = "python3") {
  auto r = RunShell(s.ShellEnv() + python + " " + RepoRoot() + "/tests/interop/receive_all.py --endpoint-url " +
                        s.endpoint() + " --queue-url " + url + " --delete --max 100000 --idle 2",
                    false);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return ParseMessages(r.out);
}

std::string SendPoison(const StandIn& s, const std::string& url, const std::string& flags) {
  auto r = RunShell(s.ShellEnv() + "python3 " + RepoRoot() + "/tests/interop/send_poison.py --endpoint-url " +
                        s.endpoint() + " --queue-url " + url + " " + flags,
                    false);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return r.out;
}

std::string Archive(const StandIn& s, const std::string& queue, const std::string& dir) {
  auto r =
      RunShell(Bin(s, "archive", "--queue " + queue + " --to file://" + dir + " --progress never --log-level warn"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return r.out;
}

std::vector<std::string> AuditFiles(const std::string& dir) {
  std::vector<std::string> out;
  fs::path audit = fs::path(dir) / "dlq-archive" / "_audit";
  if (!fs::exists(audit)) return out;
  for (const auto& e : fs::directory_iterator(audit)) {
    // Records only: the replay ledger lives in _audit/sent/ and _audit/index/.
    if (e.is_regular_file() && e.path().extension() == ".json") out.push_back(e.path().string());
  }
  return out;
}

void SendPlain(AwsServices& svc, const std::string& url, const std::string& prefix, int n) {
  for (int i = 0; i < n; i += 10) {
    std::vector<SendEntry> batch;
    for (int j = i; j < std::min(n, i + 10); ++j) {
      SendEntry e;
      e.id = "e" + std::to_string(j - i);
      e.body = prefix + " " + std::to_string(j);
      e.message_attributes["n"] = {"Number", std::to_string(j), ""};
      batch.push_back(std::move(e));
    }
    auto r = svc.sqs().SendMessageBatch(url, batch);
    ASSERT_TRUE(r.ok() && r->failed.empty()) << r.status().ToString();
  }
}

TEST(ReplayCli, FauxqsReplaysToAFreshQueueWithBodyAttributesAndMd5sIntact) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  std::string dlq = UniqueName("rp-dlq");
  std::string dlq_url = *svc->sqs().CreateQueue(dlq, {});
  auto sent = ParseMessages(SendPoison(fauxqs, dlq_url, "--bmp-only"));
  ASSERT_FALSE(sent.empty());
  std::string dir = ArchiveDir();
  Archive(fauxqs, dlq, dir);
  std::string fresh = UniqueName("rp-fresh");
  std::string fresh_url = *svc->sqs().CreateQueue(fresh, {});

  auto r = RunShell(
      Bin(fauxqs, "replay", "--from file://" + dir + " --queue " + dlq + " --to-queue " + fresh + " --progress never"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("sent " + std::to_string(sent.size())), std::string::npos) << r.out;

  auto got = ReceiveAll(fauxqs, fresh_url);
  ASSERT_EQ(got.size(), sent.size());
  std::map<std::string, const Received*> by_body;
  for (const Received& g : got) by_body[g.body] = &g;
  for (const Received& s : sent) {
    auto it = by_body.find(s.body);
    ASSERT_NE(it, by_body.end()) << "missing: " << s.body.substr(0, 60);
    EXPECT_EQ(it->second->md5_of_body, s.body_md5);
    EXPECT_EQ(it->second->md5_of_message_attributes, s.md5_of_message_attributes);
    EXPECT_EQ(it->second->attrs, s.attrs);
  }
  // The audit record sits beside the archive and names every id sent.
  auto audits = AuditFiles(dir);
  ASSERT_EQ(audits.size(), 1u);
  std::string audit = ReadFile(audits[0]);
  EXPECT_NE(audit.find("\"caller_arn\":\"arn:"), std::string::npos) << audit;
  EXPECT_NE(audit.find("\"destination\":\"" + fresh + "\""), std::string::npos) << audit;
  EXPECT_NE(audit.find("\"sent\":" + std::to_string(sent.size())), std::string::npos) << audit;
  EXPECT_NE(audit.find("\"filter\":"), std::string::npos) << audit;
  // A search of the archive must not trip over the audit record: replaying
  // again reads no unreadable object (exit 0, not 3).
  auto again = RunShell(
      Bin(fauxqs, "replay",
          "--from file://" + dir + " --queue " + dlq + " --to-queue " + fresh + " --dry-run --progress never"));
  EXPECT_EQ(again.exit_code, 0) << again.out;
  EXPECT_EQ(AuditFiles(dir).size(), 1u);  // a dry run writes none
  fs::remove_all(dir);
}

TEST(ReplayCli, MissingQueueFailsBeforeAnythingIsSent) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  std::string dlq = UniqueName("rp-miss-dlq");
  std::string dlq_url = *svc->sqs().CreateQueue(dlq, {});
  SendPlain(*svc, dlq_url, "m", 3);
  std::string dir = ArchiveDir();
  Archive(fauxqs, dlq, dir);
  auto r =
      RunShell(Bin(fauxqs, "replay",
                   "--from file://" + dir + " --to-queue no-such-queue-" + RandomHex(3) + " --all --progress never"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("does not exist"), std::string::npos) << r.out;
  EXPECT_TRUE(AuditFiles(dir).empty());
  fs::remove_all(dir);
}

TEST(ReplayCli, TransformEditsAndResends) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  std::string dlq = UniqueName("rp-tr-dlq");
  std::string dlq_url = *svc->sqs().CreateQueue(dlq, {});
  SendPlain(*svc, dlq_url, "poison", 5);
  std::string dir = ArchiveDir();
  Archive(fauxqs, dlq, dir);
  std::string fresh = UniqueName("rp-tr");
  std::string fresh_url = *svc->sqs().CreateQueue(fresh, {});
  auto r = RunShell(Bin(fauxqs, "replay",
                        "--from file://" + dir + " --to-queue " + fresh +
                            " --all --transform \"sed -u 's/poison/fixed/'\" --progress never"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto got = ReceiveAll(fauxqs, fresh_url);
  std::set<std::string> bodies;
  for (const auto& g : got) bodies.insert(g.body);
  EXPECT_EQ(bodies, (std::set<std::string>{"fixed 0", "fixed 1", "fixed 2", "fixed 3", "fixed 4"}));
  // A transform that garbles its output stops the run: nothing is sent.
  auto bad = RunShell(Bin(fauxqs, "replay",
                          "--from file://" + dir + " --to-queue " + fresh + " --all --transform 'echo nonsense; cat' " +
                              "--progress never"));
  EXPECT_EQ(bad.exit_code, 1) << bad.out;
  EXPECT_NE(bad.out.find("not an archive record"), std::string::npos) << bad.out;
  EXPECT_TRUE(ReceiveAll(fauxqs, fresh_url).empty());
  fs::remove_all(dir);
}

TEST(ReplayCli, KilledReplayResumesWithoutLossAndAtMostOneBatchTwice) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  constexpr int kMessages = 1500;
  std::string dlq = UniqueName("rp-kill-dlq");
  std::string dlq_url = *svc->sqs().CreateQueue(dlq, {});
  SendPlain(*svc, dlq_url, "msg", kMessages);
  std::string dir = ArchiveDir();
  Archive(fauxqs, dlq, dir);
  std::string fresh = UniqueName("rp-kill");
  std::string fresh_url = *svc->sqs().CreateQueue(fresh, {});
  const std::string args =
      "--from file://" + dir + " --to-queue " + fresh + " --all --checkpoint " + dir + "/replay.ckpt --progress never";
  auto killed =
      RunShell(Bin(fauxqs, "replay", args + " --rate 500/s") + " & pid=$!; sleep 1.5; kill -9 $pid; wait $pid");
  EXPECT_EQ(killed.exit_code, 137) << killed.out;
  ASSERT_TRUE(fs::exists(dir + "/replay.ckpt"));
  auto resumed = RunShell(Bin(fauxqs, "replay", args));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  std::smatch skipped;
  ASSERT_TRUE(std::regex_search(resumed.out, skipped, std::regex("skipped ([0-9]+)"))) << resumed.out;
  EXPECT_GT(std::stoi(skipped[1]), 0) << resumed.out;  // the kill came mid-run and the rerun resumed

  auto got = ReceiveAll(fauxqs, fresh_url);
  std::map<std::string, int> copies;
  for (const auto& g : got) ++copies[g.body];
  EXPECT_EQ(copies.size(), static_cast<size_t>(kMessages));    // none lost
  EXPECT_LE(got.size(), static_cast<size_t>(kMessages) + 10);  // duplicates: at most the batch in flight
  EXPECT_GT(got.size(), 0u);
  // The same checkpoint with another filter is refused.
  auto other = RunShell(Bin(fauxqs, "replay", args + " --body-contains 'msg 1'"));
  EXPECT_EQ(other.exit_code, 2) << other.out;
  EXPECT_NE(other.out.find("another replay"), std::string::npos) << other.out;
  fs::remove_all(dir);
}

// SIGTERM while sending: the batch in flight finishes, the checkpoint and the
// audit record are written, exit 130; a second signal ends the process at once;
// the rerun sends exactly the rest (a graceful stop leaves no duplicate).
TEST(ReplayCli, SigtermWhileSendingExits130AndTheResumeSendsTheRestExactlyOnce) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  constexpr int kMessages = 600;
  std::string dlq = UniqueName("rp-term-dlq");
  std::string dlq_url = *svc->sqs().CreateQueue(dlq, {});
  SendPlain(*svc, dlq_url, "msg", kMessages);
  std::string dir = ArchiveDir();
  Archive(fauxqs, dlq, dir);
  std::string fresh = UniqueName("rp-term");
  std::string fresh_url = *svc->sqs().CreateQueue(fresh, {});
  const std::string args =
      "--from file://" + dir + " --to-queue " + fresh + " --all --checkpoint " + dir + "/replay.ckpt --progress never";
  auto stopped =
      RunShell(Bin(fauxqs, "replay", args + " --rate 200/s") + " & pid=$!; sleep 1.5; kill -TERM $pid; wait $pid");
  EXPECT_EQ(stopped.exit_code, 130) << stopped.out;
  EXPECT_TRUE(Has(stopped.out, "stopped by a signal")) << stopped.out;
  ASSERT_TRUE(fs::exists(dir + "/replay.ckpt"));
  EXPECT_EQ(AuditFiles(dir).size(), 1u) << "the stopped run writes its audit record";

  // Two signals in a row: the second one does not wait for the batch in flight.
  auto twice = RunShell(Bin(fauxqs, "replay", args + " --rate 20/s") +
                        " & pid=$!; sleep 1; kill -TERM $pid; kill -INT $pid; wait $pid");
  EXPECT_EQ(twice.exit_code, 130) << twice.out;

  auto resumed = RunShell(Bin(fauxqs, "replay", args));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  std::smatch skipped;
  ASSERT_TRUE(std::regex_search(resumed.out, skipped, std::regex("skipped ([0-9]+)"))) << resumed.out;
  EXPECT_GT(std::stoi(skipped[1]), 0) << resumed.out;

  auto got = ReceiveAll(fauxqs, fresh_url);
  std::map<std::string, int> copies;
  for (const auto& g : got) ++copies[g.body];
  EXPECT_EQ(copies.size(), static_cast<size_t>(kMessages));  // none lost
  // A graceful stop checkpoints what it sent; only the second, immediate exit
  // may leave its one batch in flight to be sent again.
  EXPECT_LE(got.size(), static_cast<size_t>(kMessages) + 10);
  fs::remove_all(dir);
}

// SIGTERM during a live move: what the run holds is released at once (visible
// again without waiting out the 5-minute visibility), nothing is lost, and no
// message is both moved and left behind.
TEST(ReplayCli, SigtermDuringALiveMoveReleasesWhatItHoldsAndLosesNothing) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  constexpr int kMessages = 300;
  std::string dlq = UniqueName("rp-liveterm-dlq");
  std::string dlq_url = *svc->sqs().CreateQueue(dlq, {});
  SendPlain(*svc, dlq_url, "move", kMessages);
  std::string fresh = UniqueName("rp-liveterm");
  std::string fresh_url = *svc->sqs().CreateQueue(fresh, {});
  std::string dir = ArchiveDir();
  auto stopped = RunShell(
      Bin(fauxqs, "replay",
          "--from-queue " + dlq + " --to-queue " + fresh + " --rate 50/s --progress never --audit-to file://" + dir) +
      " & pid=$!; sleep 1.5; kill -TERM $pid; wait $pid");
  EXPECT_EQ(stopped.exit_code, 130) << stopped.out;
  EXPECT_EQ(AuditFiles(dir).size(), 1u);

  auto moved = ReceiveAll(fauxqs, fresh_url);
  auto left = ReceiveAll(fauxqs, dlq_url);
  EXPECT_GT(moved.size(), 0u) << stopped.out;
  EXPECT_GT(left.size(), 0u) << "the stop came before the end: " << stopped.out;
  std::set<std::string> moved_bodies, left_bodies;
  for (const auto& m : moved) moved_bodies.insert(m.body);
  for (const auto& m : left) left_bodies.insert(m.body);
  EXPECT_EQ(moved_bodies.size(), moved.size()) << "sent twice";
  std::set<std::string> all = moved_bodies;
  all.insert(left_bodies.begin(), left_bodies.end());
  EXPECT_EQ(all.size(), static_cast<size_t>(kMessages)) << "lost, or still held invisible after the stop";
  EXPECT_EQ(moved_bodies.size() + left_bodies.size(), static_cast<size_t>(kMessages)) << "moved and also left";
  fs::remove_all(dir);
}

TEST(ReplayCli, LiveFormMovesOnlySelectedMessagesSendFirstDeleteAfter) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  std::string dlq = UniqueName("rp-live-dlq");
  std::string dlq_url = *svc->sqs().CreateQueue(dlq, {});
  SendPlain(*svc, dlq_url, "move", 12);
  SendPlain(*svc, dlq_url, "keep", 8);
  std::string fresh = UniqueName("rp-live");
  std::string fresh_url = *svc->sqs().CreateQueue(fresh, {});
  std::string dir = ArchiveDir();
  auto r = RunShell(Bin(fauxqs, "replay",
                        "--from-queue " + dlq + " --body-contains move --to-queue " + fresh + " --audit-to file://" +
                            dir + " --progress never"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto moved = ReceiveAll(fauxqs, fresh_url);
  auto left = ReceiveAll(fauxqs, dlq_url);
  EXPECT_EQ(moved.size(), 12u);
  for (const auto& m : moved) EXPECT_EQ(m.body.rfind("move", 0), 0u) << m.body;
  EXPECT_EQ(left.size(), 8u);
  for (const auto& m : left) EXPECT_EQ(m.body.rfind("keep", 0), 0u) << m.body;
  EXPECT_EQ(AuditFiles(dir).size(), 1u);
  fs::remove_all(dir);
}

// ---- live form: a pass examines every message present at its start.

// Sends n messages, the first `matching` with tenant=acme, the rest globex
// (FIFO: each in its own group).
void FillTenants(AwsServices& svc, const std::string& url, bool fifo, int n, int matching) {
  for (int i = 0; i < n; i += 10) {
    std::vector<SendEntry> batch;
    for (int j = i; j < std::min(n, i + 10); ++j) {
      SendEntry e;
      e.id = "e" + std::to_string(j - i);
      e.body = "order " + std::to_string(j);
      e.message_attributes["tenant"] = {"String", j < matching ? "acme" : "globex", ""};
      if (fifo) {
        e.message_group_id = "g" + std::to_string(j);
        e.message_deduplication_id = "d" + std::to_string(j);
      }
      batch.push_back(std::move(e));
    }
    auto r = svc.sqs().SendMessageBatch(url, batch);
    ASSERT_TRUE(r.ok() && r->failed.empty()) << r.status().ToString();
  }
}

int64_t Visible(AwsServices& svc, const std::string& url) {
  auto a = svc.sqs().GetQueueAttributes(url, {"ApproximateNumberOfMessages"});
  return a.ok() ? std::stoll(a->at("ApproximateNumberOfMessages")) : -1;
}

// One live pass with `percent` of n messages matching: exit 0, exact counts
// of distinct messages in the summary, the selected ones in the target once
// each, the rest visible in the DLQ at once (released together).
void LivePassMovesExactlyTheMatchingOnes(const StandIn& s, AwsServices& svc, bool fifo, int n, int percent) {
  SCOPED_TRACE(fmt::format("{} messages, {}% matching, {}", n, percent, fifo ? "FIFO" : "standard"));
  const int matching = n * percent / 100;
  const std::string suffix = fifo ? ".fifo" : "";
  const std::map<std::string, std::string> attrs =
      fifo ? std::map<std::string, std::string>{{"FifoQueue", "true"}} : std::map<std::string, std::string>{};
  std::string dlq = UniqueName("rp-lp-dlq") + suffix;
  std::string dlq_url = *svc.sqs().CreateQueue(dlq, attrs);
  std::string target = UniqueName("rp-lp") + suffix;
  std::string target_url = *svc.sqs().CreateQueue(target, attrs);
  FillTenants(svc, dlq_url, fifo, n, matching);
  std::string dir = ArchiveDir();
  auto r = RunShell(Bin(s, "replay",
                        "--from-queue " + dlq + " --attr tenant=acme --to-queue " + target + " --audit-to file://" +
                            dir + " --progress never --log-level warn"),
                    /*merge_stderr=*/false);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(fmt::format("selected {}, sent {}, failed 0", matching, matching)), std::string::npos) << r.out;
  EXPECT_NE(
      r.out.find(fmt::format("DLQ: examined {} of ~{} present at the start, not selected {}", n, n, n - matching)),
      std::string::npos)
      << r.out;
  EXPECT_EQ(Visible(svc, dlq_url), n - matching) << "released together, visible at once";
  auto moved = ReceiveAll(s, target_url);
  std::set<std::string> bodies;
  for (const auto& m : moved) bodies.insert(m.body);
  EXPECT_EQ(moved.size(), static_cast<size_t>(matching));
  EXPECT_EQ(bodies.size(), static_cast<size_t>(matching));
  for (const auto& b : bodies) EXPECT_LT(std::stoi(b.substr(6)), matching) << b;
  auto left = ReceiveAll(s, dlq_url);
  EXPECT_EQ(left.size(), static_cast<size_t>(n - matching));
  fs::remove_all(dir);
}

// Each stand-in and queue kind: one pass over many messages with a quarter of
// them matching (the pass must keep receiving past moto's random subsets, and
// sends and deletes some while it holds and then releases the rest), and the
// edges (nothing and everything matching) on a few messages: what the edges
// check (the summary's zero counts, no release, no send) does not depend on
// how many messages there are. Every variant asserts the whole property.
TEST(ReplayCli, MotoLivePassExaminesEveryMessageOfRandomSubsetReceives) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  for (int percent : {0, 100}) LivePassMovesExactlyTheMatchingOnes(moto, *svc, false, 10, percent);
  LivePassMovesExactlyTheMatchingOnes(moto, *svc, false, 200, 25);
}

TEST(ReplayCli, MotoFifoLivePassExaminesEveryGroup) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  for (int percent : {0, 100}) LivePassMovesExactlyTheMatchingOnes(moto, *svc, true, 10, percent);
  LivePassMovesExactlyTheMatchingOnes(moto, *svc, true, 100, 25);
}

TEST(ReplayCli, FauxqsLivePassExaminesEveryMessage) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  for (int percent : {0, 100}) LivePassMovesExactlyTheMatchingOnes(fauxqs, *svc, false, 10, percent);
  LivePassMovesExactlyTheMatchingOnes(fauxqs, *svc, false, 1000, 25);
}

TEST(ReplayCli, FauxqsFifoLivePassExaminesEveryGroup) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  for (int percent : {0, 100}) LivePassMovesExactlyTheMatchingOnes(fauxqs, *svc, true, 10, percent);
  LivePassMovesExactlyTheMatchingOnes(fauxqs, *svc, true, 300, 25);
}

// The dry run of the issue: each message printed once, and nothing moves.
TEST(ReplayCli, MotoLiveDryRunPrintsEachMatchingMessageOnce) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  std::string dlq = UniqueName("rp-lpd-dlq");
  std::string dlq_url = *svc->sqs().CreateQueue(dlq, {});
  std::string target = UniqueName("rp-lpd");
  ASSERT_TRUE(svc->sqs().CreateQueue(target, {}).ok());
  FillTenants(*svc, dlq_url, false, 200, 50);
  auto r = RunShell(Bin(moto, "replay",
                        "--from-queue " + dlq + " --attr tenant=acme --to-queue " + target +
                            " --dry-run --progress never --log-level warn"),
                    false);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  std::regex line("would send (\\S+) to ");
  std::vector<std::string> ids;
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), line); it != std::sregex_iterator(); ++it) {
    ids.push_back((*it)[1]);
  }
  EXPECT_EQ(ids.size(), 50u) << r.out;
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), 50u);
  EXPECT_NE(r.out.find("selected 50, would send 50, failed 0"), std::string::npos) << r.out;
  EXPECT_EQ(Visible(*svc, dlq_url), 200);
}

// FIFO: a group whose first message is not selected blocks the rest of the
// group for the pass: exit 4, the reason, and nothing lost.
TEST(ReplayCli, FauxqsFifoGroupBehindAHeldMessageExits4) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  std::string dlq = UniqueName("rp-lpb-dlq") + ".fifo";
  std::string dlq_url = *svc->sqs().CreateQueue(dlq, {{"FifoQueue", "true"}});
  std::string target = UniqueName("rp-lpb") + ".fifo";
  std::string target_url = *svc->sqs().CreateQueue(target, {{"FifoQueue", "true"}});
  std::vector<SendEntry> batch;
  for (int i = 0; i < 25; ++i) {
    SendEntry e;
    e.id = "e" + std::to_string(i % 10);
    e.body = "order " + std::to_string(i);
    e.message_attributes["tenant"] = {"String", i == 0 ? "globex" : "acme", ""};
    e.message_group_id = "big";
    e.message_deduplication_id = "d" + std::to_string(i);
    batch.push_back(std::move(e));
    if (batch.size() == 10 || i == 24) {
      ASSERT_TRUE(svc->sqs().SendMessageBatch(dlq_url, batch).ok());
      batch.clear();
    }
  }
  std::string dir = ArchiveDir();
  auto r = RunShell(Bin(fauxqs, "replay",
                        "--from-queue " + dlq + " --attr tenant=acme --to-queue " + target + " --audit-to file://" +
                            dir + " --progress never --log-level warn"));
  EXPECT_EQ(r.exit_code, 4) << r.out;
  EXPECT_NE(r.out.find("incomplete: ~"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FIFO groups"), std::string::npos) << r.out;
  auto moved = ReceiveAll(fauxqs, target_url);
  auto left = ReceiveAll(fauxqs, dlq_url);
  EXPECT_EQ(moved.size() + left.size(), 25u);
  EXPECT_LT(moved.size(), 24u);
}

// The same replay twice (issue 29, section 2): the second sends nothing and
// says why, `audit ls|show` report both, and --again sends once more.
TEST(ReplayCli, FauxqsSecondReplaySendsNothingAndSaysWhyAgainSends) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  std::string dlq = UniqueName("rp-twice-dlq");
  std::string dlq_url = *svc->sqs().CreateQueue(dlq, {});
  SendPlain(*svc, dlq_url, "twice", 22);
  std::string dir = ArchiveDir();
  Archive(fauxqs, dlq, dir);
  std::string fresh = UniqueName("rp-twice");
  std::string fresh_url = *svc->sqs().CreateQueue(fresh, {});
  const std::string args = "--from file://" + dir + " --queue " + dlq + " --to-queue " + fresh + " --progress never";
  auto first = RunShell(Bin(fauxqs, "replay", args));
  ASSERT_EQ(first.exit_code, 0) << first.out;
  EXPECT_NE(first.out.find("sent 22, failed 0"), std::string::npos) << first.out;
  auto second = RunShell(Bin(fauxqs, "replay", args));
  ASSERT_EQ(second.exit_code, 0) << second.out;
  EXPECT_NE(second.out.find("sent 0, failed 0"), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("skipped 22 already replayed"), std::string::npos) << second.out;
  auto dry = RunShell(Bin(fauxqs, "replay", args + " --dry-run"));
  EXPECT_EQ(dry.exit_code, 0) << dry.out;
  EXPECT_FALSE(std::regex_search(dry.out, std::regex("(^|\n)would send "))) << dry.out;  // no message line
  EXPECT_NE(dry.out.find("selected 22, would send 0, failed 0, skipped 22 already replayed"), std::string::npos)
      << dry.out;
  size_t skip_lines = 0;
  for (size_t at = dry.out.find("\nskip "); at != std::string::npos; at = dry.out.find("\nskip ", at + 1)) ++skip_lines;
  EXPECT_EQ(skip_lines + (dry.out.starts_with("skip ") ? 1 : 0), 22u) << dry.out;
  EXPECT_EQ(ReceiveAll(fauxqs, fresh_url).size(), 22u);  // not 44

  auto ls = RunShell(Bin(fauxqs, "audit", "ls --from file://" + dir));
  ASSERT_EQ(ls.exit_code, 0) << ls.out;
  EXPECT_NE(ls.out.find("selected 22, sent 22, failed 0"), std::string::npos) << ls.out;
  EXPECT_NE(ls.out.find("selected 22, sent 0, failed 0, skipped 22 already replayed"), std::string::npos) << ls.out;
  EXPECT_NE(ls.out.find("2 audit records"), std::string::npos) << ls.out;
  std::smatch id;
  ASSERT_TRUE(std::regex_search(ls.out, id, std::regex("([0-9]{8}T[0-9]{6}Z-[0-9a-f]{16}) .*sent 22,"))) << ls.out;
  auto show = RunShell(Bin(fauxqs, "audit", "show " + id[1].str() + " --from file://" + dir + " --output json"));
  ASSERT_EQ(show.exit_code, 0) << show.out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(show.out).get(doc), simdjson::SUCCESS) << show.out;
  simdjson::dom::array messages = doc["messages"].get_array().value();
  ASSERT_EQ(messages.size(), 22u);
  for (simdjson::dom::element m : messages) {
    EXPECT_EQ(std::string_view(m["outcome"].get_string().value()), "sent");
    EXPECT_EQ(std::string_view(m["destination"].get_string().value()), fresh_url);
    EXPECT_FALSE(m["new_message_id"].get_string().value().empty());
  }

  auto again = RunShell(Bin(fauxqs, "replay", args + " --again"));
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find("sent 22, failed 0"), std::string::npos) << again.out;
  EXPECT_EQ(ReceiveAll(fauxqs, fresh_url).size(), 22u);
  fs::remove_all(dir);
}

// The live form consults the same ledger: messages an archive-form replay
// delivered, still in the DLQ (archived with --keep), are not sent again by
// a live move that audits to the same archive; --again moves them.
TEST(ReplayCli, FauxqsLiveReplayAfterAnArchiveReplaySendsNothingAndSaysWhy) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  std::string dlq = UniqueName("rp-both-dlq");
  std::string dlq_url = *svc->sqs().CreateQueue(dlq, {});
  SendPlain(*svc, dlq_url, "both", 12);
  std::string dir = ArchiveDir();
  auto kept = RunShell(
      Bin(fauxqs, "archive", "--queue " + dlq + " --to file://" + dir + " --keep --progress never --log-level warn"));
  ASSERT_EQ(kept.exit_code, 0) << kept.out;
  std::string fresh = UniqueName("rp-both");
  std::string fresh_url = *svc->sqs().CreateQueue(fresh, {});
  auto from_archive =
      RunShell(Bin(fauxqs, "replay", "--from file://" + dir + " --to-queue " + fresh + " --all --progress never"));
  ASSERT_EQ(from_archive.exit_code, 0) << from_archive.out;
  const std::string live =
      "--from-queue " + dlq + " --to-queue " + fresh + " --audit-to file://" + dir + " --progress never";
  auto second = RunShell(Bin(fauxqs, "replay", live));
  ASSERT_EQ(second.exit_code, 0) << second.out;
  EXPECT_NE(second.out.find("sent 0, failed 0"), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("skipped 12 already replayed"), std::string::npos) << second.out;
  EXPECT_EQ(AuditFiles(dir).size(), 2u);
  auto again = RunShell(Bin(fauxqs, "replay", live + " --again"));
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find("sent 12, failed 0"), std::string::npos) << again.out;
  EXPECT_EQ(ReceiveAll(fauxqs, fresh_url).size(), 24u);  // once from the archive, once by --again
  EXPECT_TRUE(ReceiveAll(fauxqs, dlq_url).empty());      // --again moved them out of the DLQ
  fs::remove_all(dir);
}

// ---- moto: FIFO order and --to-source through real redrive.

// The live form on moto (random receive subsets, like SQS) against the ledger
// of an archive replay: the live move skips the 5 messages already delivered
// and leaves them in the DLQ; --again moves them.
TEST(ReplayCli, MotoLiveReplaySkipsWhatAnArchiveReplayDelivered) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  std::string dlq = UniqueName("rp-mboth-dlq");
  std::string dlq_url = *svc->sqs().CreateQueue(dlq, {});
  SendPlain(*svc, dlq_url, "mboth", 5);
  std::string dir = ArchiveDir();
  auto kept = RunShell(
      Bin(moto, "archive", "--queue " + dlq + " --to file://" + dir + " --keep --progress never --log-level warn"));
  ASSERT_EQ(kept.exit_code, 0) << kept.out;
  std::string fresh = UniqueName("rp-mboth");
  std::string fresh_url = *svc->sqs().CreateQueue(fresh, {});
  auto from_archive =
      RunShell(Bin(moto, "replay", "--from file://" + dir + " --to-queue " + fresh + " --all --progress never"));
  ASSERT_EQ(from_archive.exit_code, 0) << from_archive.out;
  const std::string live =
      "--from-queue " + dlq + " --to-queue " + fresh + " --audit-to file://" + dir + " --progress never";
  auto second = RunShell(Bin(moto, "replay", live));
  ASSERT_EQ(second.exit_code, 0) << second.out;
  EXPECT_NE(second.out.find("sent 0, failed 0"), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("skipped 5 already replayed"), std::string::npos) << second.out;
  auto again = RunShell(Bin(moto, "replay", live + " --again"));
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find("sent 5, failed 0"), std::string::npos) << again.out;
  EXPECT_EQ(ReceiveAll(moto, fresh_url).size(), 10u);  // once from the archive, once by --again
  EXPECT_TRUE(ReceiveAll(moto, dlq_url).empty());
  fs::remove_all(dir);
}

// Real SQS numbers a group's messages in increasing order; moto assigns
// random SequenceNumbers, so the order replay must keep is the archived
// records' SequenceNumber order, which on SQS is the send order.
TEST(ReplayCli, MotoFifoKeepsOrderPerGroupAndIds) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  std::string dlq = UniqueName("rpf-dlq") + ".fifo";
  std::string dlq_url = *svc->sqs().CreateQueue(dlq, {{"FifoQueue", "true"}});
  auto sent = ParseMessages(SendPoison(moto, dlq_url, "--fifo --count 24"));
  ASSERT_EQ(sent.size(), 24u);
  std::string dir = ArchiveDir();
  Archive(moto, dlq, dir);
  std::string fresh = UniqueName("rpf-fresh") + ".fifo";
  std::string fresh_url = *svc->sqs().CreateQueue(fresh, {{"FifoQueue", "true"}});
  auto r = RunShell(Bin(moto, "replay", "--from file://" + dir + " --to-queue " + fresh + " --all --progress never"));
  ASSERT_EQ(r.exit_code, 0) << r.out;

  // Expected: per group, the archived records by (SequenceNumber, sent_at).
  auto store = LocalObjectStore::Open(dir);
  ASSERT_TRUE(store.ok());
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> archived;
  ASSERT_TRUE(ScanArchive(**store, ParseDestination("file://" + dir).value(), ScanOptions{},
                          [&](const ArchiveRecord& rec, const RecordLocation&) {
                            std::string seq = rec.attributes.at("SequenceNumber");
                            archived[rec.attributes.at("MessageGroupId")].emplace_back(
                                std::string(40 - seq.size(), '0') + seq, Md5OfBody(rec.body).substr(0, 8));
                            return true;
                          })
                  .ok());
  std::map<std::string, std::vector<std::string>> want, have;
  for (auto& [group, items] : archived) {
    std::sort(items.begin(), items.end());
    for (const auto& item : items) want[group].push_back(item.second);
  }
  auto got = ReceiveAll(moto, fresh_url);
  ASSERT_EQ(got.size(), sent.size());
  for (const auto& g : got) {
    have[g.group].push_back(Md5OfBody(g.body).substr(0, 8));
    EXPECT_EQ(g.md5_of_body, g.body_md5);
  }
  EXPECT_EQ(have, want);  // body digests, in receive order per group
  std::set<std::string> sent_dedup, got_dedup;
  for (const auto& m : sent) sent_dedup.insert(m.dedup);
  for (const auto& g : got) got_dedup.insert(g.dedup);
  EXPECT_EQ(got_dedup, sent_dedup);  // the original deduplication ids
  EXPECT_EQ(sent_dedup.size(), sent.size());
  fs::remove_all(dir);
}

TEST(ReplayCli, MotoToSourceReturnsMessagesToTheQueueTheyFailedFrom) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  std::string base = UniqueName("rps");
  std::string dlq_url = *svc->sqs().CreateQueue(base + "-dlq", {});
  auto arn = svc->sqs().GetQueueAttributes(dlq_url, {"QueueArn"})->at("QueueArn");
  std::string src_url = *svc->sqs().CreateQueue(
      base + "-src", {{"RedrivePolicy", "{\"deadLetterTargetArn\":\"" + arn + "\",\"maxReceiveCount\":\"1\"}"}});
  SendPlain(*svc, src_url, "order", 6);
  auto failed = RunShell(moto.ShellEnv() + "python3 " + RepoRoot() + "/tests/interop/fail_consumer.py --endpoint-url " +
                         moto.endpoint() + " --queue-url " + src_url);
  ASSERT_EQ(failed.exit_code, 0) << failed.out;
  std::string dir = ArchiveDir();
  Archive(moto, base + "-dlq", dir);
  // A plain replay: this test is about the route (GuardedRedrive tests cover the canary).
  auto r = RunShell(Bin(moto, "replay", "--from file://" + dir + " --to-source --all --no-canary --progress never"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto back = ReceiveAll(moto, src_url);
  std::set<std::string> bodies;
  for (const auto& b : back) bodies.insert(b.body);
  EXPECT_EQ(bodies.size(), 6u);
  EXPECT_TRUE(bodies.count("order 0"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dlq::it
