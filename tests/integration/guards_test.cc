// The guards of issue 29 section 3 through the binary, on the stand-ins:
// `archive --queue-prefix` takes only dead-letter queues (moto has
// ListDeadLetterSourceQueues; on fauxqs, which has not, every RedrivePolicy
// is read instead),
// an archive replay with no filter needs --all, and --to-source refuses a
// source in another account than its DLQ unless --allow-cross-account.
#include <gtest/gtest.h>

#include <filesystem>

#include "archive/gzip.h"
#include "archive/record.h"
#include "harness.h"
#include "sqs/md5.h"

namespace dlq::it {
namespace {

namespace fs = std::filesystem;

std::string TempDir() {
  std::string d = "/tmp/dlq-guards-it-" + RandomHex(4);
  fs::create_directories(d);
  return d;
}

std::string Bin(const StandIn& s, const std::string& command, const std::string& args) {
  return s.ShellEnv() + DLQ_BINARY + " " + command + " --endpoint-url " + s.endpoint() + " " + args;
}

int64_t Depth(AwsServices& svc, const std::string& url) {
  auto a = svc.sqs().GetQueueAttributes(url, {"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"});
  if (!a.ok()) return -1;
  return std::stoll(a->at("ApproximateNumberOfMessages")) + std::stoll(a->at("ApproximateNumberOfMessagesNotVisible"));
}

std::string ArnOf(AwsServices& svc, const std::string& url) {
  auto a = svc.sqs().GetQueueAttributes(url, {"QueueArn"});
  return a.ok() ? a->at("QueueArn") : "";
}

void SendOne(AwsServices& svc, const std::string& url, const std::string& body) {
  SendEntry e;
  e.id = "e0";
  e.body = body;
  auto r = svc.sqs().SendMessageBatch(url, {e});
  ASSERT_TRUE(r.ok() && r->failed.empty()) << r.status().ToString();
}

TEST(Guards, MotoQueuePrefixArchivesTheDlqAndSkipsTheWorkQueues) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  const std::string base = UniqueName("gp");
  std::string dlq = *svc->sqs().CreateQueue(base + "-dlq", {});
  std::string work = *svc->sqs().CreateQueue(
      base, {{"RedrivePolicy", R"({"deadLetterTargetArn":")" + ArnOf(*svc, dlq) + R"(","maxReceiveCount":"3"})"}});
  std::string fixed = *svc->sqs().CreateQueue(base + "-fixed", {});
  for (const std::string& url : {dlq, work, fixed}) SendOne(*svc, url, "live work of " + url);
  const std::string dir = TempDir();

