#include "causes/log_lines.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <utility>

#include "common/strings.h"

namespace dlq {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

bool IsDigitChar(char c) {
  return c >= '0' && c <= '9';
}
bool IsHexChar(char c) {
  return IsDigitChar(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
bool IsBlank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// A Lambda request id: 8-4-4-4-12 hex digits.
bool IsUuid(std::string_view s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !IsHexChar(s[i])) return false;
  }
  return true;
}

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);
  return s;
}

std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  return s;
}

// Runtimes write a record's line breaks as '\n' or, on stdout, as '\r'.
bool IsLineBreak(char c) {
  return c == '\n' || c == '\r';
}

std::string_view FirstLine(std::string_view s) {
  size_t end = 0;
  while (end < s.size() && !IsLineBreak(s[end])) ++end;
  return TrimRight(s.substr(0, end));
}

// The lines of `s`, empty ones and trailing blanks dropped.
std::vector<std::string_view> Lines(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i < s.size() && !IsLineBreak(s[i])) continue;
    std::string_view line = TrimRight(s.substr(start, i - start));
    if (!TrimLeft(line).empty()) out.push_back(line);
    start = i + 1;
  }
  return out;
}

// `s` with '\r' line breaks written as '\n'.
std::string WithNewlines(std::string_view s) {
  std::string out(TrimRight(s));
  std::replace(out.begin(), out.end(), '\r', '\n');
  return out;
}

// The whitespace-separated token at `pos`, which moves past it.
std::string_view NextToken(std::string_view s, size_t& pos) {
  while (pos < s.size() && IsBlank(s[pos])) ++pos;
  const size_t start = pos;
  while (pos < s.size() && !IsBlank(s[pos])) ++pos;
  return s.substr(start, pos - start);
}

// The token after `label` in `s`, or empty.
std::string_view TokenAfter(std::string_view s, std::string_view label) {
  const size_t at = s.find(label);
  if (at == std::string_view::npos) return {};
  size_t pos = at + label.size();
  return NextToken(s, pos);
}

// The integer that starts the token after `label` ("128" of "Memory Size: 128 MB"); 0 when none.
int64_t IntegerAfter(std::string_view s, std::string_view label) {
  std::string_view token = TokenAfter(s, label);
  int64_t v = 0;
  for (size_t i = 0; i < token.size() && i < 12 && IsDigitChar(token[i]); ++i) v = v * 10 + (token[i] - '0');
  return v;
}

// "Type: message" or "Type" alone, where Type reads as an exception class
// ("ValueError", "java.lang.IllegalStateException", "Runtime.ImportModuleError").
bool SplitTypeAndMessage(std::string_view line, std::string& type, std::string& message) {
  line = TrimLeft(line);
  auto start_char = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == '$'; };
  if (line.empty() || !start_char(line[0])) return false;
  size_t end = 1;
  while (end < line.size() && (start_char(line[end]) || IsDigitChar(line[end]) || line[end] == '.')) ++end;
  if (line[end - 1] == '.') return false;
  if (end < line.size() && !(line[end] == ':' && (end + 1 == line.size() || line[end + 1] == ' '))) return false;
  type = std::string(line.substr(0, end));
  message = end < line.size() ? std::string(Trim(line.substr(end + 1))) : std::string();
  return true;
}

// A Java exception class name at the start of a line: dotted, ending in
// Exception, Error or Throwable ("java.lang.RuntimeException: boom").
bool StartsWithJavaException(std::string_view line) {
  std::string type, message;
  if (!SplitTypeAndMessage(line, type, message) || type.find('.') == std::string::npos) return false;
  return EndsWith(type, "Exception") || EndsWith(type, "Error") || EndsWith(type, "Throwable");
}

// ---- JSON -----------------------------------------------------------------

// `s` parsed as one JSON object. The parser is per thread: the object stays
// valid until the next ParseObject on this thread, so callers copy out.
std::optional<object> ParseObject(std::string_view s) {
  if (s.empty() || s.front() != '{') return std::nullopt;
  thread_local simdjson::dom::parser parser;
  element root;
  if (parser.parse(s.data(), s.size(), true).get(root) != simdjson::SUCCESS) return std::nullopt;
  object o;
  if (root.get_object().get(o) != simdjson::SUCCESS) return std::nullopt;
  return o;
}

