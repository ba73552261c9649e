// What a dead-letter message says of where it came from, read from the
// message alone (no AWS call): the attributes and body shapes that Lambda,
// EventBridge, EventBridge Scheduler and SNS give what they could not
// deliver. `replay --to-origin` (replay/origins.h) resolves the origin from
// this clue, or, when the message says nothing, from the DLQ (the Lambda
// function whose DeadLetterConfig, or the SNS subscription whose
// RedrivePolicy, targets it).
//
// Each shape is checked against AWS's documentation; origin_clue.cc cites
// the page for each.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "archive/record.h"

namespace dlq {

enum class ClueKind {
  kNone,               // the message itself does not say
  kLambdaAsync,        // a Lambda asynchronous-invocation DLQ message: the body is the event
  kLambdaDestination,  // a Lambda on-failure destination record (requestContext, requestPayload, ...)
  kEventBridgeTarget,  // an EventBridge rule target's DLQ message: the body is the event as sent to the target
  kSchedulerTarget,    // an EventBridge Scheduler schedule's DLQ message
  kSnsEnvelope,        // the body is an SNS notification envelope (Type "Notification", TopicArn, Message)
};
std::string_view ClueKindName(ClueKind kind);  // "lambda-async", "lambda-destination", ...

struct OriginClue {
  ClueKind kind = ClueKind::kNone;
  std::string function_arn;  // kLambdaDestination: requestContext.functionArn (qualifier kept)
  std::string request_id;    // kLambdaAsync: the RequestID attribute; kLambdaDestination: requestContext.requestId
  std::string target_arn;    // kEventBridgeTarget, kSchedulerTarget: the target that failed
  std::string rule_arn;      // kEventBridgeTarget: the rule; kSchedulerTarget: the schedule
  std::string topic_arn;     // kSnsEnvelope
  std::string condition;     // why the origin gave up: "RetriesExhausted", "EventAgeExceeded", ...
  std::string error;         // the error the origin attached, as it gave it (for the dry run): "CODE: message"
  // What goes back to the origin, byte for byte: the body as it is; for
  // kLambdaDestination, the exact text of requestPayload inside the body; for
  // kSnsEnvelope, the envelope's Message (unescaped: the text that was published).
  std::string payload;
  // Non-empty when the message names its origin but does not carry what would
  // go back (payload is then empty): why, for the resolver to refuse with. A
  // Lambda event source mapping's on-failure record (KinesisBatchInfo,
  // DDBStreamBatchInfo, ...) names a batch, not its records; a destination
  // record without requestPayload; a Scheduler message with IS_PAYLOAD_TRUNCATED.
  std::string unreplayable;
};

// Never fails: a message that matches no shape (or a malformed one: a body
// that looks like a destination record but is not valid JSON) is kNone with
// the body as payload. Checked in this order: a destination-record body,
// EventBridge's attributes (RULE_ARN), Scheduler's (SCHEDULE_ARN), Lambda's
// (RequestID and ErrorCode), an SNS envelope body. Attribute names match
// exactly; an attribute that is empty or Binary counts as absent. Pure and
// thread-safe.
OriginClue ReadOriginClue(const ArchiveRecord& record);

// "sha256:" + the hex SHA-256 of `payload`: how a payload sent to an origin
// that gives no message id back is recognised when it fails into a DLQ again.
std::string PayloadKey(std::string_view payload);

// The keys under which a dead-letter message may be watched for as a
// re-failure of something a replay sent: its message id; the payload key of
// what its clue would send (none when the clue is unreplayable);
// "lambda-request:" + its request id when it has one. In that order.
std::vector<std::string> RefailureKeys(const ArchiveRecord& record);
// The same for a received message, its own id first.
std::vector<std::string> RefailureKeysOf(const Message& message);

}  // namespace dlq
