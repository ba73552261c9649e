// RedriveGuard: the phase machine of a guarded redrive (`replay --canary`,
// doc/replay.md "Guarded redrive"). It sits between a source and the
// Replayer as its ReplayGate: before each item is taken it may block, and it
// learns every message sent.
//
// Phases: canary (send `canary` messages) -> waiting (one processing window)
// -> ramp step 1 (up to the first cumulative fraction of `total` above the
// canary) -> waiting (`check`) -> ... -> the last step (everything left) ->
// final-check (one window, from Finish) -> done. A step ends at the first
// item after it sent its share: the guard flushes the Replayer so every
// message of the step is confirmed, then waits. While waiting it calls
// on_wait at least every `poll`, samples the backlog, asks the
// RefailureProbe every max(poll, wait / 10) and at the end of the wait; a
// breach ends a wait early. Breach: more re-failures than the bound
// (canary_max_refailures up to the end of the canary's window, then
// max_refailures or floor(max_refailures_fraction x sent)): phase stopped;
// nothing more is sent, the guard keeps looking until one window after its
// last send (or until every message sent has failed again, or a stop
// request), so the report lists every message that failed again, and returns
// kAborted naming how many of how many sent failed again, in which step.
//
// Backpressure: between samples the guard projects the destination's count
// as the last sample plus the items the engine held then plus every item
// taken since. Before taking an item it samples the BacklogProbe when `poll`
// has passed or when that item would take the projection past max_backlog,
// so its own sends never take the count past the bound (others' sends and
// the count's lag aside). Over a bound (the count would pass max_backlog, or
// age > max_backlog_age) it flushes the Replayer and pauses until the count
// is at most max_backlog / 2 and the age within its bound.
// When the probe gives no age, the age is estimated from the guard's own
// send times: with `visible` messages waiting and first-in first-out
// consumption, the oldest one waiting is our (sent - visible)-th message
// (our first when visible >= sent); the estimate ignores messages others
// sent.
//
// Resume: with a journal path (FILE.guard, replay/redrive_journal.h) every
// batch sent, phase change and re-failure is appended and fsync'd; a guard
// started on an existing journal knows what was sent (and watches it),
// re-enters the phase it was in, and a running wait keeps its recorded
// start. A journal that ended stopped makes Start return kAborted.
//
// Parts: the step targets and names (replay/redrive_steps.h), what was sent
// and the re-failure bound (replay/refailure_watch.h), the backlog sample and
// its bounds (replay/backlog_gate.h), the journal and its resume point
// (replay/redrive_journal.h); the guard runs the phases and the waits.
//
// Not thread-safe: driven by the source's thread (the Replayer calls it on
// that thread). The probes, callbacks and clock must outlive it.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "replay/backlog_gate.h"
#include "replay/redrive_steps.h"
#include "replay/redrive_terms.h"
#include "replay/refailure_watch.h"
#include "replay/replayer.h"

namespace dlq {

// The processing window of a destination: maxReceiveCount x
// VisibilityTimeout + DelaySeconds, plus a margin of max(10 s, 10% of that).
std::chrono::milliseconds ProcessingWindow(int max_receive_count, std::chrono::seconds visibility_timeout,
                                           std::chrono::seconds delay);
// The default wait after a ramp step: the whole processing window, so a
// step's re-failures are back before the next step is sent.
std::chrono::milliseconds DefaultCheck(std::chrono::milliseconds window);
// The default canary for a selection: max(10, ceil(1% of it)).
uint64_t DefaultCanary(uint64_t selection);
// The default backlog count bound: max(100, 2 x the visible count at the start).
int64_t DefaultMaxBacklog(int64_t visible_at_start);

class RefailureProbe {
 public:
  virtual ~RefailureProbe() = default;
  // Which of `watched` (new id -> the message sent) are now in a DLQ. Must
  // not keep, delete or move anything it receives: every message it receives
  // is made visible again at once. Called during and at the end of each wait.
  virtual Result<std::vector<RefailedMessage>> Find(const std::map<std::string, ReplayedMessage>& watched) = 0;
  virtual uint64_t receives() const = 0;  // messages received so far to look (reported and audited)
};

class RedriveJournalWriter;
struct RedriveJournal;

class RedriveGuard final : public ReplayGate {
 public:
  // `total`: the messages selected (the ramp's 100%). `refailures` may be
  // null when the source finds re-failures itself (the live form, through
  // Refailed()).
  RedriveGuard(RedriveOptions options, uint64_t total, Clock& clock, BacklogProbe& backlog, RefailureProbe* refailures);
  ~RedriveGuard() override;
  RedriveGuard(const RedriveGuard&) = delete;
  RedriveGuard& operator=(const RedriveGuard&) = delete;