std::optional<element> Field(object o, std::string_view key) {
  element e;
  if (o.at_key(key).get(e) != simdjson::SUCCESS) return std::nullopt;
  return e;
}

// A number field (integer or not) bounded to [0, 1e12]; 0 when absent or not a number.
double NumberField(object o, std::string_view key) {
  std::optional<element> e = Field(o, key);
  double v = 0;
  if (!e || e->get_double().get(v) != simdjson::SUCCESS || !(v > 0)) return 0;
  return std::min(v, 1e12);
}

// A value as text: a string as it is, anything else as compact JSON.
std::string Text(element e) {
  std::string_view sv;
  if (e.type() == element_type::STRING) return e.get_string().get(sv) == simdjson::SUCCESS ? std::string(sv) : "";
  if (e.type() == element_type::NULL_VALUE) return "";
  return simdjson::minify(e);
}

// A scalar field as text ("" when absent, null, an object or an array).
std::string ScalarField(object o, std::string_view key) {
  std::optional<element> e = Field(o, key);
  if (!e || e->type() == element_type::OBJECT || e->type() == element_type::ARRAY) return "";
  return Text(*e);
}

template <typename Keys>
std::string FirstScalarField(object o, const Keys& keys) {
  for (const auto& key : keys) {
    std::string v = ScalarField(o, key);
    if (!v.empty()) return v;
  }
  return "";
}

// A stack trace: a string as it is; an array one element per line.
std::string StackText(element e) {
  if (e.type() != element_type::ARRAY) return WithNewlines(Text(e));
  std::string out;
  simdjson::dom::array frames;
  if (e.get_array().get(frames) != simdjson::SUCCESS) return out;
  for (element frame : frames) {
    if (!out.empty()) out.push_back('\n');
    out += Text(frame);
  }
  return out;
}

template <typename Keys>
std::string FirstStackField(object o, const Keys& keys) {
  for (const auto& key : keys) {
    if (std::optional<element> e = Field(o, key)) {
      std::string v = StackText(*e);
      if (!v.empty()) return v;
    }
  }
  return "";
}

constexpr std::array<std::string_view, 6> kErrorTypeKeys = {"errorType",     "name",           "type",
                                                            "exceptionType", "exception_type", "kind"};
constexpr std::array<std::string_view, 4> kErrorMessageKeys = {"errorMessage", "message", "msg", "reason"};
constexpr std::array<std::string_view, 5> kStackKeys = {"stackTrace", "stack", "stack_trace", "trace", "backtrace"};

// An error object: {errorType|name|type, errorMessage|message, stackTrace|stack}.
// `strict` (a log record's message that is an object) also wants it to look
// like an error: an errorType, an errorMessage or a stack.
std::optional<LogError> ErrorFromObject(object o, bool strict) {
  LogError error;
  error.type = FirstScalarField(o, kErrorTypeKeys);
  error.message = FirstScalarField(o, kErrorMessageKeys);
  error.stack = FirstStackField(o, kStackKeys);
  if (strict && ScalarField(o, "errorType").empty() && ScalarField(o, "errorMessage").empty() && error.stack.empty()) {
    return std::nullopt;
  }
  if (error.type.empty() && error.message.empty() && error.stack.empty()) return std::nullopt;
  return error;
}

// The last line of a Python traceback names the exception: "ValueError: bad".
void ReadTracebackTail(std::string_view traceback, LogError& error) {
  std::vector<std::string_view> lines = Lines(traceback);
  if (lines.empty()) return;
  std::string type, message;
  if (SplitTypeAndMessage(lines.back(), type, message)) {
    if (error.type.empty()) error.type = std::move(type);
    if (error.message.empty()) error.message = std::move(message);
  }
}

constexpr std::array<std::string_view, 5> kRequestIdKeys = {"requestId", "function_request_id", "AWSRequestId",
                                                            "aws_request_id", "awsRequestId"};

