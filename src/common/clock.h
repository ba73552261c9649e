// Clock: the only source of time in the library, so tests can fake it.
// Implementations are thread-safe.
#pragma once

#include <atomic>
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

// A manual clock for tests. SleepFor advances the clock instead of blocking.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(SystemTime start = SystemTime(std::chrono::seconds(1700000000)))
      : now_ns_(start.time_since_epoch().count()) {}
  SystemTime Now() const override { return SystemTime(SystemTime::duration(now_ns_.load())); }
  std::chrono::steady_clock::time_point SteadyNow() const override {
    return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(now_ns_.load()));
  }
  void SleepFor(Duration d) override { Advance(d); }
  void Advance(Duration d) { now_ns_ += std::chrono::duration_cast<SystemTime::duration>(d).count(); }
  void Set(SystemTime t) { now_ns_ = t.time_since_epoch().count(); }

 private:
  std::atomic<SystemTime::duration::rep> now_ns_;
};

}  // namespace dlq
