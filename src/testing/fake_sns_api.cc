#include "testing/fake_sns_api.h"

#include <fmt/format.h>

#include "common/strings.h"

namespace dlq {

void FakeSnsApi::AddSubscription(SnsSubscription subscription, std::map<std::string, std::string> attributes) {
  for (auto [name, value] :
       {std::pair{"SubscriptionArn", &subscription.subscription_arn}, std::pair{"TopicArn", &subscription.topic_arn},
        std::pair{"Protocol", &subscription.protocol}, std::pair{"Endpoint", &subscription.endpoint},
        std::pair{"Owner", &subscription.owner}}) {
    attributes.try_emplace(name, *value);
  }
  MutexLock lock(mu_);
  std::string arn = subscription.subscription_arn;
  subscriptions_.insert_or_assign(std::move(arn), Held{std::move(subscription), std::move(attributes)});
}

void FakeSnsApi::ThrottleNext(int n) {
  MutexLock lock(mu_);
  throttle_next_ = n;
}

void FakeSnsApi::Deny(const std::string& action) {
  MutexLock lock(mu_);
  denied_ = action;
}

int FakeSnsApi::calls(const std::string& action) const {
  MutexLock lock(mu_);
  auto it = calls_.find(action);
  return it == calls_.end() ? 0 : it->second;
}

std::vector<PublishRequest> FakeSnsApi::publishes() const {
  MutexLock lock(mu_);
  return publishes_;
}

Status FakeSnsApi::BeginCall(const std::string& action, const std::string& resource) {
  ++calls_[action];
  const std::string on = resource.empty() ? "*" : resource;
  if (!denied_.empty() && denied_ == action) {
    AwsErrorInfo info{"AuthorizationError", 403, "fake-request-id"};
    return PermissionDenied(fmt::format("{} {}: AuthorizationError: User: arn:aws:iam::123456789012:user/test is not "
                                        "authorized to perform: SNS:{} on resource: {} (needs sns:{} on {})",
                                        action, resource, action, on, action, on))
        .WithAws(std::move(info));
  }
  if (throttle_next_ > 0) {
    --throttle_next_;
    AwsErrorInfo info{"Throttled", 400, "fake-request-id"};
    return Throttled(fmt::format("{} {}: Throttled: Rate exceeded", action, resource)).WithAws(std::move(info));
  }
  return Status::Ok();
}

Result<std::vector<SnsSubscription>> FakeSnsApi::ListSubscriptions() {
  MutexLock lock(mu_);
  DLQ_RETURN_IF_ERROR(BeginCall("ListSubscriptions", ""));
  std::vector<SnsSubscription> out;
  for (const auto& [arn, held] : subscriptions_) out.push_back(held.subscription);
  return out;
}

Result<std::map<std::string, std::string>> FakeSnsApi::GetSubscriptionAttributes(const std::string& subscription_arn) {
  MutexLock lock(mu_);
  DLQ_RETURN_IF_ERROR(BeginCall("GetSubscriptionAttributes", subscription_arn));
  auto it = subscriptions_.find(subscription_arn);
  if (it == subscriptions_.end()) {
    AwsErrorInfo info{"NotFound", 404, "fake-request-id"};
    return NotFound(
               fmt::format("GetSubscriptionAttributes {}: NotFound: Subscription does not exist", subscription_arn))
        .WithAws(std::move(info));
  }
  return it->second.attributes;
}

Result<PublishResult> FakeSnsApi::Publish(const PublishRequest& request) {
  DLQ_RETURN_IF_ERROR(request.Validate());
  MutexLock lock(mu_);
  publishes_.push_back(request);
  DLQ_RETURN_IF_ERROR(BeginCall("Publish", request.topic_arn));
  PublishResult result;
  result.message_id = fmt::format("fake-message-{}", publishes_.size());
  if (EndsWith(request.topic_arn, ".fifo")) result.sequence_number = fmt::format("{:020}", publishes_.size());
  return result;
}

}  // namespace dlq
