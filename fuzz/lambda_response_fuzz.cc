// Feeds arbitrary bytes to the Lambda API response parsers
// (ListEventSourceMappings, GetFunctionConfiguration, ListFunctions,
// GetFunctionEventInvokeConfig).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "lambda_api/lambda_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  if (auto page = dlq::lambda_api::ParseListEventSourceMappingsResponse(json); page.ok()) {
    for (const auto& m : page->mappings) static_cast<void>(m.ReportsBatchItemFailures());
  }
  if (auto fn = dlq::lambda_api::ParseFunctionConfigurationResponse(json); fn.ok()) {
    static_cast<void>(fn->LogGroupOrDefault());
  }
  dlq::lambda_api::ParseListFunctionsResponse(json).status().IgnoreError();
  if (auto config = dlq::lambda_api::ParseEventInvokeConfigResponse(json); config.ok()) {
    // A parsed retry count is one Lambda allows.
    if (config->maximum_retry_attempts &&
        (*config->maximum_retry_attempts < 0 || *config->maximum_retry_attempts > 2)) {
      __builtin_trap();
    }
  }
  return 0;
}
