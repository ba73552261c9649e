// An SnsApi for tests: subscriptions and their attributes held in memory,
// every call counted and every Publish recorded, with failures on command
// ("throttle the next 2 calls", "deny Publish"). Thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "sns/sns_api.h"

namespace dlq {

class FakeSnsApi final : public SnsApi {
 public:
  Result<std::vector<SnsSubscription>> ListSubscriptions() override;
  // kNotFound (NotFound) for a subscription the fake does not hold.
  Result<std::map<std::string, std::string>> GetSubscriptionAttributes(const std::string& subscription_arn) override;
  // Validates the request, records it, and answers "fake-message-<n>"
  // (with a sequence number for a FIFO topic).
  Result<PublishResult> Publish(const PublishRequest& request) override;

  // Adds or replaces a subscription (by ARN) with its attributes; the
  // attributes SNS always reports (SubscriptionArn, TopicArn, Protocol,
  // Endpoint, Owner) are filled in from `subscription` when absent.
  void AddSubscription(SnsSubscription subscription, std::map<std::string, std::string> attributes = {});
  // The next `n` calls, whatever their action, fail with kThrottled (Throttled, HTTP 400).
  void ThrottleNext(int n);
  // Every call needing IAM action `action` ("ListSubscriptions",
  // "GetSubscriptionAttributes", "Publish") fails with kPermissionDenied
  // (AuthorizationError); "" stops denying.
  void Deny(const std::string& action);

  // Calls made, by IAM action name (as for Deny); failed ones included.
  int calls(const std::string& action) const;
  // Every Publish request that passed Validate, in order, throttled and denied ones included.
  std::vector<PublishRequest> publishes() const;

 private:
  // Counts one call of `action` and returns its injected failure, if any.
  Status BeginCall(const std::string& action, const std::string& resource) DLQ_REQUIRES(mu_);

  struct Held {
    SnsSubscription subscription;
    std::map<std::string, std::string> attributes;
  };

  mutable Mutex mu_;
  std::map<std::string, Held> subscriptions_ DLQ_GUARDED_BY(mu_);  // by ARN
  int throttle_next_ DLQ_GUARDED_BY(mu_) = 0;
  std::string denied_ DLQ_GUARDED_BY(mu_);
  std::map<std::string, int> calls_ DLQ_GUARDED_BY(mu_);
  std::vector<PublishRequest> publishes_ DLQ_GUARDED_BY(mu_);
};

}  // namespace dlq
