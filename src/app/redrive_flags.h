// The flags of a guarded redrive (`replay --canary`, doc/replay.md "Guarded
// redrive"): parsed and checked before any call (ParseRedriveFlags), then
// turned into the guard's options once the selection and the destinations'
// attributes are known (MakeRedriveOptions).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "replay/redrive_guard.h"

namespace dlq {

// As given on the command line.
struct RedriveFlags {
  std::optional<uint64_t> canary;                 // --canary N (>= 1)
  bool no_canary = false;                         // --no-canary
  std::optional<std::string> ramp;                // --ramp: cumulative percentages; unset: 5,25,100
  std::string window;                             // --window DURATION; empty: from the destinations' attributes
  std::string check;                              // --check DURATION; empty: the window
  std::optional<std::string> max_refailures;      // unset: 1%
  std::optional<uint64_t> canary_max_refailures;  // empty: 0
  std::vector<std::string> max_backlog;           // counts (N) and/or ages (DURATION)
};

// The flags checked, before the queues are read.
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

// The canary is on with --to-source unless --no-canary, and with --to-queue
// only when --canary is given. kInvalidArgument naming the flag for a bad
// value, --canary with --no-canary, or a flag of the canary and ramp
// (--ramp, --window, --check, --max-refailures, --canary-max-refailures)
// given to a replay without a canary. --max-backlog works with or without.
Result<RedrivePlan> ParseRedriveFlags(const RedriveFlags& flags, bool to_source);

// "5,25,100" -> {0.05, 0.25, 1}: rising percentages in (0, 100]; 100 is
// added when the list stops short of it.
Result<std::vector<double>> ParseRamp(const std::string& text);

// `window`: the largest processing window of the destinations (unless
// --window was given); `visible_at_start`: their backlog before sending.
RedriveOptions MakeRedriveOptions(const RedrivePlan& plan, uint64_t selection, std::chrono::milliseconds window,
                                  int64_t visible_at_start);
// A replay without a canary that was given --max-backlog: canary 0.
RedriveOptions MakeBackpressureOptions(const RedrivePlan& plan);

}  // namespace dlq
