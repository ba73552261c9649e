// LogEvent: one CloudWatch Logs event as FilterLogEvents returns it (or any
// log source read into the same shape), the input of causes/. A plain value.
#pragma once

#include <cstdint>
#include <string>

namespace dlq {

struct LogEvent {
  std::string log_group, log_stream;
  int64_t timestamp_ms = 0;  // the event's timestamp, epoch milliseconds
  std::string message;       // as logged: may hold several lines and end in '\n'
};

}  // namespace dlq
