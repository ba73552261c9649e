// The archive flow end to end against moto: poison messages sent by boto3
// fail twice in a source queue with a redrive policy (maxReceiveCount 2),
// land in the DLQ, and `dlq-archive archive` empties the DLQ into S3; every
// record read back with the AWS CLI equals what was sent, attribute for
// attribute, and keys follow the layout. Standard and FIFO pairs.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <vector>

#include "fault_proxy.h"
#include "harness.h"

namespace dlq::it {
namespace {

struct Pair {
  std::string source_url, dlq_url, dlq_name;
};

Pair MakeRedrivePair(AwsServices& svc, const std::string& base, bool fifo) {
  Pair p;
  std::string suffix = fifo ? ".fifo" : "";
  std::map<std::string, std::string> fifo_attrs;
  if (fifo) fifo_attrs = {{"FifoQueue", "true"}, {"ContentBasedDeduplication", "false"}};
  p.dlq_name = base + "-dlq" + suffix;
  auto dlq = svc.sqs().CreateQueue(p.dlq_name, fifo_attrs);
  EXPECT_TRUE(dlq.ok()) << dlq.status().ToString();
  p.dlq_url = *dlq;
  auto attrs = svc.sqs().GetQueueAttributes(p.dlq_url, {"QueueArn"});
  EXPECT_TRUE(attrs.ok());
  auto src_attrs = fifo_attrs;
  src_attrs["RedrivePolicy"] = "{\"deadLetterTargetArn\":\"" + attrs->at("QueueArn") + "\",\"maxReceiveCount\":\"2\"}";
  auto src = svc.sqs().CreateQueue(base + "-src" + suffix, src_attrs);
  EXPECT_TRUE(src.ok()) << src.status().ToString();
  p.source_url = *src;
  return p;
}

int64_t Depth(AwsServices& svc, const std::string& url) {
  auto a = svc.sqs().GetQueueAttributes(url, {"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"});
  if (!a.ok()) return -1;
  return std::stoll(a->at("ApproximateNumberOfMessages")) + std::stoll(a->at("ApproximateNumberOfMessagesNotVisible"));
}

void RunFlow(bool fifo) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  std::string base = UniqueName(fifo ? "flowf" : "flow");
  Pair pair = MakeRedrivePair(*svc, base, fifo);
  std::string bucket = base + "-archive";
  ASSERT_TRUE(svc->s3_for(bucket).CreateBucket(bucket).ok());

  // Producer: boto3 (Debian's, query protocol) sends poison messages to the source queue.
  std::string sent_file = "/tmp/" + base + "-sent.json";
  auto sent = RunShell(moto.ShellEnv() + "/usr/bin/python3 " + RepoRoot() + "/tests/interop/send_poison.py" +
                           " --endpoint-url " + moto.endpoint() + " --queue-url " + pair.source_url +
                           (fifo ? " --fifo" : "") + " > " + sent_file,
                       false);
  ASSERT_EQ(sent.exit_code, 0) << sent.out;
  // Consumer: fails every message until SQS moves it to the DLQ.
  auto failed = RunShell(moto.ShellEnv() + "python3 " + RepoRoot() + "/tests/interop/fail_consumer.py" +
                         " --endpoint-url " + moto.endpoint() + " --queue-url " + pair.source_url);
  ASSERT_EQ(failed.exit_code, 0) << failed.out;
  int64_t in_dlq = Depth(*svc, pair.dlq_url);
  ASSERT_GT(in_dlq, 0) << "nothing reached the DLQ";

  auto archived = RunShell(moto.ShellEnv() + DLQ_BINARY + " archive --queue " + pair.dlq_name + " --to s3://" + bucket +
                               "/dlq-archive --output json --progress never --log-level warn",
                           false);
  ASSERT_EQ(archived.exit_code, 0) << archived.out;
  EXPECT_NE(archived.out.find("\"archived\":" + std::to_string(in_dlq)), std::string::npos) << archived.out;
  // HTTP requests by API in the summary.
  for (const char* api : {"\"sqs.ReceiveMessage\":", "\"sqs.DeleteMessageBatch\":", "\"s3.PutObject\":"}) {
    EXPECT_NE(archived.out.find(api), std::string::npos) << api << " in " << archived.out;
  }
  EXPECT_EQ(Depth(*svc, pair.dlq_url), 0) << "the DLQ is not empty after archive";

  auto verify =
      RunShell(moto.ShellEnv() + "python3 " + RepoRoot() + "/tests/interop/verify_archive.py --aws /usr/bin/aws" +
               " --endpoint-url " + moto.endpoint() + " --bucket " + bucket + " --prefix dlq-archive" + " --queue " +
               pair.dlq_name + " --sent " + sent_file);
  EXPECT_EQ(verify.exit_code, 0) << verify.out;
  std::remove(sent_file.c_str());
}

TEST(ArchiveMoto, StandardDlqDrainsIntoS3WithFullFidelity) {
  RunFlow(false);
}
TEST(ArchiveMoto, FifoDlqKeepsGroupAndDeduplicationIds) {
  RunFlow(true);
}

TEST(ArchiveMoto, MissingBucketDeletesNothing) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  std::string q = UniqueName("nobucket-dlq");
  auto url = svc->sqs().CreateQueue(q, {});
  ASSERT_TRUE(url.ok());
  for (int i = 0; i < 5; ++i) {
    SendEntry e;
    e.body = "m" + std::to_string(i);
    ASSERT_TRUE(svc->sqs().SendMessage(*url, e).ok());
  }
  auto r = RunShell(moto.ShellEnv() + DLQ_BINARY + " archive --queue " + q + " --to s3://" + q +
                    "-no-such-bucket/x --progress never --log-level off");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("NoSuchBucket"), std::string::npos) << r.out;
  EXPECT_EQ(Depth(*svc, *url), 5);
  // Released, not hidden: all five are receivable again right away.
  ReceiveOptions ro;
  size_t visible = 0;
  for (int i = 0; i < 3; ++i) visible += svc->sqs().ReceiveMessages(*url, ro)->size();
  EXPECT_EQ(visible, 5u);
}

