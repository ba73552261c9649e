#include "monitor/queue_history.h"

namespace dlq {

QueueHistory::QueueHistory(size_t capacity) : ring_(capacity) {}

void QueueHistory::Add(const QueueSample& sample) {
  if (ring_.empty()) return;
  ring_[next_] = sample;
  next_ = (next_ + 1) % ring_.size();
  if (size_ < ring_.size()) ++size_;
}

std::vector<QueueSample> QueueHistory::Samples() const {
  std::vector<QueueSample> out;
  out.reserve(size_);
  const size_t start = (next_ + ring_.size() - size_) % (ring_.empty() ? 1 : ring_.size());
  for (size_t i = 0; i < size_; ++i) out.push_back(ring_[(start + i) % ring_.size()]);
  return out;
}

std::optional<QueueSample> QueueHistory::Newest() const {
  if (size_ == 0) return std::nullopt;
  return ring_[(next_ + ring_.size() - 1) % ring_.size()];
}

}  // namespace dlq
