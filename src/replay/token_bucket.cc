#include "replay/token_bucket.h"

#include <algorithm>

namespace dlq {

TokenBucket::TokenBucket(double rate, double burst, Clock& clock)
    : rate_(rate), burst_(std::max(1.0, burst)), clock_(clock), tokens_(1.0), last_(clock.SteadyNow()) {}

void TokenBucket::Refill() {
  auto now = clock_.SteadyNow();
  double secs = std::chrono::duration<double>(now - last_).count();
  if (secs > 0) tokens_ = std::min(burst_, tokens_ + secs * rate_);
  last_ = now;
}

double TokenBucket::Available() {
  Refill();
  return tokens_;
}

void TokenBucket::Acquire(double n) {
  n = std::min(n, burst_);
  Refill();
  while (tokens_ < n) {
    double wait_s = (n - tokens_) / rate_;
    clock_.SleepFor(std::chrono::duration_cast<Duration>(std::chrono::duration<double>(wait_s)));
    Refill();
  }
  tokens_ -= n;
}

}  // namespace dlq
