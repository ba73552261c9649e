// LogsClient: the CloudWatch Logs calls that find why a message failed in
// its consumer's logs, as an interface so the cause lookup runs against
// FakeLogsClient in tests. AwsLogsClient implements it on the AWS JSON 1.1
// protocol (X-Amz-Target Logs_20140328.<Operation>) over AwsClient.
//
// Every implementation is thread-safe. Throttling (ThrottlingException,
// LimitExceededException, 429) and 5xx are retried by the AwsClient with
// backoff and full jitter (LogsRetryOptions); once its attempts are used up
// the call fails with kThrottled (or kUnavailable for 5xx), the AWS error
// code and "after N attempts". AccessDeniedException is kPermissionDenied
// naming the action and the log group; ResourceNotFoundException (no such
// group) is kNotFound. A response that does not parse is kInternal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aws/aws_client.h"
#include "common/status.h"

namespace dlq {

// One log event FilterLogEvents found.
struct FilteredLogEvent {
  std::string log_group;  // as the request named it
  std::string log_stream;
  int64_t timestamp_ms = 0;  // when the event happened (ms since the epoch)
  std::string message;
  std::string event_id;
};

struct FilterLogEventsRequest {
  // A log group name, or its ARN (sent as logGroupIdentifier; a trailing
  // ":*" is dropped).
  std::string log_group;
  std::vector<std::string> log_stream_names;  // empty: every stream; at most 100
  std::optional<int64_t> start_time_ms;       // events before it are not returned
  std::optional<int64_t> end_time_ms;         // events after it are not returned
  // CloudWatch Logs filter pattern syntax; empty matches every event. One
  // message id: QuotedFilterTerm(id).
  std::string filter_pattern;
  int page_limit = 0;        // events per call, 1..10000; 0: the service's own (up to 1 MB)
  int max_calls = 5;         // FilterLogEvents calls at most, 1..1000
  size_t max_events = 1000;  // events kept at most, >= 1
  std::string next_token;    // continues an earlier search (its result's next_token)
  Status Validate() const;
};

struct FilterLogEventsResult {
  std::vector<FilteredLogEvent> events;  // in the order the pages gave them
  int calls = 0;                         // FilterLogEvents calls made (each one's retries not counted)
  // True when the search reached its last page. False when max_calls or
  // max_events stopped it first; next_token (when set) continues it from the
  // page that was not read or was cut short (whose kept events come again).
  bool complete = false;
  std::string next_token;
};

struct LogGroupInfo {
  std::string name;
  std::string arn;                       // without the trailing ":*"
  std::optional<int> retention_in_days;  // unset: the events never expire
  std::optional<int64_t> creation_time_ms;
  std::optional<int64_t> stored_bytes;
  std::string log_group_class;  // "STANDARD", "INFREQUENT_ACCESS"; empty when not said
};

struct LogGroupList {
  std::vector<LogGroupInfo> groups;
  int calls = 0;
  bool complete = false;  // false when max_calls stopped the listing
};

class LogsClient {
 public:
  virtual ~LogsClient() = default;

  // Follows nextToken until the last page or a cap of the request.
  virtual Result<FilterLogEventsResult> FilterLogEvents(const FilterLogEventsRequest& request) = 0;
  // The log groups whose name starts with `prefix` (non-empty), following
  // nextToken for at most `max_calls` calls.
  virtual Result<LogGroupList> DescribeLogGroups(const std::string& prefix, int max_calls) = 0;
};

// The group named exactly `name` (DescribeLogGroups by prefix, at most 20
// calls); nullopt when none is (kFailedPrecondition when the calls ran out
// before the listing ended).
Result<std::optional<LogGroupInfo>> FindLogGroup(LogsClient& logs, const std::string& name);

// `term` as a quoted filter-pattern term, `"abc-123"`: matches events whose
// message contains it exactly (case-sensitive). kInvalidArgument for an
// empty term or one holding '"', '\\' or control characters.
Result<std::string> QuotedFilterTerm(std::string_view term);

// Retries for the CloudWatch Logs AwsClient: its per-account request quotas
// are low, so throttling backs off longer than the default.
RetryOptions LogsRetryOptions();

// CloudWatch Logs over AWS JSON 1.1. Holds a reference to `aws`, which must
// outlive it and be built with ServiceEndpoint{.service = "logs"}.
class AwsLogsClient final : public LogsClient {
 public:
  explicit AwsLogsClient(AwsClient& aws) : aws_(aws) {}

  Result<FilterLogEventsResult> FilterLogEvents(const FilterLogEventsRequest& request) override;
  Result<LogGroupList> DescribeLogGroups(const std::string& prefix, int max_calls) override;

 private:
  // POSTs `body` with X-Amz-Target Logs_20140328.<operation>; returns the
  // response body, errors explained for `resource` (a log group).
  Result<std::string> Invoke(std::string_view operation, const std::string& resource, std::string body);

  AwsClient& aws_;
};

}  // namespace dlq
