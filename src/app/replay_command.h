// `dlq-archive replay`: sends archived messages (--from URL) or live DLQ
// messages (--from-queue DLQ) back to a queue, selected with the shared filter
// flags. See doc/replay.md for the guarantees. This file holds the flags and
// turns them into a request for the use case (replay/replay_run.h);
// app/replay_render.h says what happened.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "app/redrive_flags.h"
#include "app/services.h"
#include "archive/destination.h"
#include "common/clock.h"
#include "query/filter.h"
#include "s3/object_store.h"
#include "sqs/sqs_client.h"

namespace dlq {

struct ReplayCommandOptions {
  std::string from;                 // s3://B/P or file:///D (archive form)
  std::string from_queue;           // DLQ name, URL or ARN (live form)
  std::string from_lambda_records;  // s3://BUCKET[/PREFIX]: Lambda's on-failure records (replay/lambda_records.h)
  FilterFlags filter;
  bool all = false;                  // archive form: an empty filter is meant (see replay_guards.h)
  bool all_queues = false;           // --to-queue may merge the messages of several DLQs
  bool allow_cross_account = false;  // --to-source may cross accounts or regions
  bool to_source = false;
  bool to_origin =
      false;             // back where each message came from: a Lambda function, an EventBridge target, an SNS endpoint
  std::string function;  // --function: the function of messages that do not name theirs
  std::string to_queue;  // name, URL or ARN
  std::string rate;      // "N/s" or "N"; empty: unlimited
  uint64_t max = 0;      // 0: no limit
  int concurrency = 0;   // batches in flight; 0: 4, or 1 with --checkpoint (duplicates after a crash: one batch)
  bool dry_run = false;
  // Archive form: the progress file. A guarded run (either form) also keeps
  // its guard journal in checkpoint + ".guard".
  std::string checkpoint;
  std::string transform;  // sh -c command
  double transform_timeout_s = 30;
  // Archive URL for the audit record and the replay ledger: required by the
  // live form (unless dry_run); the archive form defaults to --from.
  std::string audit_to;
  bool again = false;             // send messages an earlier run delivered to the same destination
  bool failed_again = false;      // select only messages whose latest outcome after a replay is a re-failure
  std::string output = "text";    // text | json: the summary as one JSON document on stdout
  std::string progress = "auto";  // auto | always | never
  FileModes file_modes;           // of the checkpoint and of audit records in a file:// archive (DLQ_FILE_MODE)
  RedriveFlags redrive;           // canary, ramp, bounds, backlog (a canary by default with --to-source)
};

struct RedriveStatus;

// What the command talks to, so tests can run it on fakes.
struct ReplayDeps {
  QueueClient* sqs = nullptr;
  std::function<Result<std::unique_ptr<ObjectStore>>(const Destination&)> open_store;
  std::function<Result<std::string>()> caller_arn;
  std::string region;
  Clock* clock = nullptr;
  // --to-origin's APIs (null: refused when an origin needs one).
  LambdaApi* lambda = nullptr;
  SnsApi* sns = nullptr;
  EventsApi* events = nullptr;
  HttpTransport* http = nullptr;
  std::FILE* out = stdout;
  std::FILE* err = stderr;
  // A guarded run calls it with every status its guard reports (phase
  // changes and samples), on the run's thread; may be empty.
  std::function<void(const RedriveStatus&)> on_redrive_status;
};

// Runs the command and returns the exit code: 0 every selected message sent;
// 1 some failed, or an error stopped the run (what was sent stays sent and is
// in the audit record); 2 bad input, a destination that cannot be resolved,
// a checkpoint of another run, an archive replay with no filter and no --all,
// a --to-queue selection over several DLQs without --all-queues, or a source
// in another account or region without --allow-cross-account, all found
// before anything is sent (the live form finds a cross-account source only
// when it receives the message, and stops there: 2 if nothing was sent yet,
// else 1); 3 sent,
// but archive objects or lines were unreadable and skipped, or a file://
// archive's links or special files were left out (each named on `err`); 2
// also for a canary whose destination has no DLQ (RedrivePolicy); 5 a guarded
// run stopped because more messages failed again than its bound (nothing
// more sent; the re-failures listed on `err`); 130 stopped by a signal.
int RunReplay(const ReplayCommandOptions& options, const ReplayDeps& deps, const std::atomic<bool>& stop);
int RunReplayCommand(const ReplayCommandOptions& options, AwsServices& services, const std::atomic<bool>& stop);

// "250", "250/s", "0.5/s" -> messages per second; nullopt unless > 0.
std::optional<double> ParseRate(std::string_view text);

struct Command;
// The `replay` entry of the command line (app/command.h).
Command ReplayCommand();

}  // namespace dlq
