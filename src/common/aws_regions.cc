#include "common/aws_regions.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "common/strings.h"

namespace dlq {
namespace {

constexpr std::string_view kRegions[] = {
    // aws
    "us-east-1", "us-east-2", "us-west-1", "us-west-2", "af-south-1", "ap-east-1", "ap-east-2", "ap-south-1",
    "ap-south-2", "ap-southeast-1", "ap-southeast-2", "ap-southeast-3", "ap-southeast-4", "ap-southeast-5",
    "ap-southeast-6", "ap-southeast-7", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ca-central-1",
    "ca-west-1", "eu-central-1", "eu-central-2", "eu-west-1", "eu-west-2", "eu-west-3", "eu-south-1", "eu-south-2",
    "eu-north-1", "il-central-1", "me-south-1", "me-central-1", "mx-central-1", "sa-east-1",
    // aws-us-gov
    "us-gov-east-1", "us-gov-west-1",
    // aws-cn
    "cn-north-1", "cn-northwest-1",
    // Left out: the European Sovereign Cloud and the ISO partitions, whose
    // endpoints use domains dlq-archive does not derive.
};

}  // namespace

std::span<const std::string_view> KnownAwsRegions() {
  return kRegions;
}

bool IsKnownAwsRegion(std::string_view region) {
  auto known = KnownAwsRegions();
  return std::find(known.begin(), known.end(), region) != known.end();
}

std::string SuggestAwsRegion(std::string_view region) {
  auto known = KnownAwsRegions();
  std::vector<std::string> candidates(known.begin(), known.end());
  return ClosestMatch(region, candidates);
}

Status CheckAwsRegion(std::string_view region, std::string_view source) {
  if (IsKnownAwsRegion(region)) return Status::Ok();
  std::string msg = fmt::format("unknown region '{}' (from {})", region, source);
  if (std::string s = SuggestAwsRegion(region); !s.empty()) msg += fmt::format(": did you mean '{}'?", s);
  msg += " (a region not in dlq-archive's table needs --endpoint-url, or DLQ_ARCHIVE_ALLOW_UNKNOWN_REGION=1)";
  return InvalidArgument(std::move(msg));
}

}  // namespace dlq
