// A Notifier for tests: records every notification and fails on command
// ("the 2nd call fails", "every call fails"), or hangs like a dead endpoint
// until released. Thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <vector>

#include "common/mutex.h"
#include "monitor/notifier.h"

namespace dlq {

class FakeNotifier final : public Notifier {
 public:
  Status Notify(const AlarmNotification& notification) override {
    MutexLock lock(mu_);
    notifications_.push_back(notification);
    int n = static_cast<int>(notifications_.size());
    cv_.NotifyAll();
    cv_.Wait(mu_, [&]() DLQ_REQUIRES(mu_) { return !blocked_ || cancelled_; });
    if (cancelled_) return Cancelled("FakeNotifier: cancelled");
    if (auto it = failures_.find(n); it != failures_.end()) return it->second;
    if (fail_all_) return *fail_all_;
    return Status::Ok();
  }

  // Calls in progress, and later ones, return Cancelled (a blocked call at once).
  void Cancel() override {
    MutexLock lock(mu_);
    cancelled_ = true;
    ++cancels_;
    cv_.NotifyAll();
  }

  // The n-th call (1-based) returns `status`; it is still recorded.
  void FailCall(int n, Status status) {
    MutexLock lock(mu_);
    failures_.insert_or_assign(n, std::move(status));
  }
  // Every call returns `status` (std::nullopt to stop failing).
  void FailAll(std::optional<Status> status) {
    MutexLock lock(mu_);
    fail_all_ = std::move(status);
  }
  // While blocked, Notify records the call and then waits (a hung endpoint)
  // until Block(false) or Cancel().
  void Block(bool blocked) {
    MutexLock lock(mu_);
    blocked_ = blocked;
    cv_.NotifyAll();
  }
  // Waits until at least `n` calls have started; false after `timeout`.
  bool WaitForCalls(int n, std::chrono::milliseconds timeout) {
    MutexLock lock(mu_);
    return cv_.WaitFor(mu_, timeout, [&]() DLQ_REQUIRES(mu_) { return static_cast<int>(notifications_.size()) >= n; });
  }

  std::vector<AlarmNotification> notifications() const {
    MutexLock lock(mu_);
    return notifications_;
  }
  int calls() const {
    MutexLock lock(mu_);
    return static_cast<int>(notifications_.size());
  }
  int cancels() const {
    MutexLock lock(mu_);
    return cancels_;
  }

 private:
  mutable Mutex mu_;
  CondVar cv_;  // a call started, or blocked_/cancelled_ changed
  std::vector<AlarmNotification> notifications_ DLQ_GUARDED_BY(mu_);
  std::map<int, Status> failures_ DLQ_GUARDED_BY(mu_);
  std::optional<Status> fail_all_ DLQ_GUARDED_BY(mu_);
  bool blocked_ DLQ_GUARDED_BY(mu_) = false;
  bool cancelled_ DLQ_GUARDED_BY(mu_) = false;
  int cancels_ DLQ_GUARDED_BY(mu_) = 0;
};

}  // namespace dlq
