#include "replay/redrive_guard.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <set>

#include "common/time_util.h"
#include "replay/live_source.h"
#include "replay/redrive_journal.h"
#include "replay/replayer.h"
#include "replay/targets.h"
#include "sqs/md5.h"
#include "testing/fake_clock.h"
#include "testing/fake_queue.h"
#include "testing/temp_path.h"

namespace dlq {
namespace {

using Op = FakeQueueClient::Operation;
using std::chrono::milliseconds;
using std::chrono::seconds;

ArchiveRecord Rec(int i) {
  ArchiveRecord r;
  r.queue = "orders-dlq";
  r.message_id = fmt::format("id-{}", i);
  r.body = fmt::format("body {}", i);
  r.md5_of_body = Md5OfBody(r.body);
  r.md5_of_message_attributes = Md5OfMessageAttributes(r.message_attributes);
  return r;
}

int IndexOf(const std::string& message_id) {
  return std::stoi(message_id.substr(3));
}

// The destination's backlog as a function the test sets (default: empty).
class FakeBacklog final : public BacklogProbe {
 public:
  Result<BacklogSample> Sample() override {
    ++calls;
    if (!fn) return BacklogSample{0, std::nullopt};
    return fn();
  }
  std::function<Result<BacklogSample>()> fn;
  int calls = 0;
};

// A watched message for which `fails` holds is found in the DLQ once `delay`
// has passed since Find first saw it.
class FakeRefailures final : public RefailureProbe {
 public:
  explicit FakeRefailures(Clock& clock) : clock_(clock) {}
  Result<std::vector<RefailedMessage>> Find(const std::map<std::string, ReplayedMessage>& watched) override {
    ++calls;
    std::vector<RefailedMessage> out;
    const SystemTime now = clock_.Now();
    for (const auto& [new_id, m] : watched) {
      SystemTime first = first_seen_.try_emplace(new_id, now).first->second;
      if (fails && fails(m) && now - first >= delay) out.push_back({m.message_id, new_id, m.destination, "dlq", now});
    }
    receives_ += out.size();
    return out;
  }
  uint64_t receives() const override { return receives_; }

  std::function<bool(const ReplayedMessage&)> fails;
  Duration delay{0};
  int calls = 0;

 private:
  Clock& clock_;
  std::map<std::string, SystemTime> first_seen_;
  uint64_t receives_ = 0;
};

struct PhaseChange {
  std::string name;  // "ramp/2"
  uint64_t sent = 0;
  SteadyTime at;
};

class RedriveGuardTest : public ::testing::Test {
 protected:
  RedriveGuardTest() : sqs_(clock_), refailures_(clock_) {
    dest_ = *sqs_.CreateQueue("orders", {});
    replay_.concurrency = 1;
    replay_.backoff.base_delay = milliseconds(10);
    replay_.identity_text = "guard test\n";
    guard_options_.canary = 10;
    guard_options_.window = seconds(100);
    guard_options_.check = seconds(20);
    guard_options_.poll = seconds(1);
    guard_options_.stop = &stop_;
  }

  // Replays records 0..n-1 (selection `total`, default n) through a guard
  // and returns the first error, or the guard's Finish.
  Status Run(int n, const std::string& journal = "", uint64_t total = 0) {
    targets_ = TargetResolver::Fixed(sqs_, "orders", "us-east-1");
    guard_ = std::make_unique<RedriveGuard>(guard_options_, total > 0 ? total : static_cast<uint64_t>(n), clock_,
                                            backlog_, &refailures_);
    guard_->OnStatus([this](const RedriveStatus& s) { Observe(s); });
    started_ = clock_.SteadyNow();
    changes_.clear();
    DLQ_RETURN_IF_ERROR(guard_->Start(journal));
    ReplayOptions ro = replay_;
    ro.gate = guard_.get();
    replayer_ = std::make_unique<Replayer>(sqs_, *targets_, clock_, ro, nullptr);
    DLQ_RETURN_IF_ERROR(replayer_->Start());
    for (int i = 0; i < n; ++i) {
      auto added = replayer_->Add(ReplayItem{Rec(i), ""});
      if (!added.ok()) return added.status();
    }
    DLQ_RETURN_IF_ERROR(replayer_->Finish());
    return guard_->Finish(*replayer_);
  }

  void Observe(const RedriveStatus& s) {
    std::string name = fmt::format("{}/{}", RedrivePhaseName(s.phase), s.step);
    if (changes_.empty() || changes_.back().name != name) changes_.push_back({name, s.sent, clock_.SteadyNow()});
    peak_depth_ = std::max(peak_depth_, sqs_.Depth(dest_));
    if (stop_when_ && stop_when_(s)) stop_ = true;
  }

  std::vector<std::string> Names() const {
    std::vector<std::string> out;
    for (const PhaseChange& c : changes_) out.push_back(c.name);
    return out;
  }
  const PhaseChange& Change(const std::string& name) const {
    auto it = std::find_if(changes_.begin(), changes_.end(), [&](const PhaseChange& c) { return c.name == name; });
    EXPECT_NE(it, changes_.end()) << name;
    return *it;
  }
  Duration Between(const std::string& a, const std::string& b) const { return Change(b).at - Change(a).at; }

  // Original ids of the messages in the destination (each copy once).
  std::multiset<int> Delivered() const {
    std::multiset<int> out;
    for (const Message& m : sqs_.Messages(dest_)) out.insert(std::stoi(m.body.substr(5)));
    return out;
  }

