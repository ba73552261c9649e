// Clock: the only source of time in the library, so tests can fake it.
// Every read of the time, every sleep and every timed wait goes through a
// Clock (scripts/lint rejects std::chrono clocks, sleep_for and raw timed
// waits elsewhere in src/). Implementations are thread-safe.
#pragma once

#include <chrono>
#include <functional>

#include "common/mutex.h"

namespace dlq {

using SystemTime = std::chrono::system_clock::time_point;
using SteadyTime = std::chrono::steady_clock::time_point;
using Duration = std::chrono::nanoseconds;

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time (UTC), used for signing, timestamps and expiry.
  virtual SystemTime Now() const = 0;
  // Monotonic time, used for deadlines and rates.
  virtual SteadyTime SteadyNow() const = 0;
  virtual void SleepFor(Duration d) = 0;

  // Blocks until pred() holds or SteadyNow() reaches `deadline`, and returns
  // pred() as last evaluated (false: the deadline came first). `mu` is held
  // on entry and on return and released while blocked; pred() runs with it
  // held. Whoever makes pred() true must notify `cv` (with `mu` held, or
  // after changing the state under it). A fake clock wakes its waiters when
  // it advances, so a test moves a timed wait on without sleeping.
  virtual bool WaitUntil(Mutex& mu, CondVar& cv, SteadyTime deadline, const std::function<bool()>& pred)
      DLQ_REQUIRES(mu) = 0;
  // As WaitUntil, `timeout` from now.
  bool WaitFor(Mutex& mu, CondVar& cv, Duration timeout, const std::function<bool()>& pred) DLQ_REQUIRES(mu) {
    return WaitUntil(mu, cv, SteadyNow() + timeout, pred);
  }
};

class RealClock final : public Clock {
 public:
  SystemTime Now() const override;
  SteadyTime SteadyNow() const override;
  void SleepFor(Duration d) override;
  bool WaitUntil(Mutex& mu, CondVar& cv, SteadyTime deadline, const std::function<bool()>& pred) override
      DLQ_REQUIRES(mu);
};

// The process-wide real clock (stateless, so sharing it is safe).
Clock& DefaultClock();

// Runs work() on the calling thread while a watcher thread calls tick()
// every `every` of `clock`'s time, the first time `every` after the start.
// Watching ends when work() returns or tick() returns false; RunWatched
// returns once both threads are done, so tick() never runs after it
// returned. tick() must not wait for work() to return.
void RunWatched(Clock& clock, Duration every, const std::function<void()>& work, const std::function<bool()>& tick);

// Waits until pred() holds or `deadline` passes, looking every `poll` of
// `clock`'s time: for conditions that nobody can notify (a flag a signal
// handler sets). Returns pred() as last evaluated.
bool PollUntil(Clock& clock, SteadyTime deadline, Duration poll, const std::function<bool()>& pred);

}  // namespace dlq
