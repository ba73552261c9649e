#include "replay/origins.h"

#include <fmt/format.h>
#include <simdjson.h>

#include "common/strings.h"
#include "replay/origin_clue.h"

namespace dlq {
namespace {

// SNS's subscription RedrivePolicy: {"deadLetterTargetArn": "arn:aws:sqs:..."}.
std::string SnsDeadLetterTarget(const std::map<std::string, std::string>& attributes) {
  auto it = attributes.find("RedrivePolicy");
  if (it == attributes.end() || it->second.empty()) return "";
  simdjson::dom::parser parser;
  simdjson::padded_string padded(it->second);
  simdjson::dom::element doc;
  if (parser.parse(padded).get(doc) != simdjson::SUCCESS) return "";
  std::string_view arn;
  if (doc["deadLetterTargetArn"].get(arn) != simdjson::SUCCESS) return "";
  return std::string(arn);
}

// "arn:...:function:NAME[:QUALIFIER]" -> (the function's ARN, the qualifier).
std::pair<std::string, std::string> SplitQualifier(const std::string& function_arn) {
  auto parts = Split(function_arn, ':');
  if (parts.size() == 8 && parts[5] == "function") {
    return {function_arn.substr(0, function_arn.rfind(':')), std::string(parts[7])};
  }
  return {function_arn, ""};
}

std::string DlqName(const ArchiveRecord& record) {
  return record.queue.empty() ? record.queue_url : record.queue;
}

}  // namespace

std::optional<ArnParts> ParseArn(const std::string& arn) {
  if (!StartsWith(arn, "arn:")) return std::nullopt;
  ArnParts p;
  size_t at = 4;
  std::string* fields[] = {&p.partition, &p.service, &p.region, &p.account};
  for (std::string* f : fields) {
    size_t colon = arn.find(':', at);
    if (colon == std::string::npos) return std::nullopt;
    *f = arn.substr(at, colon - at);
    at = colon + 1;
  }
  p.resource = arn.substr(at);
  if (p.partition.empty() || p.service.empty() || p.resource.empty()) return std::nullopt;
  return p;
}

std::string DlqArnOf(const ArchiveRecord& record, const std::string& region) {
  std::string account = record.account_id;
  if (account.empty()) {
    auto parts = Split(record.queue_url, '/');  // https://HOST/ACCOUNT/NAME
    if (parts.size() >= 2) account = std::string(parts[parts.size() - 2]);
  }
  std::string name = record.queue;
  if (name.empty() && !record.queue_url.empty()) name = record.queue_url.substr(record.queue_url.rfind('/') + 1);
  if (account.empty() || name.empty()) return "";
  const std::string& r = record.region.empty() ? region : record.region;
  return fmt::format("arn:{}:sqs:{}:{}:{}", StartsWith(r, "cn-") ? "aws-cn" : "aws", r, account, name);
}

OriginResolver::OriginResolver(LambdaApi* lambda, SnsApi* sns, std::string region, std::string function)
    : lambda_(lambda), sns_(sns), region_(std::move(region)), function_(std::move(function)) {}

Status OriginResolver::CheckSameAccount(const ArchiveRecord& record, const std::string& arn) {
  auto target = ParseArn(arn);
  if (!target) return Status();  // a name: the DLQ's own account and region
  auto dlq = ParseArn(DlqArnOf(record, region_));
  if (!dlq) return Status();
  const bool other_account = !target->account.empty() && target->account != dlq->account;
  const bool other_region = !target->region.empty() && target->region != dlq->region;
  if (!other_account && !other_region) return Status();
  if (!allow_cross_account_) {
    return InvalidArgument(fmt::format(
        "message {} of DLQ {} (account {}, region {}) goes back to {}, in another {}; nothing goes across accounts "
        "or regions without {}",
        record.message_id, DlqName(record), dlq->account, dlq->region, arn,
        other_account ? (other_region ? "account and region" : "account") : "region", terms_.allow_cross_account));
  }
  routes_.insert(fmt::format("{} (account {}, region {}) -> {}", DlqName(record), dlq->account, dlq->region, arn));
  return Status();
}

Result<ReplayTarget> OriginResolver::Function(const std::string& function, const std::string& how) {
  auto split = SplitQualifier(function);
  // "$LATEST" (as Lambda's records name the unpublished version) is the
  // function itself: invoked and looked up without a qualifier.
  if (split.second == "$LATEST") split.second.clear();
  const std::string& arn = split.first;
  const std::string& qualifier = split.second;
  const std::string key = function;
  auto it = functions_.find(key);
  if (it == functions_.end()) {
    auto check = [&]() -> Result<ReplayTarget> {
      if (lambda_ == nullptr) return FailedPrecondition("the Lambda API is not available to this replay");
      auto config = lambda_->GetFunctionConfiguration(qualifier.empty() ? arn : function);
      if (!config.ok()) {
        if (config.status().code() == ErrorCode::kNotFound) {
          return NotFound(fmt::format("function {} does not exist", function));
        }
        return config.status();
      }
      ReplayTarget t;
      t.kind = TargetKind::kFunction;
      t.name = config->function_name;
      t.arn = config->function_arn.empty() ? arn : SplitQualifier(config->function_arn).first;
      t.qualifier = qualifier;
      t.url = qualifier.empty() ? t.arn : t.arn + ":" + qualifier;
      t.dlq_arn = config->dead_letter_target_arn;
      t.timeout_seconds = config->timeout_seconds.value_or(0);
      auto invoke = lambda_->GetFunctionEventInvokeConfig(t.arn, qualifier);
      if (!invoke.ok()) {
        t.invoke_config_error = invoke.status().message();
      } else if (invoke->has_value()) {
        t.on_failure_arn = (*invoke)->on_failure_destination;
        t.max_retry_attempts = (*invoke)->maximum_retry_attempts;
      }
      return t;
    };
    it = functions_.emplace(key, check()).first;
  }
  if (!it->second.ok()) return it->second.status();
  ReplayTarget t = *it->second;
  t.how = how;
  return t;
}

Result<std::vector<FunctionConfiguration>> OriginResolver::FunctionsFeeding(const std::string& dlq_arn) {
  if (lambda_ == nullptr) return FailedPrecondition("the Lambda API is not available to this replay");
  if (!all_functions_) all_functions_ = lambda_->ListFunctions();
  if (!all_functions_->ok()) return all_functions_->status().WithContext("finding the function whose DLQ this is");
  std::vector<FunctionConfiguration> out;
  for (const FunctionConfiguration& f : **all_functions_) {
    if (f.dead_letter_target_arn == dlq_arn) out.push_back(f);
  }
  return out;
}

Result<std::vector<std::pair<SnsSubscription, std::map<std::string, std::string>>>>
OriginResolver::SubscriptionsFeeding(const std::string& dlq_arn) {
  using Found = std::vector<std::pair<SnsSubscription, std::map<std::string, std::string>>>;
  if (sns_ == nullptr) return FailedPrecondition("the SNS API is not available to this replay");
  if (!all_subscriptions_) {
    auto load = [&]() -> Result<Found> {
      DLQ_ASSIGN_OR_RETURN(std::vector<SnsSubscription> subs, sns_->ListSubscriptions());
      Found all;
      for (SnsSubscription& s : subs) {
        if (!StartsWith(s.subscription_arn, "arn:")) continue;  // PendingConfirmation: nothing delivered yet
        DLQ_ASSIGN_OR_RETURN(auto attributes, sns_->GetSubscriptionAttributes(s.subscription_arn));
        all.emplace_back(std::move(s), std::move(attributes));
      }
      return all;
    };
    all_subscriptions_ = load();
  }
  if (!all_subscriptions_->ok()) {
    return all_subscriptions_->status().WithContext("finding the SNS subscription whose DLQ this is");
  }
  Found out;
  for (const auto& entry : **all_subscriptions_) {
    if (SnsDeadLetterTarget(entry.second) == dlq_arn) out.push_back(entry);
  }
  return out;
}

Result<ReplayTarget> OriginResolver::FromDestinationRecord(const ArchiveRecord& record,
                                                           const std::string& function_arn) {
  if (function_arn.empty()) {
    return InvalidArgument(
        fmt::format("message {} is a Lambda on-failure record without requestContext.functionArn", record.message_id));
  }
  DLQ_RETURN_IF_ERROR(CheckSameAccount(record, function_arn));
  DLQ_ASSIGN_OR_RETURN(ReplayTarget t, Function(function_arn,
                                                "on-failure destination record: requestContext."
                                                "functionArn, requestPayload"));
  t.shape = PayloadShape::kRequestPayload;
  return t;
}

Result<ReplayTarget> OriginResolver::FromEventBridge(const ArchiveRecord& record, const std::string& target_arn,
                                                     const std::string& rule) {
  auto arn = ParseArn(target_arn);
  if (!arn) {
    return InvalidArgument(fmt::format("message {} names its EventBridge target '{}', which is not an ARN",
                                       record.message_id, target_arn));
  }
  DLQ_RETURN_IF_ERROR(CheckSameAccount(record, target_arn));
  const std::string how = fmt::format("EventBridge target TARGET_ARN of {}", rule.empty() ? "its rule" : rule);
  if (arn->service == "lambda") {
    DLQ_ASSIGN_OR_RETURN(ReplayTarget t, Function(target_arn, how));
    return t;
  }
  ReplayTarget t;
  t.arn = target_arn;
  t.url = target_arn;
  t.how = how;
  t.keep_attributes = false;  // RULE_ARN, TARGET_ARN, ERROR_CODE, ...: EventBridge's, not the event's
  t.name = arn->resource.substr(arn->resource.find_last_of(":/") + 1);
  if (arn->service == "sqs") return t;  // kQueue: the caller checks the queue
  if (arn->service == "sns") {
    t.kind = TargetKind::kTopic;
    return t;
  }
  if (arn->service == "events" && StartsWith(arn->resource, "event-bus/")) {
    t.kind = TargetKind::kBus;
    t.shape = PayloadShape::kEvent;
    return t;
  }
  if (arn->service == "scheduler" && StartsWith(arn->resource, "aws-sdk:")) {
    // A Scheduler universal target: TARGET_ARN names an API call
    // (arn:aws:scheduler:::aws-sdk:SERVICE:ACTION) and the message is that
    // call's parameters (configuring-schedule-dlq.html), not an event.
    return InvalidArgument(fmt::format(
        "message {}: its schedule's target is the universal target {}, an API call ({}) whose parameters are the "
        "message; --to-origin makes no API calls for schedules (this one is not sent: make the call with the AWS "
        "CLI, or replay the message with --to-queue)",
        record.message_id, target_arn, arn->resource.substr(8)));
  }
  return InvalidArgument(fmt::format(
      "message {}: its EventBridge target {} is a {} target; --to-origin sends to Lambda functions, SQS queues, SNS "
      "topics and event buses only (this one is not sent: put it back with the target's own API)",
      record.message_id, target_arn, arn->service));
}

Result<ReplayTarget> OriginResolver::FromSubscription(const ArchiveRecord& record, const SnsSubscription& sub,
                                                      const std::map<std::string, std::string>& attributes) {
  auto raw_it = attributes.find("RawMessageDelivery");
  const bool raw = raw_it != attributes.end() && raw_it->second == "true";
  const std::string how = fmt::format("SNS subscription {} ({}, {}): its RedrivePolicy targets this DLQ",
                                      sub.subscription_arn, sub.protocol, raw ? "raw" : "envelope");
  DLQ_RETURN_IF_ERROR(CheckSameAccount(record, sub.endpoint));
  ReplayTarget t;
  if (sub.protocol == "lambda") {
    DLQ_ASSIGN_OR_RETURN(t, Function(sub.endpoint, how));
    t.shape = PayloadShape::kSnsLambdaEvent;
  } else if (sub.protocol == "sqs") {
    t.arn = sub.endpoint;
    t.url = sub.endpoint;
    t.how = how;
    t.keep_attributes = raw;  // raw delivery: SNS's message attributes become the queue message's
  } else if (sub.protocol == "http" || sub.protocol == "https") {
    t.kind = TargetKind::kHttp;
    t.keep_attributes = raw;
    t.url = sub.endpoint;
    t.name = sub.endpoint;
    t.how = how;
  } else {
    return InvalidArgument(fmt::format(
        "message {}: its SNS subscription {} delivers over {}; --to-origin sends to sqs, lambda, http and https "
        "endpoints only (never to the topic: every other subscriber would receive it again)",
        record.message_id, sub.subscription_arn, sub.protocol));
  }
  t.subscription_arn = sub.subscription_arn;
  t.topic_arn = sub.topic_arn;
  return t;
}

// A message that does not name its origin (or a Lambda async DLQ message):
// the function named by the caller, the one function whose DLQ this is, or
// the one SNS subscription whose DLQ this is.
Result<ReplayTarget> OriginResolver::FromDlq(const ArchiveRecord& record, bool lambda_async) {
  if (!function_.empty()) {
    DLQ_RETURN_IF_ERROR(CheckSameAccount(record, function_));
    return Function(function_, "the function named for this replay");
  }
  const std::string dlq_arn = DlqArnOf(record, region_);
  auto cached = by_dlq_.find(dlq_arn);
  if (cached != by_dlq_.end()) return cached->second;
  auto resolve = [&]() -> Result<ReplayTarget> {
    DLQ_ASSIGN_OR_RETURN(std::vector<FunctionConfiguration> functions, FunctionsFeeding(dlq_arn));
    if (functions.size() == 1) {
      return Function(functions.front().function_arn,
                      "Lambda asynchronous invocation: the function's "
                      "DeadLetterConfig targets this DLQ");
    }
    if (functions.size() > 1) {
      std::string names;
      for (const auto& f : functions) names += (names.empty() ? "" : ", ") + f.function_name;
      return InvalidArgument(fmt::format("{} is the DeadLetterConfig target of {} functions ({}); name one with {}",
                                         DlqName(record), functions.size(), names, terms_.function));
    }
    if (!lambda_async && sns_ != nullptr) {
      DLQ_ASSIGN_OR_RETURN(auto subs, SubscriptionsFeeding(dlq_arn));
      if (subs.size() == 1) return FromSubscription(record, subs.front().first, subs.front().second);
      if (subs.size() > 1) {
        return InvalidArgument(
            fmt::format("{} is the dead-letter queue of {} SNS subscriptions; which one message {} came from is not "
                        "said in it: replay with a queue or attribute filter and a destination queue",
                        DlqName(record), subs.size(), record.message_id));
      }
    }
    return InvalidArgument(fmt::format(
        "where message {} of {} came from cannot be told: it is no Lambda on-failure record, names no EventBridge "
        "target, and no Lambda function's DeadLetterConfig{} targets {}; name the function with {}, or send it to a "
        "queue",
        record.message_id, DlqName(record), sns_ != nullptr ? " or SNS subscription's RedrivePolicy" : "",
        dlq_arn.empty() ? DlqName(record) : dlq_arn, terms_.function));
  };
  return by_dlq_.emplace(dlq_arn, resolve()).first->second;
}

Result<ReplayTarget> OriginResolver::Resolve(const ArchiveRecord& record) {
  OriginClue clue = ReadOriginClue(record);
  if (!clue.unreplayable.empty()) {
    return InvalidArgument(fmt::format("message {} ({}) cannot go back: {}", record.message_id, ClueKindName(clue.kind),
                                       clue.unreplayable));
  }
  switch (clue.kind) {
    case ClueKind::kLambdaDestination: return FromDestinationRecord(record, clue.function_arn);
    case ClueKind::kEventBridgeTarget:
    case ClueKind::kSchedulerTarget: return FromEventBridge(record, clue.target_arn, clue.rule_arn);
    case ClueKind::kLambdaAsync: return FromDlq(record, /*lambda_async=*/true);
    case ClueKind::kSnsEnvelope:
    case ClueKind::kNone: return FromDlq(record, /*lambda_async=*/false);
  }
  return FromDlq(record, false);
}

}  // namespace dlq
