// A Notifier for tests: records every notification and fails on command
// ("the 2nd call fails", "every call fails"). Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "monitor/notifier.h"

namespace dlq {

class FakeNotifier final : public Notifier {
 public:
  Status Notify(const AlarmNotification& notification) override {
    std::lock_guard lock(mu_);
    notifications_.push_back(notification);
    int n = static_cast<int>(notifications_.size());
    if (auto it = failures_.find(n); it != failures_.end()) return it->second;
    if (fail_all_) return *fail_all_;
    return Status::Ok();
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

  std::vector<AlarmNotification> notifications() const {
    std::lock_guard lock(mu_);
    return notifications_;
  }
  int calls() const {
    std::lock_guard lock(mu_);
    return static_cast<int>(notifications_.size());
  }

 private:
  mutable std::mutex mu_;
  std::vector<AlarmNotification> notifications_;
  std::map<int, Status> failures_;
  std::optional<Status> fail_all_;
};

}  // namespace dlq
