// LambdaApi: the AWS Lambda calls that find an SQS queue's consumers and
// their logs, and that send a message back to a function, as an interface
// so the callers run against FakeLambdaApi in tests. AwsLambdaApi implements
// it on Lambda's REST-JSON API (paths /2015-03-31/...) over AwsClient.
//
// Every implementation is thread-safe. Errors carry the operation and the
// function or event source: AccessDeniedException is kPermissionDenied
// naming the IAM action, ResourceNotFoundException kNotFound. The listing
// and configuration calls are retried by the AwsClient when throttled;
// Invoke is not: a 429 (TooManyRequestsException) comes back at once as
// kThrottled so the caller can pause its own pace. 5xx are retried for every
// call, Invoke included (an invocation may then run twice, as with the SDKs).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aws/aws_client.h"
#include "common/status.h"

namespace dlq {

struct EventSourceMapping {
  std::string uuid;
  std::string function_arn;
  std::string event_source_arn;
  std::string state;                                 // "Enabled", "Disabled", "Creating", ...
  std::vector<std::string> function_response_types;  // "ReportBatchItemFailures"
  std::optional<int> batch_size;
  // True when the function reports partial batch failures.
  bool ReportsBatchItemFailures() const;
};

struct FunctionConfiguration {
  std::string function_name;
  std::string function_arn;
  std::string version;     // "$LATEST", "3"; empty when not said
  std::string log_group;   // LoggingConfig.LogGroup; empty when not said
  std::string log_format;  // LoggingConfig.LogFormat: "Text" or "JSON"; empty when not said
  std::optional<int> timeout_seconds;
  std::optional<int> memory_size_mb;
  std::string dead_letter_target_arn;  // DeadLetterConfig.TargetArn; empty when none
  // log_group, else Lambda's default "/aws/lambda/<function_name>".
  std::string LogGroupOrDefault() const;
};

// How Lambda handles a function's failed asynchronous invocations
// (GetFunctionEventInvokeConfig;
// https://docs.aws.amazon.com/lambda/latest/api/API_GetFunctionEventInvokeConfig.html).
struct EventInvokeConfig {
  std::optional<int> maximum_retry_attempts;     // 0-2; unset: Lambda's default, 2
  std::optional<int> maximum_event_age_seconds;  // 60-21600; unset: 6 hours
  // DestinationConfig.OnFailure.Destination: the ARN of an SQS queue, SNS
  // topic, S3 bucket, function or bus that gets a record of each failed
  // event; empty when none.
  std::string on_failure_destination;
  std::string on_success_destination;
};

enum class InvocationType { kEvent, kRequestResponse, kDryRun };
std::string_view InvocationTypeName(InvocationType type);  // "Event", ...

struct InvokeRequest {
  std::string function_name;  // a name, a partial or full ARN (a qualifier in the ARN is allowed)
  InvocationType type = InvocationType::kEvent;
  std::string qualifier;  // version or alias; empty: $LATEST (or the ARN's)
  std::string payload;    // sent byte for byte; empty: no body
  Status Validate() const;
};

struct InvokeResult {
  int status_code = 0;           // 200 RequestResponse, 202 Event, 204 DryRun
  std::string function_error;    // X-Amz-Function-Error: "Unhandled", "Handled"; empty when the function succeeded
  std::string executed_version;  // X-Amz-Executed-Version (RequestResponse)
  std::string request_id;        // x-amzn-RequestId
  std::string payload;           // the function's response or error document (RequestResponse)
};

class LambdaApi {
 public:
  virtual ~LambdaApi() = default;

  // The mappings whose event source is `event_source_arn` (a queue ARN),
  // following NextMarker.
  virtual Result<std::vector<EventSourceMapping>> ListEventSourceMappings(const std::string& event_source_arn) = 0;
  // `function`: a name, a partial or full ARN (with a qualifier, that version's configuration).
  virtual Result<FunctionConfiguration> GetFunctionConfiguration(const std::string& function) = 0;
  // Every function of the region (their $LATEST), following NextMarker.
  virtual Result<std::vector<FunctionConfiguration>> ListFunctions() = 0;
  // The function's (with `qualifier`, that version's or alias's)
  // asynchronous-invocation settings; nullopt when it has none (Lambda
  // answers ResourceNotFoundException for a function without them, so the
  // caller checks the function exists first).
  virtual Result<std::optional<EventInvokeConfig>> GetFunctionEventInvokeConfig(const std::string& function,
                                                                                const std::string& qualifier) = 0;
  // A function error (X-Amz-Function-Error) is a successful call: see
  // InvokeResult::function_error.
  virtual Result<InvokeResult> Invoke(const InvokeRequest& request) = 0;
};

// Lambda over REST-JSON. Holds a reference to `aws`, which must outlive it
// and be built with ServiceEndpoint{.service = "lambda"}.
class AwsLambdaApi final : public LambdaApi {
 public:
  explicit AwsLambdaApi(AwsClient& aws) : aws_(aws) {}

  Result<std::vector<EventSourceMapping>> ListEventSourceMappings(const std::string& event_source_arn) override;
  Result<FunctionConfiguration> GetFunctionConfiguration(const std::string& function) override;
  Result<std::vector<FunctionConfiguration>> ListFunctions() override;
  Result<std::optional<EventInvokeConfig>> GetFunctionEventInvokeConfig(const std::string& function,
                                                                        const std::string& qualifier) override;
  Result<InvokeResult> Invoke(const InvokeRequest& request) override;

 private:
  // Sends `request`; errors explained with the IAM action `action` on `resource`.
  Result<HttpResponse> Call(const AwsRequest& request, std::string_view action);

  AwsClient& aws_;
};

}  // namespace dlq
