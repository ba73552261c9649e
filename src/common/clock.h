// Clock: the only source of time in the library, so tests can fake it.
// Implementations are thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace dlq {

using SystemTime = std::chrono::system_clock::time_point;
using Duration = std::chrono::nanoseconds;

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time (UTC), used for signing, timestamps and expiry.
  virtual SystemTime Now() const = 0;
  // Monotonic time, used for deadlines and rates.
  virtual std::chrono::steady_clock::time_point SteadyNow() const = 0;
  virtual void SleepFor(Duration d) = 0;
};

class RealClock final : public Clock {
 public:
  SystemTime Now() const override { return std::chrono::system_clock::now(); }
  std::chrono::steady_clock::time_point SteadyNow() const override { return std::chrono::steady_clock::now(); }
  void SleepFor(Duration d) override;
};

// The process-wide real clock (stateless, so sharing it is safe).
Clock& DefaultClock();

}  // namespace dlq
