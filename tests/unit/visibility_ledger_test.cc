#include "archiver/visibility_ledger.h"

#include <gtest/gtest.h>

namespace dlq {
namespace {

using std::chrono::seconds;
using T = VisibilityLedger::TimePoint;

constexpr auto kVisibility = seconds(60);

T At(int s) {
  return T{} + seconds(s);
}

TEST(VisibilityLedgerTest, NoEmptyReceiveIsNoProof) {
  VisibilityLedger l(4);
  EXPECT_FALSE(l.LookedAfter(At(0)));
  l.ReceiveStarted(0, At(1));
  l.ReceiveEnded(0, At(1), At(2), /*took=*/true, kVisibility);
  EXPECT_FALSE(l.LookedAfter(At(0)));
}

TEST(VisibilityLedgerTest, EmptyReceiveProvesOnlyAfterATimeoutFromTheTakingReply) {
  VisibilityLedger l(4);
  // Took messages; its reply came back at 5 s: visible again by 65 s.
  l.ReceiveStarted(0, At(1));
  l.ReceiveEnded(0, At(1), At(5), true, kVisibility);
  EXPECT_EQ(l.all_visible_by(), At(65));
  // Began a timeout after the request's start but before one after its reply: no proof.
  l.ReceiveStarted(0, At(63));
  l.ReceiveEnded(0, At(63), At(64), false, kVisibility);
  EXPECT_FALSE(l.LookedAfter(At(0)));
  l.ReceiveStarted(0, At(66));
  l.ReceiveEnded(0, At(66), At(67), false, kVisibility);
  EXPECT_TRUE(l.LookedAfter(At(0)));
  // ...but not of anything that started later than it.
  EXPECT_FALSE(l.LookedAfter(At(66)));
}

TEST(VisibilityLedgerTest, AFailedReceiveCountsAsTaking) {
  VisibilityLedger l(4);
  l.ReceiveStarted(0, At(10));
  l.ReceiveEnded(0, At(10), At(12), /*took=*/true, kVisibility);  // a lost reply
  l.ReceiveStarted(0, At(71));
  l.ReceiveEnded(0, At(71), At(72), false, kVisibility);
  EXPECT_FALSE(l.LookedAfter(At(0)));
  l.ReceiveStarted(0, At(73));
  l.ReceiveEnded(0, At(73), At(74), false, kVisibility);
  EXPECT_TRUE(l.LookedAfter(At(0)));
}

TEST(VisibilityLedgerTest, AReceiveRunningSinceBeforeTheEmptyOneEndedDefersTheProof) {
  VisibilityLedger l(4);
  // Another receiver's request is on the wire: it may have taken the
  // messages just before the empty receive looked.
  l.ReceiveStarted(0, At(100));
  l.ReceiveStarted(1, At(101));
  l.ReceiveEnded(1, At(101), At(103), false, kVisibility);
  EXPECT_FALSE(l.LookedAfter(At(0)));
  // It comes back with them: the empty receive proves nothing.
  l.ReceiveEnded(0, At(100), At(104), true, kVisibility);
  EXPECT_FALSE(l.LookedAfter(At(0)));
  EXPECT_EQ(l.all_visible_by(), At(164));
}

TEST(VisibilityLedgerTest, AReceiveThatBeganAfterTheEmptyOneEndedDoesNotDefer) {
  VisibilityLedger l(4);
  l.ReceiveStarted(0, At(101));
  l.ReceiveEnded(0, At(101), At(103), false, kVisibility);
  l.ReceiveStarted(1, At(104));  // cannot have reached the queue before the empty receive looked
  EXPECT_TRUE(l.LookedAfter(At(0)));
}

TEST(VisibilityLedgerTest, AnOverlappingEmptyReceiveComingBackKeepsTheProofWaiting) {
  VisibilityLedger l(4);
  l.ReceiveStarted(0, At(100));
  l.ReceiveStarted(1, At(101));
  l.ReceiveEnded(1, At(101), At(103), false, kVisibility);
  EXPECT_FALSE(l.LookedAfter(At(0)));
  l.ReceiveEnded(0, At(100), At(120), false, kVisibility);  // a long poll that found nothing
  EXPECT_TRUE(l.LookedAfter(At(0)));
}

TEST(VisibilityLedgerTest, AnOlderCandidateProvesWhileANewerOneWaits) {
  VisibilityLedger l(4);
  l.ReceiveStarted(0, At(100));
  l.ReceiveEnded(0, At(100), At(120), false, kVisibility);
  l.ReceiveStarted(0, At(121));
  l.ReceiveStarted(1, At(125));  // a long poll on the wire
  l.ReceiveEnded(0, At(121), At(141), false, kVisibility);
  // The newest empty receive overlaps the running one; the older does not.
  EXPECT_TRUE(l.LookedAfter(At(0)));
  EXPECT_FALSE(l.LookedAfter(At(100)));
}

TEST(VisibilityLedgerTest, TellsWhetherAReceiveThatBeganByThenIsStillRunning) {
  VisibilityLedger l(4);
  EXPECT_FALSE(l.ReceiveRunningSince(At(100)));
  l.ReceiveStarted(0, At(10));
  l.ReceiveStarted(1, At(10));  // two at the same moment
  l.ReceiveStarted(2, At(20));
  EXPECT_FALSE(l.ReceiveRunningSince(At(9)));
  EXPECT_TRUE(l.ReceiveRunningSince(At(10)));
  l.ReceiveEnded(0, At(10), At(11), false, kVisibility);
  EXPECT_TRUE(l.ReceiveRunningSince(At(10)));
  l.ReceiveEnded(1, At(10), At(12), false, kVisibility);
  EXPECT_FALSE(l.ReceiveRunningSince(At(19)));
  EXPECT_TRUE(l.ReceiveRunningSince(At(20)));
  l.ReceiveEnded(2, At(20), At(21), true, kVisibility);
  EXPECT_FALSE(l.ReceiveRunningSince(At(100)));
}

TEST(VisibilityLedgerTest, AVisibilityChangeMovesTheMomentOn) {
  VisibilityLedger l(4);
  l.ReceiveStarted(0, At(1));
  l.ReceiveEnded(0, At(1), At(2), false, kVisibility);
  EXPECT_TRUE(l.LookedAfter(At(0)));
  // An extension (or a failed one) that came back at 30 s.
  l.VisibilityChanged(At(30), kVisibility);
  EXPECT_EQ(l.all_visible_by(), At(90));
  EXPECT_FALSE(l.LookedAfter(At(0)));
  // An earlier, shorter change does not move it back.
  l.VisibilityChanged(At(20), seconds(10));
  EXPECT_EQ(l.all_visible_by(), At(90));
}

TEST(VisibilityLedgerTest, KeepsABoundedNumberOfCandidates) {
  // A long poll on the wire since 5 s: only empty receives that ended
  // before it began prove anything, and they are the oldest.
  auto fill = [](VisibilityLedger& l, int n) {
    l.ReceiveStarted(1, T{} + std::chrono::milliseconds(4500));
    for (int i = 0; i < n; ++i) {
      l.ReceiveStarted(0, At(i));
      l.ReceiveEnded(0, At(i), At(i), false, kVisibility);
    }
  };
  VisibilityLedger kept(2);
  fill(kept, static_cast<int>(VisibilityLedger::kCandidates));
  EXPECT_TRUE(kept.LookedAfter(T{}));
  VisibilityLedger dropped(2);
  fill(dropped, static_cast<int>(VisibilityLedger::kCandidates) + 5);
  EXPECT_FALSE(dropped.LookedAfter(T{}));
}

}  // namespace
}  // namespace dlq
