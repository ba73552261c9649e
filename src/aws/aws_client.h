// AwsClient: signs, sends and retries one AWS API call. Used by every service
// client (SQS, S3, CloudWatch, STS). Thread-safe; holds references to the
// transport, credentials provider and clock, which must outlive it.
//
// Retries use exponential backoff with full jitter for throttling, 5xx and
// connection errors; RequestTimeTooSkewed corrects the clock offset and
// retries; ExpiredToken invalidates the credentials and retries once. Every
// other error is returned at once with the AWS error code, message, HTTP
// status and request id. No secret ever appears in a returned Status.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include "aws/credentials.h"
#include "aws/http.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"

namespace dlq {

struct RetryOptions {
  int max_attempts = 6;                      // total attempts, first one included
  std::chrono::milliseconds base_delay{50};  // backoff cap for attempt n: min(max, base * 2^n)
  std::chrono::milliseconds max_delay{10000};
  Status Validate() const;
};

// Full jitter: a uniform random delay in [0, min(max_delay, base_delay * 2^attempt)].
std::chrono::milliseconds BackoffDelay(const RetryOptions& options, int attempt, std::mt19937_64& rng);

// Where and how to reach one service.
struct ServiceEndpoint {
  std::string service;   // signing name: "sqs", "s3", "monitoring", "sts"
  std::string region;    // signing region
  std::string endpoint;  // base URL without trailing slash, e.g. "https://sqs.us-east-1.amazonaws.com"
  bool s3 = false;       // S3 signing rules (see SigningOptions::s3)
};

struct AwsRequest {
  std::string operation;  // "ReceiveMessage", "PutObject": for errors, logs and metrics
  std::string resource;   // what it acts on, for errors: a queue URL, "s3://bucket/key"
  std::string method = "POST";
  std::string path = "/";  // already percent-encoded, joined to the endpoint's path
  std::string query;       // already percent-encoded, without '?'
  HttpHeaders headers;
  std::string body;
  // When set, sent instead of `body` and never copied: the caller keeps the
  // bytes alive until Call returns (object uploads).
  std::optional<std::string_view> body_view;
  bool unsigned_payload = false;  // S3 only
  std::chrono::milliseconds timeout{0};
  // Override the endpoint's host for this call (S3 virtual-hosted style).
  std::string host_override;
  // Abandons the call (kCancelled, never retried) once it turns true. Not owned.
  const std::atomic<bool>* cancel = nullptr;
  // False: a throttled answer (kThrottled) is returned at once, for callers
  // that pace themselves (Lambda Invoke's 429). 5xx are still retried.
  bool retry_throttled = true;
};

// One finished API call, for metrics.
struct CallRecord {
  std::string service;
  std::string operation;
  int attempts = 0;
  int http_status = 0;  // of the last attempt, 0 when no response
  std::chrono::microseconds latency{0};
  ErrorCode code = ErrorCode::kOk;
  std::string aws_error_code;
};
using CallObserver = std::function<void(const CallRecord&)>;

// Builds the Status for an AWS error response: parses the error code and
// message from a JSON 1.0 body ("__type"/"code", "message"), an XML body
// (<Error><Code>/<Message>, with or without <ErrorResponse>), or the
// x-amzn-query-error header, takes the request id from x-amzn-RequestId,
// x-amz-request-id or the body, and maps the code to an ErrorCode
// (throttling -> kThrottled, 5xx -> kUnavailable, AccessDenied/KMS ->
// kPermissionDenied, signature/credential errors -> kUnauthenticated,
// QueueDoesNotExist/NoSuchBucket/NoSuchKey -> kNotFound,
// PreconditionFailed/412 with If-None-Match -> kAlreadyExists ...).
Status ErrorFromResponse(const HttpResponse& response, std::string_view operation, std::string_view resource);

class AwsClient {
 public:
  AwsClient(ServiceEndpoint endpoint, HttpTransport& transport, CredentialsProvider& credentials, Clock& clock,
            RetryOptions retry = {});

  // Signs and sends the request, retrying as described above. Returns the
  // response when its status is 2xx (or 3xx/304), otherwise the error.
  Result<HttpResponse> Call(const AwsRequest& request);

  const ServiceEndpoint& endpoint() const { return endpoint_; }
  void SetObserver(CallObserver observer);
  // Seconds to add to the local clock when signing (learned from
  // RequestTimeTooSkewed responses).
  std::chrono::seconds clock_skew() const { return std::chrono::seconds(skew_seconds_.load()); }

 private:
  // The self-corrections one Call has made (each at most once).
  struct Corrections {
    bool skew = false;
    bool credentials = false;
  };
  // One attempt's request, signed with the clock skew learned so far.
  HttpRequest Sign(const AwsRequest& request, const std::string& url, const Credentials& creds) const;
  // Corrects what an error response says (clock skew, an expired token) and
  // returns true when an extra attempt can help.
  bool Correct(const HttpResponse& response, const Status& error, Corrections& done);
  // Sleeps the jittered backoff after failed attempt `attempt` (from 1).
  void Backoff(int attempt);
  // Tells the observer how the call went and returns `result`.
  Result<HttpResponse> Report(CallRecord& record, SteadyTime start, Result<HttpResponse> result);

  ServiceEndpoint endpoint_;
  HttpTransport& transport_;
  CredentialsProvider& credentials_;
  Clock& clock_;
  RetryOptions retry_;
  std::atomic<int64_t> skew_seconds_{0};
  Mutex mu_;
  std::mt19937_64 rng_ DLQ_GUARDED_BY(mu_);
  CallObserver observer_ DLQ_GUARDED_BY(mu_);
};

}  // namespace dlq
