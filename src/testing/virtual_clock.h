// VirtualClock: a Clock whose time moves only when the test's threads are
// all blocked (test-only library dlq_testing; Linux only).
//
// SleepFor and timed waits block their thread until virtual time reaches
// the deadline. A driver thread advances virtual time to the earliest
// pending deadline once every participating thread is blocked (ThreadWatch,
// testing/quiescence.h), and wakes the waits that are due. Work done between waits
// takes no virtual time, so what a test measures on this clock (rates,
// stop times) is the same on an idle machine, a loaded one and under TSan.
//
// Participants: the thread that constructs the clock and every thread
// created after it, except the driver. Threads that existed before stay
// out (sanitizer and library background threads). A participant must
// block only in ways another participant or the clock ends: a real-time
// sleep or timeout in a participant is taken for blocked and lets virtual
// time run on meanwhile. Thread-safe; destroy it after the threads that
// use it have ended.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <thread>

#include "common/clock.h"
#include "common/mutex.h"
#include "testing/quiescence.h"

namespace dlq {

class VirtualClock final : public Clock {
 public:
  explicit VirtualClock(SystemTime start = SystemTime(std::chrono::seconds(1700000000)));
  ~VirtualClock() override;
  VirtualClock(const VirtualClock&) = delete;
  VirtualClock& operator=(const VirtualClock&) = delete;

  SystemTime Now() const override;
  SteadyTime SteadyNow() const override;
  // Blocks until virtual time has moved `d` on.
  void SleepFor(Duration d) override;
  void SleepUntil(SteadyTime t);
  bool WaitUntil(Mutex& mu, CondVar& cv, SteadyTime deadline, const std::function<bool()>& pred) override
      DLQ_REQUIRES(mu);

  // Virtual time since construction.
  Duration Elapsed() const;

 private:
  // Pending deadlines: the CondVar a timed wait blocks on, or nullptr for a
  // SleepFor (which blocks on sleep_cv_).
  using Deadlines = std::multimap<SteadyTime, CondVar*>;

  Deadlines::iterator Register(SteadyTime deadline, CondVar* cv) DLQ_EXCLUDES(mu_);
  void Unregister(Deadlines::iterator it) DLQ_EXCLUDES(mu_);
  void Drive();
  // One step of the driver, with every participant blocked: advances to the
  // earliest deadline still ahead and wakes what is due; false when nothing
  // waits on a deadline.
  bool AdvanceToNextDeadline() DLQ_EXCLUDES(mu_);

  const SteadyTime steady_start_;
  const SystemTime system_start_;
  std::atomic<SteadyTime::rep> now_ns_;

  mutable Mutex mu_;
  CondVar sleep_cv_;  // SleepFor's waits
  CondVar started_cv_;
  Deadlines deadlines_ DLQ_GUARDED_BY(mu_);
  std::optional<ThreadWatch> watch_ DLQ_GUARDED_BY(mu_);  // set once, before started_
  bool started_ DLQ_GUARDED_BY(mu_) = false;
  bool stopping_ DLQ_GUARDED_BY(mu_) = false;
  std::thread driver_;
};

}  // namespace dlq
