#include "lambda_api/lambda_api.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "common/strings.h"
#include "lambda_api/lambda_codec.h"

namespace dlq {
namespace {

constexpr int kMappingsPerPage = 100;
constexpr int kFunctionsPerPage = 50;
constexpr int kMaxPages = 10000;  // guards against a server that never ends pagination

bool ValidQualifier(std::string_view q) {
  if (q.empty() || q.size() > 128) return false;
  return std::all_of(q.begin(), q.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '$';
  });
}

// Follows NextMarker: `page(marker)` returns one page's items and next marker.
template <typename Item, typename PageFn>
Result<std::vector<Item>> ListAll(std::string_view what, PageFn&& page) {
  std::vector<Item> items;
  std::set<std::string> seen;
  std::string marker;
  for (int n = 0; n < kMaxPages; ++n) {
    auto result = page(marker);
    if (!result.ok()) return result.status();
    for (auto& item : result->first) items.push_back(std::move(item));
    if (result->second.empty()) return items;
    if (!seen.insert(result->second).second) {
      return Internal(fmt::format("{}: pagination loop: the service repeated a NextMarker", what));
    }
    marker = std::move(result->second);
  }
  return Internal(fmt::format("{}: pagination did not end after {} pages", what, kMaxPages));
}

}  // namespace

bool EventSourceMapping::ReportsBatchItemFailures() const {
  return std::find(function_response_types.begin(), function_response_types.end(), "ReportBatchItemFailures") !=
         function_response_types.end();
}

std::string FunctionConfiguration::LogGroupOrDefault() const {
  return log_group.empty() ? "/aws/lambda/" + function_name : log_group;
}

std::string_view InvocationTypeName(InvocationType type) {
  switch (type) {
    case InvocationType::kEvent: return "Event";
    case InvocationType::kRequestResponse: return "RequestResponse";
    case InvocationType::kDryRun: return "DryRun";
  }
  return "Event";
}

Status InvokeRequest::Validate() const {
  if (function_name.empty()) return InvalidArgument("Invoke: no function name");
  if (!qualifier.empty() && !ValidQualifier(qualifier)) {
    return InvalidArgument(fmt::format("Invoke {}: qualifier '{}' is not a version or alias name", function_name,
                                       qualifier.substr(0, 128)));
  }
  return Status::Ok();
}

Result<HttpResponse> AwsLambdaApi::Call(const AwsRequest& request, std::string_view action) {
  auto response = aws_.Call(request);
  if (response.ok() || response.status().code() != ErrorCode::kPermissionDenied) return response;
  const Status& error = response.status();
  Status explained(error.code(), fmt::format("{} (needs lambda:{} on {})", error.message(), action,
                                             request.resource.empty() ? "*" : request.resource));
  if (error.aws()) explained = explained.WithAws(*error.aws());
  return explained;
}

Result<std::vector<EventSourceMapping>> AwsLambdaApi::ListEventSourceMappings(const std::string& event_source_arn) {
  if (event_source_arn.empty()) return InvalidArgument("ListEventSourceMappings: no event source ARN");
  const std::string what = "ListEventSourceMappings " + event_source_arn;
  return ListAll<EventSourceMapping>(
      what, [&](const std::string& marker) -> Result<std::pair<std::vector<EventSourceMapping>, std::string>> {
        AwsRequest request;
        request.operation = "ListEventSourceMappings";
        request.resource = event_source_arn;
        request.method = "GET";
        request.path = std::string(lambda_api::kApiVersion) + "/event-source-mappings/";
        request.query = lambda_api::ListEventSourceMappingsQuery(event_source_arn, marker, kMappingsPerPage);
        DLQ_ASSIGN_OR_RETURN(HttpResponse response, Call(request, "ListEventSourceMappings"));
        auto page = lambda_api::ParseListEventSourceMappingsResponse(response.body);
        if (!page.ok()) return page.status().WithContext(what);
        return std::make_pair(std::move(page->mappings), std::move(page->next_marker));
      });
}

