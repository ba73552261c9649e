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
// Any other body is masked as text (AppendMaskedText, common/text_mask.h:
// <uuid>, <ts>, <hex>, <num>).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "archive/record.h"
#include "common/status.h"
#include "common/text_mask.h"  // AppendMaskedText, CapKey (used with fingerprints)

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

}  // namespace dlq
