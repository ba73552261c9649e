#include "common/clock.h"

#include <thread>

namespace dlq {

void RealClock::SleepFor(Duration d) {
  std::this_thread::sleep_for(d);
}

Clock& DefaultClock() {
  static RealClock clock;
  return clock;
}

}  // namespace dlq
