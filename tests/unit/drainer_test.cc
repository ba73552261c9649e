#include "archiver/drainer.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "archive/archive_reader.h"
#include "archive/gzip.h"
#include "testing/fake_object_store.h"
#include "testing/fake_queue.h"

namespace dlq {
namespace {

using Op = FakeQueueClient::Operation;
using std::chrono::seconds;

class DrainerTest : public ::testing::Test {
 protected:
  DrainerTest() : sqs_(clock_), store_("fake://archive", &clock_) {
    auto url = sqs_.CreateQueue("orders-dlq", {{"MessageRetentionPeriod", "345600"}, {"VisibilityTimeout", "30"}});
    EXPECT_TRUE(url.ok());
    url_ = *url;
    options_.wait_time_seconds = 0;
    options_.receivers = 2;
    options_.deleters = 2;
    options_.heartbeat_interval = std::chrono::milliseconds(20);
    options_.visibility_timeout = seconds(60);
    options_.batch.max_messages = 25;
  }

  std::vector<std::string> Send(int n, SystemTime sent_at = SystemTime{}) {
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i) {
      SendEntry e;
      e.body = "poison #" + std::to_string(i) + " \xF0\x9F\x92\xA5 \"quoted\"";
      e.message_attributes["kind"] = {"String", "order", ""};
      e.message_attributes["blob"] = {"Binary", "", std::string("\x00\x01\xff", 3)};
      auto id = sent_at == SystemTime{} ? sqs_.InjectMessage(url_, e, clock_.Now())
                                        : sqs_.InjectMessage(url_, e, sent_at);
      EXPECT_TRUE(id.ok());
      ids.push_back(*id);
    }
    return ids;
  }

  DrainResult Drain(QueueDrainer** out = nullptr) {
    auto q = ResolveQueue(sqs_, url_, "us-east-1");
    EXPECT_TRUE(q.ok()) << q.status().ToString();
    EXPECT_TRUE(options_.Validate().ok()) << options_.Validate().ToString();
    ArchiveContext ctx;
    ctx.queue = q->name;
    ctx.queue_url = q->url;
    ctx.region = q->region;
    ctx.account_id = q->account_id;
    ctx.retention = q->retention;
    ctx.archiver_version = "test";
    ctx.host = "test-host";
    drainer_ = std::make_unique<QueueDrainer>(sqs_, store_, clock_, *q, options_, ctx);
    if (out) *out = drainer_.get();
    return drainer_->Run();
  }

  // message id -> body, as stored in the archive (de-duplicated).
  std::map<std::string, std::string> Archived(uint64_t* duplicates = nullptr) {
    ArchiveReaderOptions ro;
    std::map<std::string, std::string> out;
    ArchiveReader reader(store_, ro);
    auto stats = reader.ForEach([&](const ArchiveRecord& r, const RecordLocation&) {
      out[r.message_id] = r.body;
      return true;
    });
    EXPECT_TRUE(stats.ok()) << stats.status().ToString();
    if (stats.ok() && duplicates) *duplicates = stats->duplicates;
    if (stats.ok()) {
      EXPECT_EQ(stats->corrupt_lines, 0u);
    }
    return out;
  }

  FakeClock clock_;
  FakeQueueClient sqs_;
  FakeObjectStore store_;
  std::string url_;
  DrainOptions options_;
  std::unique_ptr<QueueDrainer> drainer_;
};

TEST_F(DrainerTest, ArchivesEveryMessageThenDeletesIt) {
  auto ids = Send(103);
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.drained);
  EXPECT_EQ(r.stats.archived, 103u);
  EXPECT_EQ(r.stats.deleted, 103u);
  EXPECT_EQ(r.stats.duplicates, 0u);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
  EXPECT_EQ(r.stats.objects, 5u);  // 4 full batches of 25 and the rest: no partial seals
  auto archived = Archived();
  ASSERT_EQ(archived.size(), 103u);
  for (const auto& id : ids) EXPECT_TRUE(archived.count(id)) << id;
  for (const auto& [key, obj] : store_.Objects()) {
    EXPECT_EQ(key.rfind("dlq-archive/orders-dlq/", 0), 0u) << key;
    EXPECT_TRUE(obj.options.create_only);
    EXPECT_EQ(key.substr(key.size() - 8), ".json.gz");
  }
}

