// RefailureWatch: what a guarded redrive (replay/redrive_guard.h) sent and
// watches for re-failures, and the bound on them: every message sent (by new
// id, with the step that sent it and its send time), the new ids found again,
// the re-failure bound of a step and the reason a breach is reported with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "replay/redrive_steps.h"
#include "replay/redrive_terms.h"
#include "replay/replayer.h"

namespace dlq {

class RefailureWatch {
 public:
  explicit RefailureWatch(const RedriveOptions& options);

  // A message sent at `at` in `step`.
  void Add(const ReplayedMessage& m, SystemTime at, size_t step);
  bool IsOurs(const std::string& new_message_id) const { return watched_.contains(new_message_id); }
  const ReplayedMessage& Watched(const std::string& new_message_id) const { return watched_.at(new_message_id); }
  const std::map<std::string, ReplayedMessage>& watched() const { return watched_; }
  const std::vector<SystemTime>& send_times() const { return send_times_; }  // in send order
  // Records a re-failure by new id; false when it was already known.
  bool MarkRefailed(const std::string& new_message_id) { return refailed_ids_.insert(new_message_id).second; }

  // The re-failure bound in `step` with `sent` messages sent:
  // canary_max_refailures in the canary, then max_refailures or
  // floor(max_refailures_fraction x sent).
  uint64_t Bound(size_t step, uint64_t sent) const;
  // "K of N messages sent failed again in STEP (bound B)", then how many of
  // them an earlier step than `step` sent.
  std::string BreachReason(const RedriveStatus& status, size_t step, uint64_t bound, const RedriveSteps& steps) const;

 private:
  uint64_t canary_max_refailures_;
  std::optional<uint64_t> max_refailures_;
  double max_refailures_fraction_;
  std::map<std::string, ReplayedMessage> watched_;  // new id -> message sent
  std::map<std::string, size_t> step_of_;           // new id -> the step that sent it
  std::vector<SystemTime> send_times_;              // in send order
  std::set<std::string> refailed_ids_;              // new ids found again
};

}  // namespace dlq
