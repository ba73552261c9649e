// Properties of CauseFinder on any list of events. The input's first line is
// the message id; every other line is one event (a "\x1e" inside it stands for
// a line break within the event), one millisecond after the one before, in
// the stream named by the last "@name" line. It never crashes; a cause exists
// exactly when the outcome is kFound and keeps its caps; the order the events
// come in does not change the answer.
#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "causes/cause.h"

namespace {

std::vector<dlq::LogEvent> Events(std::string_view rest) {
  std::vector<dlq::LogEvent> events;
  std::string stream = "stream";
  int64_t now = 1'714'557'600'000;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    std::string line(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (!line.empty() && line[0] == '@') {
      stream = line.substr(1);
      continue;
    }
    std::replace(line.begin(), line.end(), '\x1e', '\n');
    events.push_back(dlq::LogEvent{"/aws/lambda/fuzz", stream, now++, std::move(line)});
  }
  return events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nl = input.find('\n');
  const std::string_view message_id = input.substr(0, nl);
  std::vector<dlq::LogEvent> events = Events(nl == std::string_view::npos ? std::string_view() : input.substr(nl + 1));
  const dlq::CauseOptions options;
  const dlq::CauseResult result = dlq::CauseFinder(events, options).Find(message_id);
  if ((result.outcome == dlq::CauseOutcome::kFound) != result.cause.has_value()) std::abort();
  if (result.cause) {
    const dlq::Cause& c = *result.cause;
    if (c.stack.size() > options.max_stack_bytes || c.message.size() > options.max_message_bytes) std::abort();
    if (c.context_lines.size() > options.max_context_lines) std::abort();
    for (const std::string& line : c.context_lines) {
      if (line.size() > options.max_line_bytes) std::abort();
    }
    if (c.key.size() > 512 || !simdjson::validate_utf8(c.key.data(), c.key.size())) std::abort();
  }
  std::reverse(events.begin(), events.end());
  const dlq::CauseResult reversed = dlq::CauseFinder(std::move(events), options).Find(message_id);
  if (reversed.outcome != result.outcome) std::abort();
  if (result.cause &&
      (reversed.cause->key != result.cause->key || reversed.cause->request_id != result.cause->request_id ||
       reversed.cause->context_lines != result.cause->context_lines)) {
    std::abort();
  }
  return 0;
}
