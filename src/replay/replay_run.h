// A replay run, the use case behind `dlq-archive replay` and the dashboard's
// "replay this group" (doc/replay.md, doc/architecture.md "Where a replay
// flows"): plan (open the archive and the audit location, read what failed
// again) -> check the destinations and the selection (one scan of the
// archive, or the live DLQ) -> guard (canary, ramp, backlog) -> send -> audit.
// It returns what happened as data (ReplayRunResult); the CLI renders it as
// text or JSON, the dashboard as JSON. It prints nothing: what a caller shows
// while the run goes (notes, a dry run's messages, progress, the guard's
// phases) reaches it through ReplayObserver.
//
// Refusals name the caller's knobs through ReplayRunRequest::terms.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "archive/destination.h"
#include "common/clock.h"
#include "common/file_util.h"
#include "common/status.h"
#include "query/filter.h"
#include "query/scan.h"
#include "replay/buckets.h"
#include "replay/dlq_span.h"
#include "replay/live_source.h"
#include "replay/origin_sender.h"
#include "replay/origins.h"
#include "replay/redrive_plan.h"
#include "replay/redrive_setup.h"
#include "replay/replay_terms.h"
#include "replay/replayer.h"
#include "s3/object_store.h"
#include "sqs/queue_info.h"
#include "sqs/sqs_client.h"

