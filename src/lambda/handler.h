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
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "archiver/drain_options.h"
#include "aws/aws_client.h"
#include "common/clock.h"
#include "lambda/event.h"
#include "lambda/runtime_client.h"
#include "s3/object_store.h"
#include "sqs/sqs_client.h"

namespace dlq {

struct LambdaConfig {
  std::vector<std::string> queues;  // DLQ_ARCHIVE_QUEUES: schedules and direct invokes without "queues"
  DrainOptions drain;               // batch, SSE, key layout, default policy
  std::chrono::milliseconds deadline_margin{10000};
  int max_hops = 5;  // self-invocations in one chain
  std::string metrics_namespace = "DlqArchive";
  std::string destination_uri;  // for the summary only
  std::string host;             // recorded in archive records
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
