// SNS's query-protocol wire format for the calls SnsApi makes: form
// parameters and response parsers, free functions so tests and the fuzzer
// reach them directly. Pure and thread-safe. Parsers never trust their
// input: malformed XML, an unexpected root or a missing required element is
// kInternal ("malformed Publish response: missing <MessageId>"), never a
// crash. Error documents (<ErrorResponse>) are AwsClient's to read.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aws/query_form.h"
#include "common/status.h"
#include "sns/sns_api.h"

namespace dlq::sns {

inline constexpr std::string_view kApiVersion = "2010-03-31";
inline constexpr std::string_view kFormContentType = "application/x-www-form-urlencoded; charset=utf-8";

// Forms (FormParams, EncodeForm: aws/query_form.h) begin with Action and Version.

FormParams ListSubscriptionsParams(std::string_view next_token);  // NextToken when non-empty
FormParams GetSubscriptionAttributesParams(std::string_view subscription_arn);
// TopicArn, Message, Subject, MessageGroupId, MessageDeduplicationId (when
// set) and MessageAttributes.entry.N.{Name,Value.DataType,Value.StringValue |
// Value.BinaryValue (base64)}, N from 1 in attribute-name order.
FormParams PublishParams(const PublishRequest& request);

struct SubscriptionPage {
  std::vector<SnsSubscription> subscriptions;
  std::string next_token;  // empty on the last page
};

Result<SubscriptionPage> ParseListSubscriptionsResponse(std::string_view xml);
Result<std::map<std::string, std::string>> ParseGetSubscriptionAttributesResponse(std::string_view xml);
Result<PublishResult> ParsePublishResponse(std::string_view xml);

}  // namespace dlq::sns
