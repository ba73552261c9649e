// QueueHistory: the last `capacity` collected samples of one queue (depth and
// the expiry clock), oldest first, for the dashboard's charts. A fixed-size
// ring: adding to a full history drops the oldest sample; memory is
// capacity * sizeof(QueueSample) whatever the daemon's uptime.
//
// Not thread-safe: the daemon keeps one per queue under that queue's mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "common/clock.h"

namespace dlq {

struct QueueSample {
  SystemTime time;
  int64_t visible = -1, not_visible = -1, delayed = -1;  // -1: SQS did not say
  // Seconds from `time` to the nearest possible expiry; nullopt when the
  // queue was empty (nothing can expire).
  std::optional<double> expiry_in_s;
};

class QueueHistory {
 public:
  // capacity 0 keeps nothing.
  explicit QueueHistory(size_t capacity = kDefaultCapacity);

  void Add(const QueueSample& sample);
  // Oldest first.
  std::vector<QueueSample> Samples() const;
  // The sample added last (nullopt when empty).
  std::optional<QueueSample> Newest() const;
  size_t size() const { return size_; }
  size_t capacity() const { return ring_.size(); }

  // 12 hours at the default 60 s collection interval.
  static constexpr size_t kDefaultCapacity = 720;

 private:
  std::vector<QueueSample> ring_;
  size_t next_ = 0;  // where the next sample goes
  size_t size_ = 0;
};

}  // namespace dlq