// Telemetry API / JSON log format platform records
// (https://docs.aws.amazon.com/lambda/latest/dg/telemetry-schema-reference.html):
//   {"time":"...","type":"platform.start","record":{"requestId":"...","version":"$LATEST"}}
//   {"time":"...","type":"platform.runtimeDone","record":{"requestId":"...","status":"error",
//     "errorType":"Runtime.ExitError","metrics":{"durationMs":...}}}
//   {"time":"...","type":"platform.report","record":{"requestId":"...","status":"timeout",
//     "metrics":{"durationMs":3000.0,"memorySizeMB":128,"maxMemoryUsedMB":60}}}
// status is success, failure, error or timeout.
void ReadPlatformRecord(object o, std::string_view type, LogLine& line) {
  object record;
  std::optional<element> r = Field(o, "record");
  if (!r || r->get_object().get(record) != simdjson::SUCCESS) return;
  line.request_id = ScalarField(record, "requestId");
  if (type == "platform.start") line.marker = InvocationMarker::kStart;
  if (type == "platform.end") line.marker = InvocationMarker::kEnd;
  if (type == "platform.report") line.marker = InvocationMarker::kReport;
  object metrics;
  std::optional<element> m = Field(record, "metrics");
  double duration_ms = 0;
  if (m && m->get_object().get(metrics) == simdjson::SUCCESS) {
    line.memory_size_mb = static_cast<int64_t>(NumberField(metrics, "memorySizeMB"));
    line.max_memory_used_mb = static_cast<int64_t>(NumberField(metrics, "maxMemoryUsedMB"));
    duration_ms = NumberField(metrics, "durationMs");
  }
  if (type != "platform.runtimeDone" && type != "platform.report") return;
  const std::string status = ScalarField(record, "status");
  if (status != "timeout" && status != "error" && status != "failure") return;
  LogError error;
  error.origin = ErrorOrigin::kPlatform;
  if (status == "timeout") {
    error.type = "Task timed out";
    error.message =
        duration_ms > 0 ? fmt::format("Task timed out after {:.2f} seconds", duration_ms / 1000) : "Task timed out";
  } else {
    error.type = ScalarField(record, "errorType");
    error.message = fmt::format("{} status {}", type, status);
  }
  line.level = LineLevel::kError;
  line.error = std::move(error);
}

