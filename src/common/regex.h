// Regex: a regular expression a user supplied (search --body-regex, the
// dashboard's re parameter, a config group's regex), compiled with RE2.
// Matching takes time linear in the text and at most kMaxMem bytes of
// automaton memory per pattern, whatever the pattern; there is no recursion,
// so no text or pattern can exhaust the stack. Patterns and texts are UTF-8.
// The syntax is RE2's (doc/querying.md): constructs that need backtracking
// (backreferences, lookaround, atomic groups, possessive quantifiers,
// conditionals, recursion) are refused by name at Compile.
//
// A Regex is an immutable value: copies share the compiled program, and any
// number of threads may match with it (or its copies) at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace re2 {
class RE2;
}  // namespace re2

namespace dlq {

class Regex {
 public:
  // RE2's memory budget for one pattern's compiled program and its DFA
  // caches. A pattern too large for it fails Compile; a search whose DFA
  // outgrows it falls back to RE2's NFA (slower, still linear).
  static constexpr int64_t kMaxMem = int64_t{8} << 20;
  // Longer patterns are refused before RE2 parses them.
  static constexpr size_t kMaxPatternBytes = 16384;

  // kInvalidArgument when `pattern` is not RE2 syntax. An unsupported
  // construct is named with the text that used it ("backreferences (\1) are
  // not supported; ..."); any other error carries RE2's reason. The message
  // does not repeat the pattern: callers add the flag or key and the pattern.
  static Result<Regex> Compile(std::string_view pattern);

  // True when the pattern matches somewhere in `text` (unanchored).
  bool Search(std::string_view text) const;
  // True when the pattern matches the whole of `text`.
  bool FullMatch(std::string_view text) const;

  const std::string& pattern() const;

 private:
  explicit Regex(std::shared_ptr<const re2::RE2> re) : re_(std::move(re)) {}

  std::shared_ptr<const re2::RE2> re_;  // never null
};

}  // namespace dlq
