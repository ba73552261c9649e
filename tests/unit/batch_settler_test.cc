#include "archiver/batch_settler.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "testing/fake_clock.h"
#include "testing/fake_object_store.h"
#include "testing/fake_queue.h"
#include "testing/scoped_capturing_logger.h"

namespace dlq {
namespace {

using Op = FakeQueueClient::Operation;
using std::chrono::seconds;

class BatchSettlerTest : public ::testing::Test {
 protected:
  BatchSettlerTest() : sqs_(clock_), store_("fake://archive", &clock_), ledger_(1) {
    url_ = sqs_.CreateQueue("orders-dlq", {{"VisibilityTimeout", "30"}}).value();
    queue_ = ResolveQueue(sqs_, url_, "us-east-1").value();
    options_.visibility_timeout = seconds(60);
    options_.deleters = 2;
  }

  BatchSettler Settler() {
    return BatchSettler(sqs_, store_, clock_, queue_, options_, counters_, ledger_, copies_,
                        [this](const Status& st) { failures_.push_back(st); });
  }

  // Sends n messages and receives them: held, invisible for an hour.
  std::vector<HeldMessage> Hold(int n) {
    for (int i = 0; i < n; ++i) {
      SendEntry e;
      e.body = "m" + std::to_string(i);
      EXPECT_TRUE(sqs_.InjectMessage(url_, e, clock_.Now()).ok());
    }
    std::vector<HeldMessage> held = ReceiveVisible();
    EXPECT_EQ(held.size(), static_cast<size_t>(n));
    return held;
  }

  // Receives every visible message, invisible for an hour.
  std::vector<HeldMessage> ReceiveVisible() {
    std::vector<HeldMessage> held;
    ReceiveOptions ro;
    ro.max_messages = 10;
    ro.visibility_timeout = 3600;
    for (auto got = sqs_.ReceiveMessages(url_, ro); got.ok() && !got->empty(); got = sqs_.ReceiveMessages(url_, ro)) {
      for (const Message& m : *got) held.push_back({m.message_id, m.receipt_handle, {}, {}});
    }
    return held;
  }

  // Holds 3 messages and deletes them while every DeleteMessageBatch call
  // fails with `injected`; what the run was told lands in failures_.
  void DeleteThreeWhileEveryDeleteFails(Status injected) {
    BatchSettler settler = Settler();
    std::vector<HeldMessage> held = Hold(3);
    sqs_.FailNext(Op::kDeleteMessageBatch, std::move(injected), 10);
    settler.Delete(held);
  }

  int64_t Visible() {
    auto attrs = sqs_.GetQueueAttributes(url_, {"ApproximateNumberOfMessages"});
    return attrs.ok() ? std::stoll(attrs->at("ApproximateNumberOfMessages")) : -1;
  }

