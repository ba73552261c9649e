#include "archiver/copy_ledger.h"

#include <gtest/gtest.h>

namespace dlq {
namespace {

HeldMessage Receipt(const std::string& id, const std::string& handle, bool copy = false) {
  return HeldMessage{id, handle, SteadyTime{}, SteadyTime{}, copy};
}

TEST(CopyLedgerTest, ACopyIsSeenWhereItsMessageIsAndCountedAsReceivedAgain) {
  DrainCounters c;
  CopyLedger ledger(c);
  EXPECT_EQ(ledger.Take("m1"), CopyLedger::Seen::kFirst);
  EXPECT_EQ(ledger.Take("m1"), CopyLedger::Seen::kHeld);
  ledger.Stored({Receipt("m1", "h1"), Receipt("m1", "h2", /*copy=*/true)});
  EXPECT_EQ(ledger.Take("m1"), CopyLedger::Seen::kStored);
  EXPECT_EQ(ledger.Take("m2"), CopyLedger::Seen::kFirst);
  EXPECT_EQ(c.received_again, 2u);
  EXPECT_EQ(c.archived, 1u);  // m1 once, though two of its receipts rode in the object
}

TEST(CopyLedgerTest, StoringAMessageAgainDoesNotCountItAgain) {
  DrainCounters c;
  CopyLedger ledger(c);
  ledger.Take("m1");
  ledger.Stored({Receipt("m1", "h1")});
  ledger.Stored({Receipt("m1", "h2")});
  EXPECT_EQ(c.archived, 1u);
}

TEST(CopyLedgerTest, AMessageDeletedByAnyHandleCountsOnceAndTakesBackAStaleHandle) {
  DrainCounters c;
  CopyLedger ledger(c);
  // The stale handle's reply comes first: a duplicate until the copy's handle deletes it.
  EXPECT_TRUE(ledger.NotDeleted("m1", /*expired=*/true));
  EXPECT_EQ(c.duplicates, 1u);
  ledger.Deleted("m1");
  ledger.Deleted("m1");  // a stand-in that accepts every handle the message had
  EXPECT_EQ(c.deleted, 1u);
  EXPECT_EQ(c.duplicates, 0u);
  // The other order: deleted first, the stale handle counts nothing.
  ledger.Deleted("m2");
  EXPECT_FALSE(ledger.NotDeleted("m2", /*expired=*/true));
  EXPECT_EQ(c.deleted, 2u);
  EXPECT_EQ(c.duplicates, 0u);
}

TEST(CopyLedgerTest, AMessageLeftInTheDlqCountsOnceInOneBucket) {
  DrainCounters c;
  CopyLedger ledger(c);
  EXPECT_TRUE(ledger.NotDeleted("m1", /*expired=*/true));
  EXPECT_FALSE(ledger.NotDeleted("m1", /*expired=*/true));
  EXPECT_EQ(c.duplicates, 1u);
  // Its copy's delete then failed for good: a delete failure, no longer a duplicate.
  EXPECT_TRUE(ledger.NotDeleted("m1", /*expired=*/false));
  EXPECT_EQ(c.duplicates, 0u);
  EXPECT_EQ(c.delete_failures, 1u);
  ledger.Deleted("m1");
  EXPECT_EQ(c.delete_failures, 0u);
  EXPECT_EQ(c.deleted, 1u);
}

}  // namespace
}  // namespace dlq
