#include "common/clock.h"

#include <algorithm>
#include <thread>

namespace dlq {

SystemTime RealClock::Now() const {
  return std::chrono::system_clock::now();
}

SteadyTime RealClock::SteadyNow() const {
  return std::chrono::steady_clock::now();
}

void RealClock::SleepFor(Duration d) {
  std::this_thread::sleep_for(d);
}

bool RealClock::WaitUntil(Mutex& mu, CondVar& cv, SteadyTime deadline, const std::function<bool()>& pred) {
  return cv.WaitUntil(mu, deadline, pred);
}

Clock& DefaultClock() {
  static RealClock clock;
  return clock;
}

void RunWatched(Clock& clock, Duration every, const std::function<void()>& work, const std::function<bool()>& tick) {
  Mutex mu;
  CondVar cv;
  bool done = false;  // guarded by mu (a local: the analysis cannot annotate it)
  std::thread watcher([&] {
    MutexLock lock(mu);
    SteadyTime next = clock.SteadyNow() + every;
    while (!clock.WaitUntil(mu, cv, next, [&] { return done; })) {
      lock.Unlock();
      const bool more = tick();
      lock.Lock();
      if (!more) return;
      next = clock.SteadyNow() + every;
    }
  });
  // Ends the watcher on every exit, including an exception from work().
  struct Join {
    Mutex& mu;
    CondVar& cv;
    bool& done;
    std::thread& watcher;
    ~Join() {
      {
        MutexLock lock(mu);
        done = true;
      }
      cv.NotifyAll();
      watcher.join();
    }
  } join{mu, cv, done, watcher};
  work();
}

bool PollUntil(Clock& clock, SteadyTime deadline, Duration poll, const std::function<bool()>& pred) {
  Mutex mu;
  CondVar cv;  // never notified: every look is a timeout
  MutexLock lock(mu);
  while (!pred()) {
    const SteadyTime now = clock.SteadyNow();
    if (now >= deadline) return false;
    clock.WaitUntil(mu, cv, std::min(deadline, now + poll), [] { return false; });
  }
  return true;
}

}  // namespace dlq
