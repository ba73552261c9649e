// Structured logging: one event name plus key/value fields, written as JSON
// lines (for log pipelines) or as text (for terminals); a StreamLogger's
// lines and status line are terminal-safe either way (common/text.h).
// Thread-safe.
// Callers must never pass secrets as field values.
#pragma once

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/mutex.h"

namespace dlq {

enum class LogLevel { kDebug = 0, kInfo, kWarn, kError, kOff };
enum class LogFormat { kText, kJson };

std::string_view LogLevelName(LogLevel level);
bool ParseLogLevel(std::string_view text, LogLevel& out);

struct LogField {
  LogField(std::string_view k, std::string_view v) : key(k), value(std::string(v)) {}
  LogField(std::string_view k, const std::string& v) : key(k), value(v) {}
  LogField(std::string_view k, const char* v) : key(k), value(std::string(v)) {}
  LogField(std::string_view k, int64_t v) : key(k), value(v) {}
  LogField(std::string_view k, int v) : key(k), value(static_cast<int64_t>(v)) {}
  LogField(std::string_view k, uint64_t v) : key(k), value(static_cast<int64_t>(v)) {}
  LogField(std::string_view k, double v) : key(k), value(v) {}
  LogField(std::string_view k, bool v) : key(k), value(v) {}
  std::string_view key;
  std::variant<std::string, int64_t, double, bool> value;
};

class Logger {
 public:
  virtual ~Logger() = default;
  virtual void Log(LogLevel level, std::string_view event, std::initializer_list<LogField> fields) = 0;
  virtual bool Enabled(LogLevel level) const = 0;
  // A live status line (a progress display) that log lines must not break:
  // a terminal sink clears it before each log line and draws it again after.
  // Empty removes it. Other sinks ignore it.
  virtual void SetStatusLine(std::string_view line) { (void)line; }
};

// Writes to a FILE* (stderr by default).
class StreamLogger final : public Logger {
 public:
  StreamLogger(std::FILE* out, LogFormat format, LogLevel min_level) : out_(out), format_(format), min_(min_level) {}
  void Log(LogLevel level, std::string_view event, std::initializer_list<LogField> fields) override;
  bool Enabled(LogLevel level) const override { return level >= min_; }
  void SetStatusLine(std::string_view line) override;

 private:
  Mutex mu_;
  std::string status_ DLQ_GUARDED_BY(mu_);  // the status line on screen, empty when none
  std::FILE* out_;
  LogFormat format_;
  LogLevel min_;
};

// Keeps every event in memory; for tests.
class CapturingLogger final : public Logger {
 public:
  struct Entry {
    LogLevel level;
    std::string event;
    std::string line;  // the JSON rendering, to grep in tests
  };
  void Log(LogLevel level, std::string_view event, std::initializer_list<LogField> fields) override;
  bool Enabled(LogLevel) const override { return true; }
  std::vector<Entry> entries() const;
  bool Contains(std::string_view needle) const;

 private:
  mutable Mutex mu_;
  std::vector<Entry> entries_ DLQ_GUARDED_BY(mu_);
};

// The process-wide sink (stderr, text, info by default). SetLogger replaces
// it; the previous one must not be in use by other threads at that moment.
Logger& Log();
void SetLogger(std::unique_ptr<Logger> logger);

// Renders an event as one JSON object (no newline). Strings are escaped by
// common/json_writer.h: invalid UTF-8 bytes become U+FFFD.
std::string RenderJsonLogLine(LogLevel level, std::string_view event, std::initializer_list<LogField> fields);

}  // namespace dlq
