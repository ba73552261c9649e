// FakeClock: a manual Clock for tests (test-only library dlq_testing).
// Thread-safe.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"

namespace dlq {

// A manual clock for tests. Time moves only when the test (or code under
// test calling SleepFor) advances it. SleepFor advances the clock instead of
// blocking; a timed wait returns when its predicate holds or once the clock
// has been advanced to its deadline, whatever real time passed.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(SystemTime start = SystemTime(std::chrono::seconds(1700000000)))
      : now_ns_(start.time_since_epoch().count()) {}
  SystemTime Now() const override { return SystemTime(SystemTime::duration(now_ns_.load())); }
  SteadyTime SteadyNow() const override {
    return SteadyTime(std::chrono::steady_clock::duration(now_ns_ += step_per_steady_read_ns_.load()));
  }
  void SleepFor(Duration d) override { Advance(d); }

  bool WaitUntil(Mutex& mu, CondVar& cv, SteadyTime deadline, const std::function<bool()>& pred) override
      DLQ_REQUIRES(mu) {
    Registration in(*this, cv);
    while (!pred()) {
      if (SteadyNow() >= deadline) return false;
      // Advance notifies `cv` without `mu` (it cannot take a waiter's mutex
      // safely), so a notification can fall between the look at the time
      // and the wait: the short real-time wait bounds how late it is seen.
      cv.WaitFor(mu, kLostWakeupBound);
    }
    return true;
  }

  void Advance(Duration d) {
    now_ns_ += std::chrono::duration_cast<SystemTime::duration>(d).count();
    WakeWaiters();
  }
  void Set(SystemTime t) {
    now_ns_ = t.time_since_epoch().count();
    WakeWaiters();
  }
  // From now on every SteadyNow() reading first advances the clock by
  // `step` (without waking waiters): a deadline N steps away passes after N
  // readings, whatever the machine's speed.
  void AdvanceOnEachSteadyRead(Duration step) {
    step_per_steady_read_ns_ = std::chrono::duration_cast<SystemTime::duration>(step).count();
  }
  // Threads blocked in WaitUntil now.
  int waiters() const {
    MutexLock lock(waiters_mu_);
    return static_cast<int>(waiters_.size());
  }
  // Blocks (in real time) until at least `n` threads wait on this clock.
  void WaitForWaiters(int n) const {
    MutexLock lock(waiters_mu_);
    waiters_cv_.Wait(waiters_mu_, [&]() DLQ_REQUIRES(waiters_mu_) { return static_cast<int>(waiters_.size()) >= n; });
  }

 private:
  static constexpr std::chrono::milliseconds kLostWakeupBound{5};

  struct Registration {
    Registration(FakeClock& c, CondVar& cv) : clock(c), cv(&cv) {
      MutexLock lock(clock.waiters_mu_);
      clock.waiters_.push_back(this->cv);
      clock.waiters_cv_.NotifyAll();
    }
    ~Registration() {
      MutexLock lock(clock.waiters_mu_);
      // One entry: several threads may wait on the same cv.
      clock.waiters_.erase(std::find(clock.waiters_.begin(), clock.waiters_.end(), cv));
    }
    FakeClock& clock;
    CondVar* cv;
  };

  void WakeWaiters() {
    // Under waiters_mu_: a registered CondVar outlives its registration.
    MutexLock lock(waiters_mu_);
    for (CondVar* cv : waiters_) cv->NotifyAll();
  }

  mutable std::atomic<SystemTime::duration::rep> now_ns_;
  std::atomic<SystemTime::duration::rep> step_per_steady_read_ns_{0};
  mutable Mutex waiters_mu_;
  mutable CondVar waiters_cv_;
  std::vector<CondVar*> waiters_ DLQ_GUARDED_BY(waiters_mu_);
};

}  // namespace dlq
