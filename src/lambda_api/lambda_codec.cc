#include "lambda_api/lambda_codec.h"

#include <fmt/format.h>

#include "aws/json_response.h"
#include "common/strings.h"

namespace dlq::lambda_api {

std::string FunctionPath(std::string_view function, std::string_view leaf) {
  return fmt::format("{}/functions/{}/{}", kApiVersion, UriEncode(function), leaf);
}

std::string EventInvokeConfigPath(std::string_view function) {
  return fmt::format("{}/functions/{}/event-invoke-config", kEventInvokeConfigVersion, UriEncode(function));
}

std::string ListEventSourceMappingsQuery(std::string_view event_source_arn, std::string_view marker, int max_items) {
  std::string query = "EventSourceArn=" + UriEncode(event_source_arn);
  if (!marker.empty()) query += "&Marker=" + UriEncode(marker);
  return query + fmt::format("&MaxItems={}", max_items);
}

std::string ListFunctionsQuery(std::string_view marker, int max_items) {
  std::string query;
  if (!marker.empty()) query = "Marker=" + UriEncode(marker) + "&";
  return query + fmt::format("MaxItems={}", max_items);
}

namespace {

Result<EventSourceMapping> ParseMapping(const JsonFields& m) {
  EventSourceMapping mapping;
  DLQ_RETURN_IF_ERROR(m.String("UUID", mapping.uuid));
  DLQ_RETURN_IF_ERROR(m.String("FunctionArn", mapping.function_arn));
  DLQ_RETURN_IF_ERROR(m.String("EventSourceArn", mapping.event_source_arn));
  DLQ_RETURN_IF_ERROR(m.String("State", mapping.state));
  DLQ_RETURN_IF_ERROR(m.Strings("FunctionResponseTypes", mapping.function_response_types));
  DLQ_RETURN_IF_ERROR(m.Int("BatchSize", mapping.batch_size));
  if (mapping.uuid.empty()) return m.Malformed("UUID", "is missing");
  return mapping;
}

Result<FunctionConfiguration> ParseFunction(const JsonFields& f) {
  FunctionConfiguration fn;
  DLQ_RETURN_IF_ERROR(f.String("FunctionName", fn.function_name));
  DLQ_RETURN_IF_ERROR(f.String("FunctionArn", fn.function_arn));
  DLQ_RETURN_IF_ERROR(f.String("Version", fn.version));
  DLQ_RETURN_IF_ERROR(f.Int("Timeout", fn.timeout_seconds));
  DLQ_RETURN_IF_ERROR(f.Int("MemorySize", fn.memory_size_mb));
  DLQ_ASSIGN_OR_RETURN(std::optional<JsonFields> logging, f.Object("LoggingConfig"));
  if (logging) {
    DLQ_RETURN_IF_ERROR(logging->String("LogGroup", fn.log_group));
    DLQ_RETURN_IF_ERROR(logging->String("LogFormat", fn.log_format));
  }
  DLQ_ASSIGN_OR_RETURN(std::optional<JsonFields> dead_letter, f.Object("DeadLetterConfig"));
  if (dead_letter) DLQ_RETURN_IF_ERROR(dead_letter->String("TargetArn", fn.dead_letter_target_arn));
  if (fn.function_name.empty()) return f.Malformed("FunctionName", "is missing");
  return fn;
}

}  // namespace

Result<EventSourceMappingPage> ParseListEventSourceMappingsResponse(std::string_view json) {
  JsonDocument doc;
  DLQ_ASSIGN_OR_RETURN(JsonFields root, doc.Parse(json, "ListEventSourceMappings response"));
  EventSourceMappingPage page;
  DLQ_ASSIGN_OR_RETURN(std::vector<JsonFields> mappings, root.Objects("EventSourceMappings"));
  for (const JsonFields& m : mappings) {
    DLQ_ASSIGN_OR_RETURN(EventSourceMapping mapping, ParseMapping(m));
    page.mappings.push_back(std::move(mapping));
  }
  DLQ_RETURN_IF_ERROR(root.String("NextMarker", page.next_marker));
  return page;
}

Result<FunctionConfiguration> ParseFunctionConfigurationResponse(std::string_view json) {
  JsonDocument doc;
  DLQ_ASSIGN_OR_RETURN(JsonFields root, doc.Parse(json, "GetFunctionConfiguration response"));
  return ParseFunction(root);
}

Result<FunctionPage> ParseListFunctionsResponse(std::string_view json) {
  JsonDocument doc;
  DLQ_ASSIGN_OR_RETURN(JsonFields root, doc.Parse(json, "ListFunctions response"));
  FunctionPage page;
  DLQ_ASSIGN_OR_RETURN(std::vector<JsonFields> functions, root.Objects("Functions"));
  for (const JsonFields& f : functions) {
    DLQ_ASSIGN_OR_RETURN(FunctionConfiguration fn, ParseFunction(f));
    page.functions.push_back(std::move(fn));
  }
  DLQ_RETURN_IF_ERROR(root.String("NextMarker", page.next_marker));
  return page;
}

Result<EventInvokeConfig> ParseEventInvokeConfigResponse(std::string_view json) {
  JsonDocument doc;
  DLQ_ASSIGN_OR_RETURN(JsonFields root, doc.Parse(json, "GetFunctionEventInvokeConfig response"));
  EventInvokeConfig config;
  DLQ_RETURN_IF_ERROR(root.Int("MaximumRetryAttempts", config.maximum_retry_attempts));
  DLQ_RETURN_IF_ERROR(root.Int("MaximumEventAgeInSeconds", config.maximum_event_age_seconds));
  DLQ_ASSIGN_OR_RETURN(std::optional<JsonFields> destinations, root.Object("DestinationConfig"));
  if (destinations) {
    for (auto [name, out] : {std::pair{"OnFailure", &config.on_failure_destination},
                             std::pair{"OnSuccess", &config.on_success_destination}}) {
      DLQ_ASSIGN_OR_RETURN(std::optional<JsonFields> d, destinations->Object(name));
      if (d) DLQ_RETURN_IF_ERROR(d->String("Destination", *out));
    }
  }
  if (config.maximum_retry_attempts && (*config.maximum_retry_attempts < 0 || *config.maximum_retry_attempts > 2)) {
    return root.Malformed("MaximumRetryAttempts", "is not 0, 1 or 2");
  }
  return config;
}

}  // namespace dlq::lambda_api
