#include "replay/origin_clue.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <optional>

#include "common/crypto.h"

// Where each shape comes from (AWS's documentation):
//
// kLambdaAsync: a function's DeadLetterConfig queue gets the event unchanged
// as the body, with message attributes RequestID (String), ErrorCode (Number,
// a 3-digit HTTP code) and ErrorMessage (String, truncated to 1 KB).
//   https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html#invocation-dlq
//   https://docs.aws.amazon.com/lambda/latest/dg/dlq.html (the older page with the attribute table)
//
// kLambdaDestination: an on-failure destination (SQS, or SNS whose Message it
// is) gets the invocation record: version, timestamp, requestContext
// {requestId, functionArn, condition, approximateInvokeCount}, requestPayload,
// responseContext {statusCode, executedVersion, functionError},
// responsePayload. Lambda drops the payload when the record would exceed an
// SNS destination's size limit.
//   https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html
//   https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-lambda-eventsourcemapping-onfailure.html
// An event source mapping's on-failure record has the same requestContext and
// responseContext but no requestPayload: a KinesisBatchInfo or
// DDBStreamBatchInfo object (shardId, start/endSequenceNumber, batchSize,
// streamArn) says where the batch was, not what it held.
//   https://docs.aws.amazon.com/lambda/latest/dg/kinesis-on-failure-destination.html
//   https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html
//   https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure.html
//
// kEventBridgeTarget: a rule target's DLQ message is the event, with message
// attributes RULE_ARN, TARGET_ARN, ERROR_CODE, ERROR_MESSAGE,
// EXHAUSTED_RETRY_CONDITION (only when a retry limit ended delivery) and
// RETRY_ATTEMPTS.
//   https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-dlq.html
//
// kSchedulerTarget: a schedule's DLQ message (the "dead-letter event") is the
// target's input, with message attributes ERROR_CODE, ERROR_MESSAGE,
// EXECUTION_ID, EXHAUSTED_RETRY_CONDITION, IS_PAYLOAD_TRUNCATED,
// RETRY_ATTEMPTS, SCHEDULED_TIME, SCHEDULE_ARN and TARGET_ARN (the page's
// "Retrieve the dead-letter event" example). For a universal target
// TARGET_ARN is the API call, arn:aws:scheduler:::aws-sdk:SERVICE:ACTION,
// and the body that call's parameters.
//   https://docs.aws.amazon.com/scheduler/latest/UserGuide/configuring-schedule-dlq.html
//
// kSnsEnvelope: a subscription's DLQ gets the message as SNS would have
// delivered it: the JSON envelope (Type "Notification", MessageId, TopicArn,
// Subject, Message, Timestamp, SignatureVersion, Signature, SigningCertURL,
// UnsubscribeURL, MessageAttributes {Name: {Type, Value}}), or the raw
// message when the subscription has RawMessageDelivery.
//   https://docs.aws.amazon.com/sns/latest/dg/sns-dead-letter-queues.html
//   https://docs.aws.amazon.com/sns/latest/dg/sns-message-and-json-formats.html

