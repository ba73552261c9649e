// KeptCauses: the sidecar's answers applied to a stats report, as `stats` and
// the dashboard's failure groups show them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "causes/kept_causes.h"
#include "common/time_util.h"

namespace dlq {
namespace {

const SystemTime kT = *ParseIso8601("2026-11-29T06:00:00Z");

ArchiveRecord Record(const std::string& id, const std::string& group) {
  ArchiveRecord r;
  r.message_id = id;
  r.queue = "orders-dlq";
  r.body = R"({"k":")" + group + R"("})";
  r.sent_at = kT;
  r.archived_at = kT;
  r.expires_at = kT;
  return r;
}

CauseRecord Answer(const std::string& id, CauseStatus status, const std::string& key = "",
                   const std::string& group = "") {
  CauseRecord c;
  c.queue = "orders-dlq";
  c.message_id = id;
  c.group_key = group;
  c.looked_up_at = kT;
  c.status = status;
  if (status == CauseStatus::kFound) {
    c.cause = Cause{};
    c.cause->type = "ValueError";
    c.cause->message = "bad sku for " + id;
    c.cause->key = key;
  } else {
    c.reason = std::string(CauseStatusName(status)) + " for " + id;
  }
  return c;
}

// Groups a, a, a, b, b, c by $.k; every record observed as the scan would.
StatsReport Report(KeptCauses& kept) {
  StatsAggregator aggregator(GroupBy::Parse("json:$.k").value(), TimeField::kSent);
  aggregator.ObserveRecords(
      [&](const std::optional<std::string>& key, const ArchiveRecord& r) { kept.Observe(key, r); });
  for (const char* id : {"a1", "a2", "a3"}) aggregator.Add(Record(id, "a"));
  for (const char* id : {"b1", "b2"}) aggregator.Add(Record(id, "b"));
  aggregator.Add(Record("c1", "c"));
  return std::move(aggregator).Finish();
}

TEST(CausesKeptCausesTest, GroupsGetTheirMostFrequentCauseAndGroupsSharingOneMerge) {
  CauseIndex index;
  index.Add(Answer("a1", CauseStatus::kFound, "ValueError: bad sku for <str>"));
  index.Add(Answer("a2", CauseStatus::kFound, "ValueError: bad sku for <str>"));
  index.Add(Answer("a3", CauseStatus::kNotMentioned));
  index.Add(Answer("b1", CauseStatus::kFound, "ValueError: bad sku for <str>"));
  KeptCauses kept(std::move(index));
  StatsReport report = Report(kept);
  kept.Apply(report);
  EXPECT_TRUE(report.causes);
  ASSERT_EQ(report.groups.size(), 2u);
  const GroupStats& merged = report.groups[0];
  EXPECT_EQ(merged.count, 5u);
  ASSERT_TRUE(merged.cause);
  EXPECT_EQ(merged.cause->key, "ValueError: bad sku for <str>");
  EXPECT_EQ(merged.cause->type, "ValueError");
  EXPECT_EQ(merged.cause->found, 3u);
  EXPECT_EQ(merged.cause->answered, 4u);
  EXPECT_EQ(merged.cause->merged_keys, std::vector<std::string>{"b"});
  EXPECT_EQ(report.groups[1].key, "c");
  EXPECT_FALSE(report.groups[1].cause);
}

TEST(CausesKeptCausesTest, WithoutAFoundCauseTheMostFrequentAbsenceAndItsReasonShow) {
  CauseIndex index;
  index.Add(Answer("a1", CauseStatus::kAccessDenied));
  index.Add(Answer("a2", CauseStatus::kNotMentioned));
  index.Add(Answer("a3", CauseStatus::kNotMentioned));
  KeptCauses kept(std::move(index));
  StatsReport report = Report(kept);
  kept.Apply(report);
  ASSERT_TRUE(report.groups[0].cause);
  const GroupCause& c = *report.groups[0].cause;
  EXPECT_EQ(c.key, "");
  EXPECT_EQ(c.found, 0u);
  EXPECT_EQ(c.answered, 3u);
  EXPECT_EQ(c.absence, "not_mentioned");
  EXPECT_EQ(c.reason, "not_mentioned for a2");
}

TEST(CausesKeptCausesTest, NoAnswerChangesNothingAndAnAddedAnswerCountsInItsObservedGroup) {
  KeptCauses none;
  StatsReport plain = Report(none);
  const StatsReport before = plain;
  none.Apply(plain);
  EXPECT_FALSE(plain.causes);
  ASSERT_EQ(plain.groups.size(), before.groups.size());
  for (size_t i = 0; i < plain.groups.size(); ++i) {
    EXPECT_EQ(plain.groups[i].key, before.groups[i].key);
    EXPECT_FALSE(plain.groups[i].cause);
  }

  KeptCauses kept;
  StatsReport report = Report(kept);
  kept.Add(Answer("c1", CauseStatus::kFound, "ValueError: bad sku for <str>", "c"));
  kept.Add(Answer("z9", CauseStatus::kFound, "ValueError: bad sku for <str>", "z"));  // a group never observed
  EXPECT_NE(kept.index().Find("orders-dlq", "z9"), nullptr);
  kept.Apply(report);
  ASSERT_EQ(report.groups.size(), 3u);
  const GroupStats& c = report.groups[2];
  EXPECT_EQ(c.key, "c");
  ASSERT_TRUE(c.cause);
  EXPECT_EQ(c.cause->found, 1u);
  EXPECT_EQ(c.cause->answered, 1u);
  EXPECT_FALSE(report.groups[0].cause);
}

}  // namespace
}  // namespace dlq
