// Feeds arbitrary bytes to the CloudWatch Logs response parsers
// (FilterLogEvents, DescribeLogGroups).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "logs/logs_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  dlq::logs::ParseFilterLogEventsResponse(json, "/aws/lambda/fuzz").status().IgnoreError();
  if (auto page = dlq::logs::ParseDescribeLogGroupsResponse(json); page.ok()) {
    for (const auto& group : page->groups) dlq::logs::TrimArnWildcard(group.arn);
  }
  return 0;
}
