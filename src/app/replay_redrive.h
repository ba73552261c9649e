// The guard of a guarded `replay` (doc/replay.md "Guarded redrive: the
// flags"): reads the destinations' processing windows and backlog before
// anything is sent, makes the SQS probes and the RedriveGuard, and says what
// the guard did (summary, audit record, breach report; the progress line is
// RedriveProgressLine).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "app/redrive_flags.h"
#include "common/clock.h"
#include "common/status.h"
#include "replay/audit.h"
#include "replay/redrive_guard.h"
#include "replay/redrive_probes.h"
#include "sqs/sqs_client.h"

namespace dlq {

// What PrepareGuard reads.
struct GuardInputs {
  QueueClient* sqs = nullptr;
  Clock* clock = nullptr;
  std::string region;
  std::vector<std::string> destinations;  // queue URLs the selection goes to
  uint64_t selection = 0;                 // messages selected (the ramp's 100%)
  std::string live_dlq;  // the DLQ the live form reads (it finds re-failures there itself); empty: archive form
  const std::atomic<bool>* stop = nullptr;
};

// The guard and what it reads; the guard refers to the probes, so they live
// and die together.
struct GuardedRedrive {
  RedriveOptions options;
  std::vector<DestinationWindow> windows;
  std::unique_ptr<SqsBacklogProbe> backlog;
  std::unique_ptr<SqsRefailureProbe> refailures;  // null when the live form's own DLQ is the only one
  std::unique_ptr<RedriveGuard> guard;
};

// kFailedPrecondition naming the queue and --no-canary when a destination
// has no DLQ, or when no destination is known before sending; the calls'
// errors otherwise. Nothing is sent or received.
Result<std::unique_ptr<GuardedRedrive>> PrepareGuard(const RedrivePlan& plan, const GuardInputs& in);

// A replay without a canary given --max-backlog: the guard holds the backlog
// bound only (no DLQ needed, no waits).
Result<std::unique_ptr<GuardedRedrive>> PrepareBackpressure(const RedrivePlan& plan, const GuardInputs& in);

// "guard: done: canary sent 10 (planned 10), ramp 5,25,100 % (3 of 3 steps sent), window 105 s, re-failed 0, 12 DLQ
// messages received to look, paused 0.0 s"; backpressure only: "backlog bound: 20 visible messages (resumes at
// 10); paused 3.0 s".
std::string GuardSummary(const RedriveStatus& s, const RedriveOptions& o);
// A dry run's note: "the real run is guarded: canary 10, ramp 5,25,100 %,
// window 105 s (from orders: maxReceiveCount 3 x VisibilityTimeout 30 s + DelaySeconds 5 s), backlog bound 100".
std::string GuardPlanLine(const GuardedRedrive& g);
RedriveAudit GuardAudit(const RedriveStatus& s, const RedriveOptions& o);
std::vector<FailedAgainMessage> FailedAgainOf(const RedriveStatus& s);
// The breach on `err`: what was sent, what failed again (each listed), what
// was not sent and where it still is.
void PrintBreach(const RedriveStatus& s, const std::string& why, int64_t not_sent, bool live, std::FILE* err);

}  // namespace dlq