TEST_F(DrainerTest, SealsOnlyFullBatchesWhileReceiversWaitForUploadSlots) {
  Send(200);
  options_.receivers = 4;
  options_.max_batches_in_flight = 1;
  options_.batch.max_messages = 25;
  store_.SetPutHook([](const std::string&, std::string_view) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // receivers pile up behind the slot
    return Status::Ok();
  });
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.stats.archived, 200u);
  EXPECT_EQ(r.stats.objects, 8u);  // 8 x 25, never a partial batch sealed by a waiting receiver
}

TEST_F(DrainerTest, DeletesNothingWhenUploadFails) {
  Send(40);
  store_.FailNextPut(PermissionDenied("AccessDenied: Access Denied"), 100);
  DrainResult r = Drain();
  EXPECT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.code(), ErrorCode::kPermissionDenied);
  EXPECT_EQ(r.stats.deleted, 0u);
  EXPECT_EQ(sqs_.calls(Op::kDeleteMessageBatch), 0);
  EXPECT_EQ(sqs_.Depth(url_), 40u);
  // Everything received was released: all 40 are receivable again at once.
  ReceiveOptions ro;
  ro.max_messages = 10;
  size_t visible = 0;
  for (int i = 0; i < 10; ++i) visible += sqs_.ReceiveMessages(url_, ro)->size();
  EXPECT_EQ(visible, 40u);
}

TEST_F(DrainerTest, RetriesPartiallyFailedDeletesAndLosesNothing) {
  Send(50);
  sqs_.FailDeleteEntries(7, "InternalError");
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.stats.deleted, 50u);
  EXPECT_EQ(r.stats.delete_failures, 0u);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
  EXPECT_EQ(Archived().size(), 50u);
}

TEST_F(DrainerTest, ExpiredReceiptHandleCountsAsDuplicateNotLoss) {
  Send(20);
  sqs_.FailDeleteEntries(3, "ReceiptHandleIsInvalid");
  DrainResult r = Drain();
  EXPECT_EQ(r.stats.duplicates, 3u);
  EXPECT_EQ(r.stats.deleted, 17u);
  // The 3 stayed in the DLQ (they will be archived again later): nothing lost.
  auto archived = Archived();
  EXPECT_EQ(archived.size(), 20u);
  size_t in_queue = sqs_.Depth(url_);
  EXPECT_EQ(r.stats.deleted + in_queue, 20u);
}

TEST_F(DrainerTest, CrashBetweenUploadAndDeleteYieldsDuplicatesNotLoss) {
  auto ids = Send(30);
  // First run: every delete fails hard, as if the process died after upload.
  // 30 messages = objects of 25 + 5 = 4 DeleteMessageBatch calls, none retried (not retryable).
  sqs_.FailNext(Op::kDeleteMessageBatch, PermissionDenied("AccessDenied"), 4);
  DrainResult first = Drain();
  EXPECT_EQ(first.stats.archived, 30u);
  EXPECT_EQ(first.stats.deleted, 0u);
  EXPECT_EQ(sqs_.Depth(url_), 30u);
  // The messages come back after their visibility timeout; a second run archives them again.
  clock_.Advance(seconds(120));
  DrainResult second = Drain();
  ASSERT_TRUE(second.status.ok()) << second.status.ToString();
  EXPECT_EQ(second.stats.deleted, 30u);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
  uint64_t dups = 0;
  auto archived = Archived(&dups);
  EXPECT_EQ(archived.size(), 30u);
  EXPECT_EQ(dups, 30u);  // readers de-duplicate by message_id
  for (const auto& id : ids) EXPECT_TRUE(archived.count(id));
}

TEST_F(DrainerTest, SlowUploadGetsVisibilityExtended) {
  Send(10);
  options_.visibility_timeout = seconds(20);
  // Each Put takes 3 visibility timeouts of (fake) time, in steps the heartbeat can follow.
  store_.SetPutHook([this](const std::string&, std::string_view) {
    for (int i = 0; i < 12; ++i) {
      clock_.Advance(seconds(5));
      std::this_thread::sleep_for(std::chrono::milliseconds(60));
    }
    return Status::Ok();
  });
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_GT(r.stats.visibility_extensions, 0u);
  EXPECT_EQ(r.stats.deleted, 10u);
  EXPECT_EQ(r.stats.duplicates, 0u);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
}

