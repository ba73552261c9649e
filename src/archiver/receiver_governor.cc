#include "archiver/receiver_governor.h"

#include <algorithm>

namespace dlq {

ReceiverGovernor::ReceiverGovernor(const Options& options, TimePoint start) : options_(options) {
  options_.max_receivers = std::max(1, options_.max_receivers);
  options_.min_receivers = std::clamp(options_.min_receivers, 1, options_.max_receivers);
  options_.receives_per_receiver = std::max(1, options_.receives_per_receiver);
  if (options_.min_receivers == options_.max_receivers) {
    limit_ = options_.max_receivers;  // nothing to choose
    settled_ = true;
    settled_at_ = start;
    return;
  }
  StartPhase(options_.min_receivers, start);
}

void ReceiverGovernor::StartPhase(int level, TimePoint at) {
  limit_ = level;
  settled_ = false;
  phase_start_ = at;
  phase_receives_ = 0;
  phase_messages_ = 0;
}

void ReceiverGovernor::Settle(int level, double rate, TimePoint at) {
  limit_ = level;
  settled_ = true;
  settled_rate_ = rate;
  settled_at_ = at;
}

bool ReceiverGovernor::Observe(TimePoint end, uint64_t messages) {
  if (settled_) {
    if (options_.min_receivers == options_.max_receivers || end - settled_at_ < options_.reprobe_after) return false;
    const int from = std::max(options_.min_receivers, limit_ / 2);
    const bool changed = from != limit_;
    best_level_ = 0;
    best_rate_ = 0;
    StartPhase(from, end);
    return changed;
  }
  ++phase_receives_;
  phase_messages_ += messages;
  const auto elapsed = end - phase_start_;
  if (phase_receives_ < static_cast<uint64_t>(options_.receives_per_receiver) * static_cast<uint64_t>(limit_) ||
      elapsed < options_.min_phase) {
    return false;
  }
  const double rate = static_cast<double>(phase_messages_) / std::chrono::duration<double>(elapsed).count();
  const int level = limit_;
  if (best_level_ > 0) {
    // Ideally the rate grows with the level; ask for min_gain of that growth.
    const double ideal_growth = static_cast<double>(level) / best_level_ - 1;
    if (!(rate > best_rate_ * (1 + options_.min_gain * ideal_growth))) {
      Settle(best_level_, best_rate_, end);
      return true;
    }
  }
  best_level_ = level;
  best_rate_ = rate;
  if (level >= options_.max_receivers) {
    Settle(level, rate, end);
    return false;
  }
  StartPhase(std::min(level * 2, options_.max_receivers), end);
  return true;
}

}  // namespace dlq
