// The AWS regions dlq-archive knows (commercial, GovCloud and China
// partitions), so a misspelt region fails up front with a suggestion instead
// of as a DNS error on the first call. Pure functions over a static table.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "common/status.h"

namespace dlq {

// Every region name in the table, in a stable order.
std::span<const std::string_view> KnownAwsRegions();
bool IsKnownAwsRegion(std::string_view region);
// The known region nearest to `region` by edit distance, or empty when none
// is close ("us-est-1" -> "us-east-1").
std::string SuggestAwsRegion(std::string_view region);
// OK for a known region; kInvalidArgument otherwise, naming the region, where
// it came from (`source`, e.g. "--region" or "AWS_REGION") and the suggestion.
Status CheckAwsRegion(std::string_view region, std::string_view source);

}  // namespace dlq
