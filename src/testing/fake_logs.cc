#include "testing/fake_logs.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/strings.h"
#include "logs/logs_codec.h"

namespace dlq {
namespace {

constexpr int kGroupsPerPage = 50;
constexpr std::string_view kTokenPrefix = "fake-token-";

// The terms of a filter pattern; kInvalidArgument for syntax the fake does not know.
Result<std::vector<std::string>> PatternTerms(std::string_view pattern) {
  std::vector<std::string> terms;
  size_t i = 0;
  while (i < pattern.size()) {
    if (pattern[i] == ' ') {
      ++i;
      continue;
    }
    if (pattern[i] == '"') {
      size_t close = pattern.find('"', i + 1);
      if (close == std::string_view::npos) return InvalidArgument(fmt::format("unclosed quote in '{}'", pattern));
      terms.emplace_back(pattern.substr(i + 1, close - i - 1));
      i = close + 1;
      continue;
    }
    size_t end = std::min(pattern.find(' ', i), pattern.size());
    std::string_view word = pattern.substr(i, end - i);
    if (!std::all_of(word.begin(), word.end(), [](char c) {
          return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        })) {
      return InvalidArgument(fmt::format("FakeLogsClient: unsupported filter pattern '{}'", pattern));
    }
    terms.emplace_back(word);
    i = end;
  }
  return terms;
}

// The name in a log group ARN ("arn:aws:logs:R:A:log-group:NAME[:*]"), or `group` itself.
std::string GroupName(std::string_view group) {
  if (!StartsWith(group, "arn:")) return std::string(group);
  group = logs::TrimArnWildcard(group);
  const size_t at = group.find(":log-group:");
  return std::string(at == std::string_view::npos ? group : group.substr(at + 11));
}

bool Matches(const std::vector<std::string>& terms, std::string_view message) {
  return std::all_of(terms.begin(), terms.end(),
                     [&](const std::string& t) { return message.find(t) != std::string_view::npos; });
}

Status Denied(std::string_view operation, std::string_view group) {
  AwsErrorInfo info{"AccessDeniedException", 400, "fake-request-id"};
  return PermissionDenied(fmt::format("{} {}: AccessDeniedException: User: arn:aws:iam::123456789012:user/test is not "
                                      "authorized to perform: logs:{} (needs logs:{} on log group {})",
                                      operation, group, operation, operation, group))
      .WithAws(std::move(info));
}

}  // namespace

void FakeLogsClient::AddGroup(const std::string& name, std::optional<int> retention_in_days) {
  MutexLock lock(mu_);
  groups_[name].retention_in_days = retention_in_days;
}

void FakeLogsClient::AddEvent(const std::string& group, const std::string& stream, int64_t timestamp_ms,
                              std::string message) {
  MutexLock lock(mu_);
  groups_[group].events.push_back({stream, timestamp_ms, std::move(message), next_event_id_++});
}

void FakeLogsClient::SetPageSize(int events) {
  MutexLock lock(mu_);
  page_size_ = std::max(1, events);
}

void FakeLogsClient::ThrottleNext(int n) {
  MutexLock lock(mu_);
  throttle_next_ = n;
}

void FakeLogsClient::Deny(const std::string& operation) {
  MutexLock lock(mu_);
  denied_ = operation;
}

int FakeLogsClient::filter_calls() const {
  MutexLock lock(mu_);
  return filter_calls_;
}

int FakeLogsClient::describe_calls() const {
  MutexLock lock(mu_);
  return describe_calls_;
}

Status FakeLogsClient::BeginCall(const std::string& operation, const std::string& group) {
  ++(operation == "FilterLogEvents" ? filter_calls_ : describe_calls_);
  if (throttle_next_ > 0) {
    --throttle_next_;
    AwsErrorInfo info{"ThrottlingException", 400, "fake-request-id"};
    return Throttled(fmt::format("{} {}: ThrottlingException: Rate exceeded (after 8 attempts)", operation, group))
        .WithAws(std::move(info));
  }
  if (!denied_.empty() && denied_ == operation) return Denied(operation, group);
  return Status::Ok();
}

Result<FilterLogEventsResult> FakeLogsClient::FilterLogEvents(const FilterLogEventsRequest& request) {
  DLQ_RETURN_IF_ERROR(request.Validate());
  DLQ_ASSIGN_OR_RETURN(std::vector<std::string> terms, PatternTerms(request.filter_pattern));
  MutexLock lock(mu_);
  const std::string name = GroupName(request.log_group);
  std::vector<const StoredEvent*> matching;
  if (auto it = groups_.find(name); it != groups_.end()) {
    for (const StoredEvent& e : it->second.events) {
      if (request.start_time_ms && e.timestamp_ms < *request.start_time_ms) continue;
      if (request.end_time_ms && e.timestamp_ms > *request.end_time_ms) continue;
      const auto& streams = request.log_stream_names;
      if (!streams.empty() && std::find(streams.begin(), streams.end(), e.stream) == streams.end()) continue;
      if (Matches(terms, e.message)) matching.push_back(&e);
    }
  }
  std::stable_sort(matching.begin(), matching.end(),
                   [](const StoredEvent* a, const StoredEvent* b) { return a->timestamp_ms < b->timestamp_ms; });
  const auto page = static_cast<size_t>(request.page_limit > 0 ? request.page_limit : page_size_);
  size_t offset = 0;
  if (!request.next_token.empty()) {
    offset = static_cast<size_t>(
        std::max<int64_t>(0, ParseInt64(request.next_token.substr(kTokenPrefix.size())).value_or(0)));
  }

  FilterLogEventsResult result;
  while (result.calls < request.max_calls) {
    ++result.calls;
    DLQ_RETURN_IF_ERROR(BeginCall("FilterLogEvents", request.log_group));
    if (!groups_.contains(name)) {
      AwsErrorInfo info{"ResourceNotFoundException", 400, "fake-request-id"};
      return NotFound(fmt::format("FilterLogEvents {}: ResourceNotFoundException: The specified log group does not "
                                  "exist. (log group {} does not exist)",
                                  request.log_group, request.log_group))
          .WithAws(std::move(info));
    }
    const size_t end = std::min(matching.size(), offset + page);
    for (size_t i = offset; i < end; ++i) {
      if (result.events.size() == request.max_events) {
        result.next_token = fmt::format("{}{}", kTokenPrefix, offset);
        return result;
      }
      const StoredEvent& e = *matching[i];
      result.events.push_back({request.log_group, e.stream, e.timestamp_ms, e.message, std::to_string(e.id)});
    }
    offset = end;
    if (offset >= matching.size()) {
      result.complete = true;
      return result;
    }
  }
  result.next_token = fmt::format("{}{}", kTokenPrefix, offset);
  return result;
}

Result<LogGroupList> FakeLogsClient::DescribeLogGroups(const std::string& prefix, int max_calls) {
  if (prefix.empty()) return InvalidArgument("DescribeLogGroups: empty log group name prefix");
  MutexLock lock(mu_);
  std::vector<std::pair<const std::string*, const Group*>> matching;
  for (const auto& [name, group] : groups_) {
    if (StartsWith(name, prefix)) matching.emplace_back(&name, &group);
  }
  LogGroupList list;
  size_t offset = 0;
  while (list.calls < max_calls) {
    ++list.calls;
    DLQ_RETURN_IF_ERROR(BeginCall("DescribeLogGroups", prefix));
    const size_t end = std::min(matching.size(), offset + kGroupsPerPage);
    for (size_t i = offset; i < end; ++i) {
      LogGroupInfo info;
      info.name = *matching[i].first;
      info.arn = "arn:aws:logs:us-east-1:123456789012:log-group:" + info.name;
      info.retention_in_days = matching[i].second->retention_in_days;
      info.log_group_class = "STANDARD";
      list.groups.push_back(std::move(info));
    }
    offset = end;
    if (offset >= matching.size()) {
      list.complete = true;
      break;
    }
  }
  return list;
}

}  // namespace dlq
