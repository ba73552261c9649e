#include "monitor/arrival_ledger.h"

#include <gtest/gtest.h>

namespace dlq {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

constexpr seconds kRetention{345600};

SystemTime T0() {
  return SystemTime(std::chrono::hours(24 * 20000));
}

ReceivedMessage Seen(std::string id, SystemTime sent, int count, int receives = 1, bool deleted = false) {
  return ReceivedMessage{.message_id = std::move(id),
                         .sent = sent,
                         .first_receive_count = count,
                         .receives = receives,
                         .deleted = deleted};
}

TEST(ArrivalLedgerTest, FirstSightKeepsSentFirstSeenAndTheReportedCount) {
  ArrivalLedger l;
  l.Merge({Seen("a", T0() - hours(2), 4)}, kRetention, T0());
  const LedgerEntry* e = l.Find("a");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->sent, T0() - hours(2));
  EXPECT_EQ(e->first_seen, T0());
  EXPECT_EQ(e->first_receive_count, 4);
  EXPECT_EQ(e->own_receives, 1);
}

TEST(ArrivalLedgerTest, LaterPassesAddTheirReceivesButKeepTheFirstSight) {
  ArrivalLedger l;
  l.Merge({Seen("a", T0() - hours(2), 4)}, kRetention, T0());
  l.Merge({Seen("a", T0() - hours(2), 6, /*receives=*/2)}, kRetention, T0() + hours(1));
  const LedgerEntry* e = l.Find("a");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->first_seen, T0());
  EXPECT_EQ(e->first_receive_count, 4);
  EXPECT_EQ(e->own_receives, 3);
  EXPECT_EQ(l.OwnReceives("a"), 3);
  EXPECT_EQ(l.OwnReceives("unknown"), 0);
}

TEST(ArrivalLedgerTest, DeletedMessagesAreForgotten) {
  ArrivalLedger l;
  l.Merge({Seen("a", T0(), 1), Seen("b", T0(), 1)}, kRetention, T0());
  l.Merge({Seen("a", T0(), 2, 1, /*deleted=*/true)}, kRetention, T0());
  EXPECT_EQ(l.Find("a"), nullptr);
  EXPECT_EQ(l.size(), 1u);
}

TEST(ArrivalLedgerTest, NearestExpiryIsTheOldestSentPlusRetentionAndExpiredEntriesArePruned) {
  ArrivalLedger l;
  EXPECT_FALSE(l.NearestExpiry(kRetention));
  l.Merge({Seen("new", T0() - hours(1), 1), Seen("old", T0() - hours(90), 1)}, kRetention, T0());
  ASSERT_TRUE(l.NearestExpiry(kRetention));
  EXPECT_EQ(*l.NearestExpiry(kRetention), T0() - hours(90) + kRetention);
  l.PruneExpired(kRetention, T0() + hours(6));  // "old" expired 6 h after T0
  EXPECT_EQ(l.Find("old"), nullptr);
  EXPECT_EQ(*l.NearestExpiry(kRetention), T0() - hours(1) + kRetention);
}

TEST(ArrivalLedgerTest, AMessageWithoutSentTimestampMayExpireAtOnce) {
  ArrivalLedger l;
  ReceivedMessage m = Seen("a", T0(), 1);
  m.sent.reset();
  l.Merge({m}, kRetention, T0());
  EXPECT_EQ(*l.NearestExpiry(kRetention), T0());
}

TEST(ArrivalLedgerTest, SaveThenLoadGivesTheSameEntries) {
  ArrivalLedger l;
  l.Merge({Seen("a", T0() - hours(3), 2, 2), Seen("b", T0() - hours(1), 1)}, kRetention, T0());
  ArrivalLedger copy;
  copy.Load(l.Save());
  ASSERT_EQ(copy.size(), 2u);
  EXPECT_EQ(copy.Find("a")->own_receives, 2);
  EXPECT_EQ(copy.Find("a")->first_receive_count, 2);
  EXPECT_EQ(copy.Find("b")->sent, T0() - hours(1));
  EXPECT_EQ(copy.NearestExpiry(kRetention), l.NearestExpiry(kRetention));
}

TEST(ArrivalLedgerTest, ConsumerCountIsReportedMinusOursNeverNegative) {
  EXPECT_EQ(ConsumerReceiveCount(5, 2), 3);
  EXPECT_EQ(ConsumerReceiveCount(1, 3), 0);
}

}  // namespace
}  // namespace dlq
