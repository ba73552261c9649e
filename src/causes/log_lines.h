// Reading one log event of a Lambda function or a service: which invocation it
// belongs to, its level, and the error it reports. Pure functions;
// thread-safe. Any bytes are accepted: text that is no known format is a line
// with no level and no error; malformed JSON is read as text.
//
// Formats read (log_lines.cc cites the source of each):
//  - Lambda's platform lines: START / END / REPORT RequestId: ..., "Task timed
//    out after N seconds", "RequestId: ... Error: Runtime exited with error:
//    ...", a lone "Runtime.ExitError"; and in Lambda's JSON log format the
//    platform.start, platform.report and platform.runtimeDone records.
//  - The Python, Node.js and Java runtimes' plain-text application lines and
//    uncaught errors ([ERROR] Type: message + Traceback; Invoke Error /
//    Uncaught Exception JSON; Java's errorType/stackTrace JSON and plain
//    stack traces), and Lambda's JSON format application records.
//  - Powertools for AWS Lambda (Python, TypeScript, Java) structured logs, and
//    a service's own JSON logs (field names in LogLineOptions).
//  - Any other line whose first words carry a level (ERROR, WARN, ...).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlq {

enum class LineLevel { kNone, kTrace, kDebug, kInfo, kWarn, kError, kFatal };

// The invocation boundaries Lambda logs (text or JSON format).
enum class InvocationMarker { kNone, kStart, kEnd, kReport };

// Who reported an error, which says how sure it is that the error ended the
// invocation.
enum class ErrorOrigin {
  kLogged,    // the code logged it at ERROR level; the code may have gone on
  kUncaught,  // the runtime reported the handler's uncaught error
  kPlatform,  // Lambda reported the invocation's end: timeout, exit, out of memory
};

struct LogError {
  // The error's type: "ValueError", "java.lang.IllegalStateException",
  // "Task timed out", "Runtime.ExitError", "Runtime.OutOfMemory"; empty when
  // the line names none (an ERROR line of plain text).
  std::string type;
  std::string message;  // one line or several, as logged; may be empty
  std::string stack;    // frames one per line, as logged; may be empty
  ErrorOrigin origin = ErrorOrigin::kLogged;
};

struct LogLine {
  InvocationMarker marker = InvocationMarker::kNone;
  std::string request_id;      // the Lambda request id the line names, if any
  std::string trace_id;        // an X-Ray or service trace id field, if any
  std::string correlation_id;  // a correlation id field, if any
  std::string message_id;      // a message id field of a structured line, if any
  LineLevel level = LineLevel::kNone;
  std::optional<LogError> error;  // set for ERROR/FATAL lines and Lambda's failures
  // REPORT lines: the function's memory and the most it used, in MB; 0 when
  // the line gives none.
  int64_t memory_size_mb = 0;
  int64_t max_memory_used_mb = 0;
};

// Field names of structured (JSON) lines, beyond the Lambda and Powertools
// ones always read. A name matches a top-level key exactly.
struct LogLineOptions {
  std::vector<std::string> message_id_fields = {"messageId", "message_id", "sqs_message_id", "MessageId",
                                                "sqsMessageId"};
  std::vector<std::string> level_fields = {"level", "log_level", "levelname", "severity", "lvl"};
  std::vector<std::string> trace_id_fields = {"xray_trace_id", "traceId", "trace_id", "xrayTraceId"};
  std::vector<std::string> correlation_id_fields = {"correlation_id", "correlationId"};
  // Objects or strings describing an error: {"name"|"type"|"errorType",
  // "message"|"errorMessage", "stack"|"stackTrace"|"stack_trace"}.
  std::vector<std::string> error_fields = {"error", "err", "exception"};
};

// Reads one log event's message (trailing whitespace ignored).
LogLine ParseLogLine(std::string_view text, const LogLineOptions& options = {});

// The level a word names, case-insensitively: TRACE, DEBUG, INFO (NOTICE),
// WARN (WARNING), ERROR (ERR), FATAL (CRITICAL, CRIT, ALERT, EMERG), and pino's
// numbers 10..60; kNone for anything else.
LineLevel ParseLineLevel(std::string_view word);

}  // namespace dlq
