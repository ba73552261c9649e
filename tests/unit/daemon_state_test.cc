// The daemon's state across restarts (monitor/state_store.h): a restarted
// daemon keeps its alarms' states (and notifies nothing that did not change),
// its charts and its run totals.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "monitor/daemon.h"
#include "monitor/state_store.h"
#include "testing/fake_notifier.h"
#include "testing/fake_state_store.h"
#include "testing/scoped_capturing_logger.h"
#include "unit/daemon_fixture.h"

namespace dlq {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

// orders-dlq fed by a 1-day source: the default depth alarm (notify) fires
// on 5 messages and the DLQ keeps them, so the alarm stays in ALARM.
class DaemonStateTest : public DaemonFixture {
 protected:
  DaemonStateTest() { FeedFromOneDaySource(); }

  std::unique_ptr<Daemon> Start(Notifier& notifier, StateStore* store) {
    DaemonOptions o;
    o.state_store = store;
    return NewDaemon(notifier, o);
  }

  // Runs the first daemon until the depth alarm is in ALARM.
  void RunUntilDepthAlarm(Daemon& d) {
    d.RunOnce();  // seen empty
    Inject(5, clock_.Now());
    for (int i = 0; i < 25; ++i) Cycle(d);
    ASSERT_EQ(DepthState(d), AlarmState::kAlarm);
  }

