#include "replay/backlog_gate.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/log.h"

namespace dlq {

using std::chrono::seconds;

BacklogGate::BacklogGate(const RedriveOptions& options, Clock& clock)
    : max_backlog_(options.max_backlog), max_age_(options.max_backlog_age), poll_(options.poll), clock_(clock) {}

bool BacklogGate::SampleDue() const {
  return !last_sample_ || clock_.SteadyNow() - *last_sample_ >= poll_ || WouldPassBound();
}

Result<bool> BacklogGate::Sample(BacklogProbe& probe, uint64_t unconfirmed, const std::vector<SystemTime>& send_times) {
  last_sample_ = clock_.SteadyNow();
  taken_since_sample_ = 0;
  pending_at_sample_ = unconfirmed;
  auto sample = probe.Sample();
  if (!sample.ok()) {
    if (!sample.status().retryable()) return sample.status().WithContext("sample the destination's backlog");
    Log().Log(LogLevel::kWarn, "replay.backlog_sample_failed", {{"error", sample.status().ToString()}});
    return false;
  }
  backlog_ = sample->visible;
  age_ = sample->oldest_age ? sample->oldest_age : EstimateAge(sample->visible, send_times, clock_.Now());
  return true;
}

bool BacklogGate::WouldPassBound() const {
  if (max_backlog_ <= 0 || backlog_ < 0) return false;
  const uint64_t projected = static_cast<uint64_t>(backlog_) + pending_at_sample_ + taken_since_sample_;
  return projected + 1 > static_cast<uint64_t>(max_backlog_);
}

bool BacklogGate::Over(bool resuming) const {
  if (max_backlog_ > 0 && backlog_ >= 0) {
    const int64_t bound = resuming ? max_backlog_ / 2 : max_backlog_;
    if (backlog_ > bound) return true;
  }
  if (max_age_ > seconds::zero() && age_) {
    if (resuming ? *age_ >= max_age_ : *age_ > max_age_) return true;
  }
  return false;
}

std::string BacklogGate::Reason() const {
  std::vector<std::string> parts;
  if (max_backlog_ > 0 && backlog_ > max_backlog_ / 2) {
    parts.push_back(fmt::format("destination backlog {} over the bound {}; resumes at {}", backlog_, max_backlog_,
                                max_backlog_ / 2));
  }
  if (max_age_ > seconds::zero() && age_ && *age_ >= max_age_) {
    parts.push_back(fmt::format("oldest destination message {} s old, over the bound {} s; resumes under {} s",
                                age_->count(), max_age_.count(), max_age_.count()));
  }
  if (parts.empty()) return "paused: destination backlog over its bound";
  std::string out = "paused: " + parts.front();
  for (size_t i = 1; i < parts.size(); ++i) out += "; " + parts[i];
  return out;
}

std::optional<seconds> BacklogGate::EstimateAge(int64_t visible, const std::vector<SystemTime>& send_times,
                                                SystemTime now) {
  if (visible < 0) return std::nullopt;
  if (visible == 0) return seconds(0);
  if (send_times.empty()) return std::nullopt;  // only others' messages: no estimate
  const auto n = static_cast<uint64_t>(visible);
  const size_t oldest = n >= send_times.size() ? 0 : send_times.size() - n;
  return std::chrono::floor<seconds>(std::max(now - send_times[oldest], SystemTime::duration::zero()));
}

}  // namespace dlq