  // The backlog probe runs a consumer of the destination that takes
  // `per_second` messages a second (of the fake clock), then samples the depth.
  void ConsumeAt(int per_second) {
    backlog_.fn = [this, per_second, last = clock_.SteadyNow()]() mutable -> Result<BacklogSample> {
      const auto due =
          static_cast<int>(std::chrono::duration_cast<seconds>(clock_.SteadyNow() - last).count() * per_second);
      if (due > 0) {
        last = clock_.SteadyNow();
        ReceiveOptions ro;
        ro.wait_time_seconds = 0;
        for (int taken = 0; taken < due;) {
          ro.max_messages = std::min(10, due - taken);
          auto got = sqs_.ReceiveMessages(dest_, ro);
          if (!got.ok() || got->empty()) break;
          std::vector<DeleteEntry> del;
          for (const Message& m : *got) del.push_back({fmt::format("d{}", del.size()), m.receipt_handle});
          EXPECT_TRUE(sqs_.DeleteMessageBatch(dest_, del).ok());
          taken += static_cast<int>(got->size());
        }
      }
      return BacklogSample{static_cast<int64_t>(sqs_.Depth(dest_)), std::nullopt};
    };
  }

  std::string TempPath(const std::string& name) { return FreshTempPath("redrive_guard_test", name); }