  static AlarmState DepthState(const Daemon& d) {
    const std::vector<QueueStatus> queues = d.views().Queues();
    for (const auto& [spec, state] : queues.at(0).alarms) {
      if (spec.name == "orders-dlq-depth") return state;
    }
    return AlarmState::kInsufficientData;
  }
};

TEST_F(DaemonStateTest, RestartKeepsAlarmStatesWithoutNotifyingAgainAndKeepsTheCharts) {
  FakeStateStore state;
  FakeNotifier before;
  auto first = Start(before, &state);
  RunUntilDepthAlarm(*first);
  const size_t samples = first->views().History("orders-dlq")->size();
  const std::string history = first->views().QueuesJson();
  first.reset();

  FakeNotifier after;
  auto second = Start(after, &state);
  for (int i = 0; i < 3; ++i) Cycle(*second);
  EXPECT_EQ(after.notifications().size(), 0u) << "an unchanged alarm was notified again after the restart";
  EXPECT_EQ(DepthState(*second), AlarmState::kAlarm);
  EXPECT_EQ(second->views().History("orders-dlq")->size(), samples + 3);
  const std::string json = second->views().QueuesJson();
  EXPECT_NE(json.find("\"to\":\"ALARM\""), std::string::npos) << json;
  EXPECT_NE(history.find("\"to\":\"ALARM\""), std::string::npos) << history;

  // The control: without the state, a restart notifies every alarm afresh.
  FakeNotifier forgetful;
  auto third = Start(forgetful, nullptr);
  Cycle(*third);
  EXPECT_GT(forgetful.notifications().size(), 0u);
}

TEST_F(DaemonStateTest, RunTotalsAndTheEmptyBoundSurviveARestart) {
  FakeStateStore state;
  FakeNotifier notifier;
  auto first = Start(notifier, &state);
  first->RunOnce();  // seen empty
  const auto last_empty = first->views().Queues().at(0).last_empty;
  ASSERT_TRUE(last_empty.has_value());
  Inject(4, clock_.Now());
  ASSERT_TRUE(first->ArchiveNow("orders-dlq", "test").ok());
  Cycle(*first);
  ASSERT_EQ(first->views().Queues().at(0).archived, 4u);
  Cycle(*first);  // saves what the run reported
  first.reset();

  auto second = Start(notifier, &state);
  Cycle(*second);
  const QueueStatus q = second->views().Queues().at(0);
  EXPECT_EQ(q.archived, 4u);
  EXPECT_EQ(q.runs, 1u);
  EXPECT_EQ(q.last_empty, clock_.Now());  // the queue is empty again
  const auto& kept = state.queues.begin()->second;
  EXPECT_FALSE(kept.nonempty_since.has_value());
}

TEST_F(DaemonStateTest, AFailingSaveLosesNothingOnceTheStoreRecovers) {
  FakeStateStore state;
  FakeNotifier notifier;
  auto d = Start(notifier, &state);
  state.fail_saves = true;
  for (int i = 0; i < 3; ++i) Cycle(*d);
  EXPECT_TRUE(state.queues.empty());
  state.fail_saves = false;
  Cycle(*d);
  ASSERT_EQ(state.queues.size(), 1u);
  EXPECT_EQ(state.queues.begin()->second.samples.size(), 4u);
}

class DaemonStateDirTest : public DaemonStateTest {
 protected:
  DaemonStateDirTest() {
    dir_ = fs::temp_directory_path() /
           ("daemon_state_dir_test_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    config_.state_dir = dir_.string();
  }
  ~DaemonStateDirTest() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(DaemonStateDirTest, StateDirHoldsTheShardsFileAndACorruptOneIsMovedAsideOnce) {
  FakeNotifier notifier;
  {
    auto d = Start(notifier, nullptr);
    RunUntilDepthAlarm(*d);
  }
  ASSERT_TRUE(fs::exists(dir_ / "state.sqlite"));
  {
    FakeNotifier after;
    auto d = Start(after, nullptr);
    Cycle(*d);
    EXPECT_EQ(after.notifications().size(), 0u);
    EXPECT_EQ(DepthState(*d), AlarmState::kAlarm);
  }
  // Damage the file: the next start moves it aside, says so once, starts fresh.
  fs::remove(dir_ / "state.sqlite-wal");
  {
    std::ofstream f(dir_ / "state.sqlite", std::ios::binary | std::ios::trunc);
    f << std::string(4096, '\x7f');
  }
  ScopedCapturingLogger log;
  FakeNotifier fresh;
  auto d = Start(fresh, nullptr);
  Cycle(*d);
  int moved = 0;
  for (const auto& e : log->entries()) moved += e.event == "state_file_corrupt" ? 1 : 0;
  EXPECT_EQ(moved, 1);
  size_t aside = 0;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    aside += entry.path().filename().string().starts_with("state.sqlite.corrupt-") ? 1 : 0;
  }
  EXPECT_EQ(aside, 1u);
  EXPECT_GT(fresh.notifications().size(), 0u);  // nothing was kept: alarms start afresh
}

TEST_F(DaemonStateDirTest, TheStateDirIsCreatedOwnerOnlyWhateverTheUmask) {
  struct Umask022 {
    mode_t old = ::umask(022);
    ~Umask022() { ::umask(old); }
  } umask022;
  config_.state_dir = (dir_ / "nested" / "state").string();
  ScopedCapturingLogger log;
  FakeNotifier notifier;
  auto d = Start(notifier, nullptr);
  Cycle(*d);
  EXPECT_EQ(fs::status(dir_ / "nested").permissions(), fs::perms::owner_all);
  EXPECT_EQ(fs::status(dir_ / "nested" / "state").permissions(), fs::perms::owner_all);
  EXPECT_EQ(fs::status(dir_ / "nested" / "state" / "state.sqlite").permissions(),
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_FALSE(log->Contains("state_dir_open_to_others"));
}

TEST_F(DaemonStateDirTest, AnExistingStateDirOthersCanReadIsWarnedAboutAndLeftAsItIs) {
  fs::create_directories(dir_);
  fs::permissions(dir_, fs::perms(0755));
  ScopedCapturingLogger log;
  FakeNotifier notifier;
  auto d = Start(notifier, nullptr);
  Cycle(*d);
  int warned = 0;
  for (const auto& e : log->entries()) {
    if (e.event != "state_dir_open_to_others") continue;
    ++warned;
    EXPECT_EQ(e.level, LogLevel::kWarn);
    EXPECT_NE(e.line.find("\"mode\":\"0755\""), std::string::npos) << e.line;
    EXPECT_NE(e.line.find("chmod 700"), std::string::npos) << e.line;
  }
  EXPECT_EQ(warned, 1);
  EXPECT_EQ(fs::status(dir_).permissions(), fs::perms(0755));
}

TEST_F(DaemonStateDirTest, WithoutStateDirTheDaemonSaysOnceThatStateIsInMemory) {
  config_.state_dir.clear();
  ScopedCapturingLogger log;
  FakeNotifier notifier;
  auto d = Start(notifier, nullptr);
  Cycle(*d);
  Cycle(*d);
  int said = 0;
  for (const auto& e : log->entries()) said += e.event == "state_in_memory" ? 1 : 0;
  EXPECT_EQ(said, 1);
  EXPECT_FALSE(fs::exists(dir_));
}

}  // namespace
}  // namespace dlq