// A structured (JSON) application record. Read, in order:
//  - Lambda's JSON log format (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-logformat.html):
//    {"timestamp":"...","level":"ERROR","message":...,"requestId":"...", "errorType":"ValueError",
//    "errorMessage":"bad","stackTrace":[...]} (Python's logger; the runtimes' uncaught error record has no
//    "message": awslambdaric bootstrap.py log_error, and Java's {"errorMessage","errorType","stackTrace"}
//    of https://docs.aws.amazon.com/lambda/latest/dg/java-exceptions.html). Node's console.error(err)
//    puts the error object in "message" (aws-lambda-nodejs-runtime-interface-client LogPatch.js).
//  - Powertools for AWS Lambda (Python) (https://docs.powertools.aws.dev/lambda/python/latest/core/logger/):
//    level, message, function_request_id, xray_trace_id, correlation_id, exception_name, exception
//    (the traceback text).
//  - Powertools TypeScript: "error": {"name","location","message","stack"} (aws-powertools
//    powertools-lambda-typescript, packages/logger LogFormatter.formatError). Powertools Java: the same
//    "error" object and fields (from memory: not checked against the Java documentation).
//  - A service's own JSON logs: LogLineOptions' level, id and error fields.
void ReadStructured(object o, const LogLineOptions& options, LogLine& line) {
  const std::string type = ScalarField(o, "type");
  if (StartsWith(type, "platform.")) {
    ReadPlatformRecord(o, type, line);
    return;
  }
  if (std::string id = FirstScalarField(o, kRequestIdKeys); !id.empty()) line.request_id = std::move(id);
  line.trace_id = FirstScalarField(o, options.trace_id_fields);
  line.correlation_id = FirstScalarField(o, options.correlation_id_fields);
  line.message_id = FirstScalarField(o, options.message_id_fields);
  if (LineLevel level = ParseLineLevel(FirstScalarField(o, options.level_fields)); level != LineLevel::kNone) {
    line.level = level;
  }
  std::optional<element> message = Field(o, "message");
  std::optional<LogError> error;
  if (!ScalarField(o, "errorType").empty() || !ScalarField(o, "errorMessage").empty()) {
    error = LogError{ScalarField(o, "errorType"), ScalarField(o, "errorMessage"), FirstStackField(o, kStackKeys),
                     message ? ErrorOrigin::kLogged : ErrorOrigin::kUncaught};
  } else if (std::string name = ScalarField(o, "exception_name");
             !name.empty() || !ScalarField(o, "exception").empty()) {
    error = LogError{std::move(name), "", WithNewlines(ScalarField(o, "exception")), ErrorOrigin::kLogged};
    ReadTracebackTail(error->stack, *error);
  } else if (object inner; message && message->get_object().get(inner) == simdjson::SUCCESS) {
    error = ErrorFromObject(inner, /*strict=*/true);
  }
  for (size_t i = 0; !error && i < options.error_fields.size(); ++i) {
    std::optional<element> e = Field(o, options.error_fields[i]);
    if (!e) continue;
    if (object inner; e->get_object().get(inner) == simdjson::SUCCESS) {
      error = ErrorFromObject(inner, /*strict=*/false);
    } else if (std::string text = Text(*e); !text.empty() && e->type() == element_type::STRING) {
      error = LogError{"", std::move(text), "", ErrorOrigin::kLogged};
    }
  }
  if (!error && !ScalarField(o, "error_type").empty()) {
    error = LogError{ScalarField(o, "error_type"), ScalarField(o, "error_message"), "", ErrorOrigin::kLogged};
  }
  if (error && line.level == LineLevel::kNone) line.level = LineLevel::kError;
  if (line.level != LineLevel::kError && line.level != LineLevel::kFatal) return;
  if (!error) error = LogError{"", message ? Text(*message) : "", "", ErrorOrigin::kLogged};
  if (error->message.empty() && message && message->type() == element_type::STRING) error->message = Text(*message);
  line.error = std::move(error);
}

// ---- Text -----------------------------------------------------------------

// Lambda's platform lines in plain text (the examples of
// https://docs.aws.amazon.com/lambda/latest/dg/nodejs-logging.html and python-logging.html):
//   START RequestId: 6bc28136-xmpl-4365-b021-0ce6b2e64ab0 Version: $LATEST
//   END RequestId: 6bc28136-xmpl-4365-b021-0ce6b2e64ab0
//   REPORT RequestId: 6bc2... Duration: 3.22 ms Billed Duration: 4 ms Memory Size: 128 MB Max Memory Used: 65 MB
// REPORT's "Status: timeout" / "Error Type: Runtime.OutOfMemory" fields are from memory (newer runtimes).
bool ReadMarker(std::string_view t, LogLine& line) {
  static constexpr std::pair<std::string_view, InvocationMarker> kMarkers[] = {
      {"START RequestId: ", InvocationMarker::kStart},
      {"END RequestId: ", InvocationMarker::kEnd},
      {"REPORT RequestId: ", InvocationMarker::kReport},
  };
  for (const auto& [prefix, marker] : kMarkers) {
    if (!StartsWith(t, prefix)) continue;
    size_t pos = prefix.size();
    line.marker = marker;
    line.request_id = std::string(NextToken(t, pos));
    if (marker != InvocationMarker::kReport) return true;
    line.memory_size_mb = IntegerAfter(t, "Memory Size:");
    line.max_memory_used_mb = IntegerAfter(t, "Max Memory Used:");
    const std::string_view status = TokenAfter(t, "Status:"), error_type = TokenAfter(t, "Error Type:");
    if (status == "timeout") {
      line.error = LogError{"Task timed out", "Task timed out (REPORT Status: timeout)", "", ErrorOrigin::kPlatform};
    } else if (!error_type.empty()) {
      line.error =
          LogError{std::string(error_type), fmt::format("REPORT Status: {}", status), "", ErrorOrigin::kPlatform};
    }
    if (line.error) line.level = LineLevel::kError;
    return true;
  }
  return false;
}

