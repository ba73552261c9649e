// CauseRecord: the answer to "why did this message fail", as the archive's
// causes sidecar keeps it (one JSON line per message and lookup; the format
// is the contract in doc/archive-format.md, "Causes sidecar"). A found cause,
// or the exact reason none was found. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "causes/cause.h"
#include "common/clock.h"
#include "common/status.h"

namespace dlq {

inline constexpr int kCauseRecordSchema = 1;

// How a lookup ended. Every value but kFound is an honest absence whose
// `reason` says what to do.
enum class CauseStatus {
  kFound,             // the consumer's error for this message
  kNoError,           // its log lines were found, and no invocation that handled it failed
  kNotMentioned,      // no log line mentions the message id within the window
  kNoConsumer,        // no consumer's log group is known for the DLQ's sources
  kLogsExpired,       // the log group's retention ended before the lookup
  kAccessDenied,      // a logs: or lambda: permission is missing
  kLogGroupNotFound,  // the consumer's log group does not exist
  kThrottled,         // CloudWatch Logs kept throttling after the client's retries
  kError,             // any other failure of a call (the reason has it)
};

// "found", "no_error", "not_mentioned", "no_consumer", "logs_expired",
// "access_denied", "log_group_not_found", "throttled", "error".
std::string_view CauseStatusName(CauseStatus status);
std::optional<CauseStatus> ParseCauseStatus(std::string_view name);

// A lookup whose answer does not change when asked again with the same log
// groups: found, no_error, logs_expired. (not_mentioned, no_consumer and
// log_group_not_found are kept too, until the caller names other log groups:
// see CauseLookupCache in causes/explain.h. throttled, access_denied and
// error are looked up again.)
bool IsSettled(CauseStatus status);

struct CauseRecord {
  int64_t schema = kCauseRecordSchema;
  std::string queue;       // the DLQ's name, as in the archive records
  std::string message_id;  // the SQS message id
  // The message's failure-group key when it was looked up (query/fingerprint.h),
  // for readers that have not read the archive; may be empty.
  std::string group_key;
  SystemTime looked_up_at;
  CauseStatus status = CauseStatus::kNotMentioned;
  // Not found: why, in one or a few sentences naming log groups, times,
  // permissions and what to do. Found: empty.
  std::string reason;
  std::vector<std::string> log_groups;  // the log groups searched (or that would have been)
  int64_t window_start_ms = 0;          // the FilterLogEvents window; 0 when none was searched
  int64_t window_end_ms = 0;
  std::optional<Cause> cause;  // set exactly when status is kFound

  bool operator==(const CauseRecord&) const = default;
};

// Appends one JSON line (ending in '\n') for `record`.
void AppendCauseRecordJson(const CauseRecord& record, std::string& out);

// Parses one line (a trailing "\n" or "\r\n" allowed). Unknown fields are
// ignored, an unknown status is kDataLoss, and a schema newer than
// kCauseRecordSchema is kFailedPrecondition. Errors name the field.
Result<CauseRecord> ParseCauseRecordJson(std::string_view line);

// What `search --cause` matches: a found cause's type, message and key,
// lower-case, one per line; empty for every other status.
std::string CauseSearchText(const CauseRecord& record);

}  // namespace dlq