  FakeClock clock_;
  FakeQueueClient sqs_;
  std::string dest_;
  ReplayOptions replay_;
  RedriveOptions guard_options_;
  FakeBacklog backlog_;
  FakeRefailures refailures_;
  std::atomic<bool> stop_{false};
  std::function<bool(const RedriveStatus&)> stop_when_;
  std::unique_ptr<TargetResolver> targets_;
  std::unique_ptr<RedriveGuard> guard_;
  std::unique_ptr<Replayer> replayer_;
  std::vector<PhaseChange> changes_;
  size_t peak_depth_ = 0;
  SteadyTime started_;
};

TEST(RedriveWindowTest, ProcessingWindowIsReceivesTimesVisibilityPlusDelayAndMargin) {
  // 5 x 30 s = 150 s, margin 15 s (10%).
  EXPECT_EQ(ProcessingWindow(5, seconds(30), seconds(0)), seconds(165));
  // 3 x 10 s + 5 s = 35 s, margin at least 10 s.
  EXPECT_EQ(ProcessingWindow(3, seconds(10), seconds(5)), seconds(45));
  // The wait after a ramp step is the whole window: a step's re-failures are
  // back before the next step is sent.
  EXPECT_EQ(DefaultCheck(seconds(165)), seconds(165));
  EXPECT_EQ(DefaultCheck(seconds(16)), seconds(16));
  EXPECT_EQ(DefaultCanary(500), 10u);
  EXPECT_EQ(DefaultCanary(1001), 11u);
  EXPECT_EQ(DefaultCanary(5000), 50u);
  EXPECT_EQ(DefaultMaxBacklog(30), 100);
  EXPECT_EQ(DefaultMaxBacklog(80), 160);
}

TEST(RedriveProgressTest, LineShowsPhaseStepCountsBacklogAndReason) {
  RedriveStatus s;
  s.phase = RedrivePhase::kRamp;
  s.step = 2;
  s.steps = 3;
  s.total = 1000;
  s.sent = 120;
  s.backlog = 37;
  EXPECT_EQ(RedriveProgressLine(s), "phase=ramp step=2/3 sent=120/1000 refailed=0 backlog=37");
  s.phase = RedrivePhase::kPaused;
  s.backlog = -1;
  s.backlog_age = seconds(130);
  s.paused_for = milliseconds(4500);
  s.reason = "destination backlog over its bound";
  EXPECT_EQ(RedriveProgressLine(s),
            "phase=paused step=2/3 sent=120/1000 refailed=0 backlog=? age=130s paused=5s: destination backlog over "
            "its bound");
}

TEST(RedriveWindowTest, OptionsRejectBadRampsAndMissingWindow) {
  RedriveOptions o;
  o.canary = 10;
  o.window = seconds(10);
  o.check = seconds(2);
  EXPECT_TRUE(o.Validate().ok());
  o.ramp = {0.5, 0.25, 1.0};
  EXPECT_FALSE(o.Validate().ok());
  o.ramp = {0.05, 0.5};
  EXPECT_FALSE(o.Validate().ok());
  o.ramp = {1.0};
  o.window = seconds(0);
  EXPECT_FALSE(o.Validate().ok());
  o.window = seconds(10);
  o.canary = 0;
  EXPECT_FALSE(o.Validate().ok());
}

TEST_F(RedriveGuardTest, CleanCanaryThenRampCompletesWithAWindowAfterCanaryAndLastStep) {
  Status st = Run(1000);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(Names(), (std::vector<std::string>{"canary/0", "waiting/0", "ramp/1", "waiting/1", "ramp/2", "waiting/2",
                                               "ramp/3", "final-check/3", "done/3"}));
  // Each step is confirmed sent before its wait: 10, 5%, 25%.
  EXPECT_EQ(Change("waiting/0").sent, 10u);
  EXPECT_EQ(Change("waiting/1").sent, 50u);
  EXPECT_EQ(Change("waiting/2").sent, 250u);
  EXPECT_EQ(Change("done/3").sent, 1000u);
  // A window after the canary and the last step, a check after the others.
  EXPECT_EQ(Between("waiting/0", "ramp/1"), seconds(100));
  EXPECT_EQ(Between("waiting/1", "ramp/2"), seconds(20));
  EXPECT_EQ(Between("waiting/2", "ramp/3"), seconds(20));
  EXPECT_EQ(Between("final-check/3", "done/3"), seconds(100));
  EXPECT_EQ(clock_.SteadyNow() - started_, seconds(240));
  std::multiset<int> delivered = Delivered();
  EXPECT_EQ(delivered.size(), 1000u);
  EXPECT_EQ(std::set<int>(delivered.begin(), delivered.end()).size(), 1000u);
  EXPECT_GT(refailures_.calls, 4);  // asked during and at the end of each wait
  EXPECT_EQ(guard_->status().phase, RedrivePhase::kDone);
  EXPECT_EQ(guard_->status().refailed, 0u);
}

TEST_F(RedriveGuardTest, StepsTheCanaryCoveredAreSkipped) {
  guard_options_.canary = 60;  // over 5% of 1000
  ASSERT_TRUE(Run(1000).ok());
  EXPECT_EQ(Names(), (std::vector<std::string>{"canary/0", "waiting/0", "ramp/1", "waiting/1", "ramp/2",
                                               "final-check/2", "done/2"}));
  EXPECT_EQ(Change("waiting/1").sent, 250u);
  EXPECT_EQ(guard_->status().steps, 2);
}

TEST_F(RedriveGuardTest, CanaryBreachStopsBeforeTheWindowEndsWithOnlyTheCanaryExposed) {
  refailures_.fails = [](const ReplayedMessage&) { return true; };
  refailures_.delay = seconds(20);
  Status st = Run(1000);
  ASSERT_EQ(st.code(), ErrorCode::kAborted) << st.ToString();
  EXPECT_NE(st.message().find("10 of 10 messages sent failed again in the canary (bound 0)"), std::string::npos)
      << st.message();
  EXPECT_EQ(Delivered().size(), 10u);
  EXPECT_EQ(guard_->status().phase, RedrivePhase::kStopped);
  EXPECT_EQ(guard_->status().refailures.size(), 10u);
  // Found by a poll during the window, not at its end.
  EXPECT_LT(clock_.SteadyNow() - started_, seconds(100));
  EXPECT_EQ(Names().back(), "stopped/0");
}

TEST_F(RedriveGuardTest, CanaryWithinItsBoundGoesOn) {
  guard_options_.canary_max_refailures = 1;
  refailures_.fails = [](const ReplayedMessage& m) { return m.message_id == "id-3"; };
  guard_options_.max_refailures = 1;
  ASSERT_TRUE(Run(200).ok());
  EXPECT_EQ(Delivered().size(), 200u);
  EXPECT_EQ(guard_->status().refailed, 1u);
}

TEST_F(RedriveGuardTest, BreachAtARampStepStopsThereAndReportsExactlyThoseMessages) {
  // Fixed for type a only: every tenth message from 30 on is type b.
  auto type_b = [](const std::string& id) { return IndexOf(id) >= 30 && IndexOf(id) % 10 == 0; };
  refailures_.fails = [&](const ReplayedMessage& m) { return type_b(m.message_id); };
  guard_options_.max_refailures_fraction = 0.05;  // step 1: 2 of 50 <= 2; step 2: 22 of 250 > 12
  Status st = Run(1000);
  ASSERT_EQ(st.code(), ErrorCode::kAborted) << st.ToString();
  EXPECT_NE(st.message().find("22 of 250 messages sent failed again in ramp step 2 of 3 (bound 12)"), std::string::npos)
      << st.message();
  EXPECT_EQ(Delivered().size(), 250u);  // nothing after step 2 was sent
  std::set<std::string> found, want;
  for (const RefailedMessage& r : guard_->status().refailures) found.insert(r.message_id);
  for (int i = 30; i < 250; i += 10) want.insert(fmt::format("id-{}", i));
  EXPECT_EQ(found, want);
  EXPECT_EQ(Names().back(), "stopped/2");
}

TEST_F(RedriveGuardTest, AfterABreachItSendsNothingAndLooksOnSoTheReportListsEveryReFailure) {
  // Ids 20..29 fail again one after another, 5 s apart, from when the probe
  // first sees them: the first look over the bound finds only the first.
  std::map<std::string, SteadyTime> first_seen;
  refailures_.fails = [&](const ReplayedMessage& m) {
    const int i = IndexOf(m.message_id);
    if (i < 20 || i >= 30) return false;
    const SteadyTime first = first_seen.try_emplace(m.message_id, clock_.SteadyNow()).first->second;
    return clock_.SteadyNow() - first >= seconds(5 * (i - 19));
  };
  guard_options_.ramp = {1.0};
  std::vector<std::string> looking;
  stop_when_ = [&](const RedriveStatus& s) {
    if (s.phase == RedrivePhase::kStopped && s.reason.find("looking for the rest") != std::string::npos) {
      looking.push_back(s.reason);
    }
    return false;
  };
  Status st = Run(40);
  ASSERT_EQ(st.code(), ErrorCode::kAborted) << st.ToString();
  EXPECT_NE(st.message().find("10 of 40 messages sent failed again"), std::string::npos) << st.message();
  std::set<std::string> found, want;
  for (const RefailedMessage& r : guard_->status().refailures) found.insert(r.message_id);
  for (int i = 20; i < 30; ++i) want.insert(fmt::format("id-{}", i));
  EXPECT_EQ(found, want);
  EXPECT_EQ(Delivered().size(), 40u);
  ASSERT_FALSE(looking.empty());
  EXPECT_NE(looking.front().find("sending nothing more"), std::string::npos) << looking.front();
  EXPECT_EQ(Names().back(), "stopped/1");
}

// Issue 37: with VisibilityTimeout 3 s and maxReceiveCount 2 a failing
// message needs over 6 s to come back; the window is 16 s. Ramp step 1's
// re-failures (3 of 4 over a bound of 2) must stop the run in step 1's
// check, before step 2 is sent, and the report must name step 1.
TEST_F(RedriveGuardTest, AStepIsJudgedBeforeTheNextIsSentWithTheDefaultCheck) {
  guard_options_.canary = 4;
  guard_options_.window = ProcessingWindow(2, seconds(3), seconds(0));
  guard_options_.check = DefaultCheck(guard_options_.window);
  guard_options_.ramp = {0.25, 0.5, 1.0};
  guard_options_.canary_max_refailures = 2;
  guard_options_.max_refailures = 2;
  // Ids 5, 6 and 7 (sent in ramp step 1: messages 4..9 of 40 go out there) fail, 7 s after they are seen.
  refailures_.fails = [](const ReplayedMessage& m) { return IndexOf(m.message_id) >= 5 && IndexOf(m.message_id) <= 7; };
  refailures_.delay = seconds(7);
  Status st = Run(40);
  ASSERT_EQ(st.code(), ErrorCode::kAborted) << st.ToString();
  EXPECT_NE(st.message().find("3 of 10 messages sent failed again in ramp step 1 of 3 (bound 2)"), std::string::npos)
      << st.message();
  EXPECT_EQ(st.message().find("of them sent in"), std::string::npos) << st.message();
  EXPECT_EQ(Delivered().size(), 10u);  // the canary (4) and step 1 (6): nothing of step 2
  EXPECT_EQ(guard_->status().sent_per_step, (std::vector<uint64_t>{4, 6, 0, 0}));
  EXPECT_EQ(Names().back(), "stopped/1");
}

// The control: a --check shorter than the time a failure takes lets step 1's
// re-failures arrive after step 2 was sent (the defect the issue reported);
// the report still says which step sent them.
TEST_F(RedriveGuardTest, AShortCheckLetsTheNextStepGoAndTheReportNamesTheStepThatSentTheFailures) {
  guard_options_.canary = 4;
  guard_options_.window = ProcessingWindow(2, seconds(3), seconds(0));
  guard_options_.check = seconds(4);
  guard_options_.ramp = {0.25, 0.5, 1.0};
  guard_options_.canary_max_refailures = 2;
  guard_options_.max_refailures = 2;
  refailures_.fails = [](const ReplayedMessage& m) { return IndexOf(m.message_id) >= 5 && IndexOf(m.message_id) <= 7; };
  refailures_.delay = seconds(7);
  Status st = Run(40);
  ASSERT_EQ(st.code(), ErrorCode::kAborted) << st.ToString();
  EXPECT_NE(st.message().find("in ramp step 2 of 3 (bound 2); 3 of them sent in ramp step 1 of 3"), std::string::npos)
      << st.message();
  EXPECT_EQ(Delivered().size(), 20u);  // step 2 went out before step 1 was judged
}

TEST_F(RedriveGuardTest, WithoutACanaryABacklogBoundStillHoldsAndNothingWaits) {
  guard_options_ = RedriveOptions{};
  guard_options_.canary = 0;
  guard_options_.max_backlog = 20;
  guard_options_.poll = seconds(1);
  guard_options_.stop = &stop_;
  ASSERT_TRUE(guard_options_.BackpressureOnly());
  ConsumeAt(10);  // a consumer that takes 10 messages a second
  ASSERT_TRUE(Run(100).ok());
  EXPECT_LE(peak_depth_, 20u);
  EXPECT_GT(guard_->status().paused_for, milliseconds(0));
  EXPECT_EQ(Delivered().size() + static_cast<size_t>(sqs_.deleted_count()), 100u);
  std::vector<std::string> names = Names();
  EXPECT_EQ(names.front(), "sending/0");
  EXPECT_EQ(names.back(), "done/0");
  EXPECT_EQ(std::count(names.begin(), names.end(), "waiting/0"), 0);
  EXPECT_EQ(refailures_.calls, 0);  // no canary: nobody looks in a DLQ
}

TEST_F(RedriveGuardTest, AfterABreachWhereEverythingSentFailedAgainItStopsAtOnce) {
  refailures_.fails = [](const ReplayedMessage&) { return true; };
  refailures_.delay = seconds(3);
  Status st = Run(1000);
  ASSERT_EQ(st.code(), ErrorCode::kAborted) << st.ToString();
  EXPECT_EQ(guard_->status().refailures.size(), 10u);
  // Nothing is left to look for: it ends where it stopped, not a window later.
  EXPECT_EQ(clock_.SteadyNow() - Change("stopped/0").at, Duration::zero());
}

TEST_F(RedriveGuardTest, BacklogOverTheBoundPausesUntilHalfAndRampResumes) {
  guard_options_.max_backlog = 40;
  guard_options_.window = seconds(10);
  guard_options_.check = seconds(5);
  guard_options_.ramp = {0.25, 1.0};
  ConsumeAt(5);  // a consumer that takes 5 messages a second
  std::vector<std::string> reasons;
  stop_when_ = [&](const RedriveStatus& s) {
    if (s.phase == RedrivePhase::kPaused) reasons.push_back(s.reason);
    return false;
  };
  Status st = Run(400);
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::vector<std::string> names = Names();
  auto paused = std::find(names.begin(), names.end(), "paused/1");
  ASSERT_NE(paused, names.end());
  ASSERT_NE(paused + 1, names.end());
  EXPECT_EQ(*(paused + 1), "ramp/1");  // resumed where it was
  EXPECT_EQ(names.back(), "done/2");
  // The count is projected between samples: our sends never pass the bound.
  EXPECT_LE(peak_depth_, 40u);
  EXPECT_GT(guard_->status().paused_for, milliseconds(0));
  ASSERT_FALSE(reasons.empty());
  EXPECT_NE(reasons.front().find("paused: destination backlog "), std::string::npos) << reasons.front();
  EXPECT_NE(reasons.front().find(" over the bound 40; resumes at 20"), std::string::npos) << reasons.front();
  EXPECT_EQ(Delivered().size() + static_cast<size_t>(sqs_.deleted_count()), 400u);
}

TEST_F(RedriveGuardTest, BacklogAgeWithoutAProbeAgeIsEstimatedFromOurSendTimes) {
  guard_options_.max_backlog_age = seconds(30);
  guard_options_.window = seconds(40);
  guard_options_.ramp = {1.0};
  // Nothing is consumed for 100 s; then everything at once.
  SteadyTime start = clock_.SteadyNow();
  backlog_.fn = [&]() -> Result<BacklogSample> {
    if (clock_.SteadyNow() - start >= seconds(100)) return BacklogSample{0, std::nullopt};
    return BacklogSample{static_cast<int64_t>(sqs_.Depth(dest_)), std::nullopt};
  };
  std::optional<seconds> age_when_paused;
  stop_when_ = [&](const RedriveStatus& s) {
    if (s.phase == RedrivePhase::kPaused && !age_when_paused) age_when_paused = s.backlog_age;
    return false;
  };
  ASSERT_TRUE(Run(30).ok());
  // The canary (10) went at 0 s; after its 40 s window all 10 wait, so the
  // oldest is the first canary message: 40 s > 30 s.
  ASSERT_TRUE(age_when_paused.has_value());
  EXPECT_EQ(*age_when_paused, seconds(40));
  EXPECT_EQ(Change("ramp/1").sent, 10u);
  EXPECT_GE(Between("ramp/1", "final-check/1"), seconds(60));  // paused until the backlog cleared at 100 s
}

TEST_F(RedriveGuardTest, StopFlagEndsAWaitAsCancelledNotAsABreach) {
  stop_when_ = [&](const RedriveStatus&) { return clock_.SteadyNow() - started_ >= seconds(30); };
  Status st = Run(1000);
  EXPECT_EQ(st.code(), ErrorCode::kCancelled) << st.ToString();
  EXPECT_EQ(guard_->status().phase, RedrivePhase::kWaiting);
  EXPECT_EQ(Delivered().size(), 10u);
  EXPECT_LE(clock_.SteadyNow() - started_, seconds(31));
}

TEST_F(RedriveGuardTest, WaitingReasonCountsDownTheWindow) {
  std::vector<std::string> reasons;
  stop_when_ = [&](const RedriveStatus& s) {
    if (s.phase == RedrivePhase::kWaiting) reasons.push_back(s.reason);
    return false;
  };
  ASSERT_TRUE(Run(20).ok());
  EXPECT_NE(std::find(reasons.begin(), reasons.end(), "canary window 100 s left"), reasons.end());
  EXPECT_NE(std::find(reasons.begin(), reasons.end(), "canary window 1 s left"), reasons.end());
}

// ---- journal

TEST(RedriveJournalTest, RoundTripsAndIgnoresATornLastLine) {
  RedriveJournal j;
  j.sent.push_back({{"m-1", "n-1", "https://q/orders"}, FromUnixMillis(1700000000123)});
  j.phases.push_back({RedrivePhase::kWaiting, 2, FromUnixMillis(1700000001000)});
  j.refailed.push_back({"m-1", "n-1", "https://q/orders", "https://q/orders-dlq", FromUnixMillis(1700000002000)});
  std::string text = SerializeRedriveJournal(j);
  auto back = ParseRedriveJournal(text + "sent 17000");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->valid_bytes, text.size());
  ASSERT_EQ(back->sent.size(), 1u);
  EXPECT_EQ(back->sent[0].message.new_message_id, "n-1");
  EXPECT_EQ(back->sent[0].at, FromUnixMillis(1700000000123));
  ASSERT_EQ(back->phases.size(), 1u);
  EXPECT_EQ(back->phases[0].phase, RedrivePhase::kWaiting);
  EXPECT_EQ(back->phases[0].step, 2);
  ASSERT_EQ(back->refailed.size(), 1u);
  EXPECT_EQ(back->refailed[0].dlq, "https://q/orders-dlq");
  EXPECT_EQ(SerializeRedriveJournal(*back), text);
}

TEST(RedriveJournalTest, MalformedLinesAreRefusedByNumber) {
  const std::string header = JournalHeaderLine();
  for (const std::string& bad :
       {std::string("sent 1 a b\n"), std::string("phase 1 sideways 0\n"), std::string("phase x waiting 0\n"),
        std::string("sent 1 a  b c\n"), std::string("teleport 1\n"), std::string("\n")}) {
    auto r = ParseRedriveJournal(header + bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("line 2"), std::string::npos) << r.status().message();
  }
  EXPECT_FALSE(ParseRedriveJournal("dlq-redrive-journal 9\n").ok());
  EXPECT_TRUE(ParseRedriveJournal("").ok());
}

TEST_F(RedriveGuardTest, JournalRecordsEverySendAndPhase) {
  const std::string path = TempPath("all.guard");
  ASSERT_TRUE(Run(100, path).ok());
  auto j = LoadRedriveJournal(path);
  ASSERT_TRUE(j.ok() && j->has_value());
  EXPECT_EQ((*j)->sent.size(), 100u);
  std::vector<std::string> phases;
  for (const JournalPhase& p : (*j)->phases) phases.push_back(fmt::format("{}/{}", RedrivePhaseName(p.phase), p.step));
  EXPECT_EQ(phases, Names());
}

// ---- resume: a run stopped in each phase, then run again on the same
// checkpoint and journal, sends everything exactly once and keeps its checks.

class RedriveResumeTest : public RedriveGuardTest {
 protected:
  RedriveResumeTest() {
    journal_ = TempPath("run.guard");
    replay_.checkpoint_path = TempPath("run.checkpoint");
  }
  // The first run, stopped (kCancelled) when `when` holds.
  void FirstRunStopsWhen(std::function<bool(const RedriveStatus&)> when) {
    stop_when_ = std::move(when);
    Status st = Run(1000, journal_);
    ASSERT_EQ(st.code(), ErrorCode::kCancelled) << st.ToString();
    stop_when_ = nullptr;
    stop_ = false;
  }
  void ExpectEverythingSentOnce() {
    std::multiset<int> delivered = Delivered();
    EXPECT_EQ(delivered.size(), 1000u);
    EXPECT_EQ(std::set<int>(delivered.begin(), delivered.end()).size(), 1000u);
  }
  std::string journal_;
};

TEST_F(RedriveResumeTest, InTheCanaryItFinishesTheCanaryThenWaitsItsWindow) {
  guard_options_.canary = 25;
  FirstRunStopsWhen([](const RedriveStatus& s) { return s.phase == RedrivePhase::kCanary && s.sent >= 10; });
  EXPECT_EQ(Delivered().size(), 10u);
  ASSERT_TRUE(Run(1000, journal_).ok());
  EXPECT_EQ(changes_.front().name, "canary/0");
  EXPECT_EQ(changes_.front().sent, 10u);
  EXPECT_EQ(Change("waiting/0").sent, 25u);
  EXPECT_EQ(Between("waiting/0", "ramp/1"), seconds(100));
  ExpectEverythingSentOnce();
}

TEST_F(RedriveResumeTest, InTheCanaryWindowTheWindowContinuesFromItsRecordedStart) {
  SteadyTime window_start{};
  FirstRunStopsWhen([&](const RedriveStatus& s) {
    if (s.phase != RedrivePhase::kWaiting) return false;
    if (window_start == SteadyTime{}) window_start = clock_.SteadyNow();
    return clock_.SteadyNow() - window_start >= seconds(60);
  });
  clock_.Advance(seconds(5));  // the restart took 5 s
  ASSERT_TRUE(Run(1000, journal_).ok());
  EXPECT_EQ(changes_.front().name, "waiting/0");
  EXPECT_EQ(Change("ramp/1").at, window_start + seconds(100));  // not 100 s from the restart
  EXPECT_EQ(Change("waiting/1").sent, 50u);
  ExpectEverythingSentOnce();
}

TEST_F(RedriveResumeTest, InARampStepItGoesOnWithThatStep) {
  FirstRunStopsWhen(
      [](const RedriveStatus& s) { return s.phase == RedrivePhase::kRamp && s.step == 2 && s.sent >= 100; });
  ASSERT_TRUE(Run(1000, journal_).ok());
  EXPECT_EQ(changes_.front().name, "ramp/2");
  EXPECT_EQ(Change("waiting/2").sent, 250u);
  std::vector<std::string> names = Names();
  EXPECT_EQ(std::count(names.begin(), names.end(), "canary/0"), 0);
  ExpectEverythingSentOnce();
}

TEST_F(RedriveResumeTest, WhilePausedItSamplesAgainAndStaysPausedUntilTheBacklogClears) {
  guard_options_.max_backlog = 100;
  SteadyTime clear_at = clock_.SteadyNow() + seconds(300);
  backlog_.fn = [&]() -> Result<BacklogSample> {
    // Over the bound once the ramp starts, until clear_at.
    const bool over = clock_.SteadyNow() < clear_at && guard_ != nullptr && guard_->status().step >= 1;
    return BacklogSample{over ? 500 : 0, std::nullopt};
  };
  FirstRunStopsWhen(
      [&](const RedriveStatus& s) { return s.phase == RedrivePhase::kPaused && s.paused_for >= seconds(3); });
  const uint64_t sent_before = Delivered().size();
  ASSERT_TRUE(Run(1000, journal_).ok());
  std::vector<std::string> names = Names();
  ASSERT_GE(names.size(), 2u);
  EXPECT_EQ(names[0], "ramp/1");
  EXPECT_EQ(names[1], "paused/1");  // paused again before sending anything
  EXPECT_EQ(Change("paused/1").sent, sent_before);
  EXPECT_GE(clock_.SteadyNow(), clear_at);
  ExpectEverythingSentOnce();
}

TEST_F(RedriveResumeTest, InTheFinalCheckTheFinalWindowContinues) {
  SteadyTime final_start{};
  FirstRunStopsWhen([&](const RedriveStatus& s) {
    if (s.phase != RedrivePhase::kFinalCheck) return false;
    if (final_start == SteadyTime{}) final_start = clock_.SteadyNow();
    return clock_.SteadyNow() - final_start >= seconds(50);
  });
  ASSERT_TRUE(Run(1000, journal_).ok());
  EXPECT_EQ(Names(), (std::vector<std::string>{"final-check/3", "done/3"}));
  EXPECT_EQ(Change("done/3").at, final_start + seconds(100));
  ExpectEverythingSentOnce();
}

TEST_F(RedriveResumeTest, AfterAStopOnABreachItRefusesUntilTheJournalIsRemoved) {
  refailures_.fails = [](const ReplayedMessage&) { return true; };
  ASSERT_EQ(Run(1000, journal_).code(), ErrorCode::kAborted);
  Status again = Run(1000, journal_);
  EXPECT_EQ(again.code(), ErrorCode::kAborted);
  EXPECT_NE(again.message().find("an earlier run stopped"), std::string::npos) << again.message();
  EXPECT_EQ(Delivered().size(), 10u);
}

TEST_F(RedriveResumeTest, ReFailuresFoundBeforeTheCrashStillCount) {
  refailures_.fails = [](const ReplayedMessage& m) { return IndexOf(m.message_id) == 3; };
  guard_options_.canary_max_refailures = 1;
  guard_options_.max_refailures = 1;
  FirstRunStopsWhen([](const RedriveStatus& s) { return s.phase == RedrivePhase::kRamp; });
  refailures_.fails = nullptr;  // the probe would not find it twice: the journal remembers
  ASSERT_TRUE(Run(1000, journal_).ok());
  EXPECT_EQ(guard_->status().refailed, 1u);
  EXPECT_EQ(guard_->status().refailures[0].message_id, "id-3");
}

// ---- live form

class LiveGuardTest : public RedriveGuardTest {
 protected:
  LiveGuardTest() {
    dlq_url_ = *sqs_.CreateQueue("orders-dlq", {});
    auto arn = sqs_.GetQueueAttributes(dlq_url_, {"QueueArn"});
    EXPECT_TRUE(sqs_.SetQueueAttributes(
                        dest_, {{"RedrivePolicy", fmt::format(R"({{"deadLetterTargetArn":"{}","maxReceiveCount":1}})",
                                                              arn->at("QueueArn"))}})
                    .ok());
    dlq_.name = "orders-dlq";
    dlq_.url = dlq_url_;
    dlq_.region = "us-east-1";
    live_.wait_time_seconds = 0;
    for (int i = 0; i < 30; ++i) {
      SendEntry e;
      e.body = fmt::format("body {}", i);
      original_ids_.insert(sqs_.SendMessage(dlq_url_, e)->message_id);
    }
  }
  // A guard over the 30 messages of orders-dlq (not started yet).
  void MakeGuard() {
    targets_ = TargetResolver::Fixed(sqs_, "orders", "us-east-1");
    guard_ = std::make_unique<RedriveGuard>(guard_options_, 30, clock_, backlog_, nullptr);
  }
  // Starts the guard (on `journal` when given) and a Replayer gated by it,
  // and runs the live pass over orders-dlq with both.
  Result<LiveReplayStats> StartAndPass(const std::string& journal = "") {
    DLQ_RETURN_IF_ERROR(guard_->Start(journal));
    ReplayOptions ro = replay_;
    ro.gate = guard_.get();
    replayer_ = std::make_unique<Replayer>(sqs_, *targets_, clock_, ro, nullptr);
    DLQ_RETURN_IF_ERROR(replayer_->Start());
    live_.guard = guard_.get();
    return ReplayFromQueue(
        sqs_, dlq_, *replayer_, [](const ArchiveRecord&) { return true; }, clock_, live_);
  }

