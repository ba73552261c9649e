#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "replay/audit.h"
#include "replay/checkpoint.h"
#include "replay/live_source.h"
#include "replay/replayer.h"
#include "replay/targets.h"
#include "replay/token_bucket.h"
#include "replay/transform.h"
#include "sqs/md5.h"
#include "sqs/queue_client_wrapper.h"
#include "testing/fake_clock.h"
#include "testing/fake_object_store.h"
#include "testing/fake_queue.h"
#include "testing/temp_path.h"

namespace dlq {
namespace {

using Op = FakeQueueClient::Operation;
using std::chrono::seconds;

// An archived record as the archiver writes it (digests computed).
ArchiveRecord Record(const std::string& id, const std::string& body, std::map<std::string, std::string> system = {},
                     MessageAttributes attrs = {{"kind", {"String", "order", ""}},
                                                {"blob", {"Binary", "", std::string("\x00\x01\xff", 3)}},
                                                {"n", {"Number.float", "3.14", ""}}}) {
  ArchiveRecord r;
  r.queue = "orders-dlq";
  r.queue_url = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq";
  r.message_id = id;
  r.body = body;
  r.md5_of_body = Md5OfBody(body);
  r.message_attributes = std::move(attrs);
  r.md5_of_message_attributes = Md5OfMessageAttributes(r.message_attributes);
  r.attributes = std::move(system);
  if (auto it = r.attributes.find("DeadLetterQueueSourceArn"); it != r.attributes.end()) {
    r.source_queue_arn = it->second;
  }
  return r;
}

std::vector<ArchiveRecord> Numbered(int n) {
  std::vector<ArchiveRecord> records;
  for (int i = 0; i < n; ++i) records.push_back(Record("id-" + std::to_string(i), "body " + std::to_string(i)));
  return records;
}

// Reports a wrong MD5OfMessageBody for entries whose body contains "tamper".
class TamperingQueue final : public QueueClient {
 public:
  explicit TamperingQueue(FakeQueueClient& inner) : inner_(inner) {}
  Result<std::string> GetQueueUrl(const std::string& n, const std::string& o) override {
    return inner_.GetQueueUrl(n, o);
  }
  Result<std::vector<std::string>> ListQueues(const std::string& p) override { return inner_.ListQueues(p); }
  Result<std::map<std::string, std::string>> GetQueueAttributes(const std::string& u,
                                                                const std::vector<std::string>& n) override {
    return inner_.GetQueueAttributes(u, n);
  }
  Result<std::vector<std::string>> ListDeadLetterSourceQueues(const std::string& u) override {
    return inner_.ListDeadLetterSourceQueues(u);
  }
  Result<std::vector<Message>> ReceiveMessages(const std::string& u, const ReceiveOptions& o) override {
    return inner_.ReceiveMessages(u, o);
  }
  Result<BatchResult> DeleteMessageBatch(const std::string& u, const std::vector<DeleteEntry>& e) override {
    return inner_.DeleteMessageBatch(u, e);
  }
  Result<BatchResult> ChangeMessageVisibilityBatch(const std::string& u,
                                                   const std::vector<VisibilityEntry>& e) override {
    return inner_.ChangeMessageVisibilityBatch(u, e);
  }
  Result<SendBatchResult> SendMessageBatch(const std::string& u, const std::vector<SendEntry>& entries) override {
    auto r = inner_.SendMessageBatch(u, entries);
    if (!r.ok()) return r;
    for (SentMessage& s : r->sent) {
      for (const SendEntry& e : entries) {
        if (e.id == s.id && e.body.find("tamper") != std::string::npos) s.md5_of_body = std::string(32, '0');
      }
    }
    return r;
  }
  Result<SentMessage> SendMessage(const std::string& u, const SendEntry& e) override {
    return inner_.SendMessage(u, e);
  }
  Result<std::string> CreateQueue(const std::string& n, const std::map<std::string, std::string>& a) override {
    return inner_.CreateQueue(n, a);
  }
  Status DeleteQueue(const std::string& u) override { return inner_.DeleteQueue(u); }
  Status SetQueueAttributes(const std::string& u, const std::map<std::string, std::string>& a) override {
    return inner_.SetQueueAttributes(u, a);
  }

 private:
  FakeQueueClient& inner_;
};

class ReplayTest : public ::testing::Test {
 protected:
  ReplayTest() : sqs_(clock_) {
    dest_ = *sqs_.CreateQueue("orders", {});
    options_.backoff.base_delay = std::chrono::milliseconds(10);
    options_.concurrency = 1;  // arrival order = send order; ConcurrentBatches* use more
  }

  std::unique_ptr<TargetResolver> ToDest() { return TargetResolver::Fixed(sqs_, "orders", "us-east-1"); }

  // Replays `records` to `targets` and returns Finish's status.
  Status Run(const std::vector<ArchiveRecord>& records, TargetResolver& targets, QueueClient* sqs = nullptr,
             RecordTransform* transform = nullptr) {
    replayer_ = std::make_unique<Replayer>(sqs ? *sqs : sqs_, targets, clock_, options_, transform);
    DLQ_RETURN_IF_ERROR(replayer_->Start());
    DLQ_RETURN_IF_ERROR(AddAll(records));
    return replayer_->Finish();
  }

  // Adds `records` to replayer_ until Add fails (its status is returned) or
  // says to stop taking items.
  Status AddAll(const std::vector<ArchiveRecord>& records) {
    for (const ArchiveRecord& r : records) {
      auto added = replayer_->Add(ReplayItem{r, ""});
      if (!added.ok()) return added.status();
      if (!*added) break;
    }
    return Status::Ok();
  }

  std::string TempPath(const std::string& name) { return FreshTempPath("replay_test", name); }

