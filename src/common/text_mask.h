// Masking the variable parts of text (ids, numbers, times) so that texts that
// differ only in them compare equal, and bounding the keys made of them: the
// failure-group fingerprints (query/fingerprint.h) and the log causes
// (causes/cause.h) share these. Pure functions; thread-safe.
//
// AppendMaskedText rewrites, token by token:
//   <uuid>  8-4-4-4-12 hex digits
//   <ts>    ISO 8601 dates and times (2025-09-10, 2025-09-10T12:30:00.123Z,
//           +02:00 offsets); integers that read as epoch seconds (10 digits,
//           2001..2099) or epoch milliseconds (13 digits, same range)
//   <hex>   8 or more hex digits with at least one digit and one letter, or 0x...
//   <num>   other numbers (sign, decimals, exponent); digit runs inside words
// with runs of whitespace as one space and the ends trimmed.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dlq {

// `text` masked as above, appended to `out`. The appended part has no digit.
void AppendMaskedText(std::string_view text, std::string& out);

// Makes `key` a bounded, valid UTF-8 group key: a key that is not valid UTF-8
// becomes "base64:" + its base64; one longer than `max_bytes` is cut (at a
// UTF-8 boundary) and ends in "…#" and 16 hex digits of a hash of the whole,
// so different long keys stay different.
void CapKey(std::string& key, size_t max_bytes);

}  // namespace dlq
