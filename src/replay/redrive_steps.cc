#include "replay/redrive_steps.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace dlq {
namespace {

constexpr uint64_t kUnbounded = std::numeric_limits<uint64_t>::max();

}  // namespace

RedriveSteps::RedriveSteps(const RedriveOptions& options, uint64_t total)
    : backpressure_only_(options.BackpressureOnly()), poll_(options.poll) {
  if (backpressure_only_) {
    targets_.push_back(kUnbounded);  // one step, no waits: only the backlog bound holds it back
    return;
  }
  targets_.push_back(options.canary);
  for (size_t i = 0; i < options.ramp.size(); ++i) {
    if (i + 1 == options.ramp.size()) {
      targets_.push_back(kUnbounded);  // the rest, however many there turn out to be
      break;
    }
    // The small epsilon keeps 0.05 x 1000 at 50, not 51.
    const auto t = static_cast<uint64_t>(std::ceil(options.ramp[i] * static_cast<double>(total) - 1e-9));
    if (t > targets_.back()) targets_.push_back(t);  // steps the canary already covered are skipped
  }
}

size_t RedriveSteps::StepOfSend(uint64_t index) const {
  size_t step = 0;
  while (step + 1 < targets_.size() && index >= targets_[step]) ++step;
  return step;
}

RedrivePhase RedriveSteps::SendingPhase(size_t step) const {
  if (backpressure_only_) return RedrivePhase::kSending;
  return step == 0 ? RedrivePhase::kCanary : RedrivePhase::kRamp;
}

std::string RedriveSteps::Name(size_t step) const {
  if (step == 0) return "the canary";
  return fmt::format("ramp step {} of {}", step, last());
}

std::string RedriveSteps::Name(RedrivePhase phase, size_t step) const {
  if (phase == RedrivePhase::kFinalCheck) return "the final window after " + Name(step);
  return Name(step);
}

std::chrono::milliseconds RedriveSteps::FindEvery(std::chrono::milliseconds wait) const {
  return std::max(poll_, wait / 10);
}

}  // namespace dlq
