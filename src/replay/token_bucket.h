// TokenBucket: the rate limiter of `replay --rate`. Tokens accrue at `rate`
// per second up to `burst`; Acquire(n) blocks (sleeping on the injected
// Clock) until n tokens are there and takes them. Over a run of N tokens the
// average rate is within rate * (1 + burst / N). Not thread-safe; the clock
// must outlive it.
#pragma once

#include <chrono>

#include "common/clock.h"

namespace dlq {

class TokenBucket {
 public:
  // rate > 0 tokens per second; burst >= 1. The bucket starts with one
  // token, so a run never opens with a burst above the rate.
  TokenBucket(double rate, double burst, Clock& clock);

  // Waits until n tokens are available and takes them (n is capped at
  // burst, which could otherwise never be reached).
  void Acquire(double n);
  // Tokens available now (for tests).
  double Available();

 private:
  void Refill();

  double rate_;
  double burst_;
  Clock& clock_;
  double tokens_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace dlq
