#include "archiver/batch_pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "testing/fake_clock.h"

namespace dlq {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

constexpr seconds kTimeout{60};

Message Msg(const std::string& id) {
  Message m;
  m.message_id = id;
  m.receipt_handle = "rh-" + id;
  m.body = "body of " + id;
  return m;
}

std::vector<Message> Msgs(int n, const std::string& prefix = "m") {
  std::vector<Message> out;
  for (int i = 0; i < n; ++i) out.push_back(Msg(prefix + std::to_string(i)));
  return out;
}

std::vector<std::string> Handles(const std::vector<HeldMessage>& held) {
  std::vector<std::string> out;
  for (const HeldMessage& h : held) out.push_back(h.receipt_handle);
  return out;
}

class BatchPipelineTest : public ::testing::Test {
 protected:
  BatchPipelineTest() {
    limits_.max_messages = 3;
    context_.queue = "orders-dlq";
  }

  BatchPipeline Make() {
    return BatchPipeline(
        [this] { return std::make_unique<BatchBuilder>(context_, KeyTemplate::Default(), "arch", limits_, clock_); },
        limits_.max_messages, kTimeout);
  }

  // Seals the building batch of `p` into an upload-queued one.
  static void SealInto(BatchPipeline& p) {
    HeldBatch sealing;
    std::string gz;
    std::unique_ptr<BatchBuilder> full = p.BeginSeal(sealing, gz);
    auto sealed = full->Finish(std::move(gz));
    ASSERT_TRUE(sealed.ok()) << sealed.status().ToString();
    p.EndSeal(sealing, std::move(full), std::move(*sealed));
  }