  // Every phase change and every sample (set before Start).
  void OnStatus(std::function<void(const RedriveStatus&)> fn) { on_status_ = std::move(fn); }
  // Called at least every `poll` while the guard blocks; an error ends the
  // wait and the run. The live form extends its holds and looks at its DLQ.
  void OnWait(std::function<Status()> fn) { on_wait_ = std::move(fn); }

  // Validates the options. With a journal path: loads it when it exists
  // (resume) and appends to it from now on (created with `mode`).
  // kInvalidArgument for bad options or an unreadable journal; kAborted when
  // the journal's run stopped on a breach.
  Status Start(const std::string& journal_path = "", mode_t mode = 0600);

  // ReplayGate.
  Status BeforeAdd(Replayer& replayer) override;
  Status OnSent(const std::vector<ReplayedMessage>& sent) override;
  // Sent, and failed again at once: watched and counted as re-failures.
  Status OnFailedAtOnce(const std::vector<ReplayedMessage>& refused) override;
  // In the canary, with RedriveOptions::synchronous_canary.
  bool Synchronous() const override;

  // True when `message_id` is the new id of a message this run (or a run it
  // resumed) sent.
  bool IsOurs(const std::string& message_id) const { return watch_.IsOurs(message_id); }
  // The message sent with this new id (IsOurs must hold).
  const ReplayedMessage& Watched(const std::string& new_message_id) const { return watch_.Watched(new_message_id); }
  // Re-failures the source found itself (ignored when already known, by new
  // id). A breach surfaces at the next BeforeAdd, wait poll or Finish.
  Status Refailed(const std::vector<RefailedMessage>& found);

  // Call after the Replayer's Finish: waits the final window and checks the
  // bound (kAborted on a breach). Nothing sent: done at once.
  Status Finish(Replayer& replayer);

  const RedriveStatus& status() const { return status_; }

 private:
  // Watches a message sent at `at` in `step` and counts it in that step.
  void Watch(const ReplayedMessage& m, SystemTime at, size_t step);
  // Waits after the step that just filled (or the one a resumed run was
  // waiting after), then moves to the next step.
  Status WaitAfterStep(SystemTime start);
  // Blocks until `length` after `start`, polling (see above).
  Status Wait(SystemTime start, std::chrono::milliseconds length, std::string_view what);
  Status FindRefailures();
  Status MaybePause(Replayer& replayer);
  // After a breach: sends nothing, and keeps looking (on_wait, the probe)
  // until one window after the last send has passed, every message sent has
  // failed again, or a stop request, so the report lists every re-failure.
  Status Settle(uint64_t bound);
  Status SampleBacklog();
  Status CheckBound();
  Status EnterPhase(RedrivePhase phase, SystemTime at, std::string reason = "");
  void Report();
  // The waiting loops' common steps (Wait, MaybePause, Settle): the caller's
  // hook, then the bound when `bound`; a look for re-failures once
  // `next_find` is due (then the next is `every` later), then the bound.
  Status Pulse(bool bound);
  Status LookWhenDue(SteadyTime now, SteadyTime& next_find, std::chrono::milliseconds every, bool bound);

  RedriveOptions options_;
  Clock& clock_;
  BacklogProbe& backlog_;
  RefailureProbe* refailures_;
  std::function<void(const RedriveStatus&)> on_status_;
  std::function<Status()> on_wait_;
  std::unique_ptr<RedriveJournalWriter> journal_;

  RedriveSteps steps_;
  RefailureWatch watch_;
  BacklogGate backpressure_;
  size_t step_ = 0;                       // the current step (0: the canary)
  uint64_t unconfirmed_ = 0;              // items taken and not yet reported sent since the last flush
  std::optional<SystemTime> wait_start_;  // the start of a wait a resumed run was in
  RedriveStatus status_;
};

}  // namespace dlq
