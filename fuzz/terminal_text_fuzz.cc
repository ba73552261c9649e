// Properties of the terminal-safe renderings on any bytes: TerminalSafe's
// output is valid UTF-8 with no C0 control (but line feed and tab when
// multi-line), no DEL and no C1 control, is a fixed point, and leaves clean
// text as it is; OneLinePreview's is valid UTF-8 without any control; and
// EscapeJsonForTerminal leaves no DEL or C1 in a JSON string and keeps its value.
#include <simdjson.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/json_writer.h"
#include "common/text.h"

namespace {

// False when `s` holds something a terminal acts on (`lines_kept`: line feed
// and tab allowed) or is not valid UTF-8.
bool Inert(std::string_view s, bool lines_kept) {
  if (!simdjson::validate_utf8(s.data(), s.size())) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == 0x7F || (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9F)) return false;
    if (c < 0x20 && !(lines_kept && (c == '\n' || c == '\t'))) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  for (dlq::TextLines lines : {dlq::TextLines::kOne, dlq::TextLines::kMulti}) {
    const bool kept = lines == dlq::TextLines::kMulti;
    const std::string safe = dlq::TerminalSafe(in, lines);
    if (!Inert(safe, kept)) std::abort();
    if (dlq::TerminalSafe(safe, lines) != safe) std::abort();
    if (Inert(in, kept) && safe != in) std::abort();
  }
  const std::string preview = dlq::OneLinePreview(in, size % 64);
  if (!Inert(preview, false)) std::abort();

  std::string json;
  dlq::AppendJsonString(json, in);
  std::string escaped = json;
  dlq::EscapeJsonForTerminal(escaped);
  if (!Inert(escaped, false)) std::abort();
  simdjson::dom::parser parser;
  std::string_view before, after;
  if (parser.parse(json).get_string().get(before) != simdjson::SUCCESS) std::abort();
  const std::string kept_before(before);
  if (parser.parse(escaped).get_string().get(after) != simdjson::SUCCESS) std::abort();
  if (after != kept_before) std::abort();
  return 0;
}
