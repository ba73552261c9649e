#include "replay/origin_sender.h"

#include <fmt/format.h>
#include <simdjson.h>

#include "common/json_writer.h"
#include "common/strings.h"
#include "replay/origin_clue.h"

namespace dlq {
namespace {

std::string Attribute(const ArchiveRecord& r, const char* name) {
  auto it = r.attributes.find(name);
  return it == r.attributes.end() ? std::string() : it->second;
}

// The event SNS gives a subscribed function: one record whose "Sns" is the
// notification (https://docs.aws.amazon.com/lambda/latest/dg/with-sns.html).
// The envelope in the DLQ is embedded as it is, byte for byte.
Result<std::string> SnsLambdaEvent(const ReplayTarget& target, const std::string& envelope) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(envelope);
  simdjson::dom::element doc;
  std::string_view type;
  if (parser.parse(padded).get(doc) != simdjson::SUCCESS || !doc.is_object() ||
      doc["Type"].get(type) != simdjson::SUCCESS || type != "Notification") {
    return InvalidArgument(
        "the message is not an SNS notification envelope, which a function subscribed to "
        "the topic receives; it cannot be put back in that shape");
  }
  std::string event = R"({"Records":[{"EventSource":"aws:sns","EventVersion":"1.0","EventSubscriptionArn":)";
  AppendJsonString(event, target.subscription_arn);
  event += R"(,"Sns":)";
  event += envelope;
  event += "}]}";
  return event;
}

OriginDelivery FromStatus(const Status& st, const std::string& what) {
  OriginDelivery d;
  d.reason = st.ToString();
  if (st.code() == ErrorCode::kThrottled) {
    d.outcome = OriginDelivery::kThrottled;
  } else if (st.retryable()) {
    d.outcome = OriginDelivery::kRetry;
  } else {
    d.outcome = OriginDelivery::kFatal;
    d.error = st.WithContext(what);
  }
  return d;
}

OriginDelivery Unavailable(std::string_view api, const ReplayTarget& target) {
  OriginDelivery d;
  d.outcome = OriginDelivery::kFatal;
  d.error = FailedPrecondition(fmt::format("the {} API is not available to send to {}", api, target.url));
  d.reason = d.error.ToString();
  return d;
}

}  // namespace

Result<std::string> OriginPayload(const ReplayTarget& target, const ArchiveRecord& record) {
  switch (target.shape) {
    case PayloadShape::kMessage:
    case PayloadShape::kEvent: break;  // an event is turned into a PutEvents entry when sent
    case PayloadShape::kRequestPayload: {
      OriginClue clue = ReadOriginClue(record);
      if (clue.kind != ClueKind::kLambdaDestination || clue.payload.empty()) {
        return InvalidArgument("the message is not a Lambda on-failure record with a requestPayload");
      }
      return std::move(clue.payload);
    }
    case PayloadShape::kSnsLambdaEvent: return SnsLambdaEvent(target, record.body);
  }
  return record.body;
}

size_t OriginPayloadLimit(const ReplayTarget& target, bool synchronous) {
  switch (target.kind) {
    case TargetKind::kFunction: return synchronous ? kLambdaSyncPayloadMax : kLambdaEventPayloadMax;
    case TargetKind::kTopic:                           // SNS Publish: 256 KiB
    case TargetKind::kBus: return size_t{256} * 1024;  // PutEvents: 256 KiB per request
    case TargetKind::kHttp:
    case TargetKind::kQueue: break;
  }
  return size_t{1} << 20;
}

OriginDelivery AwsOriginSender::Deliver(const ReplayTarget& target, const ArchiveRecord& record, bool synchronous) {
  auto payload = OriginPayload(target, record);
  if (!payload.ok()) return OriginDelivery{OriginDelivery::kRefused, "", payload.status().message(), {}};
  const size_t limit = OriginPayloadLimit(target, synchronous);
  if (payload->size() > limit) {
    return OriginDelivery{OriginDelivery::kRefused,
                          "",
                          fmt::format("the payload is {} bytes, over the {} limit of {} bytes; not sent",
                                      payload->size(), TargetKindName(target.kind), limit),
                          {}};
  }
  switch (target.kind) {
    case TargetKind::kFunction: return Invoke(target, *payload, synchronous);
    case TargetKind::kTopic: return Publish(target, record, *payload);
    case TargetKind::kBus: return PutEvent(target, *payload);
    case TargetKind::kHttp: return Post(target, record, *payload);
    case TargetKind::kQueue: break;
  }
  OriginDelivery d;
  d.outcome = OriginDelivery::kFatal;
  d.error = Internal(fmt::format("{} is a queue: the Replayer sends to queues itself", target.url));
  return d;
}

