// The guard of a guarded replay (doc/replay.md "Guarded redrive"): reads the
// destinations' processing windows and backlog before anything is sent and
// makes the SQS probes and the RedriveGuard; and what the guard did, for the
// audit record.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "archive/destination.h"
#include "common/clock.h"
#include "common/status.h"
#include "replay/audit.h"
#include "replay/redrive_guard.h"
#include "replay/redrive_plan.h"
#include "replay/redrive_probes.h"
#include "replay/replay_terms.h"
#include "replay/targets.h"
#include "s3/object_store.h"
#include "sqs/sqs_client.h"

namespace dlq {

// What PrepareGuard reads.
struct GuardInputs {
  ReplayTerms terms;  // how refusals name the caller's knobs
  QueueClient* sqs = nullptr;
  Clock* clock = nullptr;
  std::string region;
  std::vector<std::string> destinations;  // queue URLs the selection goes to
  std::vector<ReplayTarget> origins;      // --to-origin: the origins that are not queues
  uint64_t selection = 0;                 // messages selected (the ramp's 100%)
  std::string live_dlq;  // the DLQ the live form reads (it finds re-failures there itself); empty: archive form
  const std::atomic<bool>* stop = nullptr;
  // Opens the bucket of a function origin whose OnFailure destination is S3
  // (its re-failures are records there, replay/lambda_records.h); null: such
  // an origin cannot be guarded.
  std::function<Result<std::shared_ptr<ObjectStore>>(const Destination&)> open_store;
};

// The guard and what it reads; the guard refers to the probes, so they live
// and die together.
struct GuardedRedrive {
  RedriveOptions options;
  std::vector<DestinationWindow> windows;
  std::vector<std::shared_ptr<ObjectStore>> buckets;  // watched by `refailures`: declared first, destroyed last
  std::unique_ptr<SqsBacklogProbe> backlog;
  // The SQS probe, the S3 record probe, or both (RefailureProbes); null when
  // the live form's own DLQ is the only place to look.
  std::unique_ptr<RefailureProbe> refailures;
  std::unique_ptr<RedriveGuard> guard;
};

// kFailedPrecondition naming the queue and how to go without a canary
// (terms.no_canary) when a destination queue has no DLQ, or a function origin
// neither a DeadLetterConfig nor an OnFailure destination the guard can watch
// (an SQS queue, or an S3 bucket: Lambda's records under the function's
// prefix), or one it cannot (an SNS topic, a function, a bus: a re-failure
// there would go unseen), or when no destination is known before sending;
// the calls' errors otherwise. Nothing is sent or received. A function origin's window
// is FunctionWindow's; a topic, bus or HTTP endpoint refuses at once or
// takes the message, so it adds no window; with a function origin the canary
// is invoked synchronously.
Result<std::unique_ptr<GuardedRedrive>> PrepareGuard(const RedrivePlan& plan, const GuardInputs& in);

// How long a function's re-failures may take to reach its DLQ: Lambda tries
// an asynchronous event up to three times, one minute and then two minutes
// apart (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html),
// each run up to the function's timeout; plus the margin of ProcessingWindow.
// `retries`: the function's MaximumRetryAttempts (0-2; Lambda's default 2):
// (1 + retries) runs and 0, 1 or 3 minutes of backoff.
std::chrono::milliseconds FunctionWindow(int timeout_seconds, int retries = 2);

// A replay without a canary given --max-backlog: the guard holds the backlog
// bound only (no DLQ needed, no waits).
Result<std::unique_ptr<GuardedRedrive>> PrepareBackpressure(const RedrivePlan& plan, const GuardInputs& in);

// The guard's part of the audit record, and the messages it found again.
RedriveAudit GuardAudit(const RedriveStatus& s, const RedriveOptions& o);
std::vector<FailedAgainMessage> FailedAgainOf(const RedriveStatus& s);

}  // namespace dlq
