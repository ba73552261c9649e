// Mutex, MutexLock and CondVar: std::mutex and std::condition_variable with
// the thread-safety annotations of common/thread_annotations.h, so clang
// checks every DLQ_GUARDED_BY / DLQ_REQUIRES against the locks actually held.
// Use these instead of std::mutex, std::lock_guard, std::unique_lock and
// std::condition_variable.
//
// Behaviour is exactly that of the std types (not recursive, not fair; a
// CondVar wait may wake spuriously unless it takes a predicate).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>

#include "common/thread_annotations.h"

namespace dlq {

class DLQ_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() DLQ_ACQUIRE() { mu_.lock(); }
  void Unlock() DLQ_RELEASE() { mu_.unlock(); }
  bool TryLock() DLQ_TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis that the calling thread holds the mutex (in a lambda
  // or callback it cannot follow). Not checked at run time.
  void AssertHeld() const DLQ_ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` from construction to destruction. Unlock() and Lock() drop and
// retake it in between (the destructor unlocks only if held); `mu` must
// outlive the MutexLock.
class DLQ_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) DLQ_ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() DLQ_RELEASE() {
    if (held_) mu_.Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() DLQ_RELEASE() {
    mu_.Unlock();
    held_ = false;
  }
  void Lock() DLQ_ACQUIRE() {
    mu_.Lock();
    held_ = true;
  }

 private:
  Mutex& mu_;
  bool held_ = true;
};

// A condition variable for Mutex. Every wait requires `mu` held; it is
// released while blocked and held again on return. A predicate runs with
// `mu` held: annotate a lambda that reads guarded members with
// DLQ_REQUIRES(mu) (the analysis checks its body under that assumption and
// cannot see that the wait holds `mu` when calling it).
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  void Wait(Mutex& mu) DLQ_REQUIRES(mu) {
    Adopted lock(mu);
    cv_.wait(lock.lock);
  }
  // Returns once pred() is true.
  template <typename Predicate>
  void Wait(Mutex& mu, Predicate pred) DLQ_REQUIRES(mu) DLQ_NO_THREAD_SAFETY_ANALYSIS {
    Adopted lock(mu);
    cv_.wait(lock.lock, std::move(pred));
  }

  // Returns false when the timeout expired (the std::cv_status::timeout case).
  template <typename Rep, typename Period>
  bool WaitFor(Mutex& mu, std::chrono::duration<Rep, Period> timeout) DLQ_REQUIRES(mu) {
    Adopted lock(mu);
    return cv_.wait_for(lock.lock, timeout) == std::cv_status::no_timeout;
  }
  // Returns pred() as last evaluated: false when the timeout expired first.
  template <typename Rep, typename Period, typename Predicate>
  bool WaitFor(Mutex& mu, std::chrono::duration<Rep, Period> timeout, Predicate pred)
      DLQ_REQUIRES(mu) DLQ_NO_THREAD_SAFETY_ANALYSIS {
    Adopted lock(mu);
    return cv_.wait_for(lock.lock, timeout, std::move(pred));
  }

  // As WaitFor, until an absolute time point.
  template <typename ClockType, typename Duration>
  bool WaitUntil(Mutex& mu, std::chrono::time_point<ClockType, Duration> deadline) DLQ_REQUIRES(mu) {
    Adopted lock(mu);
    return cv_.wait_until(lock.lock, deadline) == std::cv_status::no_timeout;
  }
  template <typename ClockType, typename Duration, typename Predicate>
  bool WaitUntil(Mutex& mu, std::chrono::time_point<ClockType, Duration> deadline, Predicate pred)
      DLQ_REQUIRES(mu) DLQ_NO_THREAD_SAFETY_ANALYSIS {
    Adopted lock(mu);
    return cv_.wait_until(lock.lock, deadline, std::move(pred));
  }

  void NotifyOne() noexcept { cv_.notify_one(); }
  void NotifyAll() noexcept { cv_.notify_all(); }

 private:
  // A std::unique_lock over a mutex the caller already holds, which it leaves
  // held on every exit (including a predicate that throws).
  struct Adopted {
    explicit Adopted(Mutex& mu) : lock(mu.mu_, std::adopt_lock) {}
    ~Adopted() { lock.release(); }
    Adopted(const Adopted&) = delete;
    Adopted& operator=(const Adopted&) = delete;
    std::unique_lock<std::mutex> lock;
  };

  std::condition_variable cv_;
};

}  // namespace dlq