// Lambda's own failure lines (from memory; the text is AWS's and stable for years, but no
// documentation page shows all of them):
//   2024-05-01T10:00:03.123Z 6bc2... Task timed out after 3.00 seconds
//   RequestId: 6bc2... Error: Runtime exited with error: signal: killed
//   Runtime.ExitError                      (its own line, or the next line of the same event)
//   RequestId: 6bc2... Process exited before completing request
bool ReadPlatformFailure(std::string_view t, LogLine& line) {
  if (size_t at = t.find("Task timed out after "); at != std::string_view::npos) {
    const std::string_view before = t.substr(0, at);
    size_t pos = 0;
    for (std::string_view token = NextToken(before, pos); !token.empty(); token = NextToken(before, pos)) {
      if (IsUuid(token)) line.request_id = std::string(token);
    }
    line.error = LogError{"Task timed out", std::string(FirstLine(t.substr(at))), "", ErrorOrigin::kPlatform};
  } else if (StartsWith(t, "RequestId: ")) {
    size_t pos = 11;
    std::string_view id = NextToken(t, pos);
    std::string_view rest = TrimLeft(t.substr(pos));
    if (!IsUuid(id)) return false;
    line.request_id = std::string(id);
    if (StartsWith(rest, "Error: ")) rest.remove_prefix(7);
    std::vector<std::string_view> lines = Lines(rest);
    if (lines.empty()) return false;
    std::string type = "Runtime.ExitError";
    for (size_t i = 1; i < lines.size(); ++i) {
      if (StartsWith(Trim(lines[i]), "Runtime.")) type = std::string(Trim(lines[i]));
    }
    line.error = LogError{std::move(type), std::string(Trim(lines[0])), "", ErrorOrigin::kPlatform};
  } else if (StartsWith(t, "Runtime.") && t.find_first_of(" \t\n\r") == std::string_view::npos) {
    line.error = LogError{std::string(t), "", "", ErrorOrigin::kPlatform};
  } else {
    return false;
  }
  line.level = LineLevel::kError;
  return true;
}

// An exception in a message body: a Python traceback (its last line names it), or a
// Java or JavaScript stack (a "Type: message" line followed by "at ..." frames). The
// type may be absent when the body's first line names none.
std::optional<LogError> ExceptionInBody(std::string_view body) {
  if (size_t at = body.find("Traceback (most recent call last):"); at != std::string_view::npos) {
    LogError error;
    error.stack = WithNewlines(body.substr(at));
    ReadTracebackTail(error.stack, error);
    return error;
  }
  std::vector<std::string_view> lines = Lines(body);
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    if (!StartsWith(TrimLeft(lines[i + 1]), "at ") || !IsBlank(lines[i + 1][0])) continue;
    LogError error;
    if (!SplitTypeAndMessage(lines[i], error.type, error.message)) continue;
    error.stack = WithNewlines(body.substr(static_cast<size_t>(lines[i].data() - body.data())));
    return error;
  }
  if (!lines.empty() && StartsWithJavaException(lines[0])) {
    LogError error;
    (void)SplitTypeAndMessage(lines[0], error.type, error.message);
    error.stack = WithNewlines(body);
    return error;
  }
  return std::nullopt;
}

// Node.js runtime's uncaught errors, after the line's prefix (aws-lambda-nodejs-runtime-interface-client
// src/index.mjs and Errors.js toFormatted; example in
// https://docs.aws.amazon.com/lambda/latest/dg/nodejs-exceptions.html):
//   Invoke Error \t{"errorType":"Error","errorMessage":"boom","stack":["Error: boom","    at ..."]}
//   Uncaught Exception \t{...}
//   Unhandled Promise Rejection \t{...}
std::optional<LogError> NodeRuntimeError(std::string_view body) {
  static constexpr std::string_view kLeads[] = {"Invoke Error", "Uncaught Exception", "Unhandled Promise Rejection"};
  for (std::string_view lead : kLeads) {
    if (!StartsWith(body, lead)) continue;
    std::string_view rest = TrimLeft(body.substr(lead.size()));
    LogError error{"", std::string(FirstLine(rest)), "", ErrorOrigin::kUncaught};
    if (std::optional<object> o = ParseObject(TrimRight(rest))) {
      if (std::optional<LogError> parsed = ErrorFromObject(*o, /*strict=*/false)) error = std::move(*parsed);
      error.origin = ErrorOrigin::kUncaught;
    }
    return error;
  }
  return std::nullopt;
}

