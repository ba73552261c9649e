// Why one message failed, from its consumer's log events: the invocation that
// handled it and that invocation's error. Pure: no I/O, no clock; a
// CauseFinder is immutable after construction and safe to share between
// threads.
//
// The events are those that mention a message id (FilterLogEvents) and the
// events of the same streams around them, in any order. Each line is read by
// ParseLogLine. Lines form invocations by the ids they name: a Lambda request
// id, and a structured line's trace and correlation ids (lines sharing any id
// are one invocation); a line between START and REPORT in its stream joins
// that request unless it names another (Python's uncaught-error line and
// print() output name none). For one message:
//  1. Its mentions: lines whose text contains the message id, or whose message
//     id field equals it. None: kNotMentioned.
//  2. A mention that is itself an error (an ERROR line naming the message: one
//     failure of a batch) is the cause, batch_partial set; one with an error
//     type first, then the earliest.
//  3. Else the error of the latest failed invocation among those of its
//     mentions, which so applies to every message of that invocation (not a
//     logged error that names another message: see Find). An invocation's
//     strongest error wins: the runtime's uncaught error; out of memory
//     (Runtime.OutOfMemory, or REPORT's Max Memory Used at its Memory Size when
//     neither an uncaught error nor a timeout explains the end); a timeout; a
//     runtime exit; a logged error with a type; a logged ERROR line. Among
//     equals, one with a message, then the last.
//  4. No invocation of its mentions failed: kNoError.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "causes/log_event.h"
#include "causes/log_lines.h"

namespace dlq {

struct Cause {
  std::string type;     // "ValueError", "Task timed out", "Runtime.OutOfMemory"; may be empty
  std::string message;  // the error's message as logged (its first lines)
  std::string stack;    // the stack trace, at most CauseOptions::max_stack_bytes
  // type + masked message: numbers, ids, times, quoted strings and the
  // message id masked (CauseKey), so messages that failed alike share it.
  std::string key;
  std::string request_id;  // the invocation's Lambda request id; empty for a service
  std::string log_group, log_stream;
  int64_t timestamp_ms = 0;                // the error line's event time
  std::vector<std::string> context_lines;  // the invocation's lines around the error, capped
  // The error names this message (one failure of a batch, rule 2), not the
  // whole invocation's failure.
  bool batch_partial = false;

  bool operator==(const Cause&) const = default;
};

struct CauseOptions {
  LogLineOptions lines;
  size_t max_stack_bytes = size_t{8} * 1024;
  size_t max_context_lines = 20;
  size_t max_line_bytes = 300;  // per context line, "…" included
  size_t max_message_bytes = 2048;
};

enum class CauseOutcome {
  kFound,
  kNotMentioned,  // no event mentions the message id
  kNoError,       // mentioned, but no invocation that mentions it failed
};

struct CauseResult {
  CauseOutcome outcome = CauseOutcome::kNotMentioned;
  std::optional<Cause> cause;  // set when kFound
};

class CauseFinder {
 public:
  // Reads every event once; `events` may be in any order.
  explicit CauseFinder(std::vector<LogEvent> events, CauseOptions options = {});

  // `other_message_ids`: ids of other messages the caller knows (say, the
  // messages it looks causes up for). A logged error line that names one of
  // them and not `message_id` (or whose message id field is another id) is
  // that message's failure, never this one's: a partial batch failure does not
  // spread to the rest of the batch.
  CauseResult Find(std::string_view message_id, const std::vector<std::string>& other_message_ids = {}) const;

 private:
  struct Line {
    size_t event = 0;  // index into events_
    LogLine parsed;
    int invocation = -1;  // index into invocations_; -1 when the line belongs to none
  };
  struct Candidate {
    size_t line = 0;  // index into lines_
    LogError error;
    int rank = 0;
  };
  void AssignInvocations();
  std::optional<Candidate> InvocationError(int invocation, std::string_view message_id,
                                           const std::vector<std::string>& other_message_ids) const;
  bool NamesAnotherMessage(size_t line, std::string_view message_id,
                           const std::vector<std::string>& other_message_ids) const;
  Cause MakeCause(const Candidate& c, std::string_view message_id) const;
  std::vector<std::string> ContextLines(size_t line_index) const;

  CauseOptions options_;
  std::vector<LogEvent> events_;
  std::vector<Line> lines_;                       // one per event, sorted by group, stream, time
  std::vector<std::vector<size_t>> invocations_;  // line indexes of each invocation, in order
  std::vector<std::string> invocation_request_ids_;
};

// Convenience: CauseFinder(events, options).Find(message_id).
CauseResult FindCause(std::string_view message_id, std::vector<LogEvent> events, const CauseOptions& options = {});

// The grouping key of an error: "Type: masked message" (or the masked message
// alone when there is no type), at most 512 bytes, valid UTF-8. Masked: the
// message id (as <msg-id>), quoted strings ('...' or "...", as <str>), then
// common/text_mask.h's UUIDs, times, hex ids and numbers.
std::string CauseKey(std::string_view type, std::string_view message, std::string_view message_id);

// `s` cut to at most `max_bytes` bytes on a UTF-8 character boundary, ending
// in "…" when cut (the ellipsis counts in the bound).
std::string TruncateUtf8(std::string_view s, size_t max_bytes);

}  // namespace dlq
