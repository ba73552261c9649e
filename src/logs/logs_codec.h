// The CloudWatch Logs AWS JSON 1.1 wire format for the calls LogsClient
// makes: request bodies and response parsers, free functions so tests and
// the fuzzer reach them directly. Pure and thread-safe. Parsers never trust
// their input: malformed or wrongly typed JSON is kInternal ("malformed
// FilterLogEvents response: events[2].timestamp is not an integer"), never
// a crash. Absent or null optional fields read as unset.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "logs/logs_client.h"

namespace dlq::logs {

// One page; next_token is empty on the last one.
struct FilterLogEventsPage {
  std::vector<FilteredLogEvent> events;  // log_group set to the `log_group` argument
  std::string next_token;
};

struct DescribeLogGroupsPage {
  std::vector<LogGroupInfo> groups;
  std::string next_token;
};

// The request body of one FilterLogEvents page (nextToken when non-empty;
// request.next_token is not read).
std::string BuildFilterLogEventsRequest(const FilterLogEventsRequest& request, std::string_view next_token);
std::string BuildDescribeLogGroupsRequest(std::string_view prefix, std::string_view next_token);

Result<FilterLogEventsPage> ParseFilterLogEventsResponse(std::string_view json, std::string_view log_group);
Result<DescribeLogGroupsPage> ParseDescribeLogGroupsResponse(std::string_view json);

// A log group ARN without its trailing ":*" (DescribeLogGroups' "arn" has it).
std::string_view TrimArnWildcard(std::string_view arn);

}  // namespace dlq::logs
