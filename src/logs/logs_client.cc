#include "logs/logs_client.h"

#include <fmt/format.h>

#include <set>

#include "logs/logs_codec.h"

namespace dlq {
namespace {

constexpr size_t kMaxStreams = 100;
constexpr int kMaxPageLimit = 10000;
constexpr int kMaxCalls = 1000;
constexpr int kFindLogGroupCalls = 20;

// `error` with `hint` appended, code and AWS details kept.
Status WithHint(const Status& error, std::string_view hint) {
  Status out(error.code(), fmt::format("{} ({})", error.message(), hint));
  if (error.aws()) out = out.WithAws(*error.aws());
  return out;
}

// Says what a denied or missing resource means for a log group.
Status Explain(const Status& error, std::string_view operation, std::string_view log_group) {
  switch (error.code()) {
    case ErrorCode::kPermissionDenied:
      return WithHint(error, fmt::format("needs logs:{} on log group {}", operation, log_group));
    case ErrorCode::kNotFound: return WithHint(error, fmt::format("log group {} does not exist", log_group));
    default: return error;
  }
}

}  // namespace

Status FilterLogEventsRequest::Validate() const {
  if (log_group.empty()) return InvalidArgument("FilterLogEvents: no log group");
  if (log_stream_names.size() > kMaxStreams) {
    return InvalidArgument(
        fmt::format("FilterLogEvents {}: {} log streams, at most {}", log_group, log_stream_names.size(), kMaxStreams));
  }
  if (start_time_ms && end_time_ms && *start_time_ms > *end_time_ms) {
    return InvalidArgument(
        fmt::format("FilterLogEvents {}: startTime {} is after endTime {}", log_group, *start_time_ms, *end_time_ms));
  }
  if ((start_time_ms && *start_time_ms < 0) || (end_time_ms && *end_time_ms < 0)) {
    return InvalidArgument(fmt::format("FilterLogEvents {}: a negative time", log_group));
  }
  if (page_limit < 0 || page_limit > kMaxPageLimit) {
    return InvalidArgument(
        fmt::format("FilterLogEvents {}: page_limit {} is outside 0..{}", log_group, page_limit, kMaxPageLimit));
  }
  if (max_calls < 1 || max_calls > kMaxCalls) {
    return InvalidArgument(
        fmt::format("FilterLogEvents {}: max_calls {} is outside 1..{}", log_group, max_calls, kMaxCalls));
  }
  if (max_events < 1)
    return InvalidArgument(fmt::format("FilterLogEvents {}: max_events must be at least 1", log_group));
  return Status::Ok();
}

Result<std::string> QuotedFilterTerm(std::string_view term) {
  if (term.empty()) return InvalidArgument("filter term: empty");
  for (char c : term) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\' || u < 0x20 || u == 0x7f) {
      return InvalidArgument(
          fmt::format("filter term '{}': holds a quote, backslash or control character", term.substr(0, 80)));
    }
  }
  return fmt::format("\"{}\"", term);
}

RetryOptions LogsRetryOptions() {
  RetryOptions retry;
  retry.max_attempts = 8;
  retry.base_delay = std::chrono::milliseconds(200);
  retry.max_delay = std::chrono::milliseconds(10000);
  return retry;
}

Result<std::optional<LogGroupInfo>> FindLogGroup(LogsClient& logs, const std::string& name) {
  DLQ_ASSIGN_OR_RETURN(LogGroupList list, logs.DescribeLogGroups(name, kFindLogGroupCalls));
  for (LogGroupInfo& group : list.groups) {
    if (group.name == name) return std::optional<LogGroupInfo>(std::move(group));
  }
  if (!list.complete) {
    return FailedPrecondition(fmt::format(
        "DescribeLogGroups {}: more log groups start with this name than {} calls list", name, kFindLogGroupCalls));
  }
  return std::optional<LogGroupInfo>();
}

Result<std::string> AwsLogsClient::Invoke(std::string_view operation, const std::string& resource, std::string body) {
  AwsRequest request;
  request.headers = {{"Content-Type", "application/x-amz-json-1.1"},
                     {"X-Amz-Target", fmt::format("Logs_20140328.{}", operation)}};
  request.operation = std::string(operation);
  request.resource = resource;  // POST / are AwsRequest's defaults
  request.body = std::move(body);
  auto response = aws_.Call(request);
  if (!response.ok()) return Explain(response.status(), operation, resource);
  return std::move(response->body);
}

Result<FilterLogEventsResult> AwsLogsClient::FilterLogEvents(const FilterLogEventsRequest& request) {
  DLQ_RETURN_IF_ERROR(request.Validate());
  FilterLogEventsResult result;
  std::set<std::string> seen_tokens;
  std::string token = request.next_token;
  while (result.calls < request.max_calls) {
    ++result.calls;
    DLQ_ASSIGN_OR_RETURN(std::string body, Invoke("FilterLogEvents", request.log_group,
                                                  logs::BuildFilterLogEventsRequest(request, token)));
    auto page = logs::ParseFilterLogEventsResponse(body, request.log_group);
    if (!page.ok()) return page.status().WithContext(fmt::format("FilterLogEvents {}", request.log_group));
    for (FilteredLogEvent& event : page->events) {
      if (result.events.size() == request.max_events) {
        result.next_token = token;  // reads this page again: the rest of it is dropped here
        return result;
      }
      result.events.push_back(std::move(event));
    }
    if (page->next_token.empty()) {
      result.complete = true;
      return result;
    }
    if (!seen_tokens.insert(page->next_token).second) {
      return Internal(
          fmt::format("FilterLogEvents {}: pagination loop: the service repeated a nextToken", request.log_group));
    }
    token = std::move(page->next_token);
  }
  result.next_token = std::move(token);
  return result;
}

Result<LogGroupList> AwsLogsClient::DescribeLogGroups(const std::string& prefix, int max_calls) {
  if (prefix.empty()) return InvalidArgument("DescribeLogGroups: empty log group name prefix");
  if (max_calls < 1 || max_calls > kMaxCalls) {
    return InvalidArgument(
        fmt::format("DescribeLogGroups {}: max_calls {} is outside 1..{}", prefix, max_calls, kMaxCalls));
  }
  LogGroupList list;
  std::set<std::string> seen_tokens;
  std::string token;
  while (list.calls < max_calls) {
    ++list.calls;
    DLQ_ASSIGN_OR_RETURN(std::string body,
                         Invoke("DescribeLogGroups", prefix, logs::BuildDescribeLogGroupsRequest(prefix, token)));
    auto page = logs::ParseDescribeLogGroupsResponse(body);
    if (!page.ok()) return page.status().WithContext(fmt::format("DescribeLogGroups {}", prefix));
    for (LogGroupInfo& group : page->groups) list.groups.push_back(std::move(group));
    if (page->next_token.empty()) {
      list.complete = true;
      return list;
    }
    if (!seen_tokens.insert(page->next_token).second) {
      return Internal(fmt::format("DescribeLogGroups {}: pagination loop: the service repeated a nextToken", prefix));
    }
    token = std::move(page->next_token);
  }
  return list;
}

}  // namespace dlq
