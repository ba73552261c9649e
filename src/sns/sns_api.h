// SnsApi: the Amazon SNS calls a replay to an SNS origin needs, as an
// interface so callers run against FakeSnsApi (testing/fake_sns_api.h) in
// tests. AwsSnsApi implements it on SNS's query protocol (form-encoded POST,
// XML answers, API version 2010-03-31) over AwsClient.
//
// - Finding the subscription an SNS dead-letter queue belongs to: every
//   subscription of the region (ListSubscriptions, following NextToken) and
//   one subscription's attributes (GetSubscriptionAttributes: RedrivePolicy,
//   RawMessageDelivery, FilterPolicy, ...).
// - Publish: an EventBridge rule's SNS target gets the event again (never
//   used to reach one subscription of a topic: every other subscriber would
//   receive it too).
//
// Every implementation is thread-safe. Errors carry the operation and the
// topic or subscription: AuthorizationError / AccessDenied is
// kPermissionDenied naming the IAM action ("sns:ListSubscriptions"), NotFound
// kNotFound, Throttled / ThrottlingException kThrottled after the client's
// own retries.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "aws/aws_client.h"
#include "common/status.h"
#include "sqs/types.h"

namespace dlq {

struct SnsSubscription {
  std::string subscription_arn;  // "PendingConfirmation" for an unconfirmed one
  std::string topic_arn;
  std::string protocol;  // "sqs", "lambda", "http", "https", "email", "sms", "firehose", "application"
  std::string endpoint;  // queue ARN, function ARN, URL, ...
  std::string owner;     // account id
};

struct PublishRequest {
  std::string topic_arn;
  std::string message;  // sent byte for byte
  std::string subject;  // empty: none
  // String, Number and Binary attributes (String.Array too), as SQS holds them.
  MessageAttributes attributes;
  std::string message_group_id;          // FIFO topics
  std::string message_deduplication_id;  // FIFO topics
  Status Validate() const;               // kInvalidArgument: no topic, an empty message, ...
};

struct PublishResult {
  std::string message_id;
  std::string sequence_number;  // FIFO topics
};

class SnsApi {
 public:
  virtual ~SnsApi() = default;
  // Every subscription of the region, following NextToken.
  virtual Result<std::vector<SnsSubscription>> ListSubscriptions() = 0;
  // The attributes of one subscription, by name ("RedrivePolicy", "RawMessageDelivery", ...).
  virtual Result<std::map<std::string, std::string>> GetSubscriptionAttributes(const std::string& subscription_arn) = 0;
  virtual Result<PublishResult> Publish(const PublishRequest& request) = 0;
};

// SNS over the query protocol. Holds a reference to `aws`, which must outlive
// it and be built with ServiceEndpoint{.service = "sns"}.
class AwsSnsApi final : public SnsApi {
 public:
  explicit AwsSnsApi(AwsClient& aws) : aws_(aws) {}
  Result<std::vector<SnsSubscription>> ListSubscriptions() override;
  Result<std::map<std::string, std::string>> GetSubscriptionAttributes(const std::string& subscription_arn) override;
  Result<PublishResult> Publish(const PublishRequest& request) override;

 private:
  AwsClient& aws_;
};

}  // namespace dlq