  auto r = RunShell(Bin(moto, "archive", "--queue-prefix " + base + " --to file://" + dir + " --progress never"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("skipped: " + base + ": not a dead-letter queue"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("skipped: " + base + "-fixed: not a dead-letter queue"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(base + "-dlq: archived 1, deleted 1"), std::string::npos) << r.out;
  EXPECT_EQ(Depth(*svc, dlq), 0);
  EXPECT_EQ(Depth(*svc, work), 1) << "a work queue was touched";
  EXPECT_EQ(Depth(*svc, fixed), 1) << "a work queue was touched";

  // --any-queue takes them all (a dry run: nothing deleted).
  auto any = RunShell(Bin(
      moto, "archive", "--queue-prefix " + base + " --any-queue --dry-run --to file://" + dir + " --progress never"));
  ASSERT_EQ(any.exit_code, 0) << any.out;
  EXPECT_EQ(any.out.find("skipped:"), std::string::npos) << any.out;
  EXPECT_NE(any.out.find(base + ": dry run: 1 message would be archived"), std::string::npos) << any.out;
  EXPECT_NE(any.out.find(base + "-fixed: dry run"), std::string::npos) << any.out;

  // An explicitly named --queue is always taken, DLQ or not.
  auto named =
      RunShell(Bin(moto, "archive", "--queue " + base + "-fixed --dry-run --to file://" + dir + " --progress never"));
  ASSERT_EQ(named.exit_code, 0) << named.out;
  EXPECT_NE(named.out.find(base + "-fixed: dry run: 1 message would be archived"), std::string::npos) << named.out;
  fs::remove_all(dir);
}

TEST(Guards, FauxqsWithoutRedriveLookupReadsEveryRedrivePolicy) {
  DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
  auto svc = Services(fauxqs);
  ASSERT_TRUE(svc);
  const std::string base = UniqueName("gf");
  std::string dlq = *svc->sqs().CreateQueue(base + "-dlq", {});
  std::string work = *svc->sqs().CreateQueue(
      base, {{"RedrivePolicy", R"({"deadLetterTargetArn":")" + ArnOf(*svc, dlq) + R"(","maxReceiveCount":"3"})"}});
  SendOne(*svc, dlq, "failed");
  SendOne(*svc, work, "live work");
  if (svc->sqs().ListDeadLetterSourceQueues(dlq).ok()) GTEST_SKIP() << "this fauxqs has ListDeadLetterSourceQueues";
  const std::string dir = TempDir();
  auto r = RunShell(Bin(fauxqs, "archive", "--queue-prefix " + base + " --to file://" + dir + " --progress never"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("skipped: " + base + ": not a dead-letter queue (no queue's RedrivePolicy names it"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(base + "-dlq: archived 1, deleted 1"), std::string::npos) << r.out;
  EXPECT_EQ(Depth(*svc, dlq), 0);
  EXPECT_EQ(Depth(*svc, work), 1) << "a work queue was touched";
  fs::remove_all(dir);
}

// One archived record of DLQ `dlq_name` in account `account`, whose source is
// `source_arn`, written as a file:// archive under `dir`.
void WriteArchive(const std::string& dir, const std::string& dlq_name, const std::string& account,
                  const std::string& source_arn) {
  ArchiveRecord r;
  r.queue = dlq_name;
  r.queue_url = "https://sqs.us-east-1.amazonaws.com/" + account + "/" + dlq_name;
  r.region = "us-east-1";
  r.account_id = account;
  r.message_id = "00000000-0000-4000-8000-" + RandomHex(6);
  r.body = "failed once";
  r.md5_of_body = Md5OfBody(r.body);
  r.source_queue_arn = source_arn;
  r.archived_at = r.expires_at = DefaultClock().Now();
  std::string lines;
  AppendRecordJson(r, lines);
  fs::create_directories(dir + "/dlq-archive/" + dlq_name + "/20261120");
  std::ofstream(dir + "/dlq-archive/" + dlq_name + "/20261120/" + dlq_name + "-000000-0000000000000001.json.gz")
      << *GzipCompress(lines, 1);
}

TEST(Guards, MotoReplayToSourceInAnotherAccountNeedsAllowCrossAccount) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  const std::string base = UniqueName("gx");
  std::string src = *svc->sqs().CreateQueue(base + "-src", {});
  const std::string dir = TempDir();
  // The DLQ was in account 210987654321; the source is moto's account.
  WriteArchive(dir, base + "-dlq", "210987654321", ArnOf(*svc, src));

  auto refused = RunShell(Bin(moto, "replay", "--from file://" + dir + " --all --to-source --progress never"));
  EXPECT_EQ(refused.exit_code, 2) << refused.out;
  EXPECT_NE(refused.out.find("--allow-cross-account"), std::string::npos) << refused.out;
  EXPECT_NE(refused.out.find("account 210987654321"), std::string::npos) << refused.out;
  EXPECT_EQ(Depth(*svc, src), 0);

  auto allowed =
      RunShell(Bin(moto, "replay",
                   "--from file://" + dir + " --all --to-source --allow-cross-account --no-canary --progress never"));
  ASSERT_EQ(allowed.exit_code, 0) << allowed.out;
  EXPECT_NE(allowed.out.find("cross-account: " + base + "-dlq (account 210987654321, region us-east-1) -> " +
                             ArnOf(*svc, src)),
            std::string::npos)
      << allowed.out;
  EXPECT_EQ(Depth(*svc, src), 1);
  fs::remove_all(dir);
}

TEST(Guards, MotoArchiveReplayWithNoFilterNeedsAll) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  const std::string base = UniqueName("ga");
  std::string dest = *svc->sqs().CreateQueue(base + "-fixed", {});
  const std::string dir = TempDir();
  WriteArchive(dir, base + "-dlq", "123456789012", "");
  WriteArchive(dir, base + "-other-dlq", "123456789012", "");

  auto refused = RunShell(Bin(moto, "replay", "--from file://" + dir + " --to-queue " + base + "-fixed"));
  EXPECT_EQ(refused.exit_code, 2) << refused.out;
  EXPECT_NE(refused.out.find("--all"), std::string::npos) << refused.out;
  auto spans = RunShell(Bin(moto, "replay", "--from file://" + dir + " --all --to-queue " + base + "-fixed"));
  EXPECT_EQ(spans.exit_code, 2) << spans.out;
  EXPECT_NE(spans.out.find("2 dead-letter queues: " + base + "-dlq (1), " + base + "-other-dlq (1)"), std::string::npos)
      << spans.out;
  EXPECT_EQ(Depth(*svc, dest), 0);
  auto sent =
      RunShell(Bin(moto, "replay", "--from file://" + dir + " --all --all-queues --to-queue " + base + "-fixed"));
  ASSERT_EQ(sent.exit_code, 0) << sent.out;
  EXPECT_EQ(Depth(*svc, dest), 2);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dlq::it
