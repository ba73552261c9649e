#include "common/clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "testing/fake_clock.h"

namespace dlq {
namespace {

using namespace std::chrono_literals;

// State shared by the threads of a test (the analysis checks members, not locals).
struct Shared {
  Mutex mu;
  CondVar cv;
  bool ready DLQ_GUARDED_BY(mu) = false;
};

TEST(RealClockTest, WaitUntilTimesOutAtTheDeadlineWithFalse) {
  RealClock clock;
  Shared s;
  MutexLock lock(s.mu);
  const SteadyTime deadline = clock.SteadyNow() + 20ms;
  EXPECT_FALSE(clock.WaitUntil(s.mu, s.cv, deadline, [&]() DLQ_REQUIRES(s.mu) { return s.ready; }));
  EXPECT_GE(clock.SteadyNow(), deadline);
}

TEST(RealClockTest, WaitForReturnsTrueOnceANotifiedPredicateHolds) {
  RealClock clock;
  Shared s;
  std::thread setter([&] {
    MutexLock lock(s.mu);
    s.ready = true;
    s.cv.NotifyAll();
  });
  MutexLock lock(s.mu);
  EXPECT_TRUE(clock.WaitFor(s.mu, s.cv, 10s, [&]() DLQ_REQUIRES(s.mu) { return s.ready; }));
  lock.Unlock();
  setter.join();
}

TEST(FakeClockTest, TimedWaitEndsOnlyWhenTheClockReachesItsDeadline) {
  FakeClock clock;
  Shared s;
  std::atomic<int> stage{0};  // 1: waiting, 2: returned
  bool result = true;
  std::thread waiter([&] {
    MutexLock lock(s.mu);
    stage = 1;
    result = clock.WaitFor(s.mu, s.cv, 10s, [&]() DLQ_REQUIRES(s.mu) { return s.ready; });
    stage = 2;
  });
  clock.WaitForWaiters(1);
  clock.Advance(9s);  // wakes it; 1 s of fake time is still left
  clock.WaitForWaiters(1);
  EXPECT_EQ(stage, 1);
  clock.Advance(1s);
  waiter.join();
  EXPECT_EQ(stage, 2);
  EXPECT_FALSE(result);
  EXPECT_EQ(clock.waiters(), 0);
}

TEST(FakeClockTest, TimedWaitReturnsTrueWhenNotifiedWithoutTimeMoving) {
  FakeClock clock;
  const SteadyTime start = clock.SteadyNow();
  Shared s;
  bool result = false;
  std::thread waiter([&] {
    MutexLock lock(s.mu);
    result = clock.WaitFor(s.mu, s.cv, 1h, [&]() DLQ_REQUIRES(s.mu) { return s.ready; });
  });
  clock.WaitForWaiters(1);
  {
    MutexLock lock(s.mu);
    s.ready = true;
  }
  s.cv.NotifyAll();
  waiter.join();
  EXPECT_TRUE(result);
  EXPECT_EQ(clock.SteadyNow(), start);
}

TEST(FakeClockTest, SleepForAdvancesTheClockAndWakesWaiters) {
  FakeClock clock;
  Shared s;
  bool result = true;
  std::thread waiter([&] {
    MutexLock lock(s.mu);
    result = clock.WaitFor(s.mu, s.cv, 5s, [&]() DLQ_REQUIRES(s.mu) { return s.ready; });
  });
  clock.WaitForWaiters(1);
  const SteadyTime before = clock.SteadyNow();
  clock.SleepFor(5s);
  EXPECT_EQ(clock.SteadyNow() - before, 5s);
  waiter.join();
  EXPECT_FALSE(result);
}

TEST(FakeClockTest, EachSteadyReadCanAdvanceTheClock) {
  FakeClock clock;
  const SteadyTime first = clock.SteadyNow();
  clock.AdvanceOnEachSteadyRead(1ms);
  EXPECT_EQ(clock.SteadyNow() - first, 1ms);
  EXPECT_EQ(clock.SteadyNow() - first, 2ms);
}

TEST(RunWatchedTest, TicksOncePerIntervalOfClockTimeUntilTheWorkReturns) {
  FakeClock clock;
  std::atomic<int> ticks{0};
  RunWatched(
      clock, 100ms,
      [&] {
        // Three intervals of fake time, each once the watcher waits for it.
        for (int i = 1; i <= 3; ++i) {
          clock.WaitForWaiters(1);
          clock.Advance(100ms);
          while (ticks < i) std::this_thread::yield();
        }
        clock.WaitForWaiters(1);
        clock.Advance(99ms);  // short of the next interval: no tick
      },
      [&] {
        ++ticks;
        return true;
      });
  EXPECT_EQ(ticks, 3);
  EXPECT_EQ(clock.waiters(), 0);
}

TEST(RunWatchedTest, StopsWatchingWhenTheTickSaysSo) {
  FakeClock clock;
  std::atomic<int> ticks{0};
  RunWatched(
      clock, 10ms,
      [&] {
        for (int i = 1; i <= 2; ++i) {
          clock.WaitForWaiters(1);
          clock.Advance(10ms);
          while (ticks < i) std::this_thread::yield();
        }
        clock.Advance(1s);  // the second tick said stop: nobody ticks any more
      },
      [&] { return ++ticks < 2; });
  EXPECT_EQ(ticks, 2);
}

TEST(RunWatchedTest, WorkThatReturnsAtOnceNeverTicks) {
  FakeClock clock;
  int ticks = 0;
  RunWatched(
      clock, 1ms, [] {}, [&] { return ++ticks > 0; });
  EXPECT_EQ(ticks, 0);
}

TEST(PollUntilTest, GivesUpAtTheDeadlineOfClockTime) {
  FakeClock clock;
  std::atomic<bool> flag{false};
  std::atomic<bool> result{true};
  std::thread poller([&] { result = PollUntil(clock, clock.SteadyNow() + 1s, 100ms, [&] { return flag.load(); }); });
  for (int i = 0; i < 10; ++i) {
    clock.WaitForWaiters(1);
    clock.Advance(100ms);
  }
  poller.join();
  EXPECT_FALSE(result);
}

TEST(PollUntilTest, SeesAFlagNobodyNotifiesAtTheNextPoll) {
  FakeClock clock;
  std::atomic<bool> flag{false};
  std::atomic<bool> result{false};
  std::thread poller([&] { result = PollUntil(clock, clock.SteadyNow() + 1h, 100ms, [&] { return flag.load(); }); });
  clock.WaitForWaiters(1);
  flag = true;
  clock.Advance(100ms);
  poller.join();
  EXPECT_TRUE(result);
}

}  // namespace
}  // namespace dlq
