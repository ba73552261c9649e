#include "testing/virtual_clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "testing/quiescence.h"

namespace dlq {
namespace {

using namespace std::chrono_literals;

// State shared by the threads of a test (the analysis checks members, not locals).
struct Shared {
  Mutex mu;
  CondVar cv;
  bool ready DLQ_GUARDED_BY(mu) = false;
};

TEST(VirtualClockTest, SleepsTakeVirtualTimeNotRealTime) {
  VirtualClock clock;
  const auto real_start = std::chrono::steady_clock::now();
  std::thread a([&] { clock.SleepFor(3h); });
  std::thread b([&] { clock.SleepFor(5h); });
  a.join();
  b.join();
  EXPECT_EQ(clock.Elapsed(), 5h);
  EXPECT_EQ(clock.Now() - SystemTime(std::chrono::seconds(1700000000)), 5h);
  EXPECT_LT(std::chrono::steady_clock::now() - real_start, 10s);
}

TEST(VirtualClockTest, TimedWaitEndsAtItsDeadlineOrWhenNotified) {
  VirtualClock clock;
  Shared s;
  {
    MutexLock lock(s.mu);
    EXPECT_FALSE(clock.WaitFor(s.mu, s.cv, 10s, [&]() DLQ_REQUIRES(s.mu) { return s.ready; }));
  }
  EXPECT_EQ(clock.Elapsed(), 10s);
  std::thread notifier([&] {
    clock.SleepFor(2s);
    {
      MutexLock lock(s.mu);
      s.ready = true;
    }
    s.cv.NotifyAll();
  });
  {
    MutexLock lock(s.mu);
    EXPECT_TRUE(clock.WaitFor(s.mu, s.cv, 10s, [&]() DLQ_REQUIRES(s.mu) { return s.ready; }));
  }
  notifier.join();
  EXPECT_EQ(clock.Elapsed(), 12s);
}

// Work between waits takes no virtual time: a sleep ends only after a
// thread that is still running has finished.
TEST(VirtualClockTest, TimeStandsStillWhileAThreadRuns) {
  VirtualClock clock;
  std::atomic<bool> worked{false};
  std::thread worker([&] {
    const auto until = std::chrono::steady_clock::now() + 50ms;
    while (std::chrono::steady_clock::now() < until) {
    }
    worked = true;
  });
  bool worked_when_woken = false;
  std::thread sleeper([&] {
    clock.SleepFor(1ms);
    worked_when_woken = worked;
  });
  worker.join();
  sleeper.join();
  EXPECT_TRUE(worked_when_woken);
  EXPECT_EQ(clock.Elapsed(), 1ms);
}

TEST(ThreadWatchTest, QuiescentOnlyOnceEveryOtherThreadBlocks) {
  ThreadWatch watch;
  std::atomic<bool> spin{true};
  Shared s;
  std::thread t([&] {
    while (spin) {
    }
    MutexLock lock(s.mu);
    s.cv.Wait(s.mu, [&]() DLQ_REQUIRES(s.mu) { return s.ready; });
  });
  EXPECT_FALSE(watch.AwaitQuiescent(100ms));
  spin = false;
  EXPECT_TRUE(watch.AwaitQuiescent());
  {
    MutexLock lock(s.mu);
    s.ready = true;
  }
  s.cv.NotifyAll();
  t.join();
}

}  // namespace
}  // namespace dlq