OriginDelivery AwsOriginSender::Invoke(const ReplayTarget& target, const std::string& payload, bool synchronous) {
  if (lambda_ == nullptr) return Unavailable("Lambda", target);
  InvokeRequest rq;
  rq.function_name = target.arn.empty() ? target.url : target.arn;
  rq.qualifier = target.qualifier;
  rq.type = synchronous ? InvocationType::kRequestResponse : InvocationType::kEvent;
  rq.payload = payload;
  auto r = lambda_->Invoke(rq);
  if (!r.ok()) return FromStatus(r.status(), fmt::format("Invoke {}", target.url));
  OriginDelivery d;
  d.new_id = r->request_id.empty() ? PayloadKey(payload) : "lambda-request:" + r->request_id;
  if (!r->function_error.empty()) {
    d.outcome = OriginDelivery::kRefused;
    std::string answer = r->payload.substr(0, 300);
    d.reason = fmt::format("the function failed again ({}): {}", r->function_error, answer);
  }
  return d;
}

OriginDelivery AwsOriginSender::Publish(const ReplayTarget& target, const ArchiveRecord& record,
                                        const std::string& payload) {
  if (sns_ == nullptr) return Unavailable("SNS", target);
  PublishRequest rq;
  rq.topic_arn = target.arn;
  rq.message = payload;
  if (target.keep_attributes) rq.attributes = record.message_attributes;
  if (EndsWith(target.arn, ".fifo")) {
    rq.message_group_id = Attribute(record, "MessageGroupId");
    rq.message_deduplication_id = Attribute(record, "MessageDeduplicationId");
    if (rq.message_deduplication_id.empty()) rq.message_deduplication_id = record.message_id;
  }
  auto r = sns_->Publish(rq);
  if (!r.ok()) {
    if (r.status().code() == ErrorCode::kInvalidArgument) {
      return OriginDelivery{OriginDelivery::kRefused, "", r.status().ToString(), {}};
    }
    return FromStatus(r.status(), fmt::format("Publish to {}", target.arn));
  }
  return OriginDelivery{OriginDelivery::kDelivered, PayloadKey(payload), "", {}};
}

OriginDelivery AwsOriginSender::PutEvent(const ReplayTarget& target, const std::string& payload) {
  if (events_ == nullptr) return Unavailable("EventBridge", target);
  auto entry = PutEventsEntryFromEvent(payload, target.arn);
  if (!entry.ok()) return OriginDelivery{OriginDelivery::kRefused, "", entry.status().message(), {}};
  auto r = events_->PutEvents({*entry});
  if (!r.ok()) return FromStatus(r.status(), fmt::format("PutEvents to {}", target.arn));
  if (r->size() != 1) {
    return OriginDelivery{OriginDelivery::kRetry, "", "PutEvents answered no result for the entry", {}};
  }
  const PutEventsEntryResult& e = r->front();
  if (e.ok()) return OriginDelivery{OriginDelivery::kDelivered, PayloadKey(payload), "", {}};
  OriginDelivery d;
  d.reason = fmt::format("PutEvents entry failed: {}: {}", e.error_code, e.error_message);
  d.outcome =
      e.error_code == "ThrottlingException"
          ? OriginDelivery::kThrottled
          : (e.error_code == "InternalFailure" || e.error_code == "InternalException" ? OriginDelivery::kRetry
                                                                                      : OriginDelivery::kRefused);
  return d;
}

// As SNS delivers to an HTTP/S endpoint
// (https://docs.aws.amazon.com/sns/latest/dg/http-header.html): a POST whose
// body is the notification (or, raw, the message), with the x-amz-sns-*
// headers.
OriginDelivery AwsOriginSender::Post(const ReplayTarget& target, const ArchiveRecord& record,
                                     const std::string& payload) {
  if (http_ == nullptr) return Unavailable("HTTP", target);
  HttpRequest rq;
  rq.method = "POST";
  rq.url = target.url;
  rq.body = payload;
  SetHeader(rq.headers, "Content-Type", "text/plain; charset=UTF-8");
  SetHeader(rq.headers, "x-amz-sns-message-type", "Notification");
  SetHeader(rq.headers, "x-amz-sns-message-id", record.message_id);
  SetHeader(rq.headers, "x-amz-sns-topic-arn", target.topic_arn);
  SetHeader(rq.headers, "x-amz-sns-subscription-arn", target.subscription_arn);
  if (target.keep_attributes) SetHeader(rq.headers, "x-amz-sns-rawdelivery", "true");
  auto r = http_->Send(rq);
  if (!r.ok()) return FromStatus(r.status(), fmt::format("POST {}", target.url));
  if (r->status >= 200 && r->status < 300) {
    return OriginDelivery{OriginDelivery::kDelivered, PayloadKey(payload), "", {}};
  }
  OriginDelivery d;
  d.reason = fmt::format("the endpoint answered HTTP {}", r->status);
  d.outcome = r->status == 429                        ? OriginDelivery::kThrottled
              : (r->status >= 500 && r->status < 600) ? OriginDelivery::kRetry
                                                      : OriginDelivery::kRefused;
  return d;
}

}  // namespace dlq
