// KeyPattern: reads archive object keys back through the KeyTemplate that
// wrote them, one '/'-separated level at a time, so a listing can tell a
// partition's queue and date before it lists inside it (partition pruning).
// Placeholders match only what the archiver renders ({queue}: SQS name
// characters; dates: digits; {batch_id}: hex), so a key of another layout
// does not match by accident. Immutable and thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "archive/key_layout.h"
#include "common/clock.h"

namespace dlq {

// What the matched part of a key says about its object.
struct KeyFacts {
  std::string queue;                            // empty: not known
  int year = 0, month = 0, day = 0, hour = -1;  // 0 / -1: not known

  // [start, end) in UTC of the time the date fields cover (a year, month, day
  // or hour); nullopt without a year.
  std::optional<std::pair<SystemTime, SystemTime>> Span() const;
};

class KeyPattern {
 public:
  // `prefix` is what {prefix} rendered as (leading/trailing '/' ignored).
  KeyPattern(const KeyTemplate& key_template, std::string_view prefix);

  size_t levels() const { return levels_.size(); }
  // The leading levels that are pure literals, e.g. "dlq-archive/" for the
  // default template: every key of this layout starts with it.
  const std::string& literal_dir() const { return literal_dir_; }
  size_t literal_levels() const { return literal_levels_; }

  // Matches `text` (one level, no '/') against level `level`, adding what it
  // captures to `facts`. False when it does not match or contradicts `facts`
  // (then `facts` is unspecified).
  bool MatchLevel(size_t level, std::string_view text, KeyFacts& facts) const;
  // Matches a whole key.
  bool Match(std::string_view key, KeyFacts& facts) const;

 private:
  enum class Kind { kLiteral, kQueue, kRegion, kAccountId, kYyyymmdd, kYyyy, kMm, kDd, kHh, kHhmmss, kIsoDate, kHex };
  struct Token {
    Kind kind;
    std::string literal;
  };
  using Level = std::vector<Token>;
  bool MatchFrom(const Level& level, size_t ti, std::string_view text, KeyFacts& facts) const;

  std::vector<Level> levels_;
  std::string literal_dir_;
  size_t literal_levels_ = 0;
};

}  // namespace dlq
