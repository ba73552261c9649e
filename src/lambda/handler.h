// The work of one Lambda invocation: parse the event, drain the queues it
// selects before the deadline, emit Embedded Metric Format lines, invoke the
// function again (asynchronously) for what remains, and answer with a JSON
// summary. RunLambdaLoop is the runtime loop over a RuntimeClient.
//
// Deadline: receiving stops at deadline - margin, where margin is
// min(LambdaConfig::deadline_margin, half the time left at the start). The
// drainers then finish uploads and deletes in flight and release the rest
// (QueueDrainer::RequestStop); queues not started are reported "not_started".
//
// Follow-up: when a queue was stopped by the deadline or left incomplete and
// hop < max_hops, a direct-invoke payload naming those queues (same policy,
// hop + 1) is sent through the FunctionInvoker. The schedule is the backstop
// when the hop limit is reached or the invoke fails.
//
// Causes (doc/causes.md): with causes auto or on, after each queue's drain
// that wrote objects, the causes of a few messages per failure group are
// looked up in the consumers' logs (causes/archived_causes.h) and kept in the
// archive's `_causes/` sidecar, unless less than `min_time_left` remains
// before the deadline. A lookup never fails the invocation; auto stops
// looking up for the rest of the invocation at the first access denial.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "archiver/drain_options.h"
#include "aws/aws_client.h"
#include "causes/consumers.h"
#include "common/clock.h"
#include "lambda/event.h"
#include "lambda/runtime_client.h"
#include "lambda_api/lambda_api.h"
#include "logs/logs_client.h"
#include "s3/object_store.h"
#include "sqs/sqs_client.h"

namespace dlq {

// DLQ_ARCHIVE_CAUSES, DLQ_ARCHIVE_CAUSE_SAMPLES, DLQ_ARCHIVE_CONSUMER_LOGS.
struct LambdaCauses {
  enum class Mode { kOff, kAuto, kOn };
  Mode mode = Mode::kOff;
  size_t samples = 3;  // per failure group, 1..100
  // Log groups of consumers that are not Lambda functions: {"", GROUP} for
  // every queue, {QUEUE, GROUP} for one.
  std::vector<std::pair<std::string, std::string>> consumer_logs;
  int max_filter_calls = 50;                       // FilterLogEvents calls per queue and invocation
  std::chrono::milliseconds min_time_left{10000};  // no lookup starts closer to the deadline
  // The log groups consumer_logs names for `queue` (a name).
  std::vector<NamedLogGroup> NamedFor(const std::string& queue) const;
};

struct LambdaConfig {
  std::vector<std::string> queues;  // DLQ_ARCHIVE_QUEUES: schedules and direct invokes without "queues"
  DrainOptions drain;               // batch, SSE, key layout, default policy
  std::chrono::milliseconds deadline_margin{10000};
  int max_hops = 5;  // self-invocations in one chain
  std::string metrics_namespace = "DlqArchive";
  std::string destination_uri;  // for the summary only
  std::string host;             // recorded in archive records
  LambdaCauses causes;
};

// Invokes the function itself asynchronously (InvocationType=Event).
class FunctionInvoker {
 public:
  virtual ~FunctionInvoker() = default;
  virtual Status InvokeAsync(const std::string& payload) = 0;
};

// POST /2015-03-31/functions/{name}/invocations with X-Amz-Invocation-Type:
// Event, signed for "lambda". `client` must outlive it.
class AwsFunctionInvoker final : public FunctionInvoker {
 public:
  AwsFunctionInvoker(AwsClient& client, std::string function_name)
      : client_(client), function_name_(std::move(function_name)) {}
  Status InvokeAsync(const std::string& payload) override;

 private:
  AwsClient& client_;
  std::string function_name_;
};

struct LambdaDeps {
  // The SQS client for a queue's account ("" for a queue given by name: the
  // function's own account). Lets role ARNs per account apply.
  std::function<Result<QueueClient*>(const std::string& account_id)> sqs_for;
  ObjectStore* store = nullptr;
  Clock* clock = nullptr;
  std::string region;
  FunctionInvoker* invoker = nullptr;  // null: no follow-up (schedule only)
  // The cause lookups' clients (the function's own account); either null:
  // no lookup.
  LogsClient* logs = nullptr;
  LambdaApi* lambda_api = nullptr;
  // Receives each EMF line (stdout in production).
  std::function<void(const std::string&)> emit_metric;
};

struct LambdaOutcome {
  bool ok = true;
  std::string body;        // the summary JSON (ok) or the error message
  std::string error_type;  // when !ok: "DlqArchive.InvalidEvent", "DlqArchive.QueueFailed"
};

// The account in an SQS queue URL (https://sqs.R.amazonaws.com/ACCOUNT/NAME),
// "" for a plain name.
std::string QueueAccount(std::string_view name_or_url);

// One EMF line for a queue: Archived and Failed (Count), Duration
// (Milliseconds), dimension Queue.
std::string EmfLine(const std::string& metrics_namespace, const std::string& queue, uint64_t archived, uint64_t failed,
                    std::chrono::milliseconds duration, SystemTime now);

LambdaOutcome HandleLambdaEvent(std::string_view event_json, SystemTime deadline, const LambdaConfig& config,
                                LambdaDeps& deps);

// Polls `runtime` until Next fails or `stop` turns true, answering each
// invocation with `handle`'s outcome. Returns the Next failure (the process
// should exit; Lambda starts a new one).
Status RunLambdaLoop(RuntimeClient& runtime, const std::function<LambdaOutcome(const Invocation&)>& handle,
                     const std::atomic<bool>& stop);

}  // namespace dlq
