// One pass's shared state (scan_internal.h).
#include <algorithm>
#include <utility>

#include "query/scan_internal.h"

namespace dlq::scan_internal {

bool PassState::Stopping() const {
  if (shutdown_.load(std::memory_order_relaxed)) return true;
  if (options_.stop != nullptr && options_.stop->load(std::memory_order_relaxed)) return true;
  return options_.deadline && clock_.SteadyNow() >= *options_.deadline;
}

std::optional<size_t> PassState::Claim() {
  MutexLock lock(mu_);
  while (true) {
    if (Stopping() || next_ >= objects_) return std::nullopt;
    if (next_ < head_ + window_) break;
    room_.WaitFor(mu_, kPoll);
  }
  slots_.try_emplace(next_);
  return next_++;
}

bool PassState::Reserve(size_t object, size_t n) {
  MutexLock lock(mu_);
  while (!Fits(object, n)) {
    if (Stopping()) return false;
    room_.WaitFor(mu_, kPoll);
  }
  Add(object, n);
  return true;
}

void PassState::Release(size_t object, size_t n) {
  if (n == 0) return;
  MutexLock lock(mu_);
  Subtract(object, n);
}

bool PassState::Emit(size_t object, Match m) {
  MutexLock lock(mu_);
  while (!Fits(object, m.cost)) {
    if (Stopping()) return false;
    room_.WaitFor(mu_, kPoll);
  }
  Add(object, m.cost);
  slots_[object].pending.push_back(std::move(m));
  ready_.NotifyOne();
  return true;
}

void PassState::Finish(size_t object, ObjectResult result) {
  MutexLock lock(mu_);
  Slot& s = slots_[object];
  s.result = std::move(result);
  s.finished = true;
  ready_.NotifyOne();
}

PassState::Pull PassState::Next(size_t object, std::vector<Match>& out, ObjectResult& result) {
  MutexLock lock(mu_);
  while (true) {
    auto it = slots_.find(object);
    if (it != slots_.end() && !it->second.pending.empty()) {
      out.clear();
      for (Match& m : it->second.pending) out.push_back(std::move(m));
      it->second.pending.clear();
      return Pull::kMatches;
    }
    if (it != slots_.end() && it->second.finished) {
      result = std::move(it->second.result);
      slots_.erase(it);
      head_ = object + 1;
      room_.NotifyAll();
      return Pull::kFinished;
    }
    if (Stopping()) return Pull::kStopped;
    ready_.WaitFor(mu_, kPoll);
  }
}

void PassState::Delivered(size_t object, size_t cost) {
  if (cost == 0) return;
  MutexLock lock(mu_);
  Subtract(object, cost);
}

void PassState::Shutdown() {
  shutdown_ = true;
  MutexLock lock(mu_);
  room_.NotifyAll();
  ready_.NotifyAll();
}

size_t PassState::peak() const {
  MutexLock lock(mu_);
  return peak_;
}

ObjectResult PassState::Partial(size_t object) {
  MutexLock lock(mu_);
  while (true) {
    auto it = slots_.find(object);
    if (it == slots_.end()) return {};
    if (it->second.finished) return std::move(it->second.result);
    ready_.WaitFor(mu_, kPoll);
  }
}

// The next object to deliver may use the whole budget, and when nothing
// of it awaits delivery (so the consumer cannot free anything) it goes
// ahead regardless: its own working set is at most 3/8 of the budget and
// the others hold at most half. The others share half the budget.
bool PassState::Fits(size_t object, size_t n) const {
  auto it = slots_.find(object);
  if (object == head_) return used_ + n <= limits_.budget || it == slots_.end() || it->second.pending.empty();
  auto head = slots_.find(head_);
  const size_t head_used = head == slots_.end() ? 0 : head->second.used;
  return used_ - head_used + n <= limits_.others;
}

void PassState::Add(size_t object, size_t n) {
  slots_[object].used += n;
  used_ += n;
  peak_ = std::max(peak_, used_);
  if (options_.on_reserved) options_.on_reserved(used_);
}

void PassState::Subtract(size_t object, size_t n) {
  auto it = slots_.find(object);
  if (it != slots_.end()) it->second.used -= n;
  used_ -= n;
  if (options_.on_reserved) options_.on_reserved(used_);
  room_.NotifyAll();
}

}  // namespace dlq::scan_internal
