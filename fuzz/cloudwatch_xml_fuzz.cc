// Feeds arbitrary bytes to the CloudWatch GetMetricData response parser,
// which must never crash, hang or throw.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cloudwatch/cloudwatch_client.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view xml(reinterpret_cast<const char*>(data), size);
  auto page = dlq::ParseGetMetricDataResponse(xml);
  if (page.ok()) {
    for (const auto& s : page->results) {
      if (s.timestamps.size() != s.values.size()) __builtin_trap();
    }
  }
  return 0;
}