// The part of a line after its runtime prefix: JSON merged into `line`, else
// the runtime's uncaught error or an exception, else (at ERROR) its first line.
void ReadBody(std::string_view body, const LogLineOptions& options, LogLine& line) {
  body = Trim(body);
  if (std::optional<object> o = ParseObject(body)) {
    LogLine structured;
    structured.level = line.level;
    ReadStructured(*o, options, structured);
    if (structured.request_id.empty()) structured.request_id = std::move(line.request_id);
    line = std::move(structured);
    return;
  }
  if (std::optional<LogError> error = NodeRuntimeError(body)) {
    line.level = LineLevel::kError;
    line.error = std::move(error);
    return;
  }
  const bool error_level = line.level == LineLevel::kError || line.level == LineLevel::kFatal;
  if (!error_level && line.level != LineLevel::kNone) return;
  if (std::optional<LogError> error = ExceptionInBody(body)) {
    line.level = std::max(line.level, LineLevel::kError);
    line.error = std::move(error);
  } else if (error_level) {
    line.error = LogError{"", std::string(FirstLine(body)), "", ErrorOrigin::kLogged};
  }
}

// Python runtime (awslambdaric bootstrap.py; https://docs.aws.amazon.com/lambda/latest/dg/python-logging.html):
//   [INFO]\t2024-05-01T10:00:00.123Z\t6bc2...\tmessage          (the logging module)
//   [ERROR] ValueError: bad value\rTraceback (most recent call last):\r  File ...   (uncaught)
bool ReadPython(std::string_view t, const LogLineOptions& options, LogLine& line) {
  if (StartsWith(t, "[ERROR] ")) {
    std::string_view rest = t.substr(8);
    LogError error;
    error.origin = ErrorOrigin::kUncaught;
    if (!SplitTypeAndMessage(FirstLine(rest), error.type, error.message)) error.message = std::string(FirstLine(rest));
    if (size_t at = rest.find("Traceback (most recent call last):"); at != std::string_view::npos) {
      error.stack = WithNewlines(rest.substr(at));
    }
    line.level = LineLevel::kError;
    line.error = std::move(error);
    return true;
  }
  const size_t close = t.find("]\t");
  if (t.empty() || t[0] != '[' || close == std::string_view::npos || close > 10) return false;
  const LineLevel level = ParseLineLevel(t.substr(1, close - 1));
  if (level == LineLevel::kNone) return false;
  std::vector<std::string_view> fields;
  size_t pos = close + 2;
  for (int i = 0; i < 2; ++i) {
    const size_t tab = t.find('\t', pos);
    if (tab == std::string_view::npos) return false;
    fields.push_back(t.substr(pos, tab - pos));
    pos = tab + 1;
  }
  line.level = level;
  if (IsUuid(fields[1])) line.request_id = std::string(fields[1]);
  ReadBody(t.substr(pos), options, line);
  return true;
}

// Node.js runtime (LogPatch.js; https://docs.aws.amazon.com/lambda/latest/dg/nodejs-logging.html):
//   2019-06-07T19:11:20.562Z\tc793869b-ee49-115b-a5b6-4fd21e8dedac\tINFO\tmessage
bool ReadNode(std::string_view t, const LogLineOptions& options, LogLine& line) {
  std::array<std::string_view, 3> fields;
  size_t pos = 0;
  for (std::string_view& field : fields) {
    const size_t tab = t.find('\t', pos);
    if (tab == std::string_view::npos) return false;
    field = t.substr(pos, tab - pos);
    pos = tab + 1;
  }
  if (fields[0].size() < 10 || !IsDigitChar(fields[0][0]) || fields[0][4] != '-') return false;
  const LineLevel level = ParseLineLevel(fields[2]);
  if (level == LineLevel::kNone) return false;
  line.level = level;
  if (IsUuid(fields[1])) line.request_id = std::string(fields[1]);
  ReadBody(t.substr(pos), options, line);
  return true;
}