// The number in a JSON summary after `"key":`, -1 when absent.
int64_t JsonCount(const std::string& json, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  size_t at = json.find(k);
  if (at == std::string::npos) return -1;
  return std::stoll(json.substr(at + k.size()));
}

// A message SQS hands out again while the run holds it or has archived it,
// as moto does when two receives run at once (it checks visibility and marks
// a message received without a lock) and as a visibility timeout that runs
// out does. Whether moto's race strikes depends on timing (a CI run under
// ASan saw none), so a proxy makes copies certain: it makes the messages of
// the run's previous reply visible again, receives them again, and hands
// them out with the next one. The run archives and deletes each message
// once, counts every copy apart (moto's own ones too), and every count adds
// up.
void HandedOutAgainArchivedOnce(const StandIn& moto, const int kMessages, bool keep_handles) {
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  std::string q = UniqueName("again-dlq");
  auto url = svc->sqs().CreateQueue(q, {});
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  for (int b = 0; b < kMessages / 10; ++b) {
    std::vector<SendEntry> batch(10);
    for (int i = 0; i < 10; ++i) {
      batch[i].id = std::to_string(i);
      batch[i].body = "m" + std::to_string(b * 10 + i);
    }
    ASSERT_TRUE(svc->sqs().SendMessageBatch(*url, batch).ok());
  }
  // Three of moto's replies to the run also carry the previous reply's
  // messages again: copies on every run, whatever the timing.
  FaultPlan plan;
  plan.repeat_messages = FaultRule::Times(3, {"ReceiveMessage"});
  plan.repeat_keeps_handles = keep_handles;
  auto proxy = FaultProxy::Start(moto.endpoint(), plan);
  ASSERT_TRUE(proxy.ok()) << proxy.status().ToString();

  std::string dir = "/tmp/dlq-again-" + RandomHex(4);
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  CommandResult r = RunShell(moto.ShellEnv() + DLQ_BINARY + " archive --endpoint-url " + (*proxy)->url() + " --queue " +
                                 q + " --to file://" + dir +
                                 " --concurrency 4 --fixed-concurrency --batch-max-messages 40 --output json"
                                 " --progress never --log-level warn",
                             false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const int64_t received = JsonCount(r.out, "received"), again = JsonCount(r.out, "received_again");
  EXPECT_EQ(JsonCount(r.out, "archived"), kMessages) << r.out;
  EXPECT_EQ(JsonCount(r.out, "deleted"), kMessages) << r.out;
  EXPECT_EQ(JsonCount(r.out, "duplicates"), 0) << r.out;
  EXPECT_EQ(JsonCount(r.out, "delete_failures"), 0) << r.out;
  const uint64_t repeated = (*proxy)->Stats().repeated;
  EXPECT_GE(repeated, 3u);
  EXPECT_GE(again, static_cast<int64_t>(repeated)) << r.out;
  EXPECT_EQ(received, kMessages + again) << r.out;
  EXPECT_EQ(Depth(*svc, *url), 0);
  // One line per message in the archive.
  auto lines = RunShell("find " + dir + " -name '*.json.gz' -exec zcat {} + | wc -l");
  EXPECT_EQ(std::stoll(lines.out), kMessages) << lines.out;
  auto ids = RunShell("find " + dir +
                      " -name '*.json.gz' -exec zcat {} + | grep -o '\"message_id\":\"[^\"]*\"' | sort -u | wc -l");
  EXPECT_EQ(std::stoll(ids.out), kMessages) << ids.out;
  RunShell("rm -rf " + dir);
}

TEST(ArchiveMoto, MessagesHandedOutAgainAreArchivedAndCountedOnce) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  HandedOutAgainArchivedOnce(moto, 200, /*keep_handles=*/false);
}

// When two receives race, moto hands both the same receipt handle, and
// rejects a DeleteMessageBatch naming one handle twice as a whole: the run
// deletes the handle once, for both.
TEST(ArchiveMoto, CopiesWithTheHandleTheirMessageHasAreDeletedOnce) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  HandedOutAgainArchivedOnce(moto, 80, /*keep_handles=*/true);
}

TEST(ArchiveMoto, MissingQueueIsAClearError) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto r = RunShell(moto.ShellEnv() + DLQ_BINARY + " archive --queue no-such-queue-" + RandomHex(3) +
                    " --to file:///tmp/dlq-archive-it --progress never");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("does not exist"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace dlq::it