Result<FunctionConfiguration> AwsLambdaApi::GetFunctionConfiguration(const std::string& function) {
  if (function.empty()) return InvalidArgument("GetFunctionConfiguration: no function name");
  AwsRequest request;
  request.operation = "GetFunctionConfiguration";
  request.resource = function;
  request.method = "GET";
  request.path = lambda_api::FunctionPath(function, "configuration");
  DLQ_ASSIGN_OR_RETURN(HttpResponse response, Call(request, "GetFunctionConfiguration"));
  auto fn = lambda_api::ParseFunctionConfigurationResponse(response.body);
  if (!fn.ok()) return fn.status().WithContext("GetFunctionConfiguration " + function);
  return fn;
}

Result<std::vector<FunctionConfiguration>> AwsLambdaApi::ListFunctions() {
  return ListAll<FunctionConfiguration>(
      "ListFunctions",
      [&](const std::string& marker) -> Result<std::pair<std::vector<FunctionConfiguration>, std::string>> {
        AwsRequest request;
        request.operation = "ListFunctions";
        request.method = "GET";
        request.path = std::string(lambda_api::kApiVersion) + "/functions/";
        request.query = lambda_api::ListFunctionsQuery(marker, kFunctionsPerPage);
        DLQ_ASSIGN_OR_RETURN(HttpResponse response, Call(request, "ListFunctions"));
        auto page = lambda_api::ParseListFunctionsResponse(response.body);
        if (!page.ok()) return page.status().WithContext("ListFunctions");
        return std::make_pair(std::move(page->functions), std::move(page->next_marker));
      });
}

Result<std::optional<EventInvokeConfig>> AwsLambdaApi::GetFunctionEventInvokeConfig(const std::string& function,
                                                                                    const std::string& qualifier) {
  if (function.empty()) return InvalidArgument("GetFunctionEventInvokeConfig: no function name");
  if (!qualifier.empty() && !ValidQualifier(qualifier)) {
    return InvalidArgument(fmt::format("GetFunctionEventInvokeConfig {}: qualifier '{}' is not a version or alias name",
                                       function, qualifier.substr(0, 128)));
  }
  AwsRequest request;
  request.operation = "GetFunctionEventInvokeConfig";
  request.resource = function;
  request.method = "GET";
  request.path = lambda_api::EventInvokeConfigPath(function);
  if (!qualifier.empty()) request.query = "Qualifier=" + UriEncode(qualifier);
  auto response = Call(request, "GetFunctionEventInvokeConfig");
  if (!response.ok() && response.status().code() == ErrorCode::kNotFound) return std::optional<EventInvokeConfig>();
  if (!response.ok()) return response.status();
  auto config = lambda_api::ParseEventInvokeConfigResponse(response->body);
  if (!config.ok()) return config.status().WithContext("GetFunctionEventInvokeConfig " + function);
  return std::optional<EventInvokeConfig>(std::move(*config));
}

Result<InvokeResult> AwsLambdaApi::Invoke(const InvokeRequest& invoke) {
  DLQ_RETURN_IF_ERROR(invoke.Validate());
  AwsRequest request;
  request.operation = "Invoke";
  request.resource = invoke.function_name;
  request.path = lambda_api::FunctionPath(invoke.function_name, "invocations");
  if (!invoke.qualifier.empty()) request.query = "Qualifier=" + UriEncode(invoke.qualifier);
  request.headers = {{"X-Amz-Invocation-Type", std::string(InvocationTypeName(invoke.type))}};
  if (!invoke.payload.empty()) {
    request.headers.emplace_back("Content-Type", "application/json");
    request.body_view = invoke.payload;
  }
  request.retry_throttled = false;  // the caller pauses its own pace (a guarded redrive's ramp)
  DLQ_ASSIGN_OR_RETURN(HttpResponse response, Call(request, "InvokeFunction"));
  InvokeResult result;
  result.status_code = response.status;
  for (auto [header, field] : {std::pair{"X-Amz-Function-Error", &result.function_error},
                               std::pair{"X-Amz-Executed-Version", &result.executed_version},
                               std::pair{"x-amzn-RequestId", &result.request_id}}) {
    if (const std::string* value = response.Header(header)) *field = *value;
  }
  result.payload = std::move(response.body);
  return result;
}

}  // namespace dlq
