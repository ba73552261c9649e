#include "logs/logs_codec.h"

#include "aws/json_response.h"
#include "common/json_writer.h"
#include "common/strings.h"

namespace dlq::logs {

std::string_view TrimArnWildcard(std::string_view arn) {
  if (EndsWith(arn, ":*")) arn.remove_suffix(2);
  return arn;
}

std::string BuildFilterLogEventsRequest(const FilterLogEventsRequest& request, std::string_view next_token) {
  JsonWriter w;
  w.BeginObject();
  if (StartsWith(request.log_group, "arn:")) {
    w.Key("logGroupIdentifier").String(TrimArnWildcard(request.log_group));
  } else {
    w.Key("logGroupName").String(request.log_group);
  }
  if (!request.log_stream_names.empty()) {
    w.Key("logStreamNames").BeginArray();
    for (const std::string& stream : request.log_stream_names) w.String(stream);
    w.EndArray();
  }
  if (request.start_time_ms) w.Key("startTime").Int(*request.start_time_ms);
  if (request.end_time_ms) w.Key("endTime").Int(*request.end_time_ms);
  if (!request.filter_pattern.empty()) w.Key("filterPattern").String(request.filter_pattern);
  if (request.page_limit > 0) w.Key("limit").Int(request.page_limit);
  if (!next_token.empty()) w.Key("nextToken").String(next_token);
  w.EndObject();
  return w.Take();
}

std::string BuildDescribeLogGroupsRequest(std::string_view prefix, std::string_view next_token) {
  JsonWriter w;
  w.BeginObject();
  w.Key("logGroupNamePrefix").String(prefix);
  if (!next_token.empty()) w.Key("nextToken").String(next_token);
  w.EndObject();
  return w.Take();
}

namespace {

Result<FilteredLogEvent> ParseEvent(const JsonFields& e, std::string_view log_group) {
  FilteredLogEvent event;
  event.log_group = std::string(log_group);
  std::optional<int64_t> timestamp;
  DLQ_RETURN_IF_ERROR(e.String("logStreamName", event.log_stream));
  DLQ_RETURN_IF_ERROR(e.Int64("timestamp", timestamp));
  DLQ_RETURN_IF_ERROR(e.String("message", event.message));
  DLQ_RETURN_IF_ERROR(e.String("eventId", event.event_id));
  if (!timestamp) return e.Malformed("timestamp", "is missing");
  event.timestamp_ms = *timestamp;
  return event;
}

Result<LogGroupInfo> ParseGroup(const JsonFields& g) {
  LogGroupInfo group;
  std::string arn;
  std::string group_arn;
  DLQ_RETURN_IF_ERROR(g.String("logGroupName", group.name));
  DLQ_RETURN_IF_ERROR(g.String("arn", arn));
  DLQ_RETURN_IF_ERROR(g.String("logGroupArn", group_arn));
  DLQ_RETURN_IF_ERROR(g.Int("retentionInDays", group.retention_in_days));
  DLQ_RETURN_IF_ERROR(g.Int64("creationTime", group.creation_time_ms));
  DLQ_RETURN_IF_ERROR(g.Int64("storedBytes", group.stored_bytes));
  DLQ_RETURN_IF_ERROR(g.String("logGroupClass", group.log_group_class));
  if (group.name.empty()) return g.Malformed("logGroupName", "is missing");
  group.arn = group_arn.empty() ? std::string(TrimArnWildcard(arn)) : group_arn;
  return group;
}

}  // namespace

Result<FilterLogEventsPage> ParseFilterLogEventsResponse(std::string_view json, std::string_view log_group) {
  JsonDocument doc;
  DLQ_ASSIGN_OR_RETURN(JsonFields root, doc.Parse(json, "FilterLogEvents response"));
  FilterLogEventsPage page;
  DLQ_ASSIGN_OR_RETURN(std::vector<JsonFields> events, root.Objects("events"));
  page.events.reserve(events.size());
  for (const JsonFields& e : events) {
    DLQ_ASSIGN_OR_RETURN(FilteredLogEvent event, ParseEvent(e, log_group));
    page.events.push_back(std::move(event));
  }
  DLQ_RETURN_IF_ERROR(root.String("nextToken", page.next_token));
  return page;
}

Result<DescribeLogGroupsPage> ParseDescribeLogGroupsResponse(std::string_view json) {
  JsonDocument doc;
  DLQ_ASSIGN_OR_RETURN(JsonFields root, doc.Parse(json, "DescribeLogGroups response"));
  DescribeLogGroupsPage page;
  DLQ_ASSIGN_OR_RETURN(std::vector<JsonFields> groups, root.Objects("logGroups"));
  for (const JsonFields& g : groups) {
    DLQ_ASSIGN_OR_RETURN(LogGroupInfo group, ParseGroup(g));
    page.groups.push_back(std::move(group));
  }
  DLQ_RETURN_IF_ERROR(root.String("nextToken", page.next_token));
  return page;
}

}  // namespace dlq::logs
