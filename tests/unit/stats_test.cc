#include "query/stats.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>
#include <vector>

#include "common/time_util.h"
#include "query/fingerprint.h"

namespace dlq {
namespace {

using ::testing::HasSubstr;

SystemTime At(const char* iso) {
  return *ParseIso8601(iso);
}

ArchiveRecord Record(std::string id, std::string queue, std::string body, std::optional<SystemTime> sent,
                     SystemTime archived = At("2025-09-20T00:00:00Z")) {
  ArchiveRecord r;
  r.message_id = std::move(id);
  r.queue = std::move(queue);
  r.body = std::move(body);
  r.sent_at = sent;
  r.archived_at = archived;
  r.expires_at = archived;
  return r;
}

GroupBy Parse(const char* text) {
  auto g = GroupBy::Parse(text);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return std::move(g).value();
}

StatsReport Aggregate(const char* group_by, const std::vector<ArchiveRecord>& records, TimeField by = TimeField::kSent,
                      size_t max_groups = kDefaultMaxGroups) {
  StatsAggregator agg(Parse(group_by), by, max_groups);
  for (const ArchiveRecord& r : records) agg.Add(r);
  return std::move(agg).Finish();
}

TEST(GroupBy, ParsesEveryForm) {
  EXPECT_EQ(Parse("queue").kind, GroupBy::Kind::kQueue);
  EXPECT_EQ(Parse("day").kind, GroupBy::Kind::kDay);
  EXPECT_EQ(Parse("fingerprint").kind, GroupBy::Kind::kFingerprint);
  GroupBy a = Parse("attr:tenant");
  EXPECT_EQ(a.kind, GroupBy::Kind::kAttribute);
  EXPECT_EQ(a.attribute, "tenant");
  GroupBy j = Parse("json:$.error.type");
  EXPECT_EQ(j.kind, GroupBy::Kind::kJsonPath);
  ASSERT_TRUE(j.path.has_value());
  EXPECT_EQ(j.path->text(), "$.error.type");
  EXPECT_EQ(j.text, "json:$.error.type");
}

TEST(GroupBy, RejectsMalformedSpecsSayingWhy) {
  struct Bad {
    const char* text;
    const char* mentions;
  };
  for (const Bad& b : std::vector<Bad>{{"", "expected queue, day, attr:NAME"},
                                       {"queues", "'queues'"},
                                       {"Queue", "'Queue'"},
                                       {"attr:", "needs an attribute name"},
                                       {"json:", "--group-by json:"},
                                       {"json:error.type", "--group-by json:error.type"},
                                       {"json:$.a[", "--group-by json:$.a["}}) {
    auto g = GroupBy::Parse(b.text);
    ASSERT_FALSE(g.ok()) << b.text;
    EXPECT_EQ(g.status().code(), ErrorCode::kInvalidArgument) << b.text;
    EXPECT_THAT(g.status().message(), HasSubstr(b.mentions)) << b.text;
  }
}

TEST(Stats, GroupsByQueueSortedByCountWithFirstLastAndExample) {
  StatsReport r = Aggregate("queue", {
                                         Record("m3", "b-dlq", "x", At("2025-09-10T12:00:00Z")),
                                         Record("m2", "a-dlq", "x", At("2025-09-11T00:00:00Z")),
                                         Record("m1", "a-dlq", "x", At("2025-09-09T08:00:00Z")),
                                         Record("m4", "a-dlq", "x", At("2025-09-12T00:00:00Z")),
                                     });
  EXPECT_EQ(r.records, 4u);
  ASSERT_EQ(r.groups.size(), 2u);
  EXPECT_EQ(r.groups[0].key, "a-dlq");
  EXPECT_EQ(r.groups[0].count, 3u);
  EXPECT_EQ(r.groups[0].first_seen, At("2025-09-09T08:00:00Z"));
  EXPECT_EQ(r.groups[0].last_seen, At("2025-09-12T00:00:00Z"));
  EXPECT_EQ(r.groups[0].example_id, "m1");  // the earliest, whatever the order of arrival
  EXPECT_EQ(r.groups[1].key, "b-dlq");
  EXPECT_EQ(r.groups[1].count, 1u);
  EXPECT_FALSE(r.other.has_value());
}

TEST(Stats, EqualCountsAreOrderedByKeyWithNoValueLast) {
  ArchiveRecord none = Record("n", "q", "x", std::nullopt);
  ArchiveRecord b = Record("b", "q", "x", At("2025-09-10T00:00:00Z"));
  b.message_attributes["tenant"] = {"String", "beta", ""};
  ArchiveRecord a = Record("a", "q", "x", At("2025-09-10T00:00:00Z"));
  a.message_attributes["tenant"] = {"String", "alpha", ""};
  StatsReport r = Aggregate("attr:tenant", {none, b, a});
  ASSERT_EQ(r.groups.size(), 3u);
  EXPECT_EQ(r.groups[0].key, "alpha");
  EXPECT_EQ(r.groups[1].key, "beta");
  EXPECT_EQ(r.groups[2].key, std::nullopt);
}

TEST(Stats, DayUsesSentAtOrArchivedAt) {
  std::vector<ArchiveRecord> records = {
      Record("a", "q", "x", At("2025-09-10T23:59:59.999Z"), At("2025-09-12T01:00:00Z")),
      Record("b", "q", "x", At("2025-09-11T00:00:00Z"), At("2025-09-12T02:00:00Z")),
      Record("c", "q", "x", std::nullopt, At("2025-09-13T00:00:00Z")),
  };
  StatsReport sent = Aggregate("day", records);
  ASSERT_EQ(sent.groups.size(), 3u);
  EXPECT_EQ(sent.groups[0].key, "2025-09-10");
  EXPECT_EQ(sent.groups[1].key, "2025-09-11");
  EXPECT_EQ(sent.groups[2].key, std::nullopt);  // no sent_at
  EXPECT_FALSE(sent.groups[2].first_seen.has_value());
  EXPECT_EQ(sent.groups[2].example_id, "c");

  StatsReport archived = Aggregate("day", records, TimeField::kArchived);
  ASSERT_EQ(archived.groups.size(), 2u);
  EXPECT_EQ(archived.groups[0].key, "2025-09-12");
  EXPECT_EQ(archived.groups[0].count, 2u);
  EXPECT_EQ(archived.groups[0].first_seen, At("2025-09-12T01:00:00Z"));
  EXPECT_EQ(archived.groups[0].last_seen, At("2025-09-12T02:00:00Z"));
  EXPECT_EQ(archived.groups[1].key, "2025-09-13");
}

TEST(Stats, AttributeFallsBackToSystemAttributesAndShowsBinaryAsBase64) {
  ArchiveRecord fifo = Record("f", "q.fifo", "x", At("2025-09-10T00:00:00Z"));
  fifo.attributes["MessageGroupId"] = "g1";
  ArchiveRecord bin = Record("b", "q", "x", At("2025-09-10T00:00:00Z"));
  bin.message_attributes["MessageGroupId"] = {"Binary", "", std::string("\x00\x01\xff", 3)};
  StatsReport r = Aggregate("attr:MessageGroupId", {fifo, bin});
  ASSERT_EQ(r.groups.size(), 2u);
  EXPECT_EQ(r.groups[0].key, "base64:AAH/");  // the message attribute wins over the system one
  EXPECT_EQ(r.groups[1].key, "g1");
}

TEST(Stats, GroupsByJsonPathValue) {
  StatsReport r = Aggregate("json:$.error.type", {
                                                     Record("1", "q", R"({"error":{"type":"Timeout"}})", {}),
                                                     Record("2", "q", R"({"error":{"type":"Timeout","n":2}})", {}),
                                                     Record("3", "q", R"({"error":{"type":"Denied"}})", {}),
                                                     Record("4", "q", "not json", {}),
                                                     Record("5", "q", R"({"error":{}})", {}),
                                                 });
  ASSERT_EQ(r.groups.size(), 3u);
  EXPECT_EQ(r.groups[0].key, "Timeout");
  EXPECT_EQ(r.groups[0].count, 2u);
  EXPECT_EQ(r.groups[1].key, std::nullopt);  // not JSON, or no such path
  EXPECT_EQ(r.groups[1].count, 2u);
  EXPECT_EQ(r.groups[2].key, "Denied");
}

TEST(Stats, FingerprintPutsFailuresOfOneCauseTogether) {
  StatsReport r = Aggregate("fingerprint", {
                                               Record("1", "q", "order 123 failed: timeout", {}),
                                               Record("2", "q", "order 456 failed: timeout", {}),
                                               Record("3", "q", "order 789 failed: out of stock", {}),
                                               Record("4", "q", R"({"order":1,"error":"timeout"})", {}),
                                               Record("5", "q", R"({"error":"timeout","order":2})", {}),
                                           });
  ASSERT_EQ(r.groups.size(), 3u);
  EXPECT_EQ(r.groups[0].count, 2u);
  EXPECT_EQ(r.groups[1].count, 2u);
  EXPECT_EQ(r.groups[2].key, "order <num> failed: out of stock");
  std::vector<std::string> keys = {*r.groups[0].key, *r.groups[1].key};
  EXPECT_THAT(keys, ::testing::UnorderedElementsAre("order <num> failed: timeout", R"(error="timeout" {error,order})"));
}

TEST(Stats, GroupsPastTheCapAreCountedAsOther) {
  std::vector<ArchiveRecord> records;
  for (int i = 0; i < 10; ++i) {
    records.push_back(Record("m" + std::to_string(i), "q" + std::to_string(i % 5), "x",
                             At("2025-09-10T00:00:00Z") + std::chrono::hours(i)));
  }
  StatsReport r = Aggregate("queue", records, TimeField::kSent, 3);
  EXPECT_EQ(r.records, 10u);
  ASSERT_EQ(r.groups.size(), 3u);  // q0, q1, q2: the first three seen
  for (const GroupStats& g : r.groups) EXPECT_EQ(g.count, 2u);
  ASSERT_TRUE(r.other.has_value());
  EXPECT_EQ(r.other->count, 4u);  // q3 and q4, two each
  EXPECT_EQ(r.other->first_seen, At("2025-09-10T03:00:00Z"));
  EXPECT_EQ(r.other->last_seen, At("2025-09-10T09:00:00Z"));
  EXPECT_EQ(r.other->example_id, "m3");
  // A record of a group that is already known still counts there once the cap is reached.
  uint64_t total = r.other->count;
  for (const GroupStats& g : r.groups) total += g.count;
  EXPECT_EQ(total, r.records);

  std::string table = RenderStatsTable(r);
  EXPECT_THAT(table, HasSubstr("(other)"));
  EXPECT_THAT(table, HasSubstr("more than 3 groups: the 4 records of groups found after the first 3"));
  std::string json = RenderStatsJson(r);
  EXPECT_THAT(json, HasSubstr(R"("groups_capped":true)"));
  EXPECT_THAT(json, HasSubstr(R"({"key":null,"other":true,"count":4,)"));
}

TEST(Stats, LongAndInvalidKeysAreBoundedAndValidUtf8) {
  ArchiveRecord long_value = Record("l", "q", "x", {});
  long_value.message_attributes["a"] = {"String", std::string(5000, 'v'), ""};
  ArchiveRecord bad = Record("b", "q", "x", {});
  bad.attributes["a"] = "\xff";
  StatsReport r = Aggregate("attr:a", {long_value, bad});
  ASSERT_EQ(r.groups.size(), 2u);
  for (const GroupStats& g : r.groups) {
    ASSERT_TRUE(g.key.has_value());
    EXPECT_LE(g.key->size(), kMaxGroupKeyBytes);
    EXPECT_TRUE(simdjson::validate_utf8(g.key->data(), g.key->size()));
  }
}

TEST(Stats, RendersTableJsonAndJsonLines) {
  StatsReport r = Aggregate("fingerprint", {
                                               Record("m1", "q", "order 1\tfailed\nbadly", At("2025-09-10T12:30:00Z")),
                                               Record("m2", "q", "order 2 failed badly", At("2025-09-11T12:30:00Z")),
                                               Record("m3", "q", "other", std::nullopt),
                                           });
  std::string table = RenderStatsTable(r);
  EXPECT_THAT(
      table, HasSubstr("COUNT  FIRST SEEN                LAST SEEN                 EXAMPLE ID  ID            GROUP\n"));
  EXPECT_THAT(table, HasSubstr("    2  2025-09-10T12:30:00.000Z  2025-09-11T12:30:00.000Z  m1          b7b176eeabdc  "
                               "order <num> failed badly\n"));
  EXPECT_THAT(
      table, HasSubstr("    1  -                         -                         m3          d9298a10d1b0  other\n"));
  EXPECT_THAT(table, HasSubstr("3 records in 2 groups by fingerprint (times: sent_at)\n"));

  std::string json = RenderStatsJson(r);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  EXPECT_EQ(std::string_view(doc["group_by"].get_string().value()), "fingerprint");
  EXPECT_EQ(std::string_view(doc["time_field"].get_string().value()), "sent_at");
  EXPECT_EQ(doc["records"].get_uint64().value(), 3u);
  EXPECT_FALSE(doc["groups_capped"].get_bool().value());
  auto groups = doc["groups"].get_array().value();
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(std::string_view(groups.at(0)["key"].get_string().value()), "order <num> failed badly");
  EXPECT_EQ(std::string_view(groups.at(0)["id"].get_string().value()), GroupId("order <num> failed badly"));
  EXPECT_EQ(groups.at(0)["count"].get_uint64().value(), 2u);
  EXPECT_EQ(std::string_view(groups.at(0)["first_seen"].get_string().value()), "2025-09-10T12:30:00.000Z");
  EXPECT_EQ(std::string_view(groups.at(0)["example_id"].get_string().value()), "m1");
  EXPECT_TRUE(groups.at(1)["first_seen"].is_null());

  std::string lines = RenderStatsJsonLines(r);
  EXPECT_EQ(
      lines,
      R"({"id":"b7b176eeabdc","key":"order <num> failed badly","count":2,"first_seen":"2025-09-10T12:30:00.000Z",)"
      R"("last_seen":"2025-09-11T12:30:00.000Z","example_id":"m1"})"
      "\n"
      R"({"id":"d9298a10d1b0","key":"other","count":1,"first_seen":null,"last_seen":null,"example_id":"m3"})"
      "\n");
}

TEST(Stats, TableEscapesControlCharactersAndCutsLongGroups) {
  ArchiveRecord r = Record("m", "q", "x", {});
  r.message_attributes["a"] = {"String", "line1\nline2\x01" + std::string(200, 'z'), ""};
  std::string table = RenderStatsTable(Aggregate("attr:a", {r}));
  EXPECT_THAT(table, HasSubstr("line1\\nline2\\x01zzz"));
  EXPECT_THAT(table, HasSubstr("z\xE2\x80\xA6\n"));
  EXPECT_EQ(table.find(std::string(150, 'z')), std::string::npos);
}

TEST(Stats, FingerprintGroupsThatReadAlikeWhenCutAreToldApartByTheirId) {
  // Two causes whose text differs only after the table's cut.
  const std::string head(150, 'x');
  StatsReport r =
      Aggregate("fingerprint", {Record("a", "q", head + " timeout", {}), Record("b", "q", head + " denied", {}),
                                Record("c", "q", head + " denied", {})});
  ASSERT_EQ(r.groups.size(), 2u);
  std::string table = RenderStatsTable(r);
  const std::string id_a = GroupId(*r.groups[0].key), id_b = GroupId(*r.groups[1].key);
  EXPECT_NE(id_a, id_b);
  EXPECT_THAT(table, HasSubstr("  b" + std::string(11, ' ') + id_a + "  xxx"));  // the id, whole, before the cut group
  EXPECT_THAT(table, HasSubstr("  a" + std::string(11, ' ') + id_b + "  xxx"));
  EXPECT_THAT(table, HasSubstr("--fingerprint ID selects one group"));
  // Other group kinds have no id.
  EXPECT_THAT(RenderStatsTable(Aggregate("queue", {Record("a", "q", "x", {})})), HasSubstr("EXAMPLE ID  GROUP\n"));
  EXPECT_EQ(RenderStatsJson(Aggregate("queue", {Record("a", "q", "x", {})})).find("\"id\""), std::string::npos);
}

TEST(Stats, FingerprintGroupsByTheFailureReasonAwsAttached) {
  auto lambda_dlq = [](std::string id, std::string body, std::string code, std::string message) {
    ArchiveRecord r = Record(std::move(id), "fn-dlq", std::move(body), {});
    r.message_attributes["RequestID"] = {"String", "req-" + r.message_id, ""};
    r.message_attributes["ErrorCode"] = {"Number", std::move(code), ""};
    r.message_attributes["ErrorMessage"] = {"String", std::move(message), ""};
    return r;
  };
  StatsReport r = Aggregate("fingerprint", {lambda_dlq("1", R"({"tenant":"acme"})", "200", "boom on order 1"),
                                            lambda_dlq("2", R"({"tenant":"globex","n":2})", "200", "boom on order 2"),
                                            lambda_dlq("3", "plain", "500", "ServiceException")});
  ASSERT_EQ(r.groups.size(), 2u);
  EXPECT_EQ(r.groups[0].key, "Lambda async (200): boom on order <num>");
  EXPECT_EQ(r.groups[0].count, 2u);
  EXPECT_EQ(r.groups[1].key, "Lambda async (500): ServiceException");
}

TEST(Stats, FingerprintFieldsChangeTheGroups) {
  GroupBy g = Parse("fingerprint");
  g.fingerprint.fields = {"tenant"};
  StatsAggregator agg(g, TimeField::kSent);
  for (const char* body :
       {R"({"type":"A","tenant":"acme"})", R"({"type":"B","tenant":"acme"})", R"({"type":"A","tenant":"globex"})"}) {
    agg.Add(Record("m", "q", body, {}));
  }
  StatsReport r = std::move(agg).Finish();
  ASSERT_EQ(r.groups.size(), 2u);
  EXPECT_EQ(r.groups[0].key, R"(tenant="acme" {tenant,type})");
  EXPECT_EQ(r.groups[0].count, 2u);
}

}  // namespace
}  // namespace dlq