bool IsDate(std::string_view s) {
  return s.size() == 10 && IsDigitChar(s[0]) && s[4] == '-' && s[7] == '-';
}
bool IsTime(std::string_view s) {
  return s.size() >= 8 && IsDigitChar(s[0]) && s[2] == ':' && s[5] == ':';
}

// Java with aws-lambda-java-log4j2's documented pattern
// (https://docs.aws.amazon.com/lambda/latest/dg/java-logging.html):
//   %d{yyyy-MM-dd HH:mm:ss} %X{AWSRequestId} %-5p %c{1} - %m%n
//   2024-05-01 10:00:00 6bc28136-xmpl-4365-b021-0ce6b2e64ab0 ERROR Handler - failed
// and any service line that opens with a date, a time and a level.
bool ReadDatedLine(std::string_view t, const LogLineOptions& options, LogLine& line) {
  size_t pos = 0;
  if (!IsDate(NextToken(t, pos)) || !IsTime(NextToken(t, pos))) return false;
  std::string_view token = NextToken(t, pos);
  if (IsUuid(token)) {
    line.request_id = std::string(token);
    token = NextToken(t, pos);
  }
  const LineLevel level = ParseLineLevel(token);
  if (level == LineLevel::kNone) return false;
  line.level = level;
  ReadBody(t.substr(pos), options, line);
  return true;
}

// Any other line: a level written in capitals among its first words
// ("ERROR [main] Failed", "[WARN] slow"), else only an exception in it counts.
void ReadOtherText(std::string_view t, const LogLineOptions& options, LogLine& line) {
  size_t pos = 0;
  for (int i = 0; i < 4; ++i) {
    std::string_view token = NextToken(t, pos);
    while (!token.empty() && (token.front() == '[' || token.front() == '(')) token.remove_prefix(1);
    while (!token.empty() && (token.back() == ']' || token.back() == ')' || token.back() == ':'))
      token.remove_suffix(1);
    const bool capitals =
        !token.empty() && std::all_of(token.begin(), token.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
    if (!capitals) continue;
    if (LineLevel level = ParseLineLevel(token); level != LineLevel::kNone) {
      line.level = level;
      ReadBody(t.substr(pos), options, line);
      return;
    }
  }
  ReadBody(t, options, line);
}

}  // namespace

LineLevel ParseLineLevel(std::string_view word) {
  static constexpr std::pair<std::string_view, LineLevel> kWords[] = {
      {"trace", LineLevel::kTrace},
      {"debug", LineLevel::kDebug},
      {"info", LineLevel::kInfo},
      {"notice", LineLevel::kInfo},
      {"warn", LineLevel::kWarn},
      {"warning", LineLevel::kWarn},
      {"error", LineLevel::kError},
      {"err", LineLevel::kError},
      {"fatal", LineLevel::kFatal},
      {"critical", LineLevel::kFatal},
      {"crit", LineLevel::kFatal},
      {"alert", LineLevel::kFatal},
      {"emerg", LineLevel::kFatal},
      // pino's numeric levels
      {"10", LineLevel::kTrace},
      {"20", LineLevel::kDebug},
      {"30", LineLevel::kInfo},
      {"40", LineLevel::kWarn},
      {"50", LineLevel::kError},
      {"60", LineLevel::kFatal},
  };
  word = Trim(word);
  if (word.size() > 8) return LineLevel::kNone;
  const std::string lower = ToLower(word);
  for (const auto& [name, level] : kWords) {
    if (lower == name) return level;
  }
  return LineLevel::kNone;
}

LogLine ParseLogLine(std::string_view text, const LogLineOptions& options) {
  LogLine line;
  const std::string_view t = TrimRight(TrimLeft(text));
  if (t.empty()) return line;
  if (ReadMarker(t, line)) return line;
  if (std::optional<object> o = ParseObject(t)) {
    ReadStructured(*o, options, line);
    return line;
  }
  if (ReadPlatformFailure(t, line)) return line;
  if (ReadPython(t, options, line) || ReadNode(t, options, line) || ReadDatedLine(t, options, line)) return line;
  ReadOtherText(t, options, line);
  return line;
}

}  // namespace dlq
