// What the guard of a guarded `replay` says (doc/replay.md "Guarded redrive"):
// the dry run's plan, the summary and the breach report; the progress line is
// RedriveProgressLine. The guard itself is made by replay/redrive_setup.h.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "replay/redrive_guard.h"
#include "replay/redrive_setup.h"

namespace dlq {

// "guard: done: canary sent 10 (planned 10), ramp 5,25,100 % (3 of 3 steps sent), window 105 s, re-failed 0, 12 DLQ
// messages received to look, paused 0.0 s"; backpressure only: "backlog bound: 20 visible messages (resumes at
// 10); paused 3.0 s".
std::string GuardSummary(const RedriveStatus& s, const RedriveOptions& o);
// A dry run's note: "the real run is guarded: canary 10, ramp 5,25,100 %,
// window 105 s (from orders: maxReceiveCount 3 x VisibilityTimeout 30 s + DelaySeconds 5 s), backlog bound 100".
std::string GuardPlanLine(const GuardedRedrive& g);
// The breach, for stderr: what was sent, what failed again (each listed), what
// was not sent and where it still is.
std::string BreachText(const RedriveStatus& s, const std::string& why, int64_t not_sent, bool live);

}  // namespace dlq