namespace dlq {

// What to replay, checked by the caller (flags parsed, the filter built).
struct ReplayRunRequest {
  std::string from;        // archive form: s3://B/P or file:///D
  std::string from_queue;  // live form: DLQ name, URL or ARN
  // Lambda's on-failure records in S3 (replay/lambda_records.h): s3://BUCKET
  // or s3://BUCKET/PREFIX; read as the archive form reads `from`. Needs
  // to_origin and audit_to.
  std::string from_lambda_records;
  Filter filter;
  bool failed_again = false;  // only messages whose latest outcome after a replay is a re-failure
  bool again = false;         // send messages an earlier run delivered to the same destination
  bool to_source = false;     // else every message goes to `to_queue` (or, to_origin, back where it came from)
  bool to_origin = false;     // replay/origins.h: a Lambda function, an EventBridge target, an SNS endpoint
  std::string function;       // to_origin: the function of messages that do not name theirs (name or ARN)
  std::string to_queue;       // name, URL or ARN
  bool all_queues = false;    // `to_queue` may take the messages of several DLQs
  bool allow_cross_account = false;
  double rate = 0;  // messages per second; 0: unlimited
  uint64_t max = 0;
  int concurrency = 0;  // 0: 4, or 1 with a checkpoint
  bool dry_run = false;
  // A dry run's entries kept in the result (the JSON summary lists them); the
  // observer sees every one. The CLI's text keeps none (it prints them as
  // they come), its JSON all, the dashboard the first 1,000.
  size_t max_dry_run_entries = SIZE_MAX;
  std::string checkpoint;  // archive form: the progress file; a guarded run keeps its journal in checkpoint + ".guard"
  std::string transform;   // sh -c command; empty: none
  std::chrono::milliseconds transform_timeout{30000};
  std::string audit_to;  // the audit record and the ledger; the archive form defaults to `from`
  RedrivePlan plan;
  FileModes file_modes;  // of the checkpoint, the guard journal and audit records in a file:// archive
  ReplayTerms terms;
};

// What the run reaches. open_store's stores live as long as the run.
struct ReplayRunDeps {
  QueueClient* sqs = nullptr;
  std::function<Result<std::shared_ptr<ObjectStore>>(const Destination&)> open_store;
  std::function<Result<std::string>()> caller_arn;  // for the audit record; may be empty
  std::string region;
  Clock* clock = nullptr;
  // --to-origin: the APIs its origins need; any may be null (an origin that
  // needs it is then refused, or fails the run, naming it).
  LambdaApi* lambda = nullptr;
  SnsApi* sns = nullptr;
  EventsApi* events = nullptr;
  HttpTransport* http = nullptr;
};

// What a caller shows while the run goes. Every call is on the run's thread.
class ReplayObserver {
 public:
  virtual ~ReplayObserver() = default;
  // Something the run left out and went on without (an unreadable audit record).
  virtual void Warning(const std::string& /*text*/) {}
  // The archive form's selection, checked before anything is sent: counted by
  // DLQ, and the cross-account routes its destinations take.
  virtual void SelectionChecked(const DlqCounts& /*by_dlq*/, const std::vector<std::string>& /*routes*/) {}
  // A dry run of a guarded replay: what the real run's guard would be.
  virtual void GuardPlanned(const GuardedRedrive& /*guard*/) {}
  // A dry run: each message as it would be sent or skipped.
  virtual void DryRun(const DryRunEntry& /*entry*/) {}
  virtual void Progress(const ReplayStats& /*stats*/) {}
  // A guarded run: each status its guard reports (phase changes and samples).
  virtual void Guard(const RedriveStatus& /*status*/) {}
};

// How a run ended; doc/replay.md gives each its exit code.
enum class ReplayEnd {
  kDone,          // every selected message sent (or, dry run, described)
  kSomeFailed,    // some messages failed to send; the rest were sent
  kError,         // an error stopped the run (what was sent stays sent)
  kBadInput,      // refused before anything was sent: the request's to fix
  kSkippedInput,  // sent, but unreadable archive objects or lines were skipped (live: some deletes failed)
  kIncomplete,    // live: the pass could not examine every message present at its start
  kRefailed,      // the guard stopped it: more messages failed again than its bound
  kInterrupted,   // stopped on request
};
std::string_view ReplayEndName(ReplayEnd end);  // "done", "some-failed", ...

// The guard of a guarded run as it ended.
struct ReplayGuardReport {
  RedriveOptions options;
  RedriveStatus status;
};

struct ReplayRunResult {
  ReplayEnd end = ReplayEnd::kDone;
  // Why the run ended as it did: the error that stopped it, the guard's
  // breach (kRefailed) or the stop request; ok otherwise.
  Status error;
  // False when the run was refused or failed before it could send (only
  // `end` and `error` are set then).
  bool reached_sending = false;
  bool dry_run = false;
  bool live = false;
  std::string destination;                        // TargetResolver::Describe(): a queue URL, "source" or "origin"
  std::vector<std::string> cross_account_routes;  // "DLQ (account A, region R) -> source ARN"
  std::optional<QueueInfo> dlq;                   // live form
  std::optional<Destination> archive;             // archive form
  ReplayStats stats;
  ReplayBuckets buckets;  // every selected message in one bucket
  std::map<std::string, uint64_t> sent_by_destination;
  std::vector<ReplayedMessage> sent;    // this run's, in completion order
  std::vector<ReplayFailure> failures;  // every message that failed to send
  // A dry run: each message as DryRun reported it, the first
  // ReplayRunRequest::max_dry_run_entries of them (the observer sees all);
  // the rest are counted.
  std::vector<DryRunEntry> dry_run_entries;
  uint64_t dry_run_entries_omitted = 0;
  std::map<std::string, uint64_t> would_send_by_destination;  // a dry run: every kWouldSend entry
  std::optional<ReplayGuardReport> guard;                     // a guarded run that was not a dry run
  std::optional<LiveReplayStats> live_stats;
  std::optional<ScanStats> scan;  // archive form: the send pass
  bool skip_checked = false;      // checked against earlier replays (a ledger was there)
  bool again = false;
  uint64_t failed_again_resent = 0;  // taken to send: their latest outcome was a re-failure
  // kRefailed: the messages not sent (live: also those never examined); -1 unknown.
  int64_t not_sent = -1;
  std::string audit;   // where the audit record went ("" for none)
  Status audit_error;  // the record could not be written (the messages were sent)
  double seconds = 0;  // the send pass
};

// Runs the replay. `stop` is polled between batches.
ReplayRunResult RunReplayUseCase(const ReplayRunRequest& request, const ReplayRunDeps& deps, ReplayObserver& observer,
                                 const std::atomic<bool>& stop);

}  // namespace dlq
