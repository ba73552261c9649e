#include "testing/virtual_clock.h"

#include <algorithm>

namespace dlq {
namespace {

// Real time between the driver's looks while the threads are busy; it
// backs off so that a test's own long work is not slowed by it.
constexpr std::chrono::microseconds kFirstPoll{20};
constexpr std::chrono::microseconds kMaxPoll{1000};

}  // namespace

VirtualClock::VirtualClock(SystemTime start)
    : steady_start_(SteadyTime(std::chrono::hours(1))),
      system_start_(start),
      now_ns_(steady_start_.time_since_epoch().count()) {
  driver_ = std::thread([this] { Drive(); });
  // After the driver started (a sanitizer starts its background thread
  // with the process's first other thread), so that only this thread and
  // those created from now on are watched.
  MutexLock lock(mu_);
  watch_.emplace();
  started_ = true;
  started_cv_.NotifyAll();
}

VirtualClock::~VirtualClock() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  sleep_cv_.NotifyAll();
  started_cv_.NotifyAll();
  driver_.join();
}

SystemTime VirtualClock::Now() const {
  return system_start_ + std::chrono::duration_cast<SystemTime::duration>(SteadyNow() - steady_start_);
}

SteadyTime VirtualClock::SteadyNow() const {
  return SteadyTime(SteadyTime::duration(now_ns_.load()));
}

Duration VirtualClock::Elapsed() const {
  return SteadyNow() - steady_start_;
}

void VirtualClock::SleepFor(Duration d) {
  SleepUntil(SteadyNow() + d);
}

void VirtualClock::SleepUntil(SteadyTime t) {
  MutexLock lock(mu_);
  if (SteadyNow() >= t) return;
  auto it = deadlines_.emplace(t, nullptr);
  while (SteadyNow() < t && !stopping_) sleep_cv_.Wait(mu_);
  deadlines_.erase(it);
}

bool VirtualClock::WaitUntil(Mutex& mu, CondVar& cv, SteadyTime deadline, const std::function<bool()>& pred) {
  if (pred()) return true;
  if (SteadyNow() >= deadline) return false;
  auto it = Register(deadline, &cv);
  bool holds = false;
  // No lost wakeup: the driver advances only while this thread sleeps in
  // the wait, never between the look at the time and the wait.
  while (!(holds = pred()) && SteadyNow() < deadline) cv.Wait(mu);
  Unregister(it);
  return holds;
}

VirtualClock::Deadlines::iterator VirtualClock::Register(SteadyTime deadline, CondVar* cv) {
  MutexLock lock(mu_);
  return deadlines_.emplace(deadline, cv);
}

void VirtualClock::Unregister(Deadlines::iterator it) {
  MutexLock lock(mu_);
  deadlines_.erase(it);
}

bool VirtualClock::AdvanceToNextDeadline() {
  MutexLock lock(mu_);
  if (deadlines_.empty()) return false;
  // Waits already due that are still registered are blocked elsewhere (on
  // their mutex): time moves on past them too.
  auto next = deadlines_.upper_bound(SteadyNow());
  if (next != deadlines_.end()) now_ns_ = next->first.time_since_epoch().count();
  // A registered CondVar outlives its registration, which ends under mu_.
  const SteadyTime now = SteadyNow();
  for (auto it = deadlines_.begin(); it != deadlines_.end() && it->first <= now; ++it) {
    if (it->second != nullptr) it->second->NotifyAll();
  }
  sleep_cv_.NotifyAll();
  return true;
}

void VirtualClock::Drive() {
  const ThreadWatch* watch = nullptr;
  {
    MutexLock lock(mu_);
    started_cv_.Wait(mu_, [&]() DLQ_REQUIRES(mu_) { return started_ || stopping_; });
    if (!watch_) return;
    watch = &*watch_;
  }
  // Polls less often while the threads are busy for long (a test's own
  // work), so the driver does not take the machine from them.
  std::chrono::microseconds poll = kFirstPoll;
  for (;;) {
    {
      MutexLock lock(mu_);
      if (stopping_) return;
    }
    if (watch->Quiescent() && AdvanceToNextDeadline()) {
      poll = kFirstPoll;
      continue;
    }
    std::this_thread::sleep_for(poll);  // lint: allow-raw-wait (kernel thread states cannot be waited on)
    poll = std::min(poll * 2, kMaxPoll);
  }
}

}  // namespace dlq
