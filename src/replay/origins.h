// OriginResolver: where a dead-letter message goes back to when its origin is
// not an SQS queue (`replay --to-origin`, doc/origins.md). From what the
// message says (replay/origin_clue.h), or else from the DLQ it sits in:
//
// - a Lambda on-failure destination record: requestContext.functionArn gets
//   its requestPayload (qualifier kept);
// - an EventBridge rule target's (or a Scheduler schedule's) DLQ message: the
//   target in TARGET_ARN gets the event directly: a function is invoked, a
//   queue gets SendMessage, a topic Publish, a bus PutEvents; any other
//   target type is refused, named. Never the rule's own bus: every other rule
//   on it would see the event too;
// - a Lambda asynchronous-invocation DLQ message (or one that says nothing):
//   the function named by the caller (`--function`), else the one function
//   whose DeadLetterConfig targets the DLQ (ListFunctions once, cached);
// - an SNS subscription's DLQ: the subscription whose RedrivePolicy targets
//   the DLQ (ListSubscriptions and GetSubscriptionAttributes once, cached);
//   the message goes to that subscription's endpoint in the shape SNS
//   delivers there (an SQS queue, a Lambda function, an HTTP/S URL; other
//   protocols refused, named), never to the topic (every other subscriber
//   would get it again).
//
// A function is checked to exist (GetFunctionConfiguration, cached); a
// function or target in another account or region than the DLQ is refused
// unless cross-account is allowed. A refusal is kInvalidArgument (the message
// cannot go back: it is counted and named, the run goes on); a missing
// function or topic kNotFound; a denied call kPermissionDenied naming the
// action. Results, refusals included, are cached per DLQ and per function.
//
// Not thread-safe; the APIs must outlive it.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "archive/record.h"
#include "common/status.h"
#include "lambda_api/lambda_api.h"
#include "replay/replay_terms.h"
#include "replay/targets.h"
#include "sns/sns_api.h"

namespace dlq {

// The parts of an ARN: arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE.
struct ArnParts {
  std::string partition, service, region, account, resource;
};
std::optional<ArnParts> ParseArn(const std::string& arn);

class OriginResolver {
 public:
  // `lambda` and `sns` may be null: an origin that needs one is then refused,
  // saying which API is unavailable. `function`: the caller named the function
  // (a name or ARN, a qualifier allowed) for messages that do not name their own.
  OriginResolver(LambdaApi* lambda, SnsApi* sns, std::string region, std::string function = "");

  Result<ReplayTarget> Resolve(const ArchiveRecord& record);
  void AllowCrossAccount(bool allow) { allow_cross_account_ = allow; }
  void UseTerms(ReplayTerms terms) { terms_ = std::move(terms); }
  // "DLQ (account A, region R) -> ARN", one per distinct route taken across accounts or regions.
  std::vector<std::string> CrossAccountRoutes() const { return {routes_.begin(), routes_.end()}; }

 private:
  Result<ReplayTarget> FromDestinationRecord(const ArchiveRecord& record, const std::string& function_arn);
  Result<ReplayTarget> FromEventBridge(const ArchiveRecord& record, const std::string& target_arn,
                                       const std::string& rule);
  Result<ReplayTarget> FromDlq(const ArchiveRecord& record, bool lambda_async);
  // The function (name or ARN) checked to exist: its configuration, cached.
  Result<ReplayTarget> Function(const std::string& function, const std::string& how);
  // The functions whose DeadLetterConfig targets `dlq_arn` (ListFunctions once).
  Result<std::vector<FunctionConfiguration>> FunctionsFeeding(const std::string& dlq_arn);
  // The subscriptions whose RedrivePolicy targets `dlq_arn` (every subscription's attributes, once).
  Result<std::vector<std::pair<SnsSubscription, std::map<std::string, std::string>>>> SubscriptionsFeeding(
      const std::string& dlq_arn);
  Result<ReplayTarget> FromSubscription(const ArchiveRecord& record, const SnsSubscription& sub,
                                        const std::map<std::string, std::string>& attributes);
  // kInvalidArgument unless `arn` is in the DLQ's account and region or cross-account is allowed.
  Status CheckSameAccount(const ArchiveRecord& record, const std::string& arn);

  LambdaApi* lambda_;
  SnsApi* sns_;
  std::string region_;
  std::string function_;
  bool allow_cross_account_ = false;
  ReplayTerms terms_;
  std::set<std::string> routes_;
  std::map<std::string, Result<ReplayTarget>> functions_;  // name/ARN -> checked function
  std::optional<Result<std::vector<FunctionConfiguration>>> all_functions_;
  std::optional<Result<std::vector<std::pair<SnsSubscription, std::map<std::string, std::string>>>>> all_subscriptions_;
  std::map<std::string, Result<ReplayTarget>> by_dlq_;  // DLQ ARN (+ kind) -> its origin
};

// The DLQ ARN of a record: arn:aws:sqs:REGION:ACCOUNT:QUEUE from its fields
// (`region` when the record has none); "" when its account is unknown.
std::string DlqArnOf(const ArchiveRecord& record, const std::string& region);

}  // namespace dlq
