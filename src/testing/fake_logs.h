// A LogsClient for tests: log groups and their events held in memory,
// FilterLogEvents answered with the same paging and caps as AwsLogsClient,
// every API call counted, and failures on command ("throttle the next 3
// calls", "deny FilterLogEvents"). Thread-safe.
//
// Filter patterns: empty (every event), or terms separated by spaces, each
// a bare word or a "quoted term", all of which an event's message must
// contain (case-sensitive). Any other syntax is kInvalidArgument.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "logs/logs_client.h"

namespace dlq {

class FakeLogsClient final : public LogsClient {
 public:
  Result<FilterLogEventsResult> FilterLogEvents(const FilterLogEventsRequest& request) override;
  Result<LogGroupList> DescribeLogGroups(const std::string& prefix, int max_calls) override;

  // Creates the group (no-op when it exists; retention replaced).
  void AddGroup(const std::string& name, std::optional<int> retention_in_days = std::nullopt);
  // Adds an event, creating its group when missing.
  void AddEvent(const std::string& group, const std::string& stream, int64_t timestamp_ms, std::string message);

  // Events per FilterLogEvents page when the request sets no page_limit
  // (AWS: up to 10,000 or 1 MB). Log groups per DescribeLogGroups page: 50.
  void SetPageSize(int events);
  // The next `n` API calls (either operation) fail with kThrottled
  // (ThrottlingException, HTTP 400), as AwsLogsClient does once its retries
  // are used up. A FilterLogEvents call that fails on a later page fails whole.
  void ThrottleNext(int n);
  // Every call of `operation` ("FilterLogEvents", "DescribeLogGroups")
  // fails with kPermissionDenied (AccessDeniedException); "" stops denying.
  void Deny(const std::string& operation);

  // API calls made (pages, not client calls), throttled and denied ones included.
  int filter_calls() const;
  int describe_calls() const;

 private:
  struct StoredEvent {
    std::string stream;
    int64_t timestamp_ms = 0;
    std::string message;
    int64_t id = 0;
  };
  struct Group {
    std::optional<int> retention_in_days;
    std::vector<StoredEvent> events;
  };

  // Counts one call of `operation` and returns its injected failure, if any.
  Status BeginCall(const std::string& operation, const std::string& group) DLQ_REQUIRES(mu_);

  mutable Mutex mu_;
  std::map<std::string, Group> groups_ DLQ_GUARDED_BY(mu_);
  int64_t next_event_id_ DLQ_GUARDED_BY(mu_) = 1;
  int page_size_ DLQ_GUARDED_BY(mu_) = 10000;
  int throttle_next_ DLQ_GUARDED_BY(mu_) = 0;
  std::string denied_ DLQ_GUARDED_BY(mu_);
  int filter_calls_ DLQ_GUARDED_BY(mu_) = 0;
  int describe_calls_ DLQ_GUARDED_BY(mu_) = 0;
};

}  // namespace dlq
