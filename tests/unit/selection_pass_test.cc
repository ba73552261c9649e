#include "archiver/selection_pass.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dlq {
namespace {

using std::chrono::hours;

const SystemTime kNow = SystemTime(std::chrono::seconds(1700000000));

Message Sent(const std::string& id, SystemTime sent) {
  Message m;
  m.message_id = id;
  m.receipt_handle = "rh-" + id;
  m.attributes["SentTimestamp"] =
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(sent.time_since_epoch()).count());
  return m;
}

std::vector<std::string> Ids(const std::vector<Message>& msgs) {
  std::vector<std::string> ids;
  for (const Message& m : msgs) ids.push_back(m.message_id);
  return ids;
}

SelectionPass::Options OlderThanADay() {
  SelectionPass::Options o;
  o.selection = {SelectionKind::kOlderThan, hours(24)};
  o.retention = hours(96);
  return o;
}

TEST(SelectionPassTest, WholeQueueTakesEverythingEveryTimeAndRemembersNothing) {
  SelectionPass pass({});
  for (int round = 0; round < 2; ++round) {
    SelectionPass::Sorted s = pass.Sort({Sent("a", kNow), Sent("b", kNow)}, kNow);
    EXPECT_EQ(Ids(s.take), (std::vector<std::string>{"a", "b"}));
    EXPECT_TRUE(s.examined.empty());
    EXPECT_TRUE(s.progress);
    EXPECT_EQ(s.skipped, 0u);
  }
}

TEST(SelectionPassTest, OlderThanTakesOldMessagesAndHoldsTheRestCountingEachOnce) {
  SelectionPass pass(OlderThanADay());
  SelectionPass::Sorted s = pass.Sort({Sent("old", kNow - hours(30)), Sent("new", kNow - hours(1))}, kNow);
  EXPECT_EQ(Ids(s.take), (std::vector<std::string>{"old"}));
  EXPECT_EQ(Ids(s.examined), (std::vector<std::string>{"new"}));
  EXPECT_EQ(s.examined[0].receipt_handle, "rh-new");
  EXPECT_EQ(s.skipped, 1u);
  EXPECT_TRUE(s.progress);
  // The skipped one comes back (its hold lapsed): held again, no progress.
  s = pass.Sort({Sent("new", kNow - hours(1))}, kNow);
  EXPECT_TRUE(s.take.empty());
  EXPECT_EQ(Ids(s.examined), (std::vector<std::string>{"new"}));
  EXPECT_EQ(s.skipped, 0u);
  EXPECT_FALSE(s.progress);
}

TEST(SelectionPassTest, MessageWithoutSentTimestampIsSelected) {
  SelectionPass pass(OlderThanADay());
  Message m;
  m.message_id = "x";
  EXPECT_TRUE(pass.Selects(m, kNow));
}

TEST(SelectionPassTest, DryRunCountsSelectedOnceAndTakesNothing) {
  SelectionPass::Options o = OlderThanADay();
  o.dry_run = true;
  SelectionPass pass(o);
  SelectionPass::Sorted s = pass.Sort({Sent("old", kNow - hours(30)), Sent("new", kNow)}, kNow);
  EXPECT_TRUE(s.take.empty());
  EXPECT_EQ(Ids(s.examined), (std::vector<std::string>{"old", "new"}));
  EXPECT_EQ(s.selected, 1u);
  EXPECT_EQ(s.skipped, 1u);
  s = pass.Sort({Sent("old", kNow - hours(30))}, kNow);
  EXPECT_EQ(s.selected, 0u);
  EXPECT_FALSE(s.progress);
}

TEST(SelectionPassTest, KeepTakesTheFirstReceiptAndHoldsACopyThatComesBack) {
  SelectionPass::Options o;
  o.keep = true;
  SelectionPass pass(o);
  SelectionPass::Sorted s = pass.Sort({Sent("a", kNow)}, kNow);
  EXPECT_EQ(Ids(s.take), (std::vector<std::string>{"a"}));
  EXPECT_TRUE(s.progress);
  s = pass.Sort({Sent("a", kNow)}, kNow);  // archived already, released, received again
  EXPECT_TRUE(s.take.empty());
  EXPECT_EQ(Ids(s.examined), (std::vector<std::string>{"a"}));
  EXPECT_FALSE(s.progress);
}

TEST(SelectionPassTest, ExpiringWithinSelectsByExpiry) {
  SelectionPass::Options o;
  o.selection = {SelectionKind::kExpiringWithin, hours(12)};
  o.retention = hours(96);
  SelectionPass pass(o);
  EXPECT_TRUE(pass.Selects(Sent("soon", kNow - hours(90)), kNow));    // expires in 6 h
  EXPECT_FALSE(pass.Selects(Sent("later", kNow - hours(10)), kNow));  // expires in 86 h
}

}  // namespace
}  // namespace dlq