  FakeClock clock_;
  FakeQueueClient sqs_;
  std::string dest_;
  ReplayOptions options_;
  std::unique_ptr<Replayer> replayer_;
};

TEST_F(ReplayTest, SendsBodyAndEveryAttributeUnchangedInBatchesOfTen) {
  std::vector<ArchiveRecord> records;
  for (int i = 0; i < 25; ++i) {
    records.push_back(Record("id-" + std::to_string(i), "héllo \"world\" #" + std::to_string(i),
                             {{"AWSTraceHeader", "Root=1-5759e988-bd862e3fe1be46a994272793"}}));
  }
  auto targets = ToDest();
  ASSERT_TRUE(Run(records, *targets).ok());
  EXPECT_EQ(sqs_.calls(Op::kSendMessageBatch), 3);
  EXPECT_EQ(replayer_->stats().sent, 25u);
  EXPECT_EQ(replayer_->stats().failed, 0u);
  auto sent = sqs_.Messages(dest_);
  ASSERT_EQ(sent.size(), 25u);
  for (size_t i = 0; i < sent.size(); ++i) {
    EXPECT_EQ(sent[i].body, records[i].body);
    EXPECT_EQ(sent[i].message_attributes, records[i].message_attributes);
    EXPECT_EQ(sent[i].md5_of_body, records[i].md5_of_body);
    EXPECT_EQ(sent[i].md5_of_message_attributes, records[i].md5_of_message_attributes);
    EXPECT_EQ(sent[i].attributes["AWSTraceHeader"], "Root=1-5759e988-bd862e3fe1be46a994272793");
  }
  EXPECT_EQ(replayer_->sent().front().message_id, "id-0");
  EXPECT_EQ(replayer_->sent().front().new_message_id, sent.front().message_id);  // the id SQS gave the copy
  EXPECT_EQ(replayer_->sent().front().destination, dest_);
  EXPECT_EQ(replayer_->sent_by_destination().at(dest_), 25u);
}

TEST_F(ReplayTest, ConcurrentBatchesSendEverythingOnceAndReportInDispatchOrder) {
  options_.concurrency = 4;
  std::vector<ArchiveRecord> records;
  for (int i = 0; i < 205; ++i) records.push_back(Record("id-" + std::to_string(i), "body " + std::to_string(i)));
  sqs_.FailSendEntries(7, "ServiceUnavailable");
  auto targets = ToDest();
  ASSERT_TRUE(Run(records, *targets).ok());
  EXPECT_EQ(replayer_->stats().sent, 205u);
  EXPECT_EQ(replayer_->stats().batches, 21u);
  std::map<std::string, int> copies;
  for (const Message& m : sqs_.Messages(dest_)) ++copies[m.body];
  EXPECT_EQ(copies.size(), 205u);
  for (const auto& [body, n] : copies) EXPECT_EQ(n, 1) << body;
  std::vector<std::string> want;
  for (const auto& r : records) want.push_back(r.message_id);
  std::vector<std::string> got;
  for (const ReplayedMessage& m : replayer_->sent()) got.push_back(m.message_id);
  EXPECT_EQ(got, want);  // batches complete in dispatch order
}

TEST_F(ReplayTest, ConcurrentBatchesCheckpointOnlyWhatIsConfirmed) {
  options_.concurrency = 4;
  options_.checkpoint_path = TempPath("concurrent.ckpt");
  options_.identity_text = "same";
  // One call (whichever worker comes first) fails for good: the run stops
  // once the batches in flight finish. The checkpoint counts what was sent
  // plus the failed batch, whose ids it keeps for the resumed run.
  sqs_.FailNext(Op::kSendMessageBatch, PermissionDenied("AccessDenied"), 1);
  auto targets = ToDest();
  auto records = Numbered(100);
  Status st = Run(records, *targets);
  ASSERT_FALSE(st.ok());
  auto saved = LoadCheckpoint(options_.checkpoint_path);
  ASSERT_TRUE(saved.ok() && saved->has_value());
  const size_t sent_first = sqs_.Messages(dest_).size();
  EXPECT_EQ((*saved)->failed_ids.size(), 10u);
  EXPECT_EQ((*saved)->done, sent_first + 10);
  // Resume: the failed batch is sent again, nothing lost, nothing twice.
  ASSERT_TRUE(Run(records, *targets).ok());
  std::map<std::string, int> copies;
  for (const Message& m : sqs_.Messages(dest_)) ++copies[m.body];
  EXPECT_EQ(copies.size(), 100u);
  EXPECT_EQ(sqs_.Messages(dest_).size(), 100u);
}

TEST_F(ReplayTest, BatchesStayWithinTheSqsPayloadLimit) {
  std::vector<ArchiveRecord> records;
  for (int i = 0; i < 5; ++i) records.push_back(Record("big-" + std::to_string(i), std::string(400 * 1024, 'a' + i)));
  auto targets = ToDest();
  ASSERT_TRUE(Run(records, *targets).ok());
  // Two 400 KiB messages fit in 1 MiB, three do not: 2 + 2 + 1.
  EXPECT_EQ(sqs_.calls(Op::kSendMessageBatch), 3);
  EXPECT_EQ(sqs_.Messages(dest_).size(), 5u);
}

TEST_F(ReplayTest, MessageOverTheSizeLimitIsReportedNotSent) {
  auto targets = ToDest();
  ASSERT_TRUE(Run({Record("huge", std::string(sqs::kMaxMessageBytes + 1, 'x')), Record("ok", "fine")}, *targets).ok());
  ASSERT_EQ(replayer_->failures().size(), 1u);
  EXPECT_EQ(replayer_->failures()[0].message_id, "huge");
  EXPECT_NE(replayer_->failures()[0].reason.find("over the SQS limit"), std::string::npos);
  EXPECT_EQ(sqs_.Messages(dest_).size(), 1u);
}

TEST_F(ReplayTest, ReturnedMd5MismatchFailsThatEntryWithoutResending) {
  TamperingQueue tampering(sqs_);
  auto targets = TargetResolver::Fixed(tampering, "orders", "us-east-1");
  ASSERT_TRUE(
      Run({Record("a", "fine"), Record("b", "tamper with me"), Record("c", "fine too")}, *targets, &tampering).ok());
  EXPECT_EQ(sqs_.calls(Op::kSendMessageBatch), 1);  // not retried: SQS has it already
  EXPECT_EQ(replayer_->stats().sent, 2u);
  ASSERT_EQ(replayer_->failures().size(), 1u);
  EXPECT_EQ(replayer_->failures()[0].message_id, "b");
  EXPECT_NE(replayer_->failures()[0].reason.find("MD5Mismatch"), std::string::npos);
}

TEST_F(ReplayTest, CorruptArchivedRecordIsNotSent) {
  ArchiveRecord bad = Record("bad", "the body");
  bad.body = "a different body";  // no longer matches md5_of_body
  auto targets = ToDest();
  ASSERT_TRUE(Run({bad, Record("good", "ok")}, *targets).ok());
  ASSERT_EQ(replayer_->failures().size(), 1u);
  EXPECT_EQ(replayer_->failures()[0].message_id, "bad");
  EXPECT_NE(replayer_->failures()[0].reason.find("md5_of_body"), std::string::npos);
  ASSERT_EQ(sqs_.Messages(dest_).size(), 1u);
  EXPECT_EQ(sqs_.Messages(dest_)[0].body, "ok");
}

TEST_F(ReplayTest, PartiallyFailedBatchIsRetriedWithBackoff) {
  std::vector<ArchiveRecord> records;
  for (int i = 0; i < 10; ++i) records.push_back(Record("id-" + std::to_string(i), "body " + std::to_string(i)));
  sqs_.FailSendEntries(3, "ServiceUnavailable");
  auto targets = ToDest();
  auto before = clock_.SteadyNow();
  ASSERT_TRUE(Run(records, *targets).ok());
  EXPECT_EQ(sqs_.calls(Op::kSendMessageBatch), 2);
  EXPECT_EQ(replayer_->stats().sent, 10u);
  EXPECT_EQ(replayer_->stats().retries, 3u);
  EXPECT_TRUE(replayer_->failures().empty());
  EXPECT_EQ(sqs_.Messages(dest_).size(), 10u);                            // each exactly once
  EXPECT_LE(clock_.SteadyNow() - before, std::chrono::milliseconds(10));  // one backoff of at most base_delay
}

TEST_F(ReplayTest, EntriesFailingEveryAttemptAreReportedWithIdAndReason) {
  options_.send_attempts = 3;
  sqs_.FailSendEntries(100, "InternalError");
  auto targets = ToDest();
  ASSERT_TRUE(Run({Record("x", "1"), Record("y", "2")}, *targets).ok());
  EXPECT_EQ(sqs_.calls(Op::kSendMessageBatch), 3);
  ASSERT_EQ(replayer_->failures().size(), 2u);
  EXPECT_EQ(replayer_->failures()[0].message_id, "x");
  EXPECT_EQ(replayer_->failures()[0].destination, dest_);
  EXPECT_NE(replayer_->failures()[0].reason.find("InternalError"), std::string::npos);
  EXPECT_EQ(replayer_->stats().sent, 0u);
}

TEST_F(ReplayTest, NonRetryableCallErrorStopsTheRun) {
  sqs_.FailNext(Op::kSendMessageBatch, PermissionDenied("AccessDenied"));
  auto targets = ToDest();
  Status st = Run({Record("x", "1"), Record("y", "2")}, *targets);
  EXPECT_EQ(st.code(), ErrorCode::kPermissionDenied);
  EXPECT_EQ(sqs_.calls(Op::kSendMessageBatch), 1);
  EXPECT_EQ(replayer_->stats().failed, 2u);
}

TEST_F(ReplayTest, FifoKeepsGroupOrderGroupIdAndDeduplicationId) {
  std::string fifo = *sqs_.CreateQueue("orders.fifo", {{"FifoQueue", "true"}});
  std::vector<ArchiveRecord> records;
  for (int i = 0; i < 30; ++i) {
    std::string group = i % 2 ? "g-odd" : "g-even";
    std::map<std::string, std::string> sys = {{"MessageGroupId", group},
                                              {"SequenceNumber", "1888000000000000" + fmt::format("{:04}", i)}};
    if (i % 3 != 0) sys["MessageDeduplicationId"] = "dedup-" + std::to_string(i);
    records.push_back(Record("m" + std::to_string(i), "seq " + std::to_string(i), sys));
  }
  std::mt19937 rng(7);
  std::shuffle(records.begin(), records.end(), rng);  // archive order is not send order
  auto targets = TargetResolver::Fixed(sqs_, "orders.fifo", "us-east-1");
  ASSERT_TRUE(Run(records, *targets).ok());
  EXPECT_EQ(replayer_->stats().sent, 30u);
  std::map<std::string, std::vector<int>> order;
  for (const Message& m : sqs_.Messages(fifo)) {
    order[m.attributes.at("MessageGroupId")].push_back(std::stoi(m.body.substr(4)));
    int i = std::stoi(m.body.substr(4));
    EXPECT_EQ(m.attributes.at("MessageDeduplicationId"),
              i % 3 != 0 ? "dedup-" + std::to_string(i) : "m" + std::to_string(i));
  }
  ASSERT_EQ(order.size(), 2u);
  for (const auto& [group, seq] : order) EXPECT_TRUE(std::is_sorted(seq.begin(), seq.end())) << group;
  EXPECT_EQ(replayer_->stats().order_breaks, 0u);
}

TEST_F(ReplayTest, FifoBufferBoundFlushesRunsAndCountsOrderBreaks) {
  *sqs_.CreateQueue("orders.fifo", {{"FifoQueue", "true"}});
  options_.fifo_buffer_records = 4;
  std::vector<ArchiveRecord> records;
  for (int i : {5, 6, 7, 8, 1, 2}) {
    records.push_back(Record("m" + std::to_string(i), "b" + std::to_string(i),
                             {{"MessageGroupId", "g"}, {"SequenceNumber", std::to_string(100 + i)}}));
  }
  auto targets = TargetResolver::Fixed(sqs_, "orders.fifo", "us-east-1");
  ASSERT_TRUE(Run(records, *targets).ok());
  EXPECT_EQ(replayer_->stats().sent, 6u);
  EXPECT_EQ(replayer_->stats().order_breaks, 2u);  // 1 and 2 arrived after the first run of 4 was sent
}

TEST_F(ReplayTest, FifoDestinationNeedsAGroupId) {
  *sqs_.CreateQueue("orders.fifo", {{"FifoQueue", "true"}});
  auto targets = TargetResolver::Fixed(sqs_, "orders.fifo", "us-east-1");
  ASSERT_TRUE(Run({Record("std", "from a standard queue")}, *targets).ok());
  ASSERT_EQ(replayer_->failures().size(), 1u);
  EXPECT_NE(replayer_->failures()[0].reason.find("no MessageGroupId"), std::string::npos);
  EXPECT_EQ(sqs_.calls(Op::kSendMessageBatch), 0);
}

TEST(TokenBucketTest, AverageRateIsTheConfiguredRate) {
  FakeClock clock;
  TokenBucket bucket(250, 10, clock);
  auto start = clock.SteadyNow();
  for (int i = 0; i < 1000; ++i) bucket.Acquire(10);
  double secs = std::chrono::duration<double>(clock.SteadyNow() - start).count();
  EXPECT_NEAR(10000 / secs, 250, 250 * 0.01);
}

TEST(TokenBucketTest, IdleTimeAccruesOnlyUpToTheBurst) {
  FakeClock clock;
  TokenBucket bucket(100, 20, clock);
  clock.Advance(seconds(60));
  EXPECT_DOUBLE_EQ(bucket.Available(), 20);
  auto start = clock.SteadyNow();
  bucket.Acquire(20);
  bucket.Acquire(20);  // needs 0.2 s of refill
  EXPECT_NEAR(std::chrono::duration<double>(clock.SteadyNow() - start).count(), 0.2, 0.001);
}

TEST_F(ReplayTest, RateLimitHoldsTheRateOverARun) {
  options_.rate = 50;
  std::vector<ArchiveRecord> records;
  for (int i = 0; i < 500; ++i) records.push_back(Record("id-" + std::to_string(i), "b"));
  auto targets = ToDest();
  auto start = clock_.SteadyNow();
  ASSERT_TRUE(Run(records, *targets).ok());
  double secs = std::chrono::duration<double>(clock_.SteadyNow() - start).count();
  EXPECT_NEAR(500 / secs, 50, 50 * 0.05);
}

TEST_F(ReplayTest, DryRunSendsNothingAndDescribesEachMessage) {
  options_.dry_run = true;
  std::vector<std::string> lines;
  auto targets = ToDest();
  replayer_ = std::make_unique<Replayer>(sqs_, *targets, clock_, options_, nullptr);
  replayer_->OnDryRun([&](const DryRunEntry& e) { lines.push_back(DryRunLine(e)); });
  ASSERT_TRUE(replayer_->Start().ok());
  ASSERT_TRUE(replayer_->Add({Record("a", "12345"), ""}).ok());
  ASSERT_TRUE(replayer_->Finish().ok());
  EXPECT_EQ(sqs_.calls(Op::kSendMessageBatch), 0);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("would send a to " + dest_), std::string::npos);
  EXPECT_EQ(replayer_->stats().would_send, 1u);
}

TEST_F(ReplayTest, MaxStopsTakingItems) {
  options_.max = 3;
  std::vector<ArchiveRecord> records;
  for (int i = 0; i < 10; ++i) records.push_back(Record("id-" + std::to_string(i), "b"));
  auto targets = ToDest();
  ASSERT_TRUE(Run(records, *targets).ok());
  EXPECT_EQ(sqs_.Messages(dest_).size(), 3u);
}

// ---- --to-source

TEST_F(ReplayTest, ToSourceUsesTheDeadLetterSourceArnOfEachRecord) {
  std::string a = *sqs_.CreateQueue("orders-a", {});
  std::string b = *sqs_.CreateQueue("orders-b", {});
  auto targets = TargetResolver::ToSource(sqs_, "us-east-1");
  ASSERT_TRUE(Run({Record("1", "x", {{"DeadLetterQueueSourceArn", "arn:aws:sqs:us-east-1:123456789012:orders-a"}}),
                   Record("2", "y", {{"DeadLetterQueueSourceArn", "arn:aws:sqs:us-east-1:123456789012:orders-b"}})},
                  *targets)
                  .ok());
  ASSERT_EQ(sqs_.Messages(a).size(), 1u);
  EXPECT_EQ(sqs_.Messages(a)[0].body, "x");
  ASSERT_EQ(sqs_.Messages(b).size(), 1u);
  EXPECT_EQ(sqs_.Messages(b)[0].body, "y");
}

TEST_F(ReplayTest, ToSourceFallsBackToTheSingleRedriveSource) {
  std::string dlq = *sqs_.CreateQueue("orders-dlq", {});
  std::string src = *sqs_.CreateQueue(
      "orders-src",
      {{"RedrivePolicy",
        R"({"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:orders-dlq","maxReceiveCount":"3"})"}});
  ArchiveRecord r = Record("1", "x");
  r.queue_url = dlq;
  auto targets = TargetResolver::ToSource(sqs_, "us-east-1");
  ASSERT_TRUE(Run({r}, *targets).ok());
  EXPECT_EQ(sqs_.Messages(src).size(), 1u);
}

TEST_F(ReplayTest, ToSourceIsAmbiguousWithTwoRedriveSourcesAndSendsNothing) {
  std::string dlq = *sqs_.CreateQueue("orders-dlq", {});
  const std::string policy =
      R"({"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:orders-dlq","maxReceiveCount":"3"})";
  *sqs_.CreateQueue("orders-one", {{"RedrivePolicy", policy}});
  *sqs_.CreateQueue("orders-two", {{"RedrivePolicy", policy}});
  ArchiveRecord r = Record("1", "x");
  r.queue_url = dlq;
  auto targets = TargetResolver::ToSource(sqs_, "us-east-1");
  auto resolved = targets->Resolve(r);
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(resolved.status().message().find("ambiguous"), std::string::npos);
  EXPECT_NE(resolved.status().message().find("orders-one"), std::string::npos);
  EXPECT_EQ(sqs_.calls(Op::kSendMessageBatch), 0);
}

TEST_F(ReplayTest, ToSourceWithoutAnySourceSaysSo) {
  std::string dlq = *sqs_.CreateQueue("lonely-dlq", {});
  ArchiveRecord r = Record("1", "x");
  r.queue_url = dlq;
  auto targets = TargetResolver::ToSource(sqs_, "us-east-1");
  auto resolved = targets->Resolve(r);
  ASSERT_FALSE(resolved.ok());
  EXPECT_NE(resolved.status().message().find("source is unknown"), std::string::npos);
}

TEST_F(ReplayTest, MissingDestinationQueueIsNotFoundBeforeAnySend) {
  auto targets = TargetResolver::Fixed(sqs_, "no-such-queue", "us-east-1");
  Status st = Run({Record("1", "x")}, *targets);
  EXPECT_EQ(st.code(), ErrorCode::kNotFound);
  EXPECT_NE(st.message().find("no-such-queue"), std::string::npos);
  EXPECT_EQ(sqs_.calls(Op::kSendMessageBatch), 0);
}

// ---- checkpoints

TEST_F(ReplayTest, CheckpointResumeAfterALostReplySendsOnlyTheBatchInFlightTwice) {
  options_.checkpoint_path = TempPath("lost.ckpt");
  options_.identity_text = CheckpointIdentityText("file:///a", "{}", "orders", "");
  auto records = Numbered(45);
  // The third batch is applied but its reply is lost and the run dies (a
  // non-retryable error stands in for kill -9 after the send).
  auto targets = ToDest();
  int calls = 0;
  replayer_ = std::make_unique<Replayer>(sqs_, *targets, clock_, options_, nullptr);
  replayer_->OnBatchDone([&](const auto&, const auto&) {
    if (++calls == 2) sqs_.FailNext(Op::kSendMessageBatch, Internal("connection reset"), 1, true);
  });
  ASSERT_TRUE(replayer_->Start().ok());
  Status st = AddAll(records);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(sqs_.Messages(dest_).size(), 30u);
  auto saved = LoadCheckpoint(options_.checkpoint_path);
  ASSERT_TRUE(saved.ok() && saved->has_value());
  EXPECT_EQ((*saved)->done, 20u);

  ASSERT_TRUE(Run(records, *targets).ok());
  EXPECT_EQ(replayer_->stats().resumed, 20u);
  EXPECT_EQ(replayer_->stats().sent, 25u);
  auto msgs = sqs_.Messages(dest_);
  EXPECT_EQ(msgs.size(), 55u);  // 45 + the 10 of the batch in flight
  std::map<std::string, int> copies;
  for (const Message& m : msgs) ++copies[m.body];
  EXPECT_EQ(copies.size(), 45u);  // nothing lost
  for (int i = 0; i < 45; ++i) EXPECT_EQ(copies["body " + std::to_string(i)], i >= 20 && i < 30 ? 2 : 1) << i;
  saved = LoadCheckpoint(options_.checkpoint_path);
  EXPECT_EQ((*saved)->done, 45u);
  EXPECT_EQ((*saved)->sent, 45u);  // the lost reply's batch is not known to have been sent
}

// SIGINT while sending: the run ends with kCancelled after the batch in
// hand, the checkpoint holds exactly what was confirmed, and a rerun sends the
// rest once: nothing lost, nothing twice.
TEST_F(ReplayTest, StopWhileSendingEndsAfterTheBatchInHandAndARerunSendsTheRestOnce) {
  options_.checkpoint_path = TempPath("stop.ckpt");
  options_.identity_text = "same";
  std::atomic<bool> stop{false};
  options_.stop = &stop;
  auto records = Numbered(45);
  auto targets = ToDest();
  replayer_ = std::make_unique<Replayer>(sqs_, *targets, clock_, options_, nullptr);
  replayer_->OnBatchDone([&](const auto&, const auto&) { stop = true; });
  ASSERT_TRUE(replayer_->Start().ok());
  Status st = AddAll(records);
  EXPECT_EQ(st.code(), ErrorCode::kCancelled) << st.ToString();
  EXPECT_EQ(sqs_.Messages(dest_).size(), 10u);
  EXPECT_EQ(replayer_->stats().sent, 10u);
  auto saved = LoadCheckpoint(options_.checkpoint_path);
  ASSERT_TRUE(saved.ok() && saved->has_value());
  EXPECT_EQ((*saved)->done, 10u);

  stop = false;
  options_.stop = nullptr;
  ASSERT_TRUE(Run(records, *targets).ok());
  EXPECT_EQ(replayer_->stats().resumed, 10u);
  EXPECT_EQ(replayer_->stats().sent, 35u);
  std::map<std::string, int> copies;
  for (const Message& m : sqs_.Messages(dest_)) ++copies[m.body];
  EXPECT_EQ(copies.size(), 45u);
  for (const auto& [body, n] : copies) EXPECT_EQ(n, 1) << body;
}

TEST_F(ReplayTest, CheckpointOfAnotherRunIsRefused) {
  options_.checkpoint_path = TempPath("other.ckpt");
  options_.identity_text = CheckpointIdentityText("file:///a", R"({"queue":["x"]})", "orders", "");
  auto targets = ToDest();
  ASSERT_TRUE(Run(Numbered(5), *targets).ok());
  options_.identity_text = CheckpointIdentityText("file:///a", R"({"queue":["y"]})", "orders", "");
  Status st = Run(Numbered(5), *targets);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("another replay"), std::string::npos);
  EXPECT_NE(st.message().find(R"({"queue":["x"]})"), std::string::npos);
  EXPECT_EQ(sqs_.Messages(dest_).size(), 5u);
}