  std::string dlq_url_;
  QueueInfo dlq_;
  LiveReplayOptions live_;
  std::set<std::string> original_ids_;
};

TEST_F(LiveGuardTest, MessageBackInTheDlqIsAReFailureReleasedAndNeverSentAgain) {
  // A consumer that fails everything: each message is received and left,
  // so its next receive moves it to the DLQ (maxReceiveCount 1), same id.
  backlog_.fn = [&]() -> Result<BacklogSample> {
    ReceiveOptions ro;
    ro.wait_time_seconds = 0;
    ro.max_messages = 10;
    ro.visibility_timeout = 0;
    EXPECT_TRUE(sqs_.ReceiveMessages(dest_, ro).ok());
    return BacklogSample{static_cast<int64_t>(sqs_.Depth(dest_)), std::nullopt};
  };
  started_ = clock_.SteadyNow();
  MakeGuard();
  // Visible in the DLQ when the guard hears of them: released at once, not
  // held to the end of the pass.
  std::optional<std::string> visible_when_found;
  guard_->OnStatus([&](const RedriveStatus& s) {
    if (s.refailed > 0 && !visible_when_found) {
      visible_when_found =
          sqs_.GetQueueAttributes(dlq_url_, {"ApproximateNumberOfMessages"})->at("ApproximateNumberOfMessages");
    }
  });
  auto r = StartAndPass();
  ASSERT_EQ(r.status().code(), ErrorCode::kAborted) << r.status().ToString();
  EXPECT_EQ(visible_when_found, "10");
  EXPECT_LT(clock_.SteadyNow() - started_, seconds(100));  // found during the canary window
  // Exactly the canary was sent, once each; what came back is in the DLQ.
  EXPECT_EQ(replayer_->stats().sent, 10u);
  const RedriveStatus& s = guard_->status();
  ASSERT_EQ(s.refailures.size(), 10u);
  std::set<std::string> sent_new_ids;
  for (const ReplayedMessage& m : replayer_->sent()) sent_new_ids.insert(m.new_message_id);
  for (const RefailedMessage& f : s.refailures) {
    EXPECT_TRUE(original_ids_.contains(f.message_id)) << f.message_id;
    EXPECT_TRUE(sent_new_ids.contains(f.new_message_id)) << f.new_message_id;
    EXPECT_EQ(f.dlq, dlq_url_);
  }
  // Everything is visible in the DLQ again: 20 never sent, 10 back (released).
  ReceiveOptions ro2;
  ro2.wait_time_seconds = 0;
  ro2.max_messages = 10;
  std::set<std::string> visible;
  for (int i = 0; i < 5; ++i) {
    auto got = sqs_.ReceiveMessages(dlq_url_, ro2);
    ASSERT_TRUE(got.ok());
    for (const Message& m : *got) visible.insert(m.message_id);
  }
  EXPECT_EQ(visible.size(), 30u);
  EXPECT_EQ(sqs_.Depth(dest_), 0u);
}

TEST_F(LiveGuardTest, WithAFixedConsumerTheLivePassMovesEverythingThroughTheRamp) {
  backlog_.fn = [&]() -> Result<BacklogSample> {
    ReceiveOptions ro;
    ro.wait_time_seconds = 0;
    ro.max_messages = 10;
    auto got = sqs_.ReceiveMessages(dest_, ro);
    EXPECT_TRUE(got.ok());
    std::vector<DeleteEntry> del;
    for (const Message& m : *got) del.push_back({fmt::format("d{}", del.size()), m.receipt_handle});
    if (!del.empty()) {
      EXPECT_TRUE(sqs_.DeleteMessageBatch(dest_, del).ok());
    }
    return BacklogSample{static_cast<int64_t>(sqs_.Depth(dest_)), std::nullopt};
  };
  guard_options_.ramp = {0.5, 1.0};
  MakeGuard();
  guard_->OnStatus([this](const RedriveStatus& s) { Observe(s); });
  auto r = StartAndPass();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(replayer_->Finish().ok());
  ASSERT_TRUE(guard_->Finish(*replayer_).ok());
  EXPECT_EQ(r->deleted, 30u);
  EXPECT_EQ(r->refailed, 0u);
  EXPECT_TRUE(r->complete);
  EXPECT_EQ(replayer_->stats().sent, 30u);
  EXPECT_EQ(sqs_.Depth(dlq_url_), 0u);
  EXPECT_EQ(Names().back(), "done/2");
  EXPECT_EQ(Change("waiting/0").sent, 10u);
}

TEST_F(LiveGuardTest, ResumedRunRecognisesWhatTheEarlierRunSent) {
  // The earlier run sent "earlier-1" as the message now first in the DLQ
  // (SQS kept its id when it failed again), and was in ramp step 1.
  const std::string back_id = sqs_.Messages(dlq_url_).front().message_id;
  const std::string journal = TempPath("live.guard");
  {
    RedriveJournal j;
    j.sent.push_back({{"earlier-1", back_id, dest_}, clock_.Now()});
    j.phases.push_back({RedrivePhase::kCanary, 0, clock_.Now()});
    j.phases.push_back({RedrivePhase::kRamp, 1, clock_.Now()});
    auto w = RedriveJournalWriter::Open(journal, 0600, 0);
    ASSERT_TRUE(w.ok());
    std::string text = SerializeRedriveJournal(j);
    ASSERT_TRUE((*w)->Append(text.substr(JournalHeaderLine().size())).ok());
  }
  guard_options_.max_refailures = 5;
  guard_options_.ramp = {1.0};
  MakeGuard();
  auto r = StartAndPass(journal);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(replayer_->Finish().ok());
  ASSERT_TRUE(guard_->Finish(*replayer_).ok());
  EXPECT_EQ(r->refailed, 1u);
  EXPECT_EQ(replayer_->stats().sent, 29u);
  ASSERT_EQ(guard_->status().refailures.size(), 1u);
  EXPECT_EQ(guard_->status().refailures[0].message_id, "earlier-1");
  std::vector<Message> left = sqs_.Messages(dlq_url_);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].message_id, back_id);
}

}  // namespace
}  // namespace dlq
