// EventsApi: the Amazon EventBridge call a replay to an EventBridge origin
// needs (PutEvents), as an interface so callers run against FakeEventsApi
// (testing/fake_events_api.h) in tests. AwsEventsApi implements it on
// EventBridge's JSON 1.1 protocol (X-Amz-Target: AWSEvents.PutEvents) over
// AwsClient.
//
// Used only when a rule's target is itself an event bus: the event is put on
// that target bus. Never used to reach one target of a rule through the
// rule's own bus (every other rule on the bus would see the event too).
//
// Thread-safe. Errors carry the operation and the bus: AccessDeniedException
// is kPermissionDenied naming events:PutEvents, ResourceNotFoundException
// kNotFound, ThrottlingException kThrottled after the client's own retries.
// A per-entry failure (FailedEntryCount > 0) is not an error: see
// PutEventsEntryResult.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "aws/aws_client.h"
#include "common/clock.h"
#include "common/status.h"

namespace dlq {

struct PutEventsEntry {
  std::string event_bus_name;  // name or ARN; empty: the default bus
  std::string source;          // "source" of the event
  std::string detail_type;     // "detail-type"
  std::string detail;          // "detail": a JSON object, as text (kept byte for byte)
  std::vector<std::string> resources;
  std::optional<SystemTime> time;  // "time"; nullopt: EventBridge's receive time
  std::string trace_header;        // X-Ray trace header; empty: none
};

struct PutEventsEntryResult {
  std::string event_id;    // set when the entry was put
  std::string error_code;  // set when it was not ("InternalFailure", "ThrottlingException", ...)
  std::string error_message;
  bool ok() const { return error_code.empty() && !event_id.empty(); }
};

class EventsApi {
 public:
  virtual ~EventsApi() = default;
  // At most 10 entries (kInvalidArgument otherwise); one result per entry, in order.
  virtual Result<std::vector<PutEventsEntryResult>> PutEvents(const std::vector<PutEventsEntry>& entries) = 0;
};

// Holds a reference to `aws`, which must outlive it and be built with
// ServiceEndpoint{.service = "events"}.
class AwsEventsApi final : public EventsApi {
 public:
  explicit AwsEventsApi(AwsClient& aws) : aws_(aws) {}
  Result<std::vector<PutEventsEntryResult>> PutEvents(const std::vector<PutEventsEntry>& entries) override;

 private:
  AwsClient& aws_;
};

// An EventBridge event (the JSON EventBridge delivers to a target: version,
// id, detail-type, source, account, time, region, resources, detail) turned
// back into the PutEvents entry that puts the same event on `bus`. `detail` is
// kept as its exact text. kInvalidArgument naming what is missing when `event`
// is not such an event (an input transformer changed it).
Result<PutEventsEntry> PutEventsEntryFromEvent(std::string_view event, const std::string& bus);

}  // namespace dlq
