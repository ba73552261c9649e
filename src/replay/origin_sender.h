// OriginSender: how the Replayer (replay/replayer.h) delivers one message to
// an origin that is not an SQS queue (`replay --to-origin`): a Lambda
// function is invoked (InvocationType Event, or RequestResponse for a guarded
// run's canary, which sees a function error at once), an SNS topic gets
// Publish, an EventBridge bus PutEvents, an SNS subscription's HTTP/S
// endpoint a POST as SNS delivers it. Queues that are origins (an EventBridge
// rule's SQS target, an SNS subscription's queue) go through the Replayer's
// SendMessageBatch path.
//
// What is sent is what failed, byte for byte (OriginPayload): the body, a
// Lambda on-failure record's requestPayload, an SNS envelope wrapped in the
// event SNS gives a function, an EventBridge event turned back into a
// PutEvents entry.
//
// Every implementation is thread-safe (the Replayer calls it from its worker
// threads).
#pragma once

#include <cstddef>
#include <string>

#include "archive/record.h"
#include "aws/http.h"
#include "common/status.h"
#include "events/events_api.h"
#include "lambda_api/lambda_api.h"
#include "replay/targets.h"
#include "sns/sns_api.h"

namespace dlq {

// The largest payload an asynchronous (Event) invocation takes, and a
// synchronous one (RequestResponse): Lambda's quotas
// (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html).
inline constexpr size_t kLambdaEventPayloadMax = size_t{1} << 20;
inline constexpr size_t kLambdaSyncPayloadMax = size_t{6} * 1000 * 1000;

struct OriginDelivery {
  enum Outcome {
    kDelivered,  // the origin took it
    kRefused,    // the origin answered that it failed (a function error, an HTTP error, a PutEvents entry error)
    kThrottled,  // too many requests (Lambda's 429): pause and send it again
    kRetry,      // a transient error: send it again with backoff
    kFatal,      // the run cannot go on (the function is gone, the call is denied)
  };
  Outcome outcome = kDelivered;
  // kDelivered / kRefused: the key the message is watched under for a
  // re-failure ("lambda-request:ID" when Lambda gave a request id, else the
  // payload's key, replay/origin_clue.h).
  std::string new_id;
  std::string reason;  // why it was not delivered
  Status error;        // kFatal
};

// What goes to `target` for `record`; kInvalidArgument when the record does
// not have the shape the target needs (not an SNS envelope, not an
// EventBridge event).
Result<std::string> OriginPayload(const ReplayTarget& target, const ArchiveRecord& record);
// The payload limit of `target` for one message (Lambda's, SNS's, ...).
size_t OriginPayloadLimit(const ReplayTarget& target, bool synchronous);

class OriginSender {
 public:
  virtual ~OriginSender() = default;
  // `target` is not a queue. `synchronous`: invoke a function with RequestResponse.
  virtual OriginDelivery Deliver(const ReplayTarget& target, const ArchiveRecord& record, bool synchronous) = 0;
};

// Over the AWS APIs; any of them may be null (an origin that needs it then
// fails fatally, naming it). All must outlive it.
class AwsOriginSender final : public OriginSender {
 public:
  AwsOriginSender(LambdaApi* lambda, SnsApi* sns, EventsApi* events, HttpTransport* http)
      : lambda_(lambda), sns_(sns), events_(events), http_(http) {}
  OriginDelivery Deliver(const ReplayTarget& target, const ArchiveRecord& record, bool synchronous) override;

 private:
  OriginDelivery Invoke(const ReplayTarget& target, const std::string& payload, bool synchronous);
  OriginDelivery Publish(const ReplayTarget& target, const ArchiveRecord& record, const std::string& payload);
  OriginDelivery PutEvent(const ReplayTarget& target, const std::string& payload);
  OriginDelivery Post(const ReplayTarget& target, const ArchiveRecord& record, const std::string& payload);

  LambdaApi* lambda_;
  SnsApi* sns_;
  EventsApi* events_;
  HttpTransport* http_;
};

}  // namespace dlq
