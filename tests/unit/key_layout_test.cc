#include "archive/key_layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "common/time_util.h"

namespace dlq {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

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

TEST(KeyLayout, RendersNoTrailingSlashWhenTheLastPlaceholderIsEmpty) {
  KeyTemplate t = KeyTemplate::Parse("{prefix}/{batch_id}/{region}").value();
  KeyFields f = Fields("p", kTime);
  f.region = "";
  EXPECT_EQ(t.Render(f), "p/7f3a9c2e");
}

TEST(KeyLayout, RefusesTemplateWithDotSegment) {
  for (std::string_view text :
       {"{prefix}/../{queue}/{batch_id}", "{prefix}/./{batch_id}", "../{batch_id}", "{prefix}/{queue}/{batch_id}/.."}) {
    Result<KeyTemplate> t = KeyTemplate::Parse(text);
    ASSERT_FALSE(t.ok()) << text;
    EXPECT_EQ(t.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(t.status().message(), AnyOf(HasSubstr("segment '..'"), HasSubstr("segment '.'"))) << text;
    EXPECT_THAT(t.status().message(), HasSubstr("dot segment")) << text;
  }
}

// {prefix} may be empty and {region}, {account_id} unknown: with only those
// beside the dots, the segment could render as "." or "..".
TEST(KeyLayout, RefusesSegmentThatCanRenderAsDotSegment) {
  for (std::string_view text : {"{prefix}/{region}../{batch_id}", "{prefix}./{batch_id}", ".{account_id}/{batch_id}",
                                "{region}.{account_id}/{batch_id}"}) {
    Result<KeyTemplate> t = KeyTemplate::Parse(text);
    ASSERT_FALSE(t.ok()) << text;
    EXPECT_THAT(t.status().message(), HasSubstr("can render as a dot segment")) << t.status().message();
  }
}

TEST(KeyLayout, AcceptsDotsThatCannotFormADotSegment) {
  for (std::string_view text : {"{prefix}/.../{batch_id}", "{prefix}/{queue}../{batch_id}", "{prefix}/.a/{batch_id}",
                                "{prefix}/{region}.../{batch_id}", "{prefix}/{batch_id}.json.gz"}) {
    EXPECT_TRUE(KeyTemplate::Parse(text).ok()) << text << ": " << KeyTemplate::Parse(text).status().message();
  }
}

TEST(KeyLayout, RefusesTemplateWithEmptySegment) {
  for (std::string_view text : {"{prefix}//{batch_id}", "/{prefix}/{batch_id}", "{prefix}/{batch_id}/"}) {
    Result<KeyTemplate> t = KeyTemplate::Parse(text);
    ASSERT_FALSE(t.ok()) << text;
    EXPECT_THAT(t.status().message(), HasSubstr("empty segment")) << text;
  }
}

TEST(KeyLayout, RefusesTemplateWithControlCharacterAndShowsItEscaped) {
  Result<KeyTemplate> t = KeyTemplate::Parse("{prefix}/a\nb/{batch_id}");
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("control character 0x0a"));
  EXPECT_THAT(t.status().message(), HasSubstr("a\\x0ab"));
  EXPECT_EQ(t.status().message().find('\n'), std::string::npos);
}

TEST(KeyPath, RefusesKeyWithDotDotSegment) {
  Status st = ValidateKeyPath("bucketa/../bucketb/pwn", "prefix");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(st.message(),
            "prefix segment '..' is not allowed (dot segments would be removed by HTTP clients and name another "
            "place)");
}

TEST(KeyPath, RefusesKeyWithDotSegmentAnywhere) {
  for (std::string_view path : {"./a", "a/.", "a/./b", "..", "."}) {
    Status st = ValidateKeyPath(path, "prefix");
    ASSERT_FALSE(st.ok()) << path;
    EXPECT_THAT(st.message(), HasSubstr("dot segments")) << path;
  }
}

TEST(KeyPath, RefusesKeyWithEmptySegment) {
  for (std::string_view path : {"a//b", "/a", "a/", "", "/"}) {
    Status st = ValidateKeyPath(path, "prefix");
    ASSERT_FALSE(st.ok()) << path;
    EXPECT_THAT(st.message(), HasSubstr("empty segment")) << path;
  }
}

TEST(KeyPath, RefusesKeyWithControlCharacterNamingTheSegment) {
  Status st = ValidateKeyPath("ok/bad\x01seg/x", "object key");
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("object key segment 'bad\\x01seg' holds control character 0x01"));
  EXPECT_FALSE(ValidateKeyPath("a\x7f", "prefix").ok());
  EXPECT_FALSE(ValidateKeyPath("a\tb", "prefix").ok());
}

TEST(KeyPath, AcceptsOrdinaryKeys) {
  for (std::string_view path :
       {"dlq-archive", "a/b/c", "a/.../b", "a/.hidden/b..c", "queue=x/dt=2025-01-01/k.json.gz", "sp ace/ünï/a+b%2e"}) {
    EXPECT_TRUE(ValidateKeyPath(path, "prefix").ok()) << path;
  }
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
