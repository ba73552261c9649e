// The flags of a guarded redrive (`replay --canary`, doc/replay.md "Guarded
// redrive"): parsed and checked before any call (ParseRedriveFlags), then
// turned into the guard's options once the selection and the destinations'
// attributes are known (replay/redrive_plan.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "replay/redrive_plan.h"

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

// The canary is on with --to-source unless --no-canary, and with --to-queue
// only when --canary is given. kInvalidArgument naming the flag for a bad
// value, --canary with --no-canary, or a flag of the canary and ramp
// (--ramp, --window, --check, --max-refailures, --canary-max-refailures)
// given to a replay without a canary. --max-backlog works with or without.
Result<RedrivePlan> ParseRedriveFlags(const RedriveFlags& flags, bool to_source);

// "5,25,100" -> {0.05, 0.25, 1}: rising percentages in (0, 100]; 100 is
// added when the list stops short of it.
Result<std::vector<double>> ParseRamp(const std::string& text);

}  // namespace dlq