  FakeClock clock_;
  BatchLimits limits_;
  ArchiveContext context_;
  const SteadyTime t0_ = SteadyTime(hours(1));
};

TEST_F(BatchPipelineTest, ABatchGoesFromBuildingThroughSealingToUploadAndDelete) {
  BatchPipeline p = Make();
  std::vector<Message> msgs = Msgs(3);
  for (size_t i = 0; i < msgs.size(); ++i) p.Add(msgs[i], i, 1, std::nullopt, t0_);
  EXPECT_TRUE(p.full());
  EXPECT_TRUE(p.building());
  EXPECT_EQ(p.held(), 3u);
  ASSERT_TRUE(p.MaySeal(2));

  HeldBatch sealing;
  std::string gz;
  std::unique_ptr<BatchBuilder> full = p.BeginSeal(sealing, gz);
  EXPECT_EQ(Handles(sealing.held), (std::vector<std::string>{"rh-m0", "rh-m1", "rh-m2"}));
  EXPECT_EQ(sealing.held[0].visible_until, t0_ + kTimeout);
  EXPECT_FALSE(p.building());
  EXPECT_EQ(p.sealing(), 1);
  EXPECT_FALSE(p.MaySeal(2));  // one compresses at a time
  EXPECT_TRUE(p.storing());
  EXPECT_EQ(p.held(), 3u);  // still held while it compresses

  auto sealed = full->Finish(std::move(gz));
  ASSERT_TRUE(sealed.ok());
  p.EndSeal(sealing, std::move(full), std::move(*sealed));
  EXPECT_EQ(p.sealing(), 0);
  ASSERT_TRUE(p.upload_queued());

  HeldBatch uploading;
  p.BeginUpload(uploading);
  EXPECT_FALSE(p.upload_queued());
  ASSERT_TRUE(uploading.sealed.has_value());
  EXPECT_EQ(uploading.held.size(), 3u);
  EXPECT_FALSE(p.MaySeal(1));  // the upload counts against the bound
  p.BeginDelete(uploading);
  EXPECT_TRUE(p.deleting());
  EXPECT_TRUE(p.MaySeal(1));  // only deletes remain: it no longer counts
  p.EndUpload(uploading);
  EXPECT_FALSE(p.deleting());
  EXPECT_FALSE(p.storing());
  EXPECT_EQ(p.held(), 0u);
}

// A message SQS handed out again: its copy's handle joins the batch that
// holds the message wherever that batch is on its way to stored, and is
// extended with it; not a batch already deleting, nor messages waiting for room.
TEST_F(BatchPipelineTest, ACopyJoinsTheBatchThatHoldsItsMessageUntilItsDeletesBegin) {
  BatchPipeline p = Make();
  std::vector<Message> msgs = Msgs(5);
  for (size_t i = 0; i < 3; ++i) p.Add(msgs[i], i, 1, std::nullopt, t0_);
  BatchPipeline::Waiting waiting = p.Wait(msgs, 3, t0_);
  Message copy = Msg("m1");
  copy.receipt_handle = "rh-m1-again";
  const SteadyTime again = t0_ + seconds(5);
  ASSERT_TRUE(p.AddCopy(copy, again));        // building
  EXPECT_FALSE(p.AddCopy(Msg("m3"), again));  // waiting for room: not in a batch
  EXPECT_FALSE(p.AddCopy(Msg("x"), again));   // not here at all
  bool seal = false;
  std::vector<VisibilityDue> due;
  p.AppendDue(again + seconds(40), seal, due);
  EXPECT_TRUE(std::any_of(due.begin(), due.end(), [](const VisibilityDue& d) {
    return d.receipt_handle == "rh-m1-again";
  }));  // extended like the rest (its deadline counts from its own receive)

  SealInto(p);  // queued for upload
  Message copy2 = Msg("m2");
  copy2.receipt_handle = "rh-m2-again";
  ASSERT_TRUE(p.AddCopy(copy2, again));
  HeldBatch uploading;
  p.BeginUpload(uploading);
  ASSERT_EQ(Handles(uploading.held),
            (std::vector<std::string>{"rh-m0", "rh-m1", "rh-m2", "rh-m1-again", "rh-m2-again"}));
  EXPECT_TRUE(uploading.held[3].copy);
  EXPECT_FALSE(uploading.held[1].copy);
  Message copy3 = Msg("m0");
  ASSERT_TRUE(p.AddCopy(copy3, again));  // uploading
  p.BeginDelete(uploading);
  EXPECT_FALSE(p.AddCopy(copy3, again));  // deleting: its handles are on the wire
  p.EndUpload(uploading);
  (void)p.EndWait(msgs, 3, waiting, again);
}

TEST_F(BatchPipelineTest, TwoBatchBuffersServeEveryBatch) {
  BatchPipeline p = Make();
  for (int round = 0; round < 5; ++round) {
    std::vector<Message> msgs = Msgs(3, "r" + std::to_string(round) + "-");
    for (size_t i = 0; i < msgs.size(); ++i) p.Add(msgs[i], i, 1, std::nullopt, t0_);
    SealInto(p);
    HeldBatch uploading;
    p.BeginUpload(uploading);
    p.KeepBody(std::move(uploading.sealed->gz), 2);
    p.EndUpload(uploading);
  }
  EXPECT_EQ(p.builders_made(), 2);
}

TEST_F(BatchPipelineTest, AFailedSealLeavesTheBatchWithTheCaller) {
  BatchPipeline p = Make();
  std::vector<Message> msgs = Msgs(2);
  for (size_t i = 0; i < msgs.size(); ++i) p.Add(msgs[i], i, 1, std::nullopt, t0_);
  HeldBatch sealing;
  std::string gz;
  std::unique_ptr<BatchBuilder> full = p.BeginSeal(sealing, gz);
  p.EndSeal(sealing, std::move(full), std::nullopt);
  EXPECT_FALSE(p.upload_queued());
  EXPECT_EQ(Handles(sealing.held), (std::vector<std::string>{"rh-m0", "rh-m1"}));
  EXPECT_EQ(p.held(), 0u);
}

TEST_F(BatchPipelineTest, MessagesWaitingForRoomKeepTheirHeartbeatDeadlineInTheBatch) {
  BatchPipeline p = Make();
  std::vector<Message> msgs = Msgs(5);
  for (size_t i = 0; i < 3; ++i) p.Add(msgs[i], i, 1, std::nullopt, t0_);
  ASSERT_TRUE(p.full());
  BatchPipeline::Waiting waiting = p.Wait(msgs, 3, t0_);
  EXPECT_EQ(p.held(), 3u);  // waiting messages are not in a batch

  // The heartbeat extends what waits (and what is building).
  const SteadyTime later = t0_ + seconds(40);
  bool seal = false;
  std::vector<VisibilityDue> due;
  p.AppendDue(later, seal, due);
  ASSERT_EQ(due.size(), 5u);
  EXPECT_FALSE(seal);
  const SteadyTime extended = later + kTimeout;
  for (const VisibilityDue& d : due) {
    EXPECT_EQ(d.seconds, 60);
    EXPECT_EQ(d.moves, d.receipt_handle == "rh-m3" || d.receipt_handle == "rh-m4") << d.receipt_handle;
  }

  // Room again: m3 goes into the next batch, with the deadline it waited with.
  SealInto(p);
  for (const VisibilityDue& d : due) {
    if (d.receipt_handle == "rh-m3") {
      EXPECT_TRUE(p.RecordDue(d, extended));
    }
  }
  p.Add(msgs[3], 3, 1, waiting, t0_);
  // m4 still waits: recorded in its waiting place.
  for (const VisibilityDue& d : due) {
    if (d.receipt_handle == "rh-m4") {
      EXPECT_TRUE(p.RecordDue(d, extended));
    }
  }
  // A stop: m4 is given up, visible now.
  std::vector<HeldMessage> rest = p.EndWait(msgs, 4, waiting, later);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].receipt_handle, "rh-m4");
  EXPECT_EQ(rest[0].visible_until, later);

  // m3 in the building batch carries the deadline recorded while it waited.
  HeldBatch building;
  std::string gz;
  std::unique_ptr<BatchBuilder> full = p.BeginSeal(building, gz);
  ASSERT_EQ(building.held.size(), 1u);
  EXPECT_EQ(building.held[0].receipt_handle, "rh-m3");
  EXPECT_EQ(building.held[0].visible_until, extended);
}

