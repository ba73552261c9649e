// A Notifier for tests: records every notification and fails on command
// ("the 2nd call fails", "every call fails"), or hangs like a dead endpoint
// until released. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "monitor/notifier.h"

namespace dlq {

class FakeNotifier final : public Notifier {
 public:
  Status Notify(const AlarmNotification& notification) override {
    std::unique_lock lock(mu_);
    notifications_.push_back(notification);
    int n = static_cast<int>(notifications_.size());
    cv_.notify_all();
    cv_.wait(lock, [&] { return !blocked_ || cancelled_; });
    if (cancelled_) return Cancelled("FakeNotifier: cancelled");
    if (auto it = failures_.find(n); it != failures_.end()) return it->second;
    if (fail_all_) return *fail_all_;
    return Status::Ok();
  }

  // Calls in progress, and later ones, return Cancelled (a blocked call at once).
  void Cancel() override {
    std::lock_guard lock(mu_);
    cancelled_ = true;
    ++cancels_;
    cv_.notify_all();
  }

  // The n-th call (1-based) returns `status`; it is still recorded.
  void FailCall(int n, Status status) {
    std::lock_guard lock(mu_);
    failures_.insert_or_assign(n, std::move(status));
  }
  // Every call returns `status` (std::nullopt to stop failing).
  void FailAll(std::optional<Status> status) {
    std::lock_guard lock(mu_);
    fail_all_ = std::move(status);
  }
  // While blocked, Notify records the call and then waits (a hung endpoint)
  // until Block(false) or Cancel().
  void Block(bool blocked) {
    std::lock_guard lock(mu_);
    blocked_ = blocked;
    cv_.notify_all();
  }
  // Waits until at least `n` calls have started; false after `timeout`.
  bool WaitForCalls(int n, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return static_cast<int>(notifications_.size()) >= n; });
  }

  std::vector<AlarmNotification> notifications() const {
    std::lock_guard lock(mu_);
    return notifications_;
  }
  int calls() const {
    std::lock_guard lock(mu_);
    return static_cast<int>(notifications_.size());
  }
  int cancels() const {
    std::lock_guard lock(mu_);
    return cancels_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;                    // a call started, or blocked_/cancelled_ changed
  std::vector<AlarmNotification> notifications_;  // guarded by mu_
  std::map<int, Status> failures_;                // guarded by mu_
  std::optional<Status> fail_all_;                // guarded by mu_
  bool blocked_ = false;                          // guarded by mu_
  bool cancelled_ = false;                        // guarded by mu_
  int cancels_ = 0;                               // guarded by mu_
};

}  // namespace dlq
