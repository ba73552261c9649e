// Failure groups: which failure a dead-lettered message stands for, so that
// messages that failed the same way fall into one group. Pure functions;
// thread-safe.
//
// FailureGroupKey picks, in order:
//  1. The failure reason AWS attached as message attributes (FailureReason):
//     Lambda asynchronous-invocation DLQs, EventBridge rule target DLQs and
//     EventBridge Scheduler DLQs. The key reads as the reason.
//  2. A Lambda on-failure destination record (a JSON body with
//     requestContext.condition): the condition, the function error and the
//     error type and message.
//  3. FingerprintBody of the body.
// GroupId names a key with 12 hex digits; the same key always has the same id.
//
// FingerprintBody of a JSON body (an object or array that parses): the
// values of discriminator fields (FingerprintOptions::fields), then the
// sorted distinct key paths ("a", "b.c", "items[].sku"); no other value. Keys
// are masked as text (a map keyed by ids collapses); "[]" stands for any
// element; nesting deeper than 16 levels is "…". A field matches a key of that
// name at any depth, or, when it contains a '.', the whole path. Its value is
// kept when it is a string (masked as text), an integer, true, false or null.
// Any other body is masked as text (AppendMaskedText):
//   <uuid>  8-4-4-4-12 hex digits
//   <ts>    ISO 8601 dates and times (2025-09-10, 2025-09-10T12:30:00.123Z,
//           +02:00 offsets); integers that read as epoch seconds (10 digits,
//           2001..2099) or epoch milliseconds (13 digits, same range)
//   <hex>   8 or more hex digits with at least one digit and one letter, or 0x...
//   <num>   other numbers (sign, decimals, exponent); digit runs inside words
// with runs of whitespace as one space and the ends trimmed.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "archive/record.h"
#include "common/status.h"

namespace dlq {

// A fingerprint never exceeds this many bytes (see CapKey).
inline constexpr size_t kMaxFingerprintBytes = 512;

// Which JSON fields tell failures apart (see above).
struct FingerprintOptions {
  std::vector<std::string> fields = {"type", "eventType", "detail-type", "source", "error"};

  // A comma-separated list of field names ("type,reason.code"); empty gives
  // the defaults. kInvalidArgument naming --fingerprint-fields when a name is
  // empty.
  static Result<FingerprintOptions> Parse(std::string_view comma_list);
};

// The fingerprint of a message body (any bytes), at most
// kMaxFingerprintBytes. Always valid UTF-8.
std::string FingerprintBody(std::string_view body, const FingerprintOptions& options = {});

// The reason AWS attached to a dead-lettered message as message attributes,
// as one line with variable parts masked; nullopt when there is none.
std::optional<std::string> FailureReason(const MessageAttributes& attributes);

// The failure group of `record` (see above), at most kMaxFingerprintBytes.
std::string FailureGroupKey(const ArchiveRecord& record, const FingerprintOptions& options = {});

// The short id of a group key: the first 12 hex digits of its SHA-256.
std::string GroupId(std::string_view key);
inline constexpr size_t kGroupIdChars = 12;

// Makes `key` a bounded, valid UTF-8 group key: a key that is not valid UTF-8
// becomes "base64:" + its base64; one longer than `max_bytes` is cut (at a
// UTF-8 boundary) and ends in "…#" and 16 hex digits of a hash of the whole,
// so different long keys stay different.
void CapKey(std::string& key, size_t max_bytes);

// The text masking alone, appended to `out` (exposed for tests and keys).
void AppendMaskedText(std::string_view text, std::string& out);

}  // namespace dlq