TEST_F(ReplayTest, CheckpointRefusesInputThatChanged) {
  options_.checkpoint_path = TempPath("changed.ckpt");
  options_.identity_text = "same";
  auto targets = ToDest();
  ASSERT_TRUE(Run(Numbered(20), *targets).ok());
  auto other = Numbered(20);
  other[3].message_id = "something-else";
  Status st = Run(other, *targets);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("does not match this input"), std::string::npos);
  EXPECT_EQ(sqs_.Messages(dest_).size(), 20u);  // nothing sent again
  // An input shorter than what the checkpoint finished is refused as well.
  st = Run(Numbered(10), *targets);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
}

TEST_F(ReplayTest, ResumeSendsAgainWhatFailedBefore) {
  options_.checkpoint_path = TempPath("failed.ckpt");
  options_.identity_text = "same";
  options_.send_attempts = 1;
  auto targets = ToDest();
  sqs_.FailSendEntries(2, "InternalError");
  ASSERT_TRUE(Run(Numbered(15), *targets).ok());
  EXPECT_EQ(replayer_->stats().failed, 2u);
  EXPECT_EQ(sqs_.Messages(dest_).size(), 13u);
  ASSERT_TRUE(Run(Numbered(15), *targets).ok());
  EXPECT_EQ(replayer_->stats().sent, 2u);
  EXPECT_EQ(replayer_->stats().resumed, 13u);
  EXPECT_EQ(sqs_.Messages(dest_).size(), 15u);
  auto saved = LoadCheckpoint(options_.checkpoint_path);
  EXPECT_TRUE((*saved)->failed_ids.empty());
}