namespace dlq {
namespace {

// The String or Number value of message attribute `name`; empty when absent
// or Binary.
std::string_view Attribute(const ArchiveRecord& record, const char* name) {
  auto it = record.message_attributes.find(name);
  if (it == record.message_attributes.end() || it->second.IsBinary()) return {};
  return it->second.string_value;
}

std::string CodeAndMessage(std::string_view code, std::string_view message) {
  if (code.empty()) return std::string(message);
  if (message.empty()) return std::string(code);
  return fmt::format("{}: {}", code, message);
}

std::string StringField(simdjson::dom::element object, std::string_view key) {
  std::string_view s;
  if (object[key].get(s) != simdjson::SUCCESS) return {};
  return std::string(s);
}

bool IsJsonSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// The exact text of the value of top-level field `key` in `body` (already
// known to be a valid JSON object): objects and arrays from their opening
// bracket to their closing one, scalars as written, never re-serialized.
std::optional<std::string> RawFieldText(std::string_view body, std::string_view key) {
  simdjson::padded_string padded(body);
  thread_local simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  simdjson::ondemand::object root;
  if (parser.iterate(padded).get(doc) != simdjson::SUCCESS || doc.get_object().get(root) != simdjson::SUCCESS) {
    return std::nullopt;
  }
  for (auto field : root) {
    std::string_view name;
    simdjson::ondemand::value value;
    if (field.unescaped_key().get(name) != simdjson::SUCCESS || field.value().get(value) != simdjson::SUCCESS) {
      return std::nullopt;
    }
    if (name != key) continue;
    simdjson::ondemand::json_type type;
    if (value.type().get(type) != simdjson::SUCCESS) return std::nullopt;
    std::string_view raw;
    simdjson::error_code error = simdjson::SUCCESS;
    if (type == simdjson::ondemand::json_type::object) {
      simdjson::ondemand::object object;
      error = value.get_object().get(object);
      if (!error) error = object.raw_json().get(raw);
    } else if (type == simdjson::ondemand::json_type::array) {
      simdjson::ondemand::array array;
      error = value.get_array().get(array);
      if (!error) error = array.raw_json().get(raw);
    } else {
      raw = value.raw_json_token();
    }
    if (error) return std::nullopt;
    while (!raw.empty() && IsJsonSpace(raw.back())) raw.remove_suffix(1);
    return std::string(raw);
  }
  return std::nullopt;
}

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}
bool IsNumberChar(char c) {
  return IsDigit(c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

// `body` with every integer of 19 or more digits outside strings turned into a
// decimal of the same length ("12345..." -> "1.2345..."). simdjson's DOM
// (3.0) refuses integers beyond 64 bits (NUMBER_ERROR), which JSON allows; the copy parses wherever
// the body is valid JSON and fails wherever it is not, and its strings and
// structure are the body's (its numbers are never read here).
std::string WithoutBigIntegers(std::string_view body) {
  std::string out(body);
  bool in_string = false;
  for (size_t i = 0; i < out.size(); ++i) {
    if (in_string) {
      if (out[i] == '\\')
        ++i;
      else if (out[i] == '"')
        in_string = false;
      continue;
    }
    if (out[i] == '"') in_string = true;
    if (!IsNumberChar(out[i])) continue;
    size_t end = i;
    while (end < out.size() && IsNumberChar(out[end])) ++end;
    const size_t first = out[i] == '-' ? i + 1 : i;  // the token is -?[1-9][0-9]{18,}: patch it
    bool digits_only = end - first >= 19 && out[first] != '0';
    for (size_t j = first; digits_only && j < end; ++j) digits_only = IsDigit(out[j]);
    if (digits_only) out[first + 1] = '.';
    i = end - 1;
  }
  return out;
}

// The top-level key naming an event source mapping's batch
// ("KinesisBatchInfo", "DDBStreamBatchInfo", ...), empty when there is none.
std::string BatchInfoKey(simdjson::dom::object root) {
  constexpr std::string_view kSuffix = "BatchInfo";
  for (auto [key, value] : root) {
    if (key.size() > kSuffix.size() && key.substr(key.size() - kSuffix.size()) == kSuffix && value.is_object()) {
      return std::string(key);
    }
  }
  return {};
}

std::string DestinationError(simdjson::dom::object root) {
  simdjson::dom::element response;
  if (root["responsePayload"].get(response) == simdjson::SUCCESS && response.is_object()) {
    std::string message = StringField(response, "errorMessage");
    if (!message.empty()) return CodeAndMessage(StringField(response, "errorType"), message);
  }
  simdjson::dom::element context;
  if (root["responseContext"].get(context) != simdjson::SUCCESS || !context.is_object()) return {};
  return StringField(context, "functionError");
}

// A Lambda destination record's clue; nullopt when `root` is not one (its
// requestContext has no functionArn and requestId).
std::optional<OriginClue> DestinationClue(std::string_view body, simdjson::dom::object root) {
  simdjson::dom::element context;
  if (root["requestContext"].get(context) != simdjson::SUCCESS || !context.is_object()) return std::nullopt;
  OriginClue clue;
  clue.function_arn = StringField(context, "functionArn");
  clue.request_id = StringField(context, "requestId");
  if (clue.function_arn.empty() || clue.request_id.empty()) return std::nullopt;
  clue.kind = ClueKind::kLambdaDestination;
  clue.condition = StringField(context, "condition");
  clue.error = DestinationError(root);
  if (std::string batch = BatchInfoKey(root); !batch.empty()) {
    const std::string stream = StringField(root[batch].value_unsafe(), "streamArn");
    clue.unreplayable = fmt::format(
        "a Lambda event source mapping's on-failure record ({}{}): it says where the failed batch was, not what it "
        "held; read the records from the source",
        batch, stream.empty() ? "" : " of " + stream);
    return clue;
  }
  std::optional<std::string> payload = RawFieldText(body, "requestPayload");
  if (!payload) {
    clue.unreplayable =
        "a Lambda destination record without requestPayload (Lambda leaves it out when the record would exceed the "
        "destination's size limit)";
    return clue;
  }
  clue.payload = std::move(*payload);
  return clue;
}

// An SNS notification envelope's clue; nullopt when `root` is not one.
std::optional<OriginClue> SnsEnvelopeClue(simdjson::dom::object root) {
  std::string_view type, topic, message, message_id;
  if (root["Type"].get(type) != simdjson::SUCCESS || type != "Notification" ||
      root["TopicArn"].get(topic) != simdjson::SUCCESS || topic.empty() ||
      root["MessageId"].get(message_id) != simdjson::SUCCESS || root["Message"].get(message) != simdjson::SUCCESS) {
    return std::nullopt;
  }
  OriginClue clue;
  clue.kind = ClueKind::kSnsEnvelope;
  clue.topic_arn = std::string(topic);
  clue.payload = std::string(message);
  return clue;
}

// A Lambda on-failure destination that is an SNS topic publishes the record
// as the notification's Message (invocation-async-retain-records); a queue
// subscribed to that topic holds it inside the envelope. The record's clue
// then, with the topic it came through; else the envelope's own clue.
OriginClue DestinationInEnvelope(OriginClue envelope) {
  thread_local simdjson::dom::parser inner;
  simdjson::dom::object root;
  if (inner.parse(envelope.payload).get(root) != simdjson::SUCCESS) return envelope;
  std::optional<OriginClue> record = DestinationClue(envelope.payload, root);
  if (!record) return envelope;
  record->topic_arn = std::move(envelope.topic_arn);
  return std::move(*record);
}

std::optional<OriginClue> AttributeClue(const ArchiveRecord& record) {
  OriginClue clue;
  clue.payload = record.body;
  const std::string_view rule = Attribute(record, "RULE_ARN");
  const std::string_view schedule = Attribute(record, "SCHEDULE_ARN");
  if (!rule.empty() || !schedule.empty()) {
    clue.kind = rule.empty() ? ClueKind::kSchedulerTarget : ClueKind::kEventBridgeTarget;
    clue.rule_arn = std::string(rule.empty() ? schedule : rule);
    clue.target_arn = std::string(Attribute(record, "TARGET_ARN"));
    clue.condition = std::string(Attribute(record, "EXHAUSTED_RETRY_CONDITION"));
    clue.error = CodeAndMessage(Attribute(record, "ERROR_CODE"), Attribute(record, "ERROR_MESSAGE"));
    if (rule.empty() && Attribute(record, "IS_PAYLOAD_TRUNCATED") == "true") {
      clue.payload.clear();
      clue.unreplayable = "EventBridge Scheduler truncated the payload (IS_PAYLOAD_TRUNCATED is true)";
    }
    return clue;
  }
  const std::string_view request_id = Attribute(record, "RequestID");
  const std::string_view code = Attribute(record, "ErrorCode");
  if (request_id.empty() || code.empty()) return std::nullopt;
  clue.kind = ClueKind::kLambdaAsync;
  clue.request_id = std::string(request_id);
  clue.error = CodeAndMessage(code, Attribute(record, "ErrorMessage"));
  return clue;
}

}  // namespace

std::string_view ClueKindName(ClueKind kind) {
  switch (kind) {
    case ClueKind::kNone: return "none";
    case ClueKind::kLambdaAsync: return "lambda-async";
    case ClueKind::kLambdaDestination: return "lambda-destination";
    case ClueKind::kEventBridgeTarget: return "eventbridge-target";
    case ClueKind::kSchedulerTarget: return "scheduler-target";
    case ClueKind::kSnsEnvelope: return "sns-envelope";
  }
  return "none";
}

OriginClue ReadOriginClue(const ArchiveRecord& record) {
  thread_local simdjson::dom::parser parser;
  simdjson::dom::object root;
  simdjson::error_code parsed = parser.parse(record.body).get(root);
  if (parsed == simdjson::NUMBER_ERROR) parsed = parser.parse(WithoutBigIntegers(record.body)).get(root);
  const bool object = parsed == simdjson::SUCCESS;
  if (object) {
    if (std::optional<OriginClue> clue = DestinationClue(record.body, root)) return std::move(*clue);
  }
  if (std::optional<OriginClue> clue = AttributeClue(record)) return std::move(*clue);
  if (object) {
    if (std::optional<OriginClue> clue = SnsEnvelopeClue(root)) return DestinationInEnvelope(std::move(*clue));
  }
  OriginClue none;
  none.payload = record.body;
  return none;
}

std::string PayloadKey(std::string_view payload) {
  return "sha256:" + Sha256Hex(payload);
}

std::vector<std::string> RefailureKeys(const ArchiveRecord& record) {
  std::vector<std::string> keys;
  if (!record.message_id.empty()) keys.push_back(record.message_id);
  const OriginClue clue = ReadOriginClue(record);
  if (clue.unreplayable.empty()) keys.push_back(PayloadKey(clue.payload));
  if (!clue.request_id.empty()) keys.push_back("lambda-request:" + clue.request_id);
  return keys;
}

std::vector<std::string> RefailureKeysOf(const Message& message) {
  ArchiveRecord r;
  r.message_id = message.message_id;
  r.body = message.body;
  r.attributes = message.attributes;
  r.message_attributes = message.message_attributes;
  return RefailureKeys(r);
}

}  // namespace dlq
