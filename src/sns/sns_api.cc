#include "sns/sns_api.h"

#include <fmt/format.h>

#include <set>

#include "common/strings.h"
#include "sns/sns_codec.h"

namespace dlq {
namespace {

constexpr size_t kMaxPublishBytes = 262144;  // message and attributes: 256 KiB
constexpr size_t kMaxSubjectChars = 100;
constexpr int kMaxPages = 10000;  // guards against a server that never ends pagination

// Sends one query-protocol call; a denial is explained with the IAM action.
Result<HttpResponse> Call(AwsClient& aws, std::string_view action, const std::string& resource,
                          const FormParams& params) {
  AwsRequest request;
  request.operation = std::string(action);
  request.resource = resource;
  request.method = "POST";
  request.path = "/";
  request.headers.emplace_back("Content-Type", std::string(sns::kFormContentType));
  request.body = EncodeForm(params);
  auto response = aws.Call(request);
  if (response.ok() || response.status().code() != ErrorCode::kPermissionDenied) return response;
  const Status& error = response.status();
  Status explained(error.code(),
                   fmt::format("{} (needs sns:{} on {})", error.message(), action, resource.empty() ? "*" : resource));
  if (error.aws()) explained = explained.WithAws(*error.aws());
  return explained;
}

Status ValidateAttribute(const std::string& topic, const std::string& name, const MessageAttributeValue& value) {
  std::string_view type = value.data_type;
  if (name.empty()) return InvalidArgument(fmt::format("Publish {}: a message attribute has no name", topic));
  if (!StartsWith(type, "String") && !StartsWith(type, "Number") && !StartsWith(type, "Binary")) {
    return InvalidArgument(fmt::format("Publish {}: attribute {} has data type '{}', not String, Number or Binary",
                                       topic, name, type.substr(0, 64)));
  }
  if (value.IsBinary() ? value.binary_value.empty() : value.string_value.empty()) {
    return InvalidArgument(fmt::format("Publish {}: attribute {} has an empty value", topic, name));
  }
  return Status::Ok();
}

}  // namespace

Status PublishRequest::Validate() const {
  if (topic_arn.empty()) return InvalidArgument("Publish: no topic ARN");
  if (message.empty()) return InvalidArgument(fmt::format("Publish {}: empty message", topic_arn));
  if (subject.size() > kMaxSubjectChars) {
    return InvalidArgument(
        fmt::format("Publish {}: subject of {} characters, more than {}", topic_arn, subject.size(), kMaxSubjectChars));
  }
  for (unsigned char c : subject) {
    if (c < 0x20 || c == 0x7f) {
      return InvalidArgument(fmt::format("Publish {}: the subject has a line break or control character", topic_arn));
    }
  }
  size_t bytes = message.size();
  for (const auto& [name, value] : attributes) {
    DLQ_RETURN_IF_ERROR(ValidateAttribute(topic_arn, name, value));
    bytes += name.size() + value.data_type.size() + value.string_value.size() + value.binary_value.size();
  }
  if (bytes > kMaxPublishBytes) {
    return InvalidArgument(fmt::format("Publish {}: message and attributes are {} bytes, more than SNS's {}", topic_arn,
                                       bytes, kMaxPublishBytes));
  }
  if (EndsWith(topic_arn, ".fifo") && message_group_id.empty()) {
    return InvalidArgument(fmt::format("Publish {}: a FIFO topic needs a message group id", topic_arn));
  }
  return Status::Ok();
}

Result<std::vector<SnsSubscription>> AwsSnsApi::ListSubscriptions() {
  std::vector<SnsSubscription> out;
  std::set<std::string> seen;
  std::string token;
  for (int n = 0; n < kMaxPages; ++n) {
    DLQ_ASSIGN_OR_RETURN(HttpResponse response,
                         Call(aws_, "ListSubscriptions", "", sns::ListSubscriptionsParams(token)));
    auto page = sns::ParseListSubscriptionsResponse(response.body);
    if (!page.ok()) return page.status().WithContext("ListSubscriptions");
    for (SnsSubscription& s : page->subscriptions) out.push_back(std::move(s));
    if (page->next_token.empty()) return out;
    if (!seen.insert(page->next_token).second) {
      return Internal("ListSubscriptions: pagination loop: the service repeated a NextToken");
    }
    token = std::move(page->next_token);
  }
  return Internal(fmt::format("ListSubscriptions: pagination did not end after {} pages", kMaxPages));
}

Result<std::map<std::string, std::string>> AwsSnsApi::GetSubscriptionAttributes(const std::string& subscription_arn) {
  if (subscription_arn.empty()) return InvalidArgument("GetSubscriptionAttributes: no subscription ARN");
  DLQ_ASSIGN_OR_RETURN(HttpResponse response, Call(aws_, "GetSubscriptionAttributes", subscription_arn,
                                                   sns::GetSubscriptionAttributesParams(subscription_arn)));
  auto attributes = sns::ParseGetSubscriptionAttributesResponse(response.body);
  if (!attributes.ok()) return attributes.status().WithContext("GetSubscriptionAttributes " + subscription_arn);
  return attributes;
}

Result<PublishResult> AwsSnsApi::Publish(const PublishRequest& request) {
  DLQ_RETURN_IF_ERROR(request.Validate());
  DLQ_ASSIGN_OR_RETURN(HttpResponse response, Call(aws_, "Publish", request.topic_arn, sns::PublishParams(request)));
  auto result = sns::ParsePublishResponse(response.body);
  if (!result.ok()) return result.status().WithContext("Publish " + request.topic_arn);
  return result;
}

}  // namespace dlq
