// Properties of ParseLogLine on any bytes: it never crashes, is deterministic,
// reports an error only on an ERROR or FATAL line, keeps REPORT figures
// bounded, and the key made of what it read is bounded valid UTF-8.
#include <simdjson.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "causes/cause.h"
#include "causes/log_lines.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const dlq::LogLine line = dlq::ParseLogLine(text);
  const dlq::LogLine again = dlq::ParseLogLine(text);
  if (line.request_id != again.request_id || line.level != again.level || line.marker != again.marker ||
      line.error.has_value() != again.error.has_value()) {
    std::abort();
  }
  if (line.error && line.level != dlq::LineLevel::kError && line.level != dlq::LineLevel::kFatal) std::abort();
  if (line.memory_size_mb < 0 || line.memory_size_mb > 1'000'000'000'000 || line.max_memory_used_mb < 0) std::abort();
  if (line.error) {
    const std::string key = dlq::CauseKey(line.error->type, line.error->message, line.request_id);
    if (key.size() > 512 || !simdjson::validate_utf8(key.data(), key.size())) std::abort();
  }
  const std::string cut = dlq::TruncateUtf8(text, size / 2);
  if (cut.size() > size / 2) std::abort();
  if (simdjson::validate_utf8(text.data(), text.size()) && !simdjson::validate_utf8(cut.data(), cut.size())) {
    std::abort();
  }
  return 0;
}