TEST(CheckpointTest, RoundTripsAndRejectsTampering) {
  CheckpointState s;
  s.identity_text = CheckpointIdentityText("s3://b/p", "{}", "source", "jq -c .");
  s.identity = CheckpointIdentity(s.identity_text);
  s.done = 2;
  s.chain = ChainNext(ChainNext("", "a"), "b");
  s.failed_ids = {"b"};
  s.sent = 1;
  s.failed = 1;
  auto parsed = ParseCheckpoint(SerializeCheckpoint(s));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->done, 2u);
  EXPECT_EQ(parsed->chain, s.chain);
  EXPECT_EQ(parsed->failed_ids, s.failed_ids);
  std::string text = SerializeCheckpoint(s);
  text.replace(text.find("s3://b/p"), 8, "s3://b/q");
  EXPECT_FALSE(ParseCheckpoint(text).ok());
  EXPECT_FALSE(ParseCheckpoint("{\"version\":2}").ok());
  EXPECT_FALSE(ParseCheckpoint("not json").ok());
}

TEST(CheckpointTest, MissingFileIsAFreshStartAndSaveReplacesAtomically) {
  std::string path = (std::filesystem::temp_directory_path() / ("ckpt_" + std::to_string(::getpid()))).string();
  std::filesystem::remove(path);
  auto none = LoadCheckpoint(path);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  CheckpointState s;
  s.identity_text = "x";
  s.identity = CheckpointIdentity("x");
  ASSERT_TRUE(SaveCheckpoint(path, s).ok());
  s.done = 1;
  s.chain = ChainNext("", "a");
  ASSERT_TRUE(SaveCheckpoint(path, s).ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  EXPECT_EQ((*LoadCheckpoint(path))->done, 1u);
  EXPECT_FALSE(SaveCheckpoint("/nonexistent-dir/x.ckpt", s).ok());
  std::filesystem::remove(path);
}

// ---- --transform

TEST_F(ReplayTest, TransformEditsWhatIsSent) {
  auto t = CommandTransform::Start("sed -u 's/hello/HELLO/'", std::chrono::seconds(10));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto targets = ToDest();
  ASSERT_TRUE(Run({Record("a", "hello 1"), Record("b", "hello 2")}, *targets, nullptr, t->get()).ok());
  auto msgs = sqs_.Messages(dest_);
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[0].body, "HELLO 1");
  EXPECT_EQ(msgs[0].md5_of_body, Md5OfBody("HELLO 1"));
  EXPECT_EQ(msgs[1].body, "HELLO 2");
}

