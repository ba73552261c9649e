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
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "replay/replayer.h"

namespace dlq {

// kSending: a replay with a backlog bound and no canary (backpressure only).
enum class RedrivePhase { kCanary, kWaiting, kRamp, kPaused, kFinalCheck, kDone, kStopped, kSending };
// "canary", "waiting", "ramp", "paused", "final-check", "done", "stopped", "sending"
std::string_view RedrivePhaseName(RedrivePhase phase);
std::optional<RedrivePhase> ParseRedrivePhase(std::string_view name);

struct RedriveOptions {
  // 0: no canary, no ramp and no waits: backpressure only (a backlog bound
  // must be set); re-failures the source reports are kept, never a stop.
  uint64_t canary = 0;
  std::vector<double> ramp = {0.05, 0.25, 1.0};  // cumulative fractions of `total`, rising, the last 1.0
  std::chrono::milliseconds window{0};           // after the canary and after the last step
  std::chrono::milliseconds check{0};            // after each other ramp step
  uint64_t canary_max_refailures = 0;
  std::optional<uint64_t> max_refailures;   // absolute bound after the canary, or:
  double max_refailures_fraction = 0.01;    // of the messages sent so far (used when max_refailures is empty)
  int64_t max_backlog = 0;                  // 0: no count bound
  std::chrono::seconds max_backlog_age{0};  // 0: no age bound
  std::chrono::milliseconds poll{1000};     // backlog / re-failure sampling period while waiting or paused
  const std::atomic<bool>* stop = nullptr;  // polled while blocked and before each item (kCancelled); not owned

  bool BackpressureOnly() const {
    return canary == 0 && (max_backlog > 0 || max_backlog_age > std::chrono::seconds(0));
  }
  Status Validate() const;
};

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

struct RefailedMessage {
  std::string message_id;      // the original id (in the archive / the DLQ before the replay)
  std::string new_message_id;  // the id SQS gave the copy; the id it has in the DLQ again
  std::string destination;     // queue URL it was replayed to
  std::string dlq;             // queue URL it landed in again
  SystemTime found_at;
};

struct RedriveStatus {
  RedrivePhase phase = RedrivePhase::kCanary;
  std::string reason;       // human text for waiting/paused/stopped, "" otherwise
  int step = 0, steps = 0;  // ramp step (1-based) and count; 0 in the canary
  uint64_t total = 0, sent = 0, refailed = 0, dlq_receives = 0;
  int64_t backlog = -1;  // last sampled ApproximateNumberOfMessages of the destination(s), -1 unknown
  std::optional<std::chrono::seconds> backlog_age;
  std::chrono::milliseconds paused_for{0};  // total time paused for backlog
  std::vector<RefailedMessage> refailures;  // every one found, in order found
  std::vector<uint64_t> sent_per_step;      // [0] the canary, then each ramp step (one entry when backpressure only)
};

// The progress line of a guarded redrive: "phase=ramp step=2/3
// sent=120/1000 refailed=0 backlog=37", then " age=12s" and " paused=30s"
// when known and non-zero, and ": REASON" when there is one.
std::string RedriveProgressLine(const RedriveStatus& status);

// What the guard asks of the world (implemented on SQS in
// replay/redrive_probes.h; fakes in tests).
struct BacklogSample {
  int64_t visible = -1;
  std::optional<std::chrono::seconds> oldest_age;
};
class BacklogProbe {
 public:
  virtual ~BacklogProbe() = default;
  virtual Result<BacklogSample> Sample() = 0;
};
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

  // True when `message_id` is the new id of a message this run (or a run it
  // resumed) sent.
  bool IsOurs(const std::string& message_id) const { return watched_.contains(message_id); }
  // The message sent with this new id (IsOurs must hold).
  const ReplayedMessage& Watched(const std::string& new_message_id) const { return watched_.at(new_message_id); }
  // Re-failures the source found itself (ignored when already known, by new
  // id). A breach surfaces at the next BeforeAdd, wait poll or Finish.
  Status Refailed(const std::vector<RefailedMessage>& found);

  // Call after the Replayer's Finish: waits the final window and checks the
  // bound (kAborted on a breach). Nothing sent: done at once.
  Status Finish(Replayer& replayer);

  const RedriveStatus& status() const { return status_; }

 private:
  bool Sending() const;
  RedrivePhase SendingPhase() const;
  void Watch(const ReplayedMessage& m, SystemTime at, size_t step);
  uint64_t Target() const { return targets_[step_]; }
  // Waits after the step that just filled (or the one a resumed run was
  // waiting after), then moves to the next step.
  Status WaitAfterStep(SystemTime start);
  // Blocks until `length` after `start`, polling (see above).
  Status Wait(SystemTime start, std::chrono::milliseconds length, std::string_view what);
  Status FindRefailures();
  Status MaybePause(Replayer& replayer);
  // One more item would take the projected count past max_backlog.
  bool WouldPassBound() const;
  // "K of N messages sent failed again in STEP (bound B)".
  std::string BreachReason(uint64_t bound) const;
  // After a breach: sends nothing, and keeps looking (on_wait, the probe)
  // until one window after the last send has passed, every message sent has
  // failed again, or a stop request, so the report lists every re-failure.
  Status Settle(uint64_t bound);
  Status SampleBacklog();
  std::optional<std::chrono::seconds> EstimateAge(int64_t visible) const;
  bool OverBacklog(bool resuming) const;
  std::string BacklogReason() const;
  uint64_t Bound() const;
  Status CheckBound();
  Status CheckStop() const;
  Status EnterPhase(RedrivePhase phase, SystemTime at, std::string reason = "");
  Status Journal(const std::string& lines);
  void Report();
  std::string StepName() const;
  std::string StepName(size_t step) const;
  void Resume(const RedriveJournal& journal);
  std::chrono::milliseconds FindEvery(std::chrono::milliseconds wait) const;
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

  std::vector<uint64_t> targets_;  // cumulative sent at which each step is full: [0] the canary, the last unbounded
  size_t step_ = 0;                // index into targets_ (the ramp step number)
  uint64_t unconfirmed_ = 0;       // items taken and not yet reported sent since the last flush
  std::map<std::string, ReplayedMessage> watched_;  // new id -> message sent
  std::map<std::string, size_t> step_of_;           // new id -> the step that sent it
  std::vector<SystemTime> send_times_;              // in send order
  std::set<std::string> refailed_ids_;              // new ids found again
  std::optional<SystemTime> wait_start_;            // the start of a wait a resumed run was in
  std::optional<SteadyTime> last_sample_;
  uint64_t taken_since_sample_ = 0;
  uint64_t pending_at_sample_ = 0;  // unconfirmed_ when the last sample was taken
  RedriveStatus status_;
};

}  // namespace dlq
