// RedriveSteps: the ramp plan of a guarded redrive (replay/redrive_guard.h)
// as step targets: step 0 is the canary, each ramp step ends at its
// cumulative share of the selection, the last step takes the rest. A
// backpressure-only run is one unbounded step. Also names the steps and
// says which phase sends in a step and how often a wait looks for
// re-failures.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "replay/redrive_terms.h"

namespace dlq {

class RedriveSteps {
 public:
  // `total`: the messages selected (the ramp's 100%).
  RedriveSteps(const RedriveOptions& options, uint64_t total);

  // The ramp step count (0 when backpressure only); also the last step's index.
  size_t last() const { return targets_.size() - 1; }
  // Cumulative messages sent at which `step` is full (the last: unbounded).
  uint64_t Target(size_t step) const { return targets_[step]; }
  // The step that sent the send with this 0-based index, in send order.
  size_t StepOfSend(uint64_t index) const;
  // kSending when backpressure only, else kCanary in step 0, kRamp after.
  RedrivePhase SendingPhase(size_t step) const;
  // "the canary" or "ramp step 2 of 3".
  std::string Name(size_t step) const;
  // As Name(step), prefixed "the final window after " in the final check.
  std::string Name(RedrivePhase phase, size_t step) const;
  // How often a wait of `wait` looks for re-failures: max(poll, wait / 10).
  std::chrono::milliseconds FindEvery(std::chrono::milliseconds wait) const;

 private:
  bool backpressure_only_;
  std::chrono::milliseconds poll_;
  std::vector<uint64_t> targets_;  // [0] the canary, the last unbounded
};

}  // namespace dlq
