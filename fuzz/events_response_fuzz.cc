// Feeds arbitrary bytes to the EventBridge PutEvents response parser and to
// PutEventsEntryFromEvent (an event as EventBridge delivers it); a detail
// that is read must be the exact text of the input's "detail" value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "events/events_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  if (auto parsed = dlq::events::ParsePutEventsResponse(json); parsed.ok()) {
    for (const auto& e : parsed->entries) static_cast<void>(e.ok());
  }
  if (auto entry = dlq::PutEventsEntryFromEvent(json, "bus"); entry.ok()) {
    if (json.find(entry->detail) == std::string_view::npos) std::abort();
    static_cast<void>(dlq::events::BuildPutEventsRequest({*entry}));
  }
  for (size_t i = 0; i < 4; ++i) static_cast<void>(dlq::events::TopLevelMemberText(json, i));
  return 0;
}
