// Properties of ParseCauseRecordJson (the causes sidecar's line reader) on
// any bytes: it never crashes; what it accepts has a queue, a message id and
// a cause exactly when found; and what it accepts, written back with
// AppendCauseRecordJson, reads back equal (times at millisecond precision).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "causes/cause_record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = dlq::ParseCauseRecordJson(text);
  if (!parsed.ok()) return 0;
  if (parsed->queue.empty() || parsed->message_id.empty()) std::abort();
  if ((parsed->status == dlq::CauseStatus::kFound) != parsed->cause.has_value()) std::abort();
  std::string line;
  dlq::AppendCauseRecordJson(*parsed, line);
  auto again = dlq::ParseCauseRecordJson(line);
  if (!again.ok()) std::abort();
  // Invalid UTF-8 is written as U+FFFD, so compare the second round trip.
  std::string line2;
  dlq::AppendCauseRecordJson(*again, line2);
  if (line2 != line) std::abort();
  return 0;
}
