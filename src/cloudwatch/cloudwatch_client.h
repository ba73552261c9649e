// CloudWatchClient: GetMetricData and PutMetricData over the CloudWatch Query
// protocol (form-encoded POST, XML responses). Thread-safe; the AwsClient
// must outlive it and be built with ServiceEndpoint{.service = "monitoring"}.
// Failures carry the AWS error code and request id (via AwsClient).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aws/aws_client.h"
#include "aws/query_form.h"
#include "common/clock.h"
#include "common/status.h"

namespace dlq {

struct MetricDimension {
  std::string name;
  std::string value;
};

// One MetricStat query.
struct MetricDataQuery {
  std::string id;  // [a-z][a-zA-Z0-9_]*, unique within a call
  std::string metric_namespace;
  std::string metric_name;
  std::vector<MetricDimension> dimensions;
  std::chrono::seconds period{300};
  std::string stat = "Maximum";  // Average, Sum, Minimum, Maximum, SampleCount, p99 ...
  std::string unit;              // optional
};

// An AWS/SQS metric of one queue, e.g. ApproximateAgeOfOldestMessage.
MetricDataQuery SqsQueueMetricQuery(std::string id, std::string queue_name, std::string metric_name,
                                    std::string stat = "Maximum",
                                    std::chrono::seconds period = std::chrono::seconds(300));

// The datapoints of one query id, in ascending time order.
struct MetricDataSeries {
  std::string id;
  std::string label;
  std::vector<SystemTime> timestamps;
  std::vector<double> values;  // same length as timestamps
  std::string status_code;     // "Complete", "PartialData", "InternalError", "Forbidden"
};

struct MetricDatum {
  std::string metric_name;
  std::vector<MetricDimension> dimensions;  // at most 30
  double value = 0;                         // finite
  std::string unit;                         // "Count", "Seconds", ...; empty for none
  std::optional<SystemTime> timestamp;      // empty: the time CloudWatch receives it
};

class CloudWatchClient {
 public:
  static constexpr size_t kMaxDatumsPerPut = 1000;
  static constexpr size_t kMaxQueriesPerGet = 500;
  static constexpr size_t kMaxPutBodyBytes = size_t{1000} * 1000;

  explicit CloudWatchClient(AwsClient& client) : client_(client) {}

  // Runs the queries over [start, end), following NextToken, and returns the
  // series keyed by query id. At most 500 queries.
  Result<std::map<std::string, MetricDataSeries>> GetMetricData(const std::vector<MetricDataQuery>& queries,
                                                                SystemTime start, SystemTime end);
  // Sends the datums in calls of at most 1000 datums (and under 1 MB). Stops
  // at the first failed call; datums of earlier calls stay published.
  Status PutMetricData(const std::string& metric_namespace, const std::vector<MetricDatum>& datums);

 private:
  AwsClient& client_;
};

// Query-protocol form builders (pure; exposed for tests and fuzzing);
// FormParams and EncodeForm: aws/query_form.h.
FormParams BuildGetMetricDataParams(const std::vector<MetricDataQuery>& queries, SystemTime start, SystemTime end,
                                    const std::string& next_token);
FormParams BuildPutMetricDataParams(const std::string& metric_namespace, std::span<const MetricDatum> datums);

struct GetMetricDataPage {
  std::vector<MetricDataSeries> results;
  std::string next_token;
};
// Parses a <GetMetricDataResponse>; kInternal for malformed input.
Result<GetMetricDataPage> ParseGetMetricDataResponse(std::string_view xml);

}  // namespace dlq
