// Failure fingerprints: the shape of a message body, so that bodies that
// differ only in their variable parts fall into one group ("order 123 failed:
// timeout" and "order 456 failed: timeout" both give "order <num> failed:
// timeout"). Pure functions; thread-safe.
//
// Masked tokens, wherever they stand as a whole token:
//   <uuid>  8-4-4-4-12 hex digits
//   <ts>    ISO 8601 dates and times (2025-09-10, 2025-09-10T12:30:00.123Z,
//           +02:00 offsets); integers that read as epoch seconds (10 digits,
//           2001..2099) or epoch milliseconds (13 digits, same range)
//   <hex>   8 or more hex digits with at least one digit and one letter, or 0x...
//   <num>   other numbers (sign, decimals, exponent); digit runs inside words
// Text: runs of whitespace become one space, ends are trimmed.
// JSON (a body that parses as an object or array): keys are kept (masked as
// text, so a map keyed by ids collapses), sorted, with duplicate key/shape
// pairs merged; strings are masked as text; numbers are <num> or <ts>;
// true/false/null are kept; an array shows the distinct shapes of its
// elements in order of first appearance (at most 8, then "…"); nesting
// deeper than 16 levels is "…".
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dlq {

// A fingerprint never exceeds this many bytes (see CapKey).
inline constexpr size_t kMaxFingerprintBytes = 512;

// The fingerprint of a message body (any bytes). Always valid UTF-8.
std::string FingerprintBody(std::string_view body);

// Makes `key` a bounded, valid UTF-8 group key: a key that is not valid UTF-8
// becomes "base64:" + its base64; one longer than `max_bytes` is cut (at a
// UTF-8 boundary) and ends in "…#" and 16 hex digits of a hash of the whole,
// so different long keys stay different.
void CapKey(std::string& key, size_t max_bytes);

// The text masking alone, appended to `out` (exposed for tests and keys).
void AppendMaskedText(std::string_view text, std::string& out);

}  // namespace dlq
