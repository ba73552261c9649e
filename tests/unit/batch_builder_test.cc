#include "archive/batch_builder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "archive/gzip.h"
#include "archive/record.h"
#include "common/clock.h"
#include "common/time_util.h"
#include "testing/fake_clock.h"

namespace dlq {
namespace {

ArchiveContext Ctx() {
  ArchiveContext c;
  c.queue = "orders-dlq";
  c.region = "us-east-1";
  c.account_id = "123456789012";
  return c;
}

Message Msg(int i, size_t body_size = 100) {
  Message m;
  m.message_id = "id-" + std::to_string(i);
  m.receipt_handle = "rh-" + std::to_string(i);
  m.body = std::string(body_size, 'x');
  m.attributes["SentTimestamp"] = "1757507400123";
  return m;
}

TEST(BatchBuilder, DefaultLimitsAreValid) {
  BatchLimits l;
  EXPECT_TRUE(l.Validate().ok());
  EXPECT_EQ(l.max_messages, 10000u);
  EXPECT_EQ(l.max_bytes, 64u << 20);
  EXPECT_EQ(l.max_age, std::chrono::seconds(30));
  l.max_messages = 0;
  EXPECT_EQ(l.Validate().code(), ErrorCode::kInvalidArgument);
  l = {};
  l.gzip_level = 13;
  EXPECT_FALSE(l.Validate().ok());
}

TEST(BatchBuilder, FullAtMaxMessages) {
  FakeClock clock;
  BatchLimits limits;
  limits.max_messages = 3;
  BatchBuilder b(Ctx(), KeyTemplate::Default(), "dlq-archive", limits, clock);
  EXPECT_FALSE(b.Add(Msg(1)));
  EXPECT_FALSE(b.Add(Msg(2)));
  EXPECT_TRUE(b.Add(Msg(3)));
  EXPECT_TRUE(b.ShouldSeal());
  EXPECT_EQ(b.size(), 3u);
}

TEST(BatchBuilder, FullAtMaxBytesAndAcceptsOneOversizedMessage) {
  FakeClock clock;
  BatchLimits limits;
  limits.max_bytes = 4096;
  BatchBuilder b(Ctx(), KeyTemplate::Default(), "p", limits, clock);
  EXPECT_FALSE(b.Add(Msg(1, 1000)));
  EXPECT_FALSE(b.Add(Msg(2, 1000)));
  EXPECT_TRUE(b.Add(Msg(3, 2000)));
  EXPECT_GE(b.bytes(), 4096u);
  ASSERT_TRUE(b.Finish().ok());
  EXPECT_TRUE(b.Add(Msg(4, 10000)));  // alone over the limit: still accepted
  EXPECT_EQ(b.size(), 1u);
}

TEST(BatchBuilder, SealsOnAgeOnlyWhenNotEmpty) {
  FakeClock clock;
  BatchLimits limits;
  limits.max_age = std::chrono::seconds(30);
  BatchBuilder b(Ctx(), KeyTemplate::Default(), "p", limits, clock);
  clock.Advance(std::chrono::hours(1));
  EXPECT_FALSE(b.ShouldSeal());
  b.Add(Msg(1));
  clock.Advance(std::chrono::seconds(29));
  EXPECT_FALSE(b.ShouldSeal());
  clock.Advance(std::chrono::seconds(1));
  EXPECT_TRUE(b.ShouldSeal());
}

TEST(BatchBuilder, FinishProducesGzipOfLinesWithKeyAndIdsInOrder) {
  FakeClock clock(*ParseIso8601("2025-09-10T12:30:00Z"));
  BatchBuilder b(Ctx(), KeyTemplate::Default(), "dlq-archive/", BatchLimits{}, clock);
  for (int i = 0; i < 5; ++i) {
    b.Add(Msg(i));
    clock.Advance(std::chrono::seconds(1));
  }
  Result<SealedBatch> sealed = b.Finish();
  ASSERT_TRUE(sealed.ok()) << sealed.status().ToString();
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(sealed->messages, 5u);
  EXPECT_EQ(sealed->key.rfind("dlq-archive/orders-dlq/20250910/orders-dlq-123000-", 0), 0u) << sealed->key;
  EXPECT_EQ(sealed->key.size(), std::string("dlq-archive/orders-dlq/20250910/orders-dlq-123000-").size() + 16 + 8);
  EXPECT_EQ(sealed->started_at, *ParseIso8601("2025-09-10T12:30:00Z"));

  std::string text = GzipDecompress(sealed->gz, 1 << 20).value();
  EXPECT_EQ(text.size(), sealed->uncompressed_bytes);
  size_t pos = 0;
  for (int i = 0; i < 5; ++i) {
    size_t nl = text.find('\n', pos);
    ASSERT_NE(nl, std::string::npos);
    Result<ArchiveRecord> r = ParseRecordJson(std::string_view(text).substr(pos, nl - pos));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->message_id, "id-" + std::to_string(i));
    EXPECT_EQ(r->archived_at, *ParseIso8601("2025-09-10T12:30:00Z") + std::chrono::seconds(i));
    pos = nl + 1;
  }
  EXPECT_EQ(pos, text.size());
  EXPECT_EQ(text.find("rh-"), std::string::npos);
}

// The drainer reuses builders and object buffers across batches: a batch
// must hold exactly its own lines, whatever the buffers held before.
TEST(BatchBuilder, ReusedBuilderAndBodyBufferCarryNothingIntoTheNextBatch) {
  FakeClock clock;
  BatchBuilder b(Ctx(), KeyTemplate::Default(), "p", BatchLimits{}, clock);
  for (int i = 0; i < 20; ++i) b.Add(Msg(i, 5000));
  SealedBatch first = b.Finish(std::string(1 << 20, 'Z')).value();
  std::string first_text = GzipDecompress(first.gz, 1 << 20).value();
  EXPECT_EQ(first_text.size(), first.uncompressed_bytes);
  EXPECT_EQ(std::count(first_text.begin(), first_text.end(), '\n'), 20);

  b.Add(Msg(100, 10));
  SealedBatch second = b.Finish(std::move(first.gz)).value();
  std::string text = GzipDecompress(second.gz, 1 << 20).value();
  EXPECT_EQ(second.messages, 1u);
  ASSERT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  Result<ArchiveRecord> r = ParseRecordJson(std::string_view(text).substr(0, text.size() - 1));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->message_id, "id-100");
  EXPECT_EQ(r->body, std::string(10, 'x'));
}

TEST(BatchBuilder, EachBatchGetsAFreshKey) {
  FakeClock clock;
  BatchBuilder b(Ctx(), KeyTemplate::Default(), "p", BatchLimits{}, clock);
  b.Add(Msg(1));
  std::string k1 = b.Finish().value().key;
  b.Add(Msg(1));
  std::string k2 = b.Finish().value().key;
  EXPECT_NE(k1, k2);
}

TEST(BatchBuilder, FinishOnEmptyBatchFails) {
  FakeClock clock;
  BatchBuilder b(Ctx(), KeyTemplate::Default(), "p", BatchLimits{}, clock);
  EXPECT_EQ(b.Finish().status().code(), ErrorCode::kFailedPrecondition);
}

}  // namespace
}  // namespace dlq