TEST_F(BatchPipelineTest, AnExtensionForAMessageThatMovedOnIsRecordedWhereItIsNow) {
  BatchPipeline p = Make();
  std::vector<Message> msgs = Msgs(4);
  for (size_t i = 0; i < 3; ++i) p.Add(msgs[i], i, 1, std::nullopt, t0_);
  BatchPipeline::Waiting waiting = p.Wait(msgs, 3, t0_);
  bool seal = false;
  std::vector<VisibilityDue> due;
  p.AppendDue(t0_ + seconds(40), seal, due);
  // m3 leaves its waiting place for the building batch before the reply.
  SealInto(p);
  p.Add(msgs[3], 3, 1, waiting, t0_);
  EXPECT_TRUE(p.EndWait(msgs, 4, waiting, t0_).empty());
  const SteadyTime until = t0_ + seconds(100);
  for (const VisibilityDue& d : due) EXPECT_TRUE(p.RecordDue(d, until)) << d.receipt_handle;
}

TEST_F(BatchPipelineTest, AnExtensionForAMessageThatLeftIsNotRecorded) {
  BatchPipeline p = Make();
  std::vector<Message> msgs = Msgs(2);
  for (size_t i = 0; i < msgs.size(); ++i) p.Add(msgs[i], i, 1, std::nullopt, t0_);
  bool seal = false;
  std::vector<VisibilityDue> due;
  p.AppendDue(t0_ + seconds(40), seal, due);
  ASSERT_EQ(due.size(), 2u);
  std::vector<HeldMessage> dropped = p.DropBuilding();  // released meanwhile
  EXPECT_EQ(Handles(dropped), (std::vector<std::string>{"rh-m0", "rh-m1"}));
  EXPECT_FALSE(p.building());
  for (const VisibilityDue& d : due) EXPECT_FALSE(p.RecordDue(d, t0_ + seconds(100)));
}

TEST_F(BatchPipelineTest, ABuildingBatchNearTheTwelveHourLimitIsSealedNotExtended) {
  BatchPipeline p = Make();
  std::vector<Message> msgs = Msgs(1);
  p.Add(msgs[0], 0, 1, std::nullopt, t0_);
  bool seal = false;
  std::vector<VisibilityDue> due;
  p.AppendDue(t0_ + hours(12) - seconds(35), seal, due);
  EXPECT_TRUE(due.empty());
  EXPECT_TRUE(seal);
}

TEST(HeldBatchTest, AnExtensionStopsAtTheTwelveHourWindowLessHalfAMinute) {
  const SteadyTime t0 = SteadyTime(hours(1));
  HeldBatch b;
  b.seq = 7;
  b.held.push_back({"a", "rh-a", t0, t0 + seconds(60)});
  b.held.push_back({"b", "", t0, t0});  // moved on: nothing to extend
  const SteadyTime now = t0 + hours(12) - seconds(100);
  bool seal = false;
  std::vector<VisibilityDue> due;
  AppendDue(b, now, seconds(60), /*building=*/false, /*moves=*/false, seal, due);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].seconds, 60);
  due.clear();
  AppendDue(b, t0 + hours(12) - seconds(50), seconds(60), false, false, seal, due);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].seconds, 20);  // 50 s left, less 30
  EXPECT_FALSE(seal);
  EXPECT_TRUE(RecordDue(b, due[0], now + seconds(20)));
  EXPECT_EQ(b.held[0].visible_until, now + seconds(20));
  VisibilityDue other = due[0];
  other.seq = 8;
  EXPECT_FALSE(RecordDue(b, other, now));
}

}  // namespace
}  // namespace dlq
