// libFuzzer target: reading a dead-letter message's origin clue must never
// crash, hang or throw, whatever the body and attributes. Input: lines
// "NAME=VALUE" (String message attributes; "NAME#=VALUE" for Number) up to a
// line "--", then the body. A clue that says nothing gives the body back; a
// destination payload is a piece of the body; an unreplayable clue carries no
// payload; the refailure keys start with the message id.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "replay/origin_clue.h"

namespace {

dlq::ArchiveRecord Decode(std::string_view text) {
  dlq::ArchiveRecord record;
  record.message_id = "fuzz-message";
  while (true) {
    const size_t eol = text.find('\n');
    if (eol == std::string_view::npos) break;
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol + 1);
    if (line == "--") break;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view name = line.substr(0, eq);
    const bool number = !name.empty() && name.back() == '#';
    if (number) name.remove_suffix(1);
    record.message_attributes[std::string(name)] = {number ? "Number" : "String", std::string(line.substr(eq + 1)), ""};
  }
  record.body = std::string(text);
  return record;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const dlq::ArchiveRecord record = Decode(std::string_view(reinterpret_cast<const char*>(data), size));
  const dlq::OriginClue clue = dlq::ReadOriginClue(record);
  if (dlq::ClueKindName(clue.kind).empty()) __builtin_trap();
  if (clue.kind == dlq::ClueKind::kNone && clue.payload != record.body) __builtin_trap();
  if (!clue.unreplayable.empty() && !clue.payload.empty()) __builtin_trap();
  // A record's payload is a piece of the body, unless it came inside an SNS
  // envelope's Message (escaped there): then it is not empty.
  if (clue.kind == dlq::ClueKind::kLambdaDestination && clue.unreplayable.empty() &&
      (clue.payload.empty() || (clue.topic_arn.empty() && record.body.find(clue.payload) == std::string::npos))) {
    __builtin_trap();
  }
  if (dlq::PayloadKey(clue.payload).size() != 7 + 64) __builtin_trap();
  const std::vector<std::string> keys = dlq::RefailureKeys(record);
  if (keys.empty() || keys.front() != record.message_id) __builtin_trap();
  return 0;
}
