// EventBridge's AWS JSON 1.1 wire format for PutEvents: the request body and
// the response parser, free functions so tests and the fuzzer reach them
// directly (PutEventsEntryFromEvent, the event parser, is in events_api.h).
// Pure and thread-safe. The parser never trusts its input: malformed or
// wrongly typed JSON is kInternal ("malformed PutEvents response: ..."),
// never a crash.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "events/events_api.h"

namespace dlq::events {

inline constexpr std::string_view kTarget = "AWSEvents.PutEvents";
inline constexpr std::string_view kContentType = "application/x-amz-json-1.1";
inline constexpr size_t kMaxEntriesPerPut = 10;

// The buses `entries` go to, for errors and IAM hints: "orders-bus", "default", "a, b".
std::string BusesOf(const std::vector<PutEventsEntry>& entries);
// kInvalidArgument naming the buses: more than kMaxEntriesPerPut entries, or
// an entry without source, detail-type or detail.
Status ValidateEntries(const std::vector<PutEventsEntry>& entries, const std::string& buses);

// {"Entries":[{"Source","DetailType","Detail","Resources","Time","EventBusName","TraceHeader"}]}:
// Detail as a string holding the entry's detail text unchanged; Time as epoch
// seconds; empty optional fields left out.
std::string BuildPutEventsRequest(const std::vector<PutEventsEntry>& entries);

struct PutEventsResponse {
  std::optional<int> failed_entry_count;
  std::vector<PutEventsEntryResult> entries;  // in request order
};
Result<PutEventsResponse> ParsePutEventsResponse(std::string_view json);

// The exact text of the value of top-level member number `index` (from 0) of
// a JSON object. Precondition: `json` is a valid JSON object (checked by a
// parser first); nullopt when there is no such member.
std::optional<std::string_view> TopLevelMemberText(std::string_view json, size_t index);

}  // namespace dlq::events
