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

const SteadyTime kT0 = SteadyTime(hours(1));

HeldMessage Receipt(const std::string& id, SteadyTime at = kT0) {
  return {id, "rh-" + id, at, at};
}

TEST(SelectionPassTest, CountsEveryReceiveOfAMessageWithThoseBeforeTheRun) {
  SelectionPass::Options o;
  o.prior_own_receives = [](const std::string& id) { return id == "a" ? 2 : 0; };
  SelectionPass pass(o);
  pass.Sort({Sent("a", kNow), Sent("b", kNow)}, kNow);
  pass.Sort({Sent("a", kNow)}, kNow);
  EXPECT_EQ(pass.OwnReceives("a"), 4);
  EXPECT_EQ(pass.OwnReceives("b"), 1);
  EXPECT_EQ(pass.OwnReceives("never"), 0);
}

TEST(SelectionPassTest, SetsAsideAMessageThatFailsTheMd5CheckEveryTime) {
  SelectionPass::Options o;
  o.corrupt_receipts_to_give_up = 2;
  o.visibility_timeout = std::chrono::seconds(60);
  SelectionPass pass(o);
  EXPECT_EQ(pass.NoteCorrupt(Receipt("bad")), 1);  // released by the caller
  EXPECT_EQ(pass.held(), 0u);
  EXPECT_EQ(pass.NoteCorrupt(Receipt("bad")), 2);  // set aside
  EXPECT_EQ(pass.NoteCorrupt(Receipt("once")), 1);
  EXPECT_EQ(pass.held(), 1u);
  SelectionPass::End end = pass.Finish();
  ASSERT_EQ(end.set_aside.size(), 1u);
  EXPECT_EQ(end.set_aside[0].receipt_handle, "rh-bad");
  EXPECT_EQ(end.set_aside[0].visible_until, kT0 + std::chrono::seconds(60));
  EXPECT_TRUE(end.examined.empty());
  EXPECT_EQ(end.corrupt_ids, (std::vector<std::string>{"bad"}));
  EXPECT_EQ(pass.held(), 0u);
}

TEST(SelectionPassTest, HandsBackWhatItExaminedOnceItCanHoldNoMore) {
  SelectionPass::Options o;
  o.max_examined_held = 3;
  SelectionPass pass(o);
  EXPECT_TRUE(pass.HoldExamined({Receipt("a"), Receipt("b")}).empty());
  EXPECT_FALSE(pass.released_early());
  std::vector<HeldMessage> back = pass.HoldExamined({Receipt("c")});
  EXPECT_EQ(back.size(), 3u);
  EXPECT_TRUE(pass.released_early());
  EXPECT_EQ(pass.held(), 0u);
  EXPECT_TRUE(pass.HoldExamined({Receipt("d")}).empty());
  EXPECT_EQ(pass.Finish().examined.size(), 1u);
}

TEST(SelectionPassTest, TheHeartbeatExtendsExaminedMessagesNotSetAsideOnes) {
  SelectionPass::Options o;
  o.corrupt_receipts_to_give_up = 1;
  o.visibility_timeout = std::chrono::seconds(60);
  SelectionPass pass(o);
  HeldMessage examined = Receipt("a");
  examined.visible_until = kT0 + std::chrono::seconds(60);
  pass.HoldExamined({examined});
  pass.NoteCorrupt(Receipt("bad"));
  std::vector<VisibilityDue> due;
  pass.AppendDue(kT0 + std::chrono::seconds(10), due);
  EXPECT_TRUE(due.empty());  // more than half a timeout left
  pass.AppendDue(kT0 + std::chrono::seconds(40), due);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].receipt_handle, "rh-a");
  EXPECT_FALSE(due[0].moves);
  const SteadyTime until = kT0 + std::chrono::seconds(100);
  EXPECT_TRUE(pass.RecordDue(due[0], until));
  EXPECT_EQ(pass.Finish().examined[0].visible_until, until);
  // Gone with the end of the pass: nothing to record.
  EXPECT_FALSE(pass.RecordDue(due[0], until));
}

}  // namespace
}  // namespace dlq
