#include "archive/key_layout.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "common/time_util.h"

namespace dlq {
namespace {

KeyFields Fields(std::string prefix, SystemTime t) {
  return {std::move(prefix), "orders-dlq", "us-east-1", "123456789012", t, "7f3a9c2e"};
}

const SystemTime kTime = *ParseIso8601("2025-09-10T12:30:00Z");

TEST(KeyLayout, RendersDefaultTemplate) {
  EXPECT_EQ(KeyTemplate::Default().Render(Fields("dlq-archive", kTime)),
            "dlq-archive/orders-dlq/20250910/orders-dlq-123000-7f3a9c2e.json.gz");
}

TEST(KeyLayout, RendersHiveTemplate) {
  KeyTemplate t = KeyTemplate::Parse(kHiveKeyTemplate).value();
  EXPECT_EQ(t.Render(Fields("dlq-archive", kTime)),
            "dlq-archive/queue=orders-dlq/dt=2025-09-10/orders-dlq-123000-7f3a9c2e.json.gz");
}

TEST(KeyLayout, RendersEveryPlaceholder) {
  KeyTemplate t = KeyTemplate::Parse("{region}/{account_id}/{yyyy}/{mm}/{dd}/{hh}/{queue}-{batch_id}").value();
  EXPECT_EQ(t.Render(Fields("p", *ParseIso8601("2025-01-02T03:04:05Z"))),
            "us-east-1/123456789012/2025/01/02/03/orders-dlq-7f3a9c2e");
}

TEST(KeyLayout, PrefixSlashesNeverProduceDoubleOrLeadingSlash) {
  KeyTemplate t = KeyTemplate::Default();
  const std::string expected_tail = "orders-dlq/20250910/orders-dlq-123000-7f3a9c2e.json.gz";
  EXPECT_EQ(t.Render(Fields("", kTime)), expected_tail);
  EXPECT_EQ(t.Render(Fields("/", kTime)), expected_tail);
  EXPECT_EQ(t.Render(Fields("archive/", kTime)), "archive/" + expected_tail);
  EXPECT_EQ(t.Render(Fields("/a/b//", kTime)), "a/b/" + expected_tail);
}

TEST(KeyLayout, UsesUtcAndRollsOverAtMidnight) {
  KeyTemplate t = KeyTemplate::Default();
  EXPECT_EQ(t.Render(Fields("p", *ParseIso8601("2025-12-31T23:59:59.999Z"))),
            "p/orders-dlq/20251231/orders-dlq-235959-7f3a9c2e.json.gz");
  EXPECT_EQ(t.Render(Fields("p", *ParseIso8601("2026-01-01T00:00:00Z"))),
            "p/orders-dlq/20260101/orders-dlq-000000-7f3a9c2e.json.gz");
  // A local offset in the input is converted to UTC.
  EXPECT_EQ(t.Render(Fields("p", *ParseIso8601("2026-01-01T01:30:00+02:00"))),
            "p/orders-dlq/20251231/orders-dlq-233000-7f3a9c2e.json.gz");
}

TEST(KeyLayout, RejectsUnknownPlaceholder) {
  Result<KeyTemplate> t = KeyTemplate::Parse("{prefix}/{queue}/{date}/{batch_id}.json.gz");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("unknown placeholder {date}"), std::string::npos) << t.status().message();
}

TEST(KeyLayout, RejectsTemplateWithoutBatchId) {
  Result<KeyTemplate> t = KeyTemplate::Parse("{prefix}/{queue}/{yyyymmdd}/{hhmmss}.json.gz");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("{batch_id}"), std::string::npos);
}

TEST(KeyLayout, RejectsUnbalancedBraces) {
  EXPECT_FALSE(KeyTemplate::Parse("{prefix/{batch_id}").ok());
  EXPECT_FALSE(KeyTemplate::Parse("{prefix}}/{batch_id}").ok());
  EXPECT_FALSE(KeyTemplate::Parse("{batch_id}{").ok());
}

TEST(KeyLayout, QueuePrefixStopsBeforeTheFirstTimePlaceholder) {
  EXPECT_EQ(KeyTemplate::Default().QueuePrefix(Fields("dlq-archive/", kTime)), "dlq-archive/orders-dlq/");
  EXPECT_EQ(KeyTemplate::Parse(kHiveKeyTemplate)->QueuePrefix(Fields("", kTime)), "queue=orders-dlq/");
  EXPECT_EQ(KeyTemplate::Parse("{yyyy}/{queue}/{batch_id}")->QueuePrefix(Fields("x", kTime)), "");
}

TEST(KeyLayout, BatchIdsAreLongRandomHex) {
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) {
    std::string id = NewBatchId();
    ASSERT_EQ(id.size(), 16u);
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 1000u);
}

}  // namespace
}  // namespace dlq
