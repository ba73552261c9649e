#include "replay/refailure_watch.h"

#include <fmt/format.h>

#include <cmath>

#include "common/count_noun.h"

namespace dlq {

RefailureWatch::RefailureWatch(const RedriveOptions& options)
    : canary_max_refailures_(options.canary_max_refailures),
      max_refailures_(options.max_refailures),
      max_refailures_fraction_(options.max_refailures_fraction) {}

void RefailureWatch::Add(const ReplayedMessage& m, SystemTime at, size_t step) {
  watched_[m.new_message_id] = m;
  step_of_[m.new_message_id] = step;
  send_times_.push_back(at);
}

uint64_t RefailureWatch::Bound(size_t step, uint64_t sent) const {
  if (step == 0) return canary_max_refailures_;
  if (max_refailures_) return *max_refailures_;
  return static_cast<uint64_t>(std::floor(max_refailures_fraction_ * static_cast<double>(sent)));
}

std::string RefailureWatch::BreachReason(const RedriveStatus& status, size_t step, uint64_t bound,
                                         const RedriveSteps& steps) const {
  std::string out =
      fmt::format("{} of {} failed again in {} (bound {})", status.refailed,
                  CountNoun(status.sent, "message sent", "messages sent"), steps.Name(status.phase, step), bound);
  // Re-failures of messages sent in an earlier step than the one judged (a
  // --check shorter than the processing window lets them arrive late) are
  // named with the step that sent them.
  std::map<size_t, uint64_t> earlier;
  for (const RefailedMessage& r : status.refailures) {
    auto it = step_of_.find(r.new_message_id);
    if (it != step_of_.end() && it->second < step) ++earlier[it->second];
  }
  for (const auto& [s, n] : earlier) {
    out += fmt::format("; {} of them sent in {}", n, steps.Name(s));
  }
  return out;
}

}  // namespace dlq