  FakeClock clock_;
  FakeQueueClient sqs_;
  FakeObjectStore store_;
  std::string url_;
  QueueInfo queue_;
  DrainOptions options_;
  DrainCounters counters_;
  VisibilityLedger ledger_;
  CopyLedger copies_{counters_};
  std::vector<Status> failures_;
};

SealedBatch Sealed(std::string key) {
  SealedBatch b;
  b.key = std::move(key);
  b.gz = "object body";
  return b;
}

TEST_F(BatchSettlerTest, UploadStoresTheBodyCreateOnly) {
  BatchSettler settler = Settler();
  ASSERT_TRUE(settler.Upload(Sealed("arch/a.jsonl.gz")).ok());
  auto objects = store_.Objects();
  ASSERT_EQ(objects.count("arch/a.jsonl.gz"), 1u);
  EXPECT_EQ(objects["arch/a.jsonl.gz"].data, "object body");
  EXPECT_TRUE(objects["arch/a.jsonl.gz"].options.create_only);
}

TEST_F(BatchSettlerTest, UploadNeverOverwritesAnObject) {
  BatchSettler settler = Settler();
  PutOptions put;
  ASSERT_TRUE(store_.Put("arch/a.jsonl.gz", "someone else's", put).ok());
  Status st = settler.Upload(Sealed("arch/a.jsonl.gz"));
  EXPECT_EQ(st.code(), ErrorCode::kAlreadyExists);
  EXPECT_NE(st.ToString().find("refused to overwrite"), std::string::npos) << st.ToString();
  EXPECT_EQ(store_.Objects()["arch/a.jsonl.gz"].data, "someone else's");
}

TEST_F(BatchSettlerTest, UploadFailureNamesTheObject) {
  BatchSettler settler = Settler();
  store_.FailNextPut(Unavailable("503 Slow Down"));
  Status st = settler.Upload(Sealed("arch/b.jsonl.gz"));
  EXPECT_EQ(st.code(), ErrorCode::kUnavailable);
  EXPECT_NE(st.ToString().find("fake://archive/arch/b.jsonl.gz"), std::string::npos) << st.ToString();
}

TEST_F(BatchSettlerTest, UploadRefusesAKeyThatLeavesThePrefix) {
  BatchSettler settler = Settler();
  Status st = settler.Upload(Sealed("arch/../elsewhere.gz"));
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(store_.Objects().empty());
}

TEST_F(BatchSettlerTest, DeleteRetriesFailedEntriesUntilEveryMessageIsGone) {
  BatchSettler settler = Settler();
  std::vector<HeldMessage> held = Hold(25);
  sqs_.FailDeleteEntries(4);
  settler.Delete(held);
  EXPECT_EQ(counters_.deleted, 25u);
  EXPECT_EQ(counters_.delete_failures, 0u);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
  EXPECT_TRUE(failures_.empty());
}

TEST_F(BatchSettlerTest, AnExpiredReceiptHandleCountsAsADuplicate) {
  BatchSettler settler = Settler();
  std::vector<HeldMessage> held = Hold(2);
  held[1].receipt_handle = "expired-handle";
  settler.Delete(held);
  EXPECT_EQ(counters_.deleted, 1u);
  EXPECT_EQ(counters_.duplicates, 1u);
  EXPECT_EQ(counters_.delete_failures, 0u);
  EXPECT_EQ(sqs_.Depth(url_), 1u);  // still in the DLQ: archived again later
}

// A message SQS handed out again: the batch holds its first handle (stale
// now) and, at the end, its copy's. Both go in one call, so the stale one is
// never reported: each message counts deleted once, none as a duplicate.
TEST_F(BatchSettlerTest, AMessageDeletedByItsCopysHandleCountsOnceAndIsNoDuplicate) {
  ScopedCapturingLogger log;
  BatchSettler settler = Settler();
  std::vector<HeldMessage> held = Hold(12);
  for (const HeldMessage& h : held) ASSERT_TRUE(copies_.Take(h.message_id) == CopyLedger::Seen::kFirst);
  // Visible again and received again: new handles, the first ones stale.
  std::vector<VisibilityEntry> back;
  for (size_t i = 0; i < 10; ++i) back.push_back({std::to_string(i), held[i].receipt_handle, 0});
  ASSERT_TRUE(sqs_.ChangeMessageVisibilityBatch(url_, back).ok());
  back.clear();
  for (size_t i = 10; i < held.size(); ++i) back.push_back({std::to_string(i - 10), held[i].receipt_handle, 0});
  ASSERT_TRUE(sqs_.ChangeMessageVisibilityBatch(url_, back).ok());
  const std::vector<HeldMessage> again = ReceiveVisible();
  ASSERT_EQ(again.size(), held.size());
  for (HeldMessage h : again) {
    h.copy = true;
    held.push_back(std::move(h));
  }
  copies_.Stored(held);
  settler.Delete(held);
  EXPECT_EQ(counters_.archived, 12u);
  EXPECT_EQ(counters_.deleted, 12u);
  EXPECT_EQ(counters_.duplicates, 0u);
  EXPECT_EQ(counters_.delete_failures, 0u);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
  for (const auto& e : log->entries()) EXPECT_NE(e.event, "archive.duplicate") << e.line;
}

// moto hands two receives that race the same message with the same handle:
// a batch naming it twice would fail whole (BatchEntryIdsNotDistinct), and
// the run would stop on a delete "denied". It is deleted once, for both.
TEST_F(BatchSettlerTest, ACopyWithItsMessagesOwnHandleIsDeletedOnceForBoth) {
  BatchSettler settler = Settler();
  std::vector<HeldMessage> held = Hold(12);
  for (const HeldMessage& h : held) ASSERT_TRUE(copies_.Take(h.message_id) == CopyLedger::Seen::kFirst);
  for (size_t i : {0, 5, 11}) {
    HeldMessage copy = held[i];
    copy.copy = true;
    EXPECT_TRUE(copies_.Take(copy.message_id) == CopyLedger::Seen::kHeld);
    held.push_back(std::move(copy));
  }
  copies_.Stored(held);
  settler.Delete(held);
  EXPECT_TRUE(failures_.empty()) << failures_.front().ToString();
  EXPECT_EQ(counters_.archived, 12u);
  EXPECT_EQ(counters_.deleted, 12u);
  EXPECT_EQ(counters_.received_again, 3u);
  EXPECT_EQ(counters_.duplicates, 0u);
  EXPECT_EQ(counters_.delete_failures, 0u);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
  EXPECT_EQ(sqs_.deleted_count(), 12);
}

TEST_F(BatchSettlerTest, AnEntryThatFailsEveryAttemptIsCountedNotLost) {
  options_.delete_attempts = 2;
  BatchSettler settler = Settler();
  std::vector<HeldMessage> held = Hold(1);
  sqs_.FailDeleteEntries(2);
  settler.Delete(held);
  EXPECT_EQ(counters_.deleted, 0u);
  EXPECT_EQ(counters_.delete_failures, 1u);
  EXPECT_EQ(sqs_.Depth(url_), 1u);
}

TEST_F(BatchSettlerTest, ADeniedDeleteTellsTheRunAtOnce) {
  DeleteThreeWhileEveryDeleteFails(PermissionDenied("not allowed"));
  ASSERT_EQ(failures_.size(), 1u);
  EXPECT_EQ(failures_[0].code(), ErrorCode::kPermissionDenied);
  EXPECT_NE(failures_[0].ToString().find("check the role's policy for sqs:DeleteMessage"), std::string::npos)
      << failures_[0].ToString();
  EXPECT_EQ(sqs_.calls(Op::kDeleteMessageBatch), 1);  // not retried
  EXPECT_EQ(counters_.deleted, 0u);
}

TEST_F(BatchSettlerTest, ADeleteRefusedForAnotherReasonStopsTheRunWithoutBlamingThePolicy) {
  DeleteThreeWhileEveryDeleteFails(InvalidArgument("BatchEntryIdsNotDistinct: Id 1 repeated."));
  ASSERT_EQ(failures_.size(), 1u);
  const std::string text = failures_[0].ToString();
  EXPECT_EQ(failures_[0].code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(text.find("BatchEntryIdsNotDistinct"), std::string::npos) << text;
  EXPECT_NE(text.find("stay in the DLQ"), std::string::npos) << text;
  EXPECT_EQ(text.find("policy"), std::string::npos) << text;
  EXPECT_EQ(sqs_.calls(Op::kDeleteMessageBatch), 1);
  EXPECT_EQ(sqs_.Depth(url_), 3u);
}

TEST_F(BatchSettlerTest, ReleaseMakesMessagesVisibleAndCountsOnlyThoseMeantToBeArchived) {
  BatchSettler settler = Settler();
  std::vector<HeldMessage> held = Hold(12);
  ASSERT_EQ(Visible(), 0);
  settler.Release({held.begin(), held.begin() + 11});
  EXPECT_EQ(counters_.released, 11u);
  EXPECT_EQ(sqs_.calls(Op::kChangeMessageVisibilityBatch), 2);  // 10 entries a call
  settler.Release({held.back()}, /*count_released=*/false);
  EXPECT_EQ(counters_.released, 11u);
  EXPECT_EQ(Visible(), 12);
}

TEST_F(BatchSettlerTest, ExtendReturnsOnlyTheExtensionsSqsApplied) {
  BatchSettler settler = Settler();
  std::vector<HeldMessage> held = Hold(2);
  std::vector<VisibilityDue> due;
  for (size_t i = 0; i < held.size(); ++i) due.push_back({1, i, held[i].receipt_handle, 45, false});
  sqs_.FailVisibilityEntries(1);
  const SteadyTime sent = clock_.SteadyNow();
  std::vector<VisibilityExtension> extended = settler.Extend(due);
  ASSERT_EQ(extended.size(), 1u);
  EXPECT_EQ(extended[0].first, 1u);
  // Counted from when the call was sent: never later than SQS's deadline.
  EXPECT_EQ(extended[0].second, sent + seconds(45));
  EXPECT_EQ(counters_.visibility_extensions, 1u);
  // The ledger knows what is in flight until at most a timeout after the call.
  EXPECT_GE(ledger_.all_visible_by(), sent + seconds(60));
}

}  // namespace
}  // namespace dlq
