#include "sqs/redrive_policy.h"

#include <simdjson.h>

#include <algorithm>
#include <optional>

#include "common/strings.h"

namespace dlq {

Result<RedrivePolicyInfo> ParseRedrivePolicy(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json);
  simdjson::dom::element doc;
  if (parser.parse(padded).get(doc) != simdjson::SUCCESS || !doc.is_object()) {
    return InvalidArgument("RedrivePolicy is not a JSON object");
  }
  RedrivePolicyInfo info;
  std::string_view arn;
  if (doc["deadLetterTargetArn"].get_string().get(arn) != simdjson::SUCCESS || arn.empty()) {
    return InvalidArgument("RedrivePolicy has no deadLetterTargetArn");
  }
  info.dead_letter_target_arn = std::string(arn);
  simdjson::dom::element count;
  if (doc["maxReceiveCount"].get(count) == simdjson::SUCCESS) {
    int64_t n = 0;
    std::string_view text;
    if (count.get_int64().get(n) == simdjson::SUCCESS) {
      info.max_receive_count = static_cast<int>(std::clamp<int64_t>(n, 0, 1000000));
    } else if (count.get_string().get(text) == simdjson::SUCCESS) {
      std::optional<int64_t> parsed = ParseInt64(text);
      if (!parsed) return InvalidArgument("RedrivePolicy maxReceiveCount is not a number");
      info.max_receive_count = static_cast<int>(std::clamp<int64_t>(*parsed, 0, 1000000));
    } else {
      return InvalidArgument("RedrivePolicy maxReceiveCount is not a number");
    }
  }
  return info;
}

bool ParseSqsArn(std::string_view arn, std::string* region, std::string* account_id, std::string* name) {
  auto parts = Split(arn, ':');
  if (parts.size() != 6 || parts[0] != "arn" || parts[2] != "sqs" || parts[5].empty()) return false;
  if (region) *region = std::string(parts[3]);
  if (account_id) *account_id = std::string(parts[4]);
  if (name) *name = std::string(parts[5]);
  return true;
}

}  // namespace dlq
