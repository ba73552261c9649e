#include "events/events_api.h"

#include <fmt/format.h>

#include "events/events_codec.h"

namespace dlq {

Result<std::vector<PutEventsEntryResult>> AwsEventsApi::PutEvents(const std::vector<PutEventsEntry>& entries) {
  const std::string buses = events::BusesOf(entries);
  DLQ_RETURN_IF_ERROR(events::ValidateEntries(entries, buses));
  if (entries.empty()) return std::vector<PutEventsEntryResult>{};
  AwsRequest request;
  request.operation = "PutEvents";
  request.resource = buses;
  request.headers = {{"X-Amz-Target", std::string(events::kTarget)},
                     {"Content-Type", std::string(events::kContentType)}};
  request.body = events::BuildPutEventsRequest(entries);
  auto response = aws_.Call(request);
  if (!response.ok()) {
    const Status& error = response.status();
    if (error.code() != ErrorCode::kPermissionDenied) return error;
    Status explained(error.code(), fmt::format("{} (needs events:PutEvents on {})", error.message(), buses));
    return error.aws() ? explained.WithAws(*error.aws()) : explained;
  }
  auto parsed = events::ParsePutEventsResponse(response->body);
  if (!parsed.ok()) return parsed.status().WithContext("PutEvents " + buses);
  if (parsed->entries.size() != entries.size()) {
    return Internal(
        fmt::format("PutEvents {}: {} results for {} entries", buses, parsed->entries.size(), entries.size()));
  }
  return std::move(parsed->entries);
}

}  // namespace dlq
