// A queue's RedrivePolicy and SQS ARNs, read the way every caller needs them
// (discovery, the cause lookup's consumer search). Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace dlq {

// The queue's parsed RedrivePolicy JSON ({"deadLetterTargetArn": "...",
// "maxReceiveCount": 2 or "2"}); kInvalidArgument when malformed.
struct RedrivePolicyInfo {
  std::string dead_letter_target_arn;
  int max_receive_count = 0;
};
Result<RedrivePolicyInfo> ParseRedrivePolicy(std::string_view json);

// Splits "arn:aws:sqs:REGION:ACCOUNT:NAME"; false when it is not an SQS ARN.
bool ParseSqsArn(std::string_view arn, std::string* region, std::string* account_id, std::string* name);

}  // namespace dlq
