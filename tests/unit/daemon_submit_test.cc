// The daemon's submit decision, branch by branch: no threads, no fakes of AWS.
#include "monitor/daemon_submit.h"

#include <gtest/gtest.h>

namespace dlq {
namespace {

using Action = AlarmSettings::Action;
using std::chrono::minutes;
using std::chrono::seconds;

const SystemTime kNow = SystemTime(seconds(1700000000));
const Duration kSweep = minutes(5);
const Selection kExpiryWindow{.kind = SelectionKind::kExpiringWithin, .window = seconds(3900)};
const Selection kOlderThanHour{.kind = SelectionKind::kOlderThan, .window = seconds(3600)};

// A queue whose expiry alarm (action archive) is in ALARM, with 5 visible
// messages, a store, a passing destination check, and a submission one full
// sweep ago: a run is due.
SubmitState DueExpiryRun() {
  SubmitState s;
  s.expiry_alarm = true;
  s.expiry_action = Action::kArchive;
  s.expiry_selection = kExpiryWindow;
  s.depth_action = Action::kNotify;
  s.depth_selection = kOlderThanHour;
  s.has_store = true;
  s.last_submit = kNow - kSweep;
  s.visible = 5;
  s.not_visible = 0;
  s.delayed = 0;
  return s;
}

void ExpectSelection(const Selection& got, const Selection& want) {
  EXPECT_EQ(got.kind, want.kind);
  EXPECT_EQ(got.window, want.window);
}

TEST(DaemonSubmitTest, AlarmInAlarmWithArchiveActionRunsItsWindowAndDeletes) {
  SubmitDecision d = DecideSubmit(DueExpiryRun(), kNow, kSweep);
  EXPECT_EQ(d.verdict, SubmitVerdict::kRun);
  EXPECT_FALSE(d.keep);
  EXPECT_FALSE(d.requested);
  ExpectSelection(d.selection, kExpiryWindow);
}

TEST(DaemonSubmitTest, NoAlarmInAlarmSubmitsNothing) {
  SubmitState s = DueExpiryRun();
  s.expiry_alarm = false;
  EXPECT_EQ(DecideSubmit(s, kNow, kSweep).verdict, SubmitVerdict::kNone);
}

TEST(DaemonSubmitTest, NotifyActionInAlarmSubmitsNothing) {
  SubmitState s = DueExpiryRun();
  s.expiry_action = Action::kNotify;
  EXPECT_EQ(DecideSubmit(s, kNow, kSweep).verdict, SubmitVerdict::kNone);
  s.expiry_alarm = false;
  s.depth_alarm = true;  // depth action is notify
  EXPECT_EQ(DecideSubmit(s, kNow, kSweep).verdict, SubmitVerdict::kNone);
}

TEST(DaemonSubmitTest, RunAlreadyQueuedAbsorbsEverything) {
  SubmitState s = DueExpiryRun();
  s.queued = true;
  s.transitioned = true;
  s.archive_requested = true;
  EXPECT_EQ(DecideSubmit(s, kNow, kSweep).verdict, SubmitVerdict::kNone);
}

TEST(DaemonSubmitTest, WithoutAStoreNothingIsSubmittedOrBlocked) {
  SubmitState s = DueExpiryRun();
  s.has_store = false;
  s.destination_ok = false;
  EXPECT_EQ(DecideSubmit(s, kNow, kSweep).verdict, SubmitVerdict::kNone);
}

TEST(DaemonSubmitTest, WithinTheSweepIntervalWaitsUnlessTransitionedOrMore) {
  SubmitState s = DueExpiryRun();
  s.last_submit = kNow - kSweep + seconds(1);
  EXPECT_EQ(DecideSubmit(s, kNow, kSweep).verdict, SubmitVerdict::kNone);
  s.transitioned = true;
  EXPECT_EQ(DecideSubmit(s, kNow, kSweep).verdict, SubmitVerdict::kRun);
  s.transitioned = false;
  s.more = true;  // the last run stopped at its budget: go on at once
  EXPECT_EQ(DecideSubmit(s, kNow, kSweep).verdict, SubmitVerdict::kRun);
}

TEST(DaemonSubmitTest, FirstSubmissionIsDueWithoutAnEarlierOne) {
  SubmitState s = DueExpiryRun();
  s.last_submit.reset();
  EXPECT_EQ(DecideSubmit(s, kNow, kSweep).verdict, SubmitVerdict::kRun);
}

TEST(DaemonSubmitTest, QueueSeenEmptyWaitsUntilItFillsAgain) {
  SubmitState s = DueExpiryRun();
  s.visible = 0;
  EXPECT_EQ(DecideSubmit(s, kNow, kSweep).verdict, SubmitVerdict::kNone);
  s.delayed = -1;  // unknown delayed count still reads as empty
  EXPECT_EQ(DecideSubmit(s, kNow, kSweep).verdict, SubmitVerdict::kNone);
  s.not_visible = 1;  // in flight elsewhere: not empty
  EXPECT_EQ(DecideSubmit(s, kNow, kSweep).verdict, SubmitVerdict::kRun);
  s.not_visible = 0;
  s.delayed = 1;
  EXPECT_EQ(DecideSubmit(s, kNow, kSweep).verdict, SubmitVerdict::kRun);
  s.delayed = 0;
  s.visible = -1;  // not collected: a message may be about to expire
  EXPECT_EQ(DecideSubmit(s, kNow, kSweep).verdict, SubmitVerdict::kRun);
}

TEST(DaemonSubmitTest, EmptyQueueStillRunsOnTransitionOrWhenMore) {
  SubmitState s = DueExpiryRun();
  s.visible = 0;
  s.transitioned = true;
  EXPECT_EQ(DecideSubmit(s, kNow, kSweep).verdict, SubmitVerdict::kRun);
  s.transitioned = false;
  s.more = true;
  EXPECT_EQ(DecideSubmit(s, kNow, kSweep).verdict, SubmitVerdict::kRun);
}

TEST(DaemonSubmitTest, DepthArchiveRunCoversTheExpiryWindow) {
  SubmitState s = DueExpiryRun();
  s.depth_alarm = true;
  s.depth_action = Action::kArchive;
  SubmitDecision d = DecideSubmit(s, kNow, kSweep);
  EXPECT_EQ(d.verdict, SubmitVerdict::kRun);
  ExpectSelection(d.selection, kOlderThanHour);
  s.expiry_alarm = false;
  ExpectSelection(DecideSubmit(s, kNow, kSweep).selection, kOlderThanHour);
}

TEST(DaemonSubmitTest, ArchiveNowTakesEverythingAtOnceEvenWhenEmptyOrSwept) {
  SubmitState s;
  s.has_store = true;
  s.archive_requested = true;
  s.visible = s.not_visible = s.delayed = 0;  // seen empty
  s.last_submit = kNow;                       // just submitted
  s.copy_due = true;
  s.copy_selection = kOlderThanHour;
  SubmitDecision d = DecideSubmit(s, kNow, kSweep);
  EXPECT_EQ(d.verdict, SubmitVerdict::kRun);
  EXPECT_TRUE(d.requested);
  EXPECT_FALSE(d.keep);  // the archive also writes the copy
  ExpectSelection(d.selection, Selection{});
  s.expiry_alarm = true;  // even with an alarm whose window is narrower
  ExpectSelection(DecideSubmit(s, kNow, kSweep).selection, Selection{});
}

TEST(DaemonSubmitTest, CopyDueRunsOnceKeepingWhatItTakes) {
  SubmitState s;
  s.has_store = true;
  s.depth_alarm = true;
  s.depth_action = Action::kCopy;
  s.copy_due = true;
  s.copy_selection = kOlderThanHour;
  s.last_submit = kNow;  // sweeps do not apply to a copy
  s.visible = 0;         // nor does an empty queue
  s.not_visible = s.delayed = 0;
  SubmitDecision d = DecideSubmit(s, kNow, kSweep);
  EXPECT_EQ(d.verdict, SubmitVerdict::kRun);
  EXPECT_TRUE(d.keep);
  EXPECT_FALSE(d.requested);
  ExpectSelection(d.selection, kOlderThanHour);
  s.copy_due = false;  // already submitted for this transition
  EXPECT_EQ(DecideSubmit(s, kNow, kSweep).verdict, SubmitVerdict::kNone);
}

TEST(DaemonSubmitTest, ArchiveActionWinsOverACopyDue) {
  SubmitState s = DueExpiryRun();
  s.copy_due = true;
  s.copy_selection = kOlderThanHour;
  SubmitDecision d = DecideSubmit(s, kNow, kSweep);
  EXPECT_EQ(d.verdict, SubmitVerdict::kRun);
  EXPECT_FALSE(d.keep);
  ExpectSelection(d.selection, kExpiryWindow);
}

TEST(DaemonSubmitTest, FailedDestinationBlocksADueRunOncePerSweep) {
  SubmitState s = DueExpiryRun();
  s.destination_ok = false;
  EXPECT_EQ(DecideSubmit(s, kNow, kSweep).verdict, SubmitVerdict::kBlocked);
  s.last_submit = kNow - minutes(1);
  s.more = true;  // would run at once with a working destination; blocked runs wait for the sweep
  EXPECT_EQ(DecideSubmit(s, kNow, kSweep).verdict, SubmitVerdict::kNone);
  s.transitioned = true;
  EXPECT_EQ(DecideSubmit(s, kNow, kSweep).verdict, SubmitVerdict::kBlocked);
}

TEST(DaemonSubmitTest, FailedDestinationBlocksArchiveNowAndCopiesOnTheSameTerms) {
  SubmitState s;
  s.has_store = true;
  s.destination_ok = false;
  s.archive_requested = true;
  EXPECT_EQ(DecideSubmit(s, kNow, kSweep).verdict, SubmitVerdict::kBlocked);  // never submitted
  s.last_submit = kNow - minutes(1);
  EXPECT_EQ(DecideSubmit(s, kNow, kSweep).verdict, SubmitVerdict::kNone);
  s.archive_requested = false;
  s.copy_due = true;
  s.last_submit = kNow - kSweep;
  EXPECT_EQ(DecideSubmit(s, kNow, kSweep).verdict, SubmitVerdict::kBlocked);
}

TEST(DaemonSubmitTest, UnknownExpiryWithNothingDueRunsALearningPassThatKeepsEverything) {
  SubmitState s = DueExpiryRun();
  s.expiry_alarm = false;
  s.learn_due = true;
  SubmitDecision d = DecideSubmit(s, kNow, kSweep);
  EXPECT_EQ(d.verdict, SubmitVerdict::kRun);
  EXPECT_TRUE(d.learn);
  EXPECT_FALSE(d.requested);
  ExpectSelection(d.selection, Selection{});
  s.destination_ok = false;  // it writes nothing: a failed destination does not hold it back
  EXPECT_TRUE(DecideSubmit(s, kNow, kSweep).learn);
  s.queued = true;
  EXPECT_EQ(DecideSubmit(s, kNow, kSweep).verdict, SubmitVerdict::kNone);
  s.queued = false;
  s.has_store = false;
  EXPECT_EQ(DecideSubmit(s, kNow, kSweep).verdict, SubmitVerdict::kNone);
}

TEST(DaemonSubmitTest, ADueArchiveRunWinsOverALearningPass) {
  SubmitState s = DueExpiryRun();
  s.learn_due = true;
  SubmitDecision d = DecideSubmit(s, kNow, kSweep);
  EXPECT_EQ(d.verdict, SubmitVerdict::kRun);
  EXPECT_FALSE(d.learn);
  ExpectSelection(d.selection, kExpiryWindow);
}

TEST(DaemonSubmitTest, NoLearningPassWhenTheExpiryIsKnown) {
  SubmitState s = DueExpiryRun();
  s.expiry_alarm = false;
  EXPECT_EQ(DecideSubmit(s, kNow, kSweep).verdict, SubmitVerdict::kNone);
}

}  // namespace
}  // namespace dlq
