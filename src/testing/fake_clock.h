// FakeClock: a manual Clock for tests (test-only library dlq_testing).
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>

#include "common/clock.h"

namespace dlq {

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