TEST(TransformTest, FailingCommandIsAClearError) {
  auto t = CommandTransform::Start("exit 3", std::chrono::seconds(10));
  ASSERT_TRUE(t.ok());
  auto r = (*t)->Apply(Record("a", "x"));
  ASSERT_FALSE(r.ok());
  // Depending on timing the command is seen closing its input or its output
  // first; either way the error names the message and how the command ended.
  EXPECT_NE(r.status().message().find("before answering message a"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("status 3"), std::string::npos) << r.status().message();
  EXPECT_FALSE((*t)->Apply(Record("b", "y")).ok());  // stays failed
}

TEST(TransformTest, GarbledOutputIsAClearError) {
  auto t = CommandTransform::Start("sed -u 's/^/garbage/'", std::chrono::seconds(10));
  ASSERT_TRUE(t.ok());
  auto r = (*t)->Apply(Record("a", "x"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("is not an archive record"), std::string::npos) << r.status().message();
}

TEST(TransformTest, ChangedMessageIdIsRefused) {
  auto t = CommandTransform::Start("sed -u 's/\"message_id\":\"a\"/\"message_id\":\"z\"/'", std::chrono::seconds(10));
  ASSERT_TRUE(t.ok());
  auto r = (*t)->Apply(Record("a", "x"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("changed message_id"), std::string::npos) << r.status().message();
}

TEST(TransformTest, SilentCommandTimesOut) {
  auto t = CommandTransform::Start("cat >/dev/null", std::chrono::milliseconds(200));
  ASSERT_TRUE(t.ok());
  auto r = (*t)->Apply(Record("a", "x"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--unbuffered"), std::string::npos) << r.status().message();
}

// ---- audit

TEST(AuditTest, RecordNamesCallerFilterDestinationCountsAndIds) {
  FakeClock clock;
  FakeObjectStore store("fake://archive", &clock);
  AuditRecord a;
  a.caller_arn = "arn:aws:iam::123456789012:user/ops";
  a.started_at = clock.Now();
  a.finished_at = clock.Now() + seconds(3);
  a.source = "s3://bucket/dlq-archive";
  a.filter = R"({"queue":["orders-dlq"]})";
  a.destination = "source";
  a.outcome = "done";
  a.stats.accepted = 2;
  a.stats.sent = 1;
  a.stats.failed = 1;
  a.sent = {{"m-1", "new-1", "https://q"}};
  a.failures = {{"m-2", "https://q", "InternalError: boom"}};
  a.sent_by_destination = {{"https://q", 1}};
  auto key = WriteAudit(store, "dlq-archive", a);
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_EQ(key->rfind("dlq-archive/_audit/20231114T221323Z-", 0), 0u) << *key;
  std::string doc = store.Object(*key)->data;
  for (const char* want :
       {R"("caller_arn":"arn:aws:iam::123456789012:user/ops")", R"("source":"s3://bucket/dlq-archive")",
        R"("filter":"{\"queue\":[\"orders-dlq\"]}")", R"("destination":"source")", R"("sent":1,"failed":1)",
        R"({"message_id":"m-1","new_message_id":"new-1","destination":"https://q","outcome":"sent"})",
        R"("outcome":"failed","reason":"InternalError: boom")"}) {
    EXPECT_NE(doc.find(want), std::string::npos) << want << "\n" << doc;
  }
  EXPECT_TRUE(store.Object(*key)->options.create_only);
}

// ---- live form

class LiveReplayTest : public ReplayTest {
 protected:
  LiveReplayTest() {
    dlq_url_ = *sqs_.CreateQueue("orders-dlq", {});
    dlq_.name = "orders-dlq";
    dlq_.url = dlq_url_;
    dlq_.region = "us-east-1";
    live_.wait_time_seconds = 0;
  }
  void Put(const std::string& body) {
    SendEntry e;
    e.body = body;
    e.message_attributes["kind"] = {"String", body.substr(0, 3), ""};
    ASSERT_TRUE(sqs_.SendMessage(dlq_url_, e).ok());
  }
  Result<LiveReplayStats> RunLive(const std::function<bool(const ArchiveRecord&)>& select) {
    targets_ = ToDest();
    replayer_ = std::make_unique<Replayer>(sqs_, *targets_, clock_, options_, nullptr);
    DLQ_RETURN_IF_ERROR(replayer_->Start());
    auto r = ReplayFromQueue(sqs_, dlq_, *replayer_, select, clock_, live_);
    if (!r.ok()) return r;
    DLQ_RETURN_IF_ERROR(replayer_->Finish());
    return r;
  }
  // Receives everything receivable in the DLQ now (up to 50), once.
  size_t ReceiveAllVisible() {
    ReceiveOptions ro;
    ro.wait_time_seconds = 0;
    ro.max_messages = 10;
    size_t visible = 0;
    for (int i = 0; i < 5; ++i) {
      auto got = sqs_.ReceiveMessages(dlq_url_, ro);
      EXPECT_TRUE(got.ok());
      if (got.ok()) visible += got->size();
    }
    return visible;
  }
  std::string dlq_url_;
  QueueInfo dlq_;
  LiveReplayOptions live_;
  std::unique_ptr<TargetResolver> targets_;
};

TEST_F(LiveReplayTest, MovesSelectedMessagesAndReleasesTheRestAtTheEnd) {
  for (int i = 0; i < 7; ++i) Put("yes " + std::to_string(i));
  for (int i = 0; i < 5; ++i) Put("no " + std::to_string(i));
  auto stats = RunLive([](const ArchiveRecord& r) { return r.body.rfind("yes", 0) == 0; });
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->selected, 7u);
  EXPECT_EQ(stats->deleted, 7u);
  EXPECT_EQ(sqs_.Messages(dest_).size(), 7u);
  auto left = sqs_.Messages(dlq_url_);
  ASSERT_EQ(left.size(), 5u);
  for (const Message& m : left) EXPECT_EQ(m.body.rfind("no", 0), 0u);
  // Released with visibility 0: receivable again at once.
  ReceiveOptions ro;
  ro.wait_time_seconds = 0;
  EXPECT_FALSE(sqs_.ReceiveMessages(dlq_url_, ro)->empty());
}

TEST_F(LiveReplayTest, NeverDeletesWhatWasNotConfirmedSent) {
  for (int i = 0; i < 4; ++i) Put("yes " + std::to_string(i));
  options_.send_attempts = 1;
  sqs_.FailSendEntries(2, "InternalError");
  auto stats = RunLive([](const ArchiveRecord&) { return true; });
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(sqs_.Messages(dest_).size() + sqs_.Messages(dlq_url_).size(), 4u);
  EXPECT_EQ(stats->deleted, sqs_.Messages(dest_).size());
  EXPECT_GE(replayer_->stats().failed, 2u);
}

TEST_F(LiveReplayTest, DryRunLeavesEveryMessageInTheDlq) {
  for (int i = 0; i < 3; ++i) Put("yes " + std::to_string(i));
  options_.dry_run = true;
  live_.dry_run = true;
  auto stats = RunLive([](const ArchiveRecord&) { return true; });
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(sqs_.Messages(dlq_url_).size(), 3u);
  EXPECT_EQ(sqs_.calls(Op::kSendMessageBatch), 0);
  EXPECT_EQ(sqs_.calls(Op::kDeleteMessageBatch), 0);
}

// SIGINT during a live move: what was confirmed sent is deleted, everything
// else received is released at once (visibility 0), so nothing stays hidden
// for the visibility timeout and nothing is lost.
TEST_F(LiveReplayTest, StopMidMoveDeletesOnlyWhatWasSentAndReleasesTheRest) {
  for (int i = 0; i < 30; ++i) Put("yes " + std::to_string(i));
  std::atomic<bool> stop{false};
  options_.stop = &stop;
  live_.stop = &stop;
  targets_ = ToDest();
  replayer_ = std::make_unique<Replayer>(sqs_, *targets_, clock_, options_, nullptr);
  ASSERT_TRUE(replayer_->Start().ok());
  int selected = 0;
  auto r = ReplayFromQueue(
      sqs_, dlq_, *replayer_,
      [&](const ArchiveRecord&) {
        if (++selected == 12) stop = true;  // during the second receive's messages
        return true;
      },
      clock_, live_);
  Status finish = replayer_->Finish();
  EXPECT_TRUE(finish.ok() || finish.code() == ErrorCode::kCancelled) << finish.ToString();
  const size_t moved = sqs_.Messages(dest_).size();
  const size_t left = sqs_.Messages(dlq_url_).size();
  EXPECT_EQ(moved + left, 30u);  // nothing lost, nothing duplicated
  EXPECT_LT(moved, 30u);
  if (r.ok()) {
    EXPECT_EQ(r->deleted, moved);
  }
  // Everything left is visible again at once.
  const size_t visible = ReceiveAllVisible();
  EXPECT_EQ(visible, left);
}

// A stop that lands while a receive is on the wire, after SQS took its
// messages: SqsClient abandons a reply when its cancel flag is set, so this
// wrapper does too (it takes the messages, sets the stop, and reports the
// receive cancelled if it was given the stop as its cancel flag).
class StopDuringReceive final : public QueueClientWrapper {
 public:
  StopDuringReceive(QueueClient& target, std::atomic<bool>& stop, int at_receive)
      : QueueClientWrapper(target), stop_(stop), at_receive_(at_receive) {}
  Result<std::vector<Message>> ReceiveMessages(const std::string& queue_url, const ReceiveOptions& options) override {
    auto got = QueueClientWrapper::ReceiveMessages(queue_url, options);
    if (++receives_ != at_receive_) return got;
    taken_ = got.ok() ? got->size() : 0;
    stop_ = true;
    if (options.cancel != nullptr && options.cancel->load()) return Cancelled("receive abandoned");
    return got;
  }
  size_t taken() const { return taken_; }

 private:
  std::atomic<bool>& stop_;
  const int at_receive_;
  int receives_ = 0;
  size_t taken_ = 0;
};

TEST_F(LiveReplayTest, StopDuringAReceiveReleasesWhatThatReceiveTookAtOnce) {
  for (int i = 0; i < 30; ++i) Put("yes " + std::to_string(i));
  std::atomic<bool> stop{false};
  options_.stop = &stop;
  live_.stop = &stop;
  StopDuringReceive stopping(sqs_, stop, /*at_receive=*/2);
  targets_ = ToDest();
  replayer_ = std::make_unique<Replayer>(stopping, *targets_, clock_, options_, nullptr);
  ASSERT_TRUE(replayer_->Start().ok());
  auto r = ReplayFromQueue(
      stopping, dlq_, *replayer_, [](const ArchiveRecord&) { return true; }, clock_, live_);
  Status finish = replayer_->Finish();
  EXPECT_TRUE(finish.ok() || finish.code() == ErrorCode::kCancelled) << finish.ToString();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(stopping.taken(), 10u);
  const size_t moved = sqs_.Messages(dest_).size();
  const size_t left = sqs_.Messages(dlq_url_).size();
  EXPECT_EQ(moved + left, 30u);
  EXPECT_EQ(moved, 10u) << "only the first receive's messages are sent";
  EXPECT_EQ(r->deleted, moved);
  // Everything left, the stopped receive's 10 included, is receivable at once.
  const size_t visible = ReceiveAllVisible();
  EXPECT_EQ(visible, left);
  EXPECT_EQ(visible, 20u);
}

// ---- live form: a pass examines every message present at its start.

// Advances the fake clock on every receive, so visibility runs out during a
// pass unless the heartbeat extends it.
class SlowReceives final : public QueueClientWrapper {
 public:
  SlowReceives(QueueClient& target, FakeClock& clock, std::chrono::seconds per_receive)
      : QueueClientWrapper(target), clock_(clock), per_receive_(per_receive) {}
  Result<std::vector<Message>> ReceiveMessages(const std::string& queue_url, const ReceiveOptions& options) override {
    clock_.Advance(per_receive_);
    return QueueClientWrapper::ReceiveMessages(queue_url, options);
  }

 private:
  FakeClock& clock_;
  const std::chrono::seconds per_receive_;
};

class LivePassTest : public LiveReplayTest {
 protected:
  // `n` messages, the first `matching` with tenant=acme, the rest globex;
  // FIFO: group `g<i / group_size>`.
  void Fill(int n, int matching, int group_size = 1) {
    for (int i = 0; i < n; ++i) {
      SendEntry e;
      e.body = "order " + std::to_string(i);
      e.message_attributes["tenant"] = {"String", i < matching ? "acme" : "globex", ""};
      if (dlq_.fifo) {
        e.message_group_id = "g" + std::to_string(i / group_size);
        e.message_deduplication_id = "d" + std::to_string(i);
      }
      ASSERT_TRUE(sqs_.SendMessage(dlq_url_, e).ok());
    }
  }
  void UseFifo() {
    dlq_url_ = *sqs_.CreateQueue("orders-dlq.fifo", {{"FifoQueue", "true"}});
    dlq_.name = "orders-dlq.fifo";
    dlq_.url = dlq_url_;
    dlq_.fifo = true;
  }
  static bool Acme(const ArchiveRecord& r) {
    auto it = r.message_attributes.find("tenant");
    return it != r.message_attributes.end() && it->second.string_value == "acme";
  }
  // Visible messages in the DLQ now, by ApproximateNumberOfMessages.
  int64_t VisibleInDlq() {
    return std::stoll(
        sqs_.GetQueueAttributes(dlq_url_, {"ApproximateNumberOfMessages"})->at("ApproximateNumberOfMessages"));
  }
  std::set<std::string> BodiesIn(const std::string& url) {
    std::set<std::string> out;
    for (const Message& m : sqs_.Messages(url)) out.insert(m.body);
    return out;
  }
};

struct LiveCase {
  bool fifo;
  int percent;
};

class LivePassCases : public LivePassTest, public ::testing::WithParamInterface<LiveCase> {};

// SQS (and moto) hand out random subsets: the pass holds what it examined so
// later receives reach the rest, and counts each message once.
TEST_P(LivePassCases, RandomSubsetReceivesStillExamineEveryMessageExactlyOnce) {
  const LiveCase c = GetParam();
  if (c.fifo) UseFifo();
  constexpr int kMessages = 200;
  const int matching = kMessages * c.percent / 100;
  Fill(kMessages, matching);
  sqs_.SampleReceives(0.2, /*seed=*/7 + c.percent);
  auto stats = RunLive(Acme);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_TRUE(stats->complete) << stats->incomplete_reason;
  EXPECT_EQ(stats->incomplete_reason, "");
  EXPECT_EQ(stats->present_at_start, kMessages);
  EXPECT_EQ(stats->examined, static_cast<uint64_t>(kMessages));
  EXPECT_EQ(stats->selected, static_cast<uint64_t>(matching));
  EXPECT_EQ(stats->not_selected, static_cast<uint64_t>(kMessages - matching));
  EXPECT_EQ(stats->deleted, static_cast<uint64_t>(matching));
  EXPECT_EQ(stats->released, static_cast<uint64_t>(kMessages - matching));
  EXPECT_EQ(replayer_->stats().sent, static_cast<uint64_t>(matching));
  EXPECT_EQ(sqs_.Messages(dest_).size(), static_cast<size_t>(matching));  // none sent twice
  EXPECT_EQ(BodiesIn(dest_).size(), static_cast<size_t>(matching));
  // The rest is in the DLQ and visible again at once, released together.
  EXPECT_EQ(sqs_.Messages(dlq_url_).size(), static_cast<size_t>(kMessages - matching));
  EXPECT_EQ(VisibleInDlq(), kMessages - matching);
}

INSTANTIATE_TEST_SUITE_P(StandardAndFifo, LivePassCases,
                         ::testing::Values(LiveCase{false, 0}, LiveCase{false, 1}, LiveCase{false, 25},
                                           LiveCase{false, 100}, LiveCase{true, 0}, LiveCase{true, 1},
                                           LiveCase{true, 25}, LiveCase{true, 100}),
                         [](const auto& info) {
                           return std::string(info.param.fifo ? "Fifo" : "Standard") +
                                  std::to_string(info.param.percent) + "Percent";
                         });

TEST_F(LivePassTest, DryRunDescribesEachMessageOnceAndLeavesAllInTheDlq) {
  Fill(60, 60);
  sqs_.SampleReceives(0.3, 3);
  options_.dry_run = true;
  live_.dry_run = true;
  targets_ = ToDest();
  replayer_ = std::make_unique<Replayer>(sqs_, *targets_, clock_, options_, nullptr);
  ASSERT_TRUE(replayer_->Start().ok());
  std::vector<std::string> lines;
  replayer_->OnDryRun([&](const DryRunEntry& e) { lines.push_back(DryRunLine(e)); });
  auto stats = ReplayFromQueue(sqs_, dlq_, *replayer_, Acme, clock_, live_);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  ASSERT_TRUE(replayer_->Finish().ok());
  EXPECT_TRUE(stats->complete) << stats->incomplete_reason;
  EXPECT_EQ(lines.size(), 60u);
  std::set<std::string> distinct(lines.begin(), lines.end());
  EXPECT_EQ(distinct.size(), 60u);
  EXPECT_EQ(replayer_->stats().would_send, 60u);
  EXPECT_EQ(VisibleInDlq(), 60);
  EXPECT_EQ(sqs_.calls(Op::kDeleteMessageBatch), 0);
}

// The heartbeat keeps what the pass examined invisible across a long pass;
// a message whose extension fails comes back and is held again, never
// examined or sent twice.
TEST_F(LivePassTest, MessageReceivedAgainAfterItsHoldWasLostCountsOnce) {
  Fill(120, 30);
  sqs_.SampleReceives(0.5, 11);
  live_.visibility_timeout_seconds = 60;
  SlowReceives slow(sqs_, clock_, std::chrono::seconds(10));
  sqs_.FailVisibilityEntries(4);
  targets_ = ToDest();
  replayer_ = std::make_unique<Replayer>(sqs_, *targets_, clock_, options_, nullptr);
  ASSERT_TRUE(replayer_->Start().ok());
  auto stats = ReplayFromQueue(slow, dlq_, *replayer_, Acme, clock_, live_);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  ASSERT_TRUE(replayer_->Finish().ok());
  EXPECT_TRUE(stats->complete) << stats->incomplete_reason;
  EXPECT_GT(stats->visibility_extensions, 0u);
  EXPECT_EQ(stats->holds_lost, 4u);
  EXPECT_EQ(stats->examined, 120u);
  EXPECT_EQ(stats->selected, 30u);
  EXPECT_EQ(sqs_.Messages(dest_).size(), 30u);
  EXPECT_EQ(VisibleInDlq(), 90);
}

TEST_F(LivePassTest, WithoutHeartbeatFailuresNothingExaminedIsReceivedTwice) {
  Fill(80, 8);
  sqs_.SampleReceives(0.5, 5);
  live_.visibility_timeout_seconds = 60;
  SlowReceives slow(sqs_, clock_, std::chrono::seconds(20));
  targets_ = ToDest();
  replayer_ = std::make_unique<Replayer>(sqs_, *targets_, clock_, options_, nullptr);
  ASSERT_TRUE(replayer_->Start().ok());
  auto stats = ReplayFromQueue(slow, dlq_, *replayer_, Acme, clock_, live_);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_TRUE(stats->complete) << stats->incomplete_reason;
  EXPECT_EQ(stats->received, 80u) << "a held message came back";
  EXPECT_GT(stats->visibility_extensions, 0u);
}

// FIFO: a held message blocks the rest of its group, so a group with a
// message not selected before others cannot be examined in one pass: exit 4
// territory, with the reason, and nothing lost.
TEST_F(LivePassTest, FifoGroupBehindAHeldMessageMakesThePassIncomplete) {
  UseFifo();
  // One group of 15: the first not selected, the rest selected; 10 more
  // single-message groups, all selected.
  for (int i = 0; i < 25; ++i) {
    SendEntry e;
    e.body = "order " + std::to_string(i);
    e.message_attributes["tenant"] = {"String", i == 0 ? "globex" : "acme", ""};
    e.message_group_id = i < 15 ? "big" : "g" + std::to_string(i);
    e.message_deduplication_id = "d" + std::to_string(i);
    ASSERT_TRUE(sqs_.SendMessage(dlq_url_, e).ok());
  }
  live_.depth_checks = 2;
  auto stats = RunLive(Acme);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_FALSE(stats->complete);
  EXPECT_NE(stats->incomplete_reason.find("FIFO groups"), std::string::npos) << stats->incomplete_reason;
  EXPECT_LT(stats->examined, 25u);
  EXPECT_EQ(sqs_.Messages(dest_).size(), stats->selected);
  EXPECT_EQ(sqs_.Messages(dest_).size() + sqs_.Messages(dlq_url_).size(), 25u);
  EXPECT_EQ(static_cast<size_t>(VisibleInDlq()), sqs_.Messages(dlq_url_).size());
}

// A FIFO group whose messages are all selected is moved whole, in order: each
// delete frees the group for its next messages.
TEST_F(LivePassTest, FifoGroupsLongerThanOneReceiveMoveWholeWhenSelected) {
  UseFifo();
  Fill(45, 45, /*group_size=*/15);
  auto stats = RunLive(Acme);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_TRUE(stats->complete) << stats->incomplete_reason;
  EXPECT_EQ(stats->selected, 45u);
  EXPECT_EQ(sqs_.Messages(dlq_url_).size(), 0u);
}

TEST_F(LivePassTest, MoreThanItCanHoldEndsIncompleteAndReleasesEverything) {
  Fill(50, 0);
  live_.max_held = 20;
  auto stats = RunLive(Acme);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_FALSE(stats->complete);
  EXPECT_NE(stats->incomplete_reason.find("held 20 messages"), std::string::npos) << stats->incomplete_reason;
  EXPECT_EQ(stats->examined, 20u);
  EXPECT_EQ(VisibleInDlq(), 50);
}

TEST_F(LivePassTest, MessagesHeldByAnotherConsumerMakeThePassIncomplete) {
  Fill(30, 30);
  ReceiveOptions other;
  other.max_messages = 5;
  other.visibility_timeout = 600;
  ASSERT_EQ(sqs_.ReceiveMessages(dlq_url_, other)->size(), 5u);
  live_.depth_checks = 2;
  auto stats = RunLive(Acme);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_FALSE(stats->complete);
  EXPECT_EQ(stats->present_at_start, 30);
  EXPECT_EQ(stats->examined, 25u);
  EXPECT_EQ(stats->selected, 25u);
  EXPECT_NE(stats->incomplete_reason.find("5 messages are in flight"), std::string::npos) << stats->incomplete_reason;
}

// --max ends the pass early by request: not an incomplete pass (no exit 4).
TEST_F(LivePassTest, MaxEndsThePassEarlyWithoutCallingItIncomplete) {
  Fill(50, 50);
  options_.max = 10;
  auto stats = RunLive(Acme);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_TRUE(stats->at_max);
  EXPECT_FALSE(stats->complete);
  EXPECT_EQ(stats->incomplete_reason, "");
  EXPECT_EQ(stats->selected, 10u);
  EXPECT_EQ(stats->examined, 10u);
  EXPECT_EQ(sqs_.Messages(dest_).size(), 10u);
  EXPECT_EQ(VisibleInDlq(), 40);
}

TEST_F(LivePassTest, EmptyDlqIsCompleteAtOnce) {
  auto stats = RunLive(Acme);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_TRUE(stats->complete);
  EXPECT_EQ(stats->present_at_start, 0);
  EXPECT_EQ(stats->examined, 0u);
  EXPECT_EQ(stats->receive_calls, 3u);
}

}  // namespace
}  // namespace dlq
