#include "common/mutex.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace dlq {
namespace {

using namespace std::chrono_literals;

// State shared by the threads of a test (the analysis checks members, not locals).
struct Shared {
  Mutex mu;
  CondVar cv;
  int64_t count DLQ_GUARDED_BY(mu) = 0;
  bool ready DLQ_GUARDED_BY(mu) = false;
  int stage DLQ_GUARDED_BY(mu) = 0;
};

// Whether another thread can take `mu` right now (and releases it if so).
bool LockableFromAnotherThread(Mutex& mu) {
  bool took = false;
  std::thread t([&] {
    if (mu.TryLock()) {
      took = true;
      mu.Unlock();
    }
  });
  t.join();
  return took;
}

TEST(MutexTest, MutexLockExcludesOtherThreads) {
  Shared s;
  constexpr int kThreads = 4;
  constexpr int kIncrements = 50000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kIncrements; ++i) {
        MutexLock lock(s.mu);
        // A read-modify-write in two steps, so that an unprotected section
        // would lose updates.
        int64_t seen = s.count;
        s.count = seen + 1;
      }
    });
  }
  for (auto& t : threads) t.join();
  MutexLock lock(s.mu);
  EXPECT_EQ(s.count, int64_t{kThreads} * kIncrements);
}

TEST(MutexTest, TryLockFailsWhileHeldElsewhere) {
  Mutex mu;
  EXPECT_TRUE(LockableFromAnotherThread(mu));
  {
    MutexLock lock(mu);
    EXPECT_FALSE(LockableFromAnotherThread(mu));
  }
  EXPECT_TRUE(LockableFromAnotherThread(mu));
}

TEST(MutexTest, MutexLockUnlockAndLockAgainAndReleaseOnce) {
  Mutex mu;
  {
    MutexLock lock(mu);
    lock.Unlock();
    EXPECT_TRUE(LockableFromAnotherThread(mu));
    lock.Lock();
    EXPECT_FALSE(LockableFromAnotherThread(mu));
    lock.Unlock();
    // Destroyed while released: must not unlock again.
  }
  EXPECT_TRUE(LockableFromAnotherThread(mu));
  if (mu.TryLock()) {  // still a working mutex
    mu.Unlock();
  } else {
    ADD_FAILURE() << "the mutex stayed locked";
  }
}

TEST(CondVarTest, WaitWithPredicateReturnsOnceTrueAndHoldsTheMutex) {
  Shared s;
  std::thread setter([&] {
    std::this_thread::sleep_for(20ms);
    {
      MutexLock lock(s.mu);
      s.ready = true;
    }
    s.cv.NotifyAll();
  });
  {
    MutexLock lock(s.mu);
    s.cv.Wait(s.mu, [&]() DLQ_REQUIRES(s.mu) { return s.ready; });
    EXPECT_TRUE(s.ready);
    EXPECT_FALSE(LockableFromAnotherThread(s.mu));
  }
  setter.join();
  EXPECT_TRUE(LockableFromAnotherThread(s.mu));
}

TEST(CondVarTest, WaitReleasesTheMutexWhileBlocked) {
  Shared s;
  MutexLock lock(s.mu);
  std::thread other([&] {
    MutexLock other_lock(s.mu);  // only possible while the main thread waits
    s.stage = 1;
    s.cv.NotifyAll();
  });
  while (s.stage != 1) s.cv.Wait(s.mu);
  EXPECT_EQ(s.stage, 1);
  EXPECT_FALSE(LockableFromAnotherThread(s.mu));
  lock.Unlock();
  other.join();
}

TEST(CondVarTest, WaitForTimesOutWithFalseAndHoldsTheMutex) {
  Shared s;
  MutexLock lock(s.mu);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(s.cv.WaitFor(s.mu, 30ms, [&]() DLQ_REQUIRES(s.mu) { return s.ready; }));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 30ms);
  EXPECT_FALSE(LockableFromAnotherThread(s.mu));
}

TEST(CondVarTest, WaitForReturnsTrueWhenThePredicateBecomesTrue) {
  Shared s;
  std::thread setter([&] {
    MutexLock lock(s.mu);
    s.ready = true;
    s.cv.NotifyOne();
  });
  {
    MutexLock lock(s.mu);
    EXPECT_TRUE(s.cv.WaitFor(s.mu, 10s, [&]() DLQ_REQUIRES(s.mu) { return s.ready; }));
  }
  setter.join();
}

TEST(CondVarTest, WaitForWithoutPredicateReportsANotification) {
  Shared s;
  MutexLock lock(s.mu);
  std::thread notifier([&] {
    MutexLock other_lock(s.mu);  // taken once the main thread waits
    s.cv.NotifyAll();
  });
  // Notified while waiting (a spurious wake-up would also return true, never
  // a timeout within 10 s).
  EXPECT_TRUE(s.cv.WaitFor(s.mu, 10s));
  lock.Unlock();
  notifier.join();
}

TEST(CondVarTest, WaitUntilChecksThePredicateFirstAndTimesOutAtTheDeadline) {
  Shared s;
  MutexLock lock(s.mu);
  s.ready = true;
  // Already true: returns at once even with a deadline in the past.
  EXPECT_TRUE(
      s.cv.WaitUntil(s.mu, std::chrono::steady_clock::now() - 1s, [&]() DLQ_REQUIRES(s.mu) { return s.ready; }));
  s.ready = false;
  const auto deadline = std::chrono::steady_clock::now() + 20ms;
  EXPECT_FALSE(s.cv.WaitUntil(s.mu, deadline, [&]() DLQ_REQUIRES(s.mu) { return s.ready; }));
  EXPECT_GE(std::chrono::steady_clock::now(), deadline);
}

TEST(CondVarTest, PredicateThatThrowsLeavesTheMutexHeldByTheCaller) {
  Shared s;
  MutexLock lock(s.mu);
  EXPECT_THROW(s.cv.Wait(s.mu, []() -> bool { throw std::runtime_error("predicate failed"); }), std::runtime_error);
  // The wait did not release the caller's lock on the way out...
  EXPECT_FALSE(LockableFromAnotherThread(s.mu));
  lock.Unlock();
  // ...and the MutexLock released it exactly once.
  EXPECT_TRUE(LockableFromAnotherThread(s.mu));
}

}  // namespace
}  // namespace dlq
