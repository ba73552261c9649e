// What a guarded redrive was asked for (canary, ramp, bounds, backlog), as the
// caller checked it before any queue is read (the CLI: app/redrive_flags.h's
// ParseRedriveFlags), and the guard's options made of it once the selection
// and the destinations' attributes are known.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "replay/redrive_guard.h"

namespace dlq {

// Checked by the caller, before the queues are read.
struct RedrivePlan {
  bool guarded = false;            // a canary and a ramp run; false: a plain replay
  bool backpressure = false;       // not guarded, but --max-backlog given: the bound holds all the same
  std::optional<uint64_t> canary;  // nullopt: DefaultCanary(selection)
  std::vector<double> ramp;        // cumulative fractions, rising, the last 1
  std::optional<std::chrono::milliseconds> window, check;
  std::optional<uint64_t> max_refailures;  // an absolute bound, or:
  double max_refailures_fraction = 0.01;
  uint64_t canary_max_refailures = 0;
  std::optional<int64_t> max_backlog;  // nullopt: DefaultMaxBacklog(visible at the start)
  std::chrono::seconds max_backlog_age{0};
};

// `window`: the largest processing window of the destinations (unless
// the plan names one); `visible_at_start`: their backlog before sending.
RedriveOptions MakeRedriveOptions(const RedrivePlan& plan, uint64_t selection, std::chrono::milliseconds window,
                                  int64_t visible_at_start);
// A replay without a canary that was given --max-backlog: canary 0.
RedriveOptions MakeBackpressureOptions(const RedrivePlan& plan);

}  // namespace dlq
