// Lambda's REST-JSON wire format for the calls LambdaApi makes: request
// paths and query strings, and response parsers, free functions so tests and
// the fuzzer reach them directly. Pure and thread-safe. Parsers never trust
// their input: malformed or wrongly typed JSON is kInternal ("malformed
// ListFunctions response: Functions[0].Timeout is not an integer"), never a
// crash. Absent or null optional fields read as unset.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "lambda_api/lambda_api.h"

namespace dlq::lambda_api {

inline constexpr std::string_view kApiVersion = "/2015-03-31";
// The API version of the event-invoke-config calls.
inline constexpr std::string_view kEventInvokeConfigVersion = "/2019-09-25";

// "/2015-03-31/functions/<name, percent-encoded>/<leaf>" (leaf "configuration", "invocations").
std::string FunctionPath(std::string_view function, std::string_view leaf);
// "/2019-09-25/functions/<name, percent-encoded>/event-invoke-config".
std::string EventInvokeConfigPath(std::string_view function);
// "EventSourceArn=...&Marker=...&MaxItems=N": percent-encoded, sorted (Marker when non-empty).
std::string ListEventSourceMappingsQuery(std::string_view event_source_arn, std::string_view marker, int max_items);
std::string ListFunctionsQuery(std::string_view marker, int max_items);

struct EventSourceMappingPage {
  std::vector<EventSourceMapping> mappings;
  std::string next_marker;  // empty on the last page
};
struct FunctionPage {
  std::vector<FunctionConfiguration> functions;
  std::string next_marker;
};

Result<EventSourceMappingPage> ParseListEventSourceMappingsResponse(std::string_view json);
Result<FunctionConfiguration> ParseFunctionConfigurationResponse(std::string_view json);
Result<FunctionPage> ParseListFunctionsResponse(std::string_view json);
Result<EventInvokeConfig> ParseEventInvokeConfigResponse(std::string_view json);

}  // namespace dlq::lambda_api
