// Code that -Wthread-safety must reject. Every line marked "expect:" must draw
// exactly that diagnostic, and no other line may draw one; the ctest
// thread_safety.violations_rejected (clang builds) checks this with
// expect_diagnostics.cmake. It proves the annotations in common/mutex.h are
// seen by the analysis: with no-op macros, nothing here would be reported.
#include <chrono>

#include "common/mutex.h"
#include "common/thread_annotations.h"

namespace dlq {

class Counter {
 public:
  void UnlockedWrite() {
    count_ = 1;  // expect: writing variable 'count_' requires holding mutex 'mu_' exclusively
  }
  int UnlockedRead() const {
    return count_;  // expect: reading variable 'count_' requires holding mutex 'mu_'
  }
  void UnlockedCallOfLockedHelper() {
    BumpLocked();  // expect: calling function 'BumpLocked' requires holding mutex 'mu_' exclusively
  }
  void WriteAfterScopedUnlock() {
    MutexLock lock(mu_);
    lock.Unlock();
    count_ = 2;  // expect: writing variable 'count_' requires holding mutex 'mu_' exclusively
  }
  void WaitWithoutTheMutex() {
    cv_.Wait(mu_);  // expect: calling function 'Wait' requires holding mutex 'mu_' exclusively
  }
  void PredicateWithoutRequires() {
    MutexLock lock(mu_);
    cv_.Wait(mu_, [&] {
      return count_ > 0;  // expect: reading variable 'count_' requires holding mutex 'mu_'
    });
  }
  void CallWhileHoldingExcluded() {
    MutexLock lock(mu_);
    TakesTheLock();  // expect: cannot call function 'TakesTheLock' while mutex 'mu_' is held
  }
  void UnguardedPointee() {
    *slot_ = 3;  // expect: writing the value pointed to by 'slot_' requires holding mutex 'mu_' exclusively
  }
  void LockLeaked() { mu_.Lock(); }  // expect: mutex 'mu_' is still held at the end of function
  void LockOrderReversed() {
    MutexLock lock(mu_);
    MutexLock outer(outer_mu_);  // expect: mutex 'outer_mu_' must be acquired before 'mu_'
  }

  // The correct forms of the above draw nothing.
  void LockedWrite() {
    MutexLock lock(mu_);
    count_ = 1;
    BumpLocked();
    *slot_ = 3;
    lock.Unlock();
    TakesTheLock();
    lock.Lock();
    cv_.Wait(mu_, [&]() DLQ_REQUIRES(mu_) { return count_ > 0; });
    cv_.WaitFor(mu_, std::chrono::milliseconds(1), [&]() DLQ_REQUIRES(mu_) { return count_ > 0; });
  }
  void TryLockWrite() {
    if (mu_.TryLock()) {
      count_ = 4;
      mu_.Unlock();
    }
  }
  void LockOrderKept() {
    MutexLock outer(outer_mu_);
    MutexLock lock(mu_);
  }
  void BumpLocked() DLQ_REQUIRES(mu_) { ++count_; }
  void TakesTheLock() DLQ_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    ++count_;
  }

 private:
  Mutex outer_mu_ DLQ_ACQUIRED_BEFORE(mu_);
  mutable Mutex mu_;
  CondVar cv_;
  int count_ DLQ_GUARDED_BY(mu_) = 0;
  int* slot_ DLQ_PT_GUARDED_BY(mu_) = nullptr;
};

}  // namespace dlq
