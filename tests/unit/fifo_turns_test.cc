#include "archiver/fifo_turns.h"

#include <gtest/gtest.h>

namespace dlq {
namespace {

TEST(FifoTurnsTest, StandardQueueNeverTakesTurnsOrProbes) {
  FifoTurns t(/*fifo=*/false);
  EXPECT_FALSE(t.in_turns());
  FifoTurns::Turn turn = t.Begin(/*held=*/5, /*deleting=*/false);
  EXPECT_FALSE(turn.probe);
  EXPECT_FALSE(t.probing());
  EXPECT_FALSE(t.After(turn, 10, 15));
  EXPECT_FALSE(t.in_turns());
}

TEST(FifoTurnsTest, FifoRunStartsInTurnsWithAProbeDue) {
  FifoTurns t(/*fifo=*/true);
  EXPECT_TRUE(t.in_turns());
  EXPECT_TRUE(t.probe_due());
  FifoTurns::Turn turn = t.Begin(0, false);
  EXPECT_TRUE(turn.probe);
  EXPECT_TRUE(t.probing());
  EXPECT_FALSE(t.probe_due());  // one probe at a time
}

TEST(FifoTurnsTest, ProbeThatBringsMessagesWhileOthersStayHeldRestoresConcurrency) {
  FifoTurns t(true);
  FifoTurns::Turn turn = t.Begin(/*held=*/10, false);
  EXPECT_FALSE(t.After(turn, /*got=*/10, /*held_now=*/20));
  EXPECT_FALSE(t.in_turns());
  EXPECT_FALSE(t.probing());
}

TEST(FifoTurnsTest, ProbeThatOverlappedADeleteKeepsTheTurnForASecondProbe) {
  // A delete can free a group of ours: what the probe brought may be that
  // group's next messages, which proves nothing.
  FifoTurns t(true);
  FifoTurns::Turn turn = t.Begin(10, /*deleting=*/true);
  EXPECT_TRUE(t.After(turn, 10, 20));
  EXPECT_TRUE(t.in_turns());
  EXPECT_TRUE(t.probing());  // reserved for this receiver
  EXPECT_FALSE(t.probe_due());

  FifoTurns u(true);
  turn = u.Begin(10, false);
  u.DeleteBegan();  // during the probe
  EXPECT_TRUE(u.After(turn, 10, 20));
  EXPECT_TRUE(u.in_turns());

  FifoTurns v(true);
  turn = v.Begin(10, false);
  v.Left();  // a batch left during the probe
  EXPECT_TRUE(v.After(turn, 10, 20));
  EXPECT_TRUE(v.in_turns());
}

TEST(FifoTurnsTest, FirstProbeWithNothingHeldKeepsTheTurnAndItsNextReceiveProbesAgain) {
  FifoTurns t(true);
  FifoTurns::Turn turn = t.Begin(/*held=*/0, false);
  ASSERT_TRUE(t.After(turn, 10, 10));  // a one-group queue looks like this
  t.EndReservation();
  EXPECT_FALSE(t.probing());
  turn = t.Begin(/*held=*/10, false);
  EXPECT_TRUE(turn.probe);
  EXPECT_FALSE(t.After(turn, 10, 20));  // messages of another group: not only ours
  EXPECT_FALSE(t.in_turns());
}

TEST(FifoTurnsTest, EmptyReceiveWithNothingHeldTakesTurnsAndKeepsTheTurn) {
  FifoTurns t(true);
  FifoTurns::Turn turn = t.Begin(10, false);
  ASSERT_FALSE(t.After(turn, 10, 20));  // leaves turns: 10 held before, no delete
  ASSERT_FALSE(t.in_turns());
  turn = t.Begin(0, false);
  EXPECT_FALSE(turn.probe);
  // The queue looks empty: this receiver alone checks and polls again.
  EXPECT_TRUE(t.After(turn, 0, /*held_now=*/0));
  EXPECT_TRUE(t.in_turns());
  EXPECT_TRUE(t.probing());
}

TEST(FifoTurnsTest, EmptyReceiveWhileHoldingReturnsToTurnsProbingAfterABatchLeaves) {
  FifoTurns t(true);
  FifoTurns::Turn turn = t.Begin(5, false);
  ASSERT_FALSE(t.After(turn, 10, 15));  // out of turns
  turn = t.Begin(15, false);
  EXPECT_FALSE(t.After(turn, 0, /*held_now=*/15));
  EXPECT_TRUE(t.in_turns());
  EXPECT_FALSE(t.probe_due());  // nothing left meanwhile: wait for a batch to leave
  t.Left();
  EXPECT_TRUE(t.probe_due());
}

TEST(FifoTurnsTest, EmptyProbeWhileHoldingWaitsForTheNextLeave) {
  FifoTurns t(true);
  FifoTurns::Turn turn = t.Begin(15, false);
  EXPECT_FALSE(t.After(turn, 0, 15));
  EXPECT_TRUE(t.in_turns());
  EXPECT_FALSE(t.probing());
  EXPECT_FALSE(t.probe_due());
  // A batch that left during the probe makes the next one due at once.
  turn = t.Begin(15, false);
  t.Left();
  EXPECT_FALSE(t.After(turn, 0, 5));
  EXPECT_TRUE(t.probe_due());
}

TEST(FifoTurnsTest, FailedProbeMakesTheNextProbeDue) {
  FifoTurns t(true);
  FifoTurns::Turn turn = t.Begin(15, false);
  EXPECT_FALSE(t.After(turn, -1, 15));
  EXPECT_TRUE(t.in_turns());
  EXPECT_TRUE(t.probe_due());
}

TEST(FifoTurnsTest, SealsOnlyWithNoProbeRunningSomethingBuildingAndNothingInHand) {
  FifoTurns t(true);
  EXPECT_TRUE(t.should_seal(/*building=*/true, /*in_hand=*/false));
  EXPECT_FALSE(t.should_seal(true, true));
  EXPECT_FALSE(t.should_seal(false, false));
  t.Begin(0, false);
  EXPECT_FALSE(t.should_seal(true, false));  // the probe may bring more of the groups
}

}  // namespace
}  // namespace dlq
