// The parts RedriveGuard is made of: RedriveSteps, BacklogGate,
// RefailureWatch and the journal's resume point.
#include <gtest/gtest.h>

#include <chrono>
#include <deque>

#include "replay/backlog_gate.h"
#include "replay/redrive_journal.h"
#include "replay/redrive_steps.h"
#include "replay/refailure_watch.h"
#include "testing/fake_clock.h"

namespace dlq {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

RedriveOptions Guarded() {
  RedriveOptions o;
  o.canary = 10;
  o.ramp = {0.05, 0.25, 1.0};
  o.window = seconds(60);
  o.check = seconds(30);
  o.poll = seconds(1);
  return o;
}

TEST(RedriveStepsTest, TargetsFollowTheRampAndSkipStepsTheCanaryCovers) {
  const RedriveSteps steps(Guarded(), 1000);
  ASSERT_EQ(steps.last(), 3u);
  EXPECT_EQ(steps.Target(0), 10u);
  EXPECT_EQ(steps.Target(1), 50u);  // 5% of 1000, not 51
  EXPECT_EQ(steps.Target(2), 250u);
  EXPECT_EQ(steps.StepOfSend(0), 0u);
  EXPECT_EQ(steps.StepOfSend(9), 0u);
  EXPECT_EQ(steps.StepOfSend(10), 1u);
  EXPECT_EQ(steps.StepOfSend(250), 3u);
  EXPECT_EQ(steps.StepOfSend(999999), 3u);
  EXPECT_EQ(steps.Name(0), "the canary");
  EXPECT_EQ(steps.Name(2), "ramp step 2 of 3");
  EXPECT_EQ(steps.Name(RedrivePhase::kFinalCheck, 3), "the final window after ramp step 3 of 3");
  EXPECT_EQ(steps.SendingPhase(0), RedrivePhase::kCanary);
  EXPECT_EQ(steps.SendingPhase(1), RedrivePhase::kRamp);
  EXPECT_EQ(steps.FindEvery(seconds(60)), milliseconds(6000));
  EXPECT_EQ(steps.FindEvery(seconds(5)), milliseconds(1000));  // never below poll

  // 5% of 100 is below the canary of 10: that step is skipped.
  const RedriveSteps small(Guarded(), 100);
  ASSERT_EQ(small.last(), 2u);
  EXPECT_EQ(small.Target(1), 25u);
}

TEST(RedriveStepsTest, BackpressureOnlyIsOneUnboundedSendingStep) {
  RedriveOptions o;
  o.max_backlog = 100;
  const RedriveSteps steps(o, 1000);
  EXPECT_EQ(steps.last(), 0u);
  EXPECT_EQ(steps.SendingPhase(0), RedrivePhase::kSending);
  EXPECT_EQ(steps.StepOfSend(5000), 0u);
}

class ScriptedBacklog final : public BacklogProbe {
 public:
  std::deque<Result<BacklogSample>> samples;
  Result<BacklogSample> Sample() override {
    Result<BacklogSample> s = samples.front();
    samples.pop_front();
    return s;
  }
};

TEST(BacklogGateTest, ProjectsTheCountAndPausesUntilHalfTheBound) {
  RedriveOptions o;
  o.max_backlog = 10;
  o.poll = seconds(5);
  FakeClock clock;
  ScriptedBacklog probe;
  BacklogGate gate(o, clock);
  EXPECT_TRUE(gate.SampleDue());        // no sample yet
  EXPECT_FALSE(gate.WouldPassBound());  // unknown count: nothing projected

  probe.samples.push_back(BacklogSample{6, std::nullopt});
  ASSERT_EQ(gate.Sample(probe, /*unconfirmed=*/2, {}).value(), true);
  EXPECT_EQ(gate.backlog(), 6);
  EXPECT_FALSE(gate.SampleDue());
  // 6 + 2 held: one more item makes 9, then 10; the next would pass 10.
  EXPECT_FALSE(gate.WouldPassBound());
  gate.Took(false);
  EXPECT_FALSE(gate.WouldPassBound());
  gate.Took(false);
  EXPECT_TRUE(gate.WouldPassBound());
  EXPECT_TRUE(gate.SampleDue());  // due at once when the bound would pass

  probe.samples.push_back(BacklogSample{11, std::nullopt});
  ASSERT_TRUE(gate.Sample(probe, 0, {}).value());
  EXPECT_TRUE(gate.Over(/*resuming=*/false));
  EXPECT_EQ(gate.Reason(), "paused: destination backlog 11 over the bound 10; resumes at 5");
  probe.samples.push_back(BacklogSample{6, std::nullopt});
  ASSERT_TRUE(gate.Sample(probe, 0, {}).value());
  EXPECT_FALSE(gate.Over(/*resuming=*/false));
  EXPECT_TRUE(gate.Over(/*resuming=*/true));  // resumes only at max_backlog / 2
  probe.samples.push_back(BacklogSample{5, std::nullopt});
  ASSERT_TRUE(gate.Sample(probe, 0, {}).value());
  EXPECT_FALSE(gate.Over(/*resuming=*/true));

  // A retryable failure keeps the last values; another is returned.
  probe.samples.push_back(Unavailable("throttled"));
  ASSERT_EQ(gate.Sample(probe, 0, {}).value(), false);
  EXPECT_EQ(gate.backlog(), 5);
  probe.samples.push_back(InvalidArgument("no such queue"));
  EXPECT_FALSE(gate.Sample(probe, 0, {}).ok());
}

TEST(BacklogGateTest, EstimatesTheAgeFromOurSendsAndPausesOnIt) {
  FakeClock clock;
  const SystemTime t0 = clock.Now();
  const std::vector<SystemTime> sends = {t0, t0 + seconds(10), t0 + seconds(20)};
  const SystemTime now = t0 + seconds(30);
  EXPECT_EQ(BacklogGate::EstimateAge(-1, sends, now), std::nullopt);
  EXPECT_EQ(BacklogGate::EstimateAge(0, sends, now), seconds(0));
  EXPECT_EQ(BacklogGate::EstimateAge(1, sends, now), seconds(10));  // our last send is the oldest waiting
  EXPECT_EQ(BacklogGate::EstimateAge(3, sends, now), seconds(30));
  EXPECT_EQ(BacklogGate::EstimateAge(7, sends, now), seconds(30));  // more than we sent: our first
  EXPECT_EQ(BacklogGate::EstimateAge(2, {}, now), std::nullopt);

  RedriveOptions o;
  o.max_backlog_age = seconds(20);
  ScriptedBacklog probe;
  BacklogGate gate(o, clock);
  clock.Advance(seconds(30));
  probe.samples.push_back(BacklogSample{3, std::nullopt});
  ASSERT_TRUE(gate.Sample(probe, 0, sends).value());
  EXPECT_EQ(gate.age(), seconds(30));
  EXPECT_TRUE(gate.Over(/*resuming=*/false));
  EXPECT_EQ(gate.Reason(), "paused: oldest destination message 30 s old, over the bound 20 s; resumes under 20 s");
  probe.samples.push_back(BacklogSample{3, seconds(20)});  // the probe's own age wins
  ASSERT_TRUE(gate.Sample(probe, 0, sends).value());
  EXPECT_FALSE(gate.Over(/*resuming=*/false));
  EXPECT_TRUE(gate.Over(/*resuming=*/true));
}

ReplayedMessage Sent(const std::string& id) {
  ReplayedMessage m;
  m.message_id = "orig-" + id;
  m.new_message_id = id;
  return m;
}

TEST(RefailureWatchTest, BoundsAndNamesEarlierStepsInTheBreach) {
  RedriveOptions o = Guarded();
  o.canary_max_refailures = 1;
  o.max_refailures_fraction = 0.1;
  const RedriveSteps steps(o, 1000);
  RefailureWatch watch(o);
  FakeClock clock;
  watch.Add(Sent("a"), clock.Now(), 0);
  watch.Add(Sent("b"), clock.Now(), 1);
  EXPECT_TRUE(watch.IsOurs("a"));
  EXPECT_FALSE(watch.IsOurs("orig-a"));
  EXPECT_EQ(watch.Watched("b").message_id, "orig-b");
  EXPECT_EQ(watch.send_times().size(), 2u);
  EXPECT_TRUE(watch.MarkRefailed("a"));
  EXPECT_FALSE(watch.MarkRefailed("a"));

  EXPECT_EQ(watch.Bound(0, 500), 1u);
  EXPECT_EQ(watch.Bound(1, 59), 5u);  // floor(10% of 59)
  o.max_refailures = 3;
  EXPECT_EQ(RefailureWatch(o).Bound(2, 1000), 3u);

  RedriveStatus status;
  status.phase = RedrivePhase::kWaiting;
  status.sent = 2;
  status.refailed = 2;
  status.refailures = {RefailedMessage{"orig-a", "a", "", "", {}}, RefailedMessage{"orig-b", "b", "", "", {}}};
  EXPECT_EQ(watch.BreachReason(status, 1, 0, steps),
            "2 of 2 messages sent failed again in ramp step 1 of 3 (bound 0); 1 of them sent in the canary");
}

TEST(RedriveResumePointTest, ReentersTheSendingPhaseAfterAPauseAndKeepsAWaitsStart) {
  const RedriveSteps steps(Guarded(), 1000);
  const SystemTime t0 = FakeClock().Now();
  RedriveJournal journal;
  journal.phases = {{RedrivePhase::kCanary, 0, t0},
                    {RedrivePhase::kPaused, 0, t0 + seconds(1)},
                    {RedrivePhase::kCanary, 0, t0 + seconds(31)},
                    {RedrivePhase::kWaiting, 0, t0 + seconds(40)}};
  RedriveResumePoint point = ResumePointOf(journal, steps);
  EXPECT_EQ(point.phase, RedrivePhase::kWaiting);
  EXPECT_EQ(point.step, 0u);
  EXPECT_EQ(point.wait_start, t0 + seconds(40));
  EXPECT_EQ(point.paused_for, seconds(30));

  journal.phases = {{RedrivePhase::kPaused, 9, t0}};  // a step past the last is clamped
  point = ResumePointOf(journal, steps);
  EXPECT_EQ(point.phase, RedrivePhase::kRamp);
  EXPECT_EQ(point.step, 3u);
  EXPECT_EQ(point.wait_start, std::nullopt);
  EXPECT_EQ(point.paused_for, seconds(0));
}

}  // namespace
}  // namespace dlq
