// LogThrottle: at most one log line per interval for an event a client can
// cause at will (a refused request), so no client can flood the log. The
// line that is written says how many were held back since the last one.
//
// Thread-safe. Time comes from the caller (a Clock's SteadyNow), so tests
// drive it with a FakeClock.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "common/mutex.h"

namespace dlq {

class LogThrottle {
 public:
  explicit LogThrottle(std::chrono::seconds interval) : interval_(interval) {}

  // True when a line may be written at `now` (the first call, or `interval`
  // after the last line written); then `*suppressed` is the number of calls
  // answered false since that line, and the count starts again.
  bool Admit(std::chrono::steady_clock::time_point now, int64_t* suppressed);

 private:
  const std::chrono::seconds interval_;
  Mutex mu_;
  std::optional<std::chrono::steady_clock::time_point> last_ DLQ_GUARDED_BY(mu_);
  int64_t suppressed_ DLQ_GUARDED_BY(mu_) = 0;
};

}  // namespace dlq