TEST_F(DrainerTest, StopFinishesInFlightUploadAndReleasesTheRest) {
  Send(200);
  options_.receivers = 1;
  options_.batch.max_messages = 20;
  options_.max_batches_in_flight = 1;
  QueueDrainer* drainer = nullptr;
  std::atomic<int> puts{0};
  store_.SetPutHook([&](const std::string&, std::string_view) {
    if (++puts == 1) drainer->RequestStop();
    return Status::Ok();
  });
  auto q = ResolveQueue(sqs_, url_, "us-east-1");
  ASSERT_TRUE(q.ok());
  ArchiveContext ctx;
  ctx.queue = q->name;
  QueueDrainer d(sqs_, store_, clock_, *q, options_, ctx);
  drainer = &d;
  DrainResult r = d.Run();
  EXPECT_TRUE(r.stopped);
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_GE(r.stats.archived, 20u);
  EXPECT_EQ(r.stats.deleted, r.stats.archived);
  // No loss: every message is in the archive or (visible again) in the queue.
  EXPECT_EQ(Archived().size() + sqs_.Depth(url_), 200u);
  ReceiveOptions ro;
  size_t visible = 0;
  for (int i = 0; i < 40; ++i) visible += sqs_.ReceiveMessages(url_, ro)->size();
  EXPECT_EQ(visible, sqs_.Depth(url_));
}

TEST_F(DrainerTest, OlderThanSelectsBySentTimestampAndReleasesTheRest) {
  auto old_ids = Send(12, clock_.Now() - std::chrono::hours(30));
  auto new_ids = Send(8, clock_.Now() - std::chrono::minutes(5));
  options_.selection = {SelectionKind::kOlderThan, std::chrono::hours(24)};
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.stats.archived, 12u);
  EXPECT_EQ(r.stats.skipped, 8u);
  auto archived = Archived();
  for (const auto& id : old_ids) EXPECT_TRUE(archived.count(id));
  for (const auto& id : new_ids) EXPECT_FALSE(archived.count(id));
  EXPECT_EQ(sqs_.Depth(url_), 8u);
}

TEST_F(DrainerTest, ExpiringWithinUsesOriginalSentTimestampPlusRetention) {
  // Retention 4 days: sent 3d20h ago expires in 4h; sent 1 day ago in 3 days.
  auto soon = Send(5, clock_.Now() - std::chrono::hours(92));
  auto later = Send(5, clock_.Now() - std::chrono::hours(24));
  options_.selection = {SelectionKind::kExpiringWithin, std::chrono::hours(6)};
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok());
  auto archived = Archived();
  EXPECT_EQ(archived.size(), 5u);
  for (const auto& id : soon) EXPECT_TRUE(archived.count(id));
  for (const auto& id : later) EXPECT_FALSE(archived.count(id));
}

TEST_F(DrainerTest, MaxMessagesStopsAtTheLimit) {
  Send(60);
  options_.max_messages = 15;
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.stats.archived, 15u);
  EXPECT_EQ(r.stats.deleted, 15u);
  EXPECT_EQ(sqs_.Depth(url_), 45u);
}

TEST_F(DrainerTest, DryRunUploadsAndDeletesNothing) {
  Send(30);
  options_.dry_run = true;
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.stats.selected, 30u);
  EXPECT_EQ(store_.put_calls(), 0);
  EXPECT_EQ(sqs_.calls(Op::kDeleteMessageBatch), 0);
  EXPECT_EQ(sqs_.Depth(url_), 30u);
}

TEST_F(DrainerTest, KeepArchivesACopyWithoutDeleting) {
  Send(30);
  options_.keep = true;
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.stats.archived, 30u);
  EXPECT_EQ(sqs_.calls(Op::kDeleteMessageBatch), 0);
  EXPECT_EQ(sqs_.Depth(url_), 30u);
  EXPECT_EQ(Archived().size(), 30u);
}

TEST_F(DrainerTest, MissingQueueFailsWithoutDeleting) {
  Send(5);
  sqs_.FailNext(Op::kReceiveMessages, NotFound("QueueDoesNotExist: The specified queue does not exist."), 100);
  DrainResult r = Drain();
  EXPECT_EQ(r.status.code(), ErrorCode::kNotFound);
  EXPECT_NE(r.status.message().find("orders-dlq"), std::string::npos);
  EXPECT_EQ(r.stats.deleted, 0u);
  EXPECT_EQ(sqs_.Depth(url_), 5u);
}

TEST(DrainOptionsTest, ValidateRejectsBadCombinations) {
  DrainOptions o;
  EXPECT_TRUE(o.Validate().ok());
  o.put.sse_kms_key_id = "alias/x";
  EXPECT_FALSE(o.Validate().ok());
  o.put.sse = "aws:kms";
  EXPECT_TRUE(o.Validate().ok());
  o.visibility_timeout = seconds(5);
  EXPECT_FALSE(o.Validate().ok());
}

}  // namespace
}  // namespace dlq
