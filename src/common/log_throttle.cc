#include "common/log_throttle.h"

namespace dlq {

bool LogThrottle::Admit(std::chrono::steady_clock::time_point now, int64_t* suppressed) {
  MutexLock lock(mu_);
  if (last_ && now - *last_ < interval_) {
    ++suppressed_;
    return false;
  }
  last_ = now;
  *suppressed = suppressed_;
  suppressed_ = 0;
  return true;
}

}  // namespace dlq
