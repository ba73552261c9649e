// BacklogGate: the backpressure of a guarded redrive (replay/redrive_guard.h):
// the last sample of the destination's backlog, the count projected from it
// (the sample plus the items the engine held then plus every item taken
// since), whether a sample is due, and whether the backlog is over its bound
// (pause) or back under it (resume). When the probe gives no age, the age is
// estimated from the guard's own send times (see EstimateAge).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "replay/redrive_terms.h"

namespace dlq {

class BacklogGate {
 public:
  BacklogGate(const RedriveOptions& options, Clock& clock);

  // No sample yet, `poll` passed since the last, or WouldPassBound().
  bool SampleDue() const;
  // Samples `probe`; `unconfirmed`: items the engine holds now; `send_times`:
  // the guard's sends, in order. False when a retryable error was logged and
  // the last values kept; a non-retryable error is returned.
  Result<bool> Sample(BacklogProbe& probe, uint64_t unconfirmed, const std::vector<SystemTime>& send_times);
  // One more item would take the projected count past max_backlog.
  bool WouldPassBound() const;
  // Over a bound: the count past max_backlog (when `resuming`: past
  // max_backlog / 2), or the age past max_backlog_age (resuming: at it).
  bool Over(bool resuming) const;
  // "paused: destination backlog 300 over the bound 200; resumes at 100".
  std::string Reason() const;
  // An item was taken (`after_pause`: the first after a pause).
  void Took(bool after_pause) { taken_since_sample_ = after_pause ? 1 : taken_since_sample_ + 1; }

  int64_t backlog() const { return backlog_; }  // -1: unknown
  std::optional<std::chrono::seconds> age() const { return age_; }

  // With `visible` messages waiting and first-in first-out consumption, the
  // oldest one waiting is our (sent - visible)-th message (our first when
  // visible >= sent); ignores messages others sent.
  static std::optional<std::chrono::seconds> EstimateAge(int64_t visible, const std::vector<SystemTime>& send_times,
                                                         SystemTime now);

 private:
  int64_t max_backlog_;
  std::chrono::seconds max_age_;
  std::chrono::milliseconds poll_;
  Clock& clock_;
  std::optional<SteadyTime> last_sample_;
  uint64_t taken_since_sample_ = 0;
  uint64_t pending_at_sample_ = 0;  // items the engine held when the last sample was taken
  int64_t backlog_ = -1;
  std::optional<std::chrono::seconds> age_;
};

}  // namespace dlq
