// JsonPath: a path into a JSON document (a message body), for
// `--json 'PATH=VALUE'` filters and grouping. Grammar: `$` followed by any
// number of steps: `.name` (name: one or more characters other than
// `.` `[` `]` `=` `"` `'` and whitespace), `[N]` (a non-negative array index)
// or `["key"]` / `['key']` (any key; `\\`, `\"` and `\'` escape). Immutable
// and thread-safe once parsed.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/status.h"

namespace dlq {

class JsonPath {
 public:
  // The whole of `text` as a path. kInvalidArgument with the reason and the
  // 0-based offset of the offending character.
  static Result<JsonPath> Parse(std::string_view text);
  // The longest leading path of `text` that ends where `text` ends or at a
  // '=' outside brackets (for "PATH=VALUE"); `consumed` is its length.
  static Result<JsonPath> ParsePrefix(std::string_view text, size_t& consumed);

  // The value at the path in `json`: strings unquoted (unescaped), numbers,
  // true, false and null as their literal text, objects and arrays as
  // minified JSON. nullopt when the path is absent or `json` is not valid
  // JSON. Thread-safe (per-thread parsers).
  std::optional<std::string> Lookup(std::string_view json) const;

  const std::string& text() const { return text_; }
  bool operator==(const JsonPath& other) const { return text_ == other.text_; }

 private:
  using Step = std::variant<std::string, size_t>;  // object key or array index
  std::string text_;
  std::vector<Step> steps_;
};

}  // namespace dlq
