#include "replay/redrive_guard.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/count_noun.h"
#include "common/log.h"
#include "replay/redrive_journal.h"

namespace dlq {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Whole seconds, rounded up: "95 s left" never says 0 while time is left.
int64_t CeilSeconds(Duration d) {
  return std::chrono::ceil<seconds>(std::max(d, Duration::zero())).count();
}

// A phase in which the guard sends (its step's share).
bool Sending(RedrivePhase phase) {
  return phase == RedrivePhase::kCanary || phase == RedrivePhase::kRamp || phase == RedrivePhase::kSending;
}

Status CheckStop(const std::atomic<bool>* stop) {
  if (stop != nullptr && stop->load()) return Cancelled("guarded redrive stopped by a signal");
  return Status::Ok();
}

// Appends to the journal, when there is one.
Status Append(RedriveJournalWriter* journal, const std::string& lines) {
  if (journal == nullptr || lines.empty()) return Status::Ok();
  return journal->Append(lines);
}

}  // namespace

std::string_view RedrivePhaseName(RedrivePhase phase) {
  switch (phase) {
    case RedrivePhase::kCanary: return "canary";
    case RedrivePhase::kWaiting: return "waiting";
    case RedrivePhase::kRamp: return "ramp";
    case RedrivePhase::kPaused: return "paused";
    case RedrivePhase::kFinalCheck: return "final-check";
    case RedrivePhase::kDone: return "done";
    case RedrivePhase::kStopped: return "stopped";
    case RedrivePhase::kSending: return "sending";
  }
  return "unknown";
}

std::optional<RedrivePhase> ParseRedrivePhase(std::string_view name) {
  for (RedrivePhase p :
       {RedrivePhase::kCanary, RedrivePhase::kWaiting, RedrivePhase::kRamp, RedrivePhase::kPaused,
        RedrivePhase::kFinalCheck, RedrivePhase::kDone, RedrivePhase::kStopped, RedrivePhase::kSending}) {
    if (RedrivePhaseName(p) == name) return p;
  }
  return std::nullopt;
}

Status RedriveOptions::Validate() const {
  if (BackpressureOnly()) {
    if (max_backlog < 0) return InvalidArgument("the backlog bound must not be negative");
    if (max_backlog_age < seconds::zero()) return InvalidArgument("the backlog bound's age must not be negative");
    if (poll <= milliseconds::zero()) return InvalidArgument("the sampling period must be positive");
    return Status::Ok();
  }
  if (canary == 0)
    return InvalidArgument("a guarded redrive needs a canary of at least 1 message (or a backlog bound)");
  if (ramp.empty()) return InvalidArgument("the ramp needs at least one step");
  double previous = 0;
  for (double f : ramp) {
    if (!(f > previous) || f > 1.0) return InvalidArgument("the ramp must be rising percentages, each in (0, 100]");
    previous = f;
  }
  if (ramp.back() != 1.0) return InvalidArgument("the ramp must end at 100 (the whole selection)");
  if (window <= milliseconds::zero()) return InvalidArgument("the processing window must be positive");
  if (check <= milliseconds::zero()) return InvalidArgument("the check after each step must be positive");
  if (!(max_refailures_fraction >= 0 && max_refailures_fraction <= 1)) {
    return InvalidArgument("the re-failure bound as a percentage must be 0..100%");
  }
  if (max_backlog < 0) return InvalidArgument("the backlog bound must not be negative");
  if (max_backlog_age < seconds::zero()) return InvalidArgument("the backlog bound's age must not be negative");
  if (poll <= milliseconds::zero()) return InvalidArgument("the sampling period must be positive");
  return Status::Ok();
}

milliseconds ProcessingWindow(int max_receive_count, seconds visibility_timeout, seconds delay) {
  const milliseconds rest = std::max(max_receive_count, 1) * visibility_timeout + delay;
  return rest + std::max<milliseconds>(seconds(10), rest / 10);
}

milliseconds DefaultCheck(milliseconds window) {
  return window;
}

uint64_t DefaultCanary(uint64_t selection) {
  return std::max<uint64_t>(10, (selection + 99) / 100);
}

int64_t DefaultMaxBacklog(int64_t visible_at_start) {
  return std::max<int64_t>(100, 2 * std::max<int64_t>(visible_at_start, 0));
}

std::string RedriveProgressLine(const RedriveStatus& s) {
  std::string out =
      fmt::format("phase={} step={}/{} sent={}/{} refailed={} backlog={}", RedrivePhaseName(s.phase), s.step, s.steps,
                  s.sent, s.total, s.refailed, s.backlog < 0 ? std::string("?") : std::to_string(s.backlog));
  if (s.backlog_age && s.backlog_age->count() > 0) out += fmt::format(" age={}s", s.backlog_age->count());
  if (s.paused_for.count() > 0) out += fmt::format(" paused={}s", CeilSeconds(s.paused_for));
  if (!s.reason.empty()) out += ": " + s.reason;
  return out;
}

RedriveGuard::RedriveGuard(RedriveOptions options, uint64_t total, Clock& clock, BacklogProbe& backlog,
                           RefailureProbe* refailures)
    : options_(std::move(options)),
      clock_(clock),
      backlog_(backlog),
      refailures_(refailures),
      steps_(options_, total),
      watch_(options_),
      backpressure_(options_, clock) {
  status_.total = total;
  status_.steps = static_cast<int>(steps_.last());
  status_.sent_per_step.assign(steps_.last() + 1, 0);
}

RedriveGuard::~RedriveGuard() = default;

Status RedriveGuard::Start(const std::string& journal_path, mode_t mode) {
  DLQ_RETURN_IF_ERROR(options_.Validate());
  size_t valid_bytes = 0;
  bool resumed = false;
  if (!journal_path.empty()) {
    DLQ_ASSIGN_OR_RETURN(std::optional<RedriveJournal> loaded, LoadRedriveJournal(journal_path));
    if (loaded) {
      valid_bytes = loaded->valid_bytes;
      resumed = !loaded->phases.empty();
      // The journal keeps the send order; the step of each send follows from the step targets.
      for (const JournalSent& s : loaded->sent) Watch(s.message, s.at, steps_.StepOfSend(watch_.send_times().size()));
      status_.sent = loaded->sent.size();
      for (const RefailedMessage& r : loaded->refailed) {
        if (watch_.MarkRefailed(r.new_message_id)) status_.refailures.push_back(r);
      }
      status_.refailed = status_.refailures.size();
    }
    if (resumed) {
      const RedriveResumePoint point = ResumePointOf(*loaded, steps_);
      status_.paused_for += point.paused_for;
      step_ = point.step;
      status_.step = static_cast<int>(step_);
      status_.phase = point.phase;
      wait_start_ = point.wait_start;
      if (point.phase == RedrivePhase::kStopped) {
        status_.reason = fmt::format("{} of {} failed again in {}", status_.refailed,
                                     CountNoun(status_.sent, "message sent", "messages sent"), steps_.Name(step_));
      }
    }
    DLQ_ASSIGN_OR_RETURN(journal_, RedriveJournalWriter::Open(journal_path, mode, valid_bytes));
  }
  if (status_.phase == RedrivePhase::kStopped) {
    return Aborted(fmt::format("{} (an earlier run stopped; delete {} to redrive the rest with a new canary)",
                               status_.reason, journal_path));
  }
  if (!resumed) return EnterPhase(steps_.SendingPhase(step_), clock_.Now());
  Report();
  return Status::Ok();
}

void RedriveGuard::Watch(const ReplayedMessage& m, SystemTime at, size_t step) {
  watch_.Add(m, at, step);
  ++status_.sent_per_step[std::min(step, status_.sent_per_step.size() - 1)];
}

Status RedriveGuard::BeforeAdd(Replayer& replayer) {
  DLQ_RETURN_IF_ERROR(CheckStop(options_.stop));
  DLQ_RETURN_IF_ERROR(CheckBound());
  if (status_.phase == RedrivePhase::kWaiting) DLQ_RETURN_IF_ERROR(WaitAfterStep(*wait_start_));
  // In a resumed final check or after done, items still come (the ones an
  // earlier run sent, which the Replayer skips): taken without a phase
  // change; one actually sent reopens the last step (OnSent).
  while (Sending(status_.phase) && status_.sent + unconfirmed_ >= steps_.Target(step_)) {
    DLQ_RETURN_IF_ERROR(replayer.Flush());
    unconfirmed_ = 0;
    if (status_.sent < steps_.Target(step_)) break;  // some were skipped or failed: the step takes more
    DLQ_RETURN_IF_ERROR(WaitAfterStep(clock_.Now()));
  }
  if (Sending(status_.phase)) DLQ_RETURN_IF_ERROR(MaybePause(replayer));
  ++unconfirmed_;
  return Status::Ok();
}

Status RedriveGuard::OnSent(const std::vector<ReplayedMessage>& sent) {
  const SystemTime now = clock_.Now();
  std::string lines;
  for (const ReplayedMessage& m : sent) {
    Watch(m, now, step_);
    lines += JournalSentLine(m, now);
  }
  status_.sent += sent.size();
  unconfirmed_ -= std::min<uint64_t>(unconfirmed_, sent.size());
  DLQ_RETURN_IF_ERROR(Append(journal_.get(), lines));
  if (!sent.empty() && (status_.phase == RedrivePhase::kFinalCheck || status_.phase == RedrivePhase::kDone)) {
    // A resumed run sent more than the one it resumes: the last step goes on
    // and its final window starts again at Finish.
    step_ = steps_.last();
    wait_start_.reset();
    return EnterPhase(steps_.SendingPhase(step_), now);
  }
  Report();
  return Status::Ok();
}

Status RedriveGuard::OnFailedAtOnce(const std::vector<ReplayedMessage>& refused) {
  DLQ_RETURN_IF_ERROR(OnSent(refused));
  std::vector<RefailedMessage> found;
  found.reserve(refused.size());
  const SystemTime now = clock_.Now();
  for (const ReplayedMessage& m : refused) found.push_back({m.message_id, m.new_message_id, m.destination, "", now});
  return Refailed(found);
}

bool RedriveGuard::Synchronous() const {
  return options_.synchronous_canary && step_ == 0 && status_.phase == RedrivePhase::kCanary;
}

Status RedriveGuard::Refailed(const std::vector<RefailedMessage>& found) {
  std::string lines;
  for (const RefailedMessage& m : found) {
    if (!watch_.MarkRefailed(m.new_message_id)) continue;
    status_.refailures.push_back(m);
    lines += JournalRefailedLine(m);
  }
  if (lines.empty()) return Status::Ok();
  status_.refailed = status_.refailures.size();
  DLQ_RETURN_IF_ERROR(Append(journal_.get(), lines));
  Report();
  return Status::Ok();
}

Status RedriveGuard::Finish(Replayer& replayer) {
  if (status_.phase == RedrivePhase::kStopped) return Aborted(status_.reason);
  DLQ_RETURN_IF_ERROR(replayer.Flush());
  DLQ_RETURN_IF_ERROR(CheckStop(options_.stop));
  DLQ_RETURN_IF_ERROR(CheckBound());
  if (status_.phase == RedrivePhase::kDone) return Status::Ok();
  if (options_.BackpressureOnly() || (status_.sent == 0 && status_.phase != RedrivePhase::kFinalCheck)) {
    return EnterPhase(RedrivePhase::kDone, clock_.Now());
  }
  // A wait that was running (a resumed run) becomes the final one, from its start.
  const SystemTime start = wait_start_.value_or(clock_.Now());
  if (status_.phase != RedrivePhase::kFinalCheck) DLQ_RETURN_IF_ERROR(EnterPhase(RedrivePhase::kFinalCheck, start));
  DLQ_RETURN_IF_ERROR(Wait(start, options_.window, "final window"));
  wait_start_.reset();
  return EnterPhase(RedrivePhase::kDone, clock_.Now());
}

Status RedriveGuard::WaitAfterStep(SystemTime start) {
  const bool canary = step_ == 0;
  if (status_.phase != RedrivePhase::kWaiting) DLQ_RETURN_IF_ERROR(EnterPhase(RedrivePhase::kWaiting, start));
  wait_start_ = start;
  const std::string what = canary ? "canary window" : fmt::format("check after {}", steps_.Name(status_.phase, step_));
  DLQ_RETURN_IF_ERROR(Wait(start, canary ? options_.window : options_.check, what));
  wait_start_.reset();
  ++step_;
  return EnterPhase(RedrivePhase::kRamp, clock_.Now());
}

Status RedriveGuard::Pulse(bool bound) {
  if (on_wait_) DLQ_RETURN_IF_ERROR(on_wait_());
  return bound ? CheckBound() : Status::Ok();
}

Status RedriveGuard::LookWhenDue(SteadyTime now, SteadyTime& next_find, milliseconds every, bool bound) {
  if (now < next_find) return Status::Ok();
  DLQ_RETURN_IF_ERROR(FindRefailures());
  next_find = now + every;
  return bound ? CheckBound() : Status::Ok();
}

Status RedriveGuard::Wait(SystemTime start, milliseconds length, std::string_view what) {
  // Measured on the steady clock from here on, so a wall-clock step does not
  // stretch or cut the wait; the recorded start carries it across a resume.
  const SteadyTime until = clock_.SteadyNow() + (start + length - clock_.Now());
  const milliseconds find_every = steps_.FindEvery(length);
  SteadyTime next_find = clock_.SteadyNow() + find_every;
  for (;;) {
    DLQ_RETURN_IF_ERROR(CheckStop(options_.stop));
    DLQ_RETURN_IF_ERROR(Pulse(/*bound=*/true));
    const SteadyTime now = clock_.SteadyNow();
    if (now >= until) break;
    DLQ_RETURN_IF_ERROR(LookWhenDue(now, next_find, find_every, /*bound=*/true));
    DLQ_RETURN_IF_ERROR(SampleBacklog());
    status_.reason = fmt::format("{} {} s left", what, CeilSeconds(until - now));
    Report();
    clock_.SleepFor(std::min<Duration>(options_.poll, until - now));
  }
  DLQ_RETURN_IF_ERROR(FindRefailures());
  return CheckBound();
}

Status RedriveGuard::FindRefailures() {
  if (refailures_ == nullptr || watch_.watched().empty()) return Status::Ok();
  auto found = refailures_->Find(watch_.watched());
  status_.dlq_receives = refailures_->receives();
  if (!found.ok()) {
    if (!found.status().retryable()) return found.status().WithContext("look for re-failures");
    Log().Log(LogLevel::kWarn, "replay.refailure_look_failed", {{"error", found.status().ToString()}});
    return Status::Ok();
  }
  return Refailed(*found);
}

Status RedriveGuard::MaybePause(Replayer& replayer) {
  // Between samples the count is projected: the last sample plus what the
  // engine held then plus every item taken since. A sample is taken every
  // `poll`, and at once when one more item would take the projection past
  // max_backlog, so the guard's own sends never push the destination past
  // its bound (others' sends and the count's lag aside).
  if (backpressure_.SampleDue()) DLQ_RETURN_IF_ERROR(SampleBacklog());
  if (!backpressure_.Over(/*resuming=*/false) && !backpressure_.WouldPassBound()) {
    backpressure_.Took(/*after_pause=*/false);
    return Status::Ok();
  }
  // Send what the engine holds (an open batch would otherwise wait for items
  // the pause withholds), then wait for the consumer.
  DLQ_RETURN_IF_ERROR(replayer.Flush());
  unconfirmed_ = 0;
  const RedrivePhase was = status_.phase;
  const SteadyTime paused_at = clock_.SteadyNow();
  const milliseconds paused_before = status_.paused_for;
  DLQ_RETURN_IF_ERROR(EnterPhase(RedrivePhase::kPaused, clock_.Now(), backpressure_.Reason()));
  SteadyTime next_find = paused_at + steps_.FindEvery(options_.window);
  do {
    DLQ_RETURN_IF_ERROR(CheckStop(options_.stop));
    DLQ_RETURN_IF_ERROR(Pulse(/*bound=*/true));
    DLQ_RETURN_IF_ERROR(LookWhenDue(clock_.SteadyNow(), next_find, steps_.FindEvery(options_.window), /*bound=*/true));
    clock_.SleepFor(options_.poll);
    status_.paused_for = paused_before + std::chrono::duration_cast<milliseconds>(clock_.SteadyNow() - paused_at);
    status_.reason = backpressure_.Reason();
    DLQ_RETURN_IF_ERROR(SampleBacklog());
  } while (backpressure_.Over(/*resuming=*/true));
  backpressure_.Took(/*after_pause=*/true);  // the item about to be taken
  return EnterPhase(was, clock_.Now());
}

Status RedriveGuard::SampleBacklog() {
  DLQ_ASSIGN_OR_RETURN(const bool sampled, backpressure_.Sample(backlog_, unconfirmed_, watch_.send_times()));
  if (!sampled) return Status::Ok();
  status_.backlog = backpressure_.backlog();
  status_.backlog_age = backpressure_.age();
  Report();
  return Status::Ok();
}

Status RedriveGuard::CheckBound() {
  if (status_.phase == RedrivePhase::kStopped) return Aborted(status_.reason);
  if (options_.BackpressureOnly()) return Status::Ok();  // no canary: re-failures are reported, never a stop
  const uint64_t bound = watch_.Bound(step_, status_.sent);
  if (status_.refailed <= bound) return Status::Ok();
  const std::string breach = watch_.BreachReason(status_, step_, bound, steps_);
  DLQ_RETURN_IF_ERROR(EnterPhase(RedrivePhase::kStopped, clock_.Now(), breach));
  DLQ_RETURN_IF_ERROR(Settle(bound));
  status_.reason = watch_.BreachReason(status_, step_, bound, steps_);
  Report();
  return Aborted(status_.reason);
}

Status RedriveGuard::Settle(uint64_t bound) {
  const std::vector<SystemTime>& send_times = watch_.send_times();
  if (send_times.empty()) return Status::Ok();
  const SteadyTime until = clock_.SteadyNow() + (send_times.back() + options_.window - clock_.Now());
  const milliseconds find_every = steps_.FindEvery(options_.window);
  SteadyTime next_find = clock_.SteadyNow();  // look once at once
  while (status_.refailed < status_.sent && CheckStop(options_.stop).ok()) {
    DLQ_RETURN_IF_ERROR(Pulse(/*bound=*/false));
    const SteadyTime now = clock_.SteadyNow();
    DLQ_RETURN_IF_ERROR(LookWhenDue(now, next_find, find_every, /*bound=*/false));
    if (now >= until) break;
    status_.reason = fmt::format("{}; sending nothing more, looking for the rest of the re-failures: {} s left",
                                 watch_.BreachReason(status_, step_, bound, steps_), CeilSeconds(until - now));
    Report();
    clock_.SleepFor(std::min<Duration>(options_.poll, until - now));
  }
  return Status::Ok();
}

Status RedriveGuard::EnterPhase(RedrivePhase phase, SystemTime at, std::string reason) {
  status_.phase = phase;
  status_.step = static_cast<int>(step_);
  status_.reason = std::move(reason);
  DLQ_RETURN_IF_ERROR(Append(journal_.get(), JournalPhaseLine(phase, status_.step, at)));
  Report();
  return Status::Ok();
}

void RedriveGuard::Report() {
  if (on_status_) on_status_(status_);
}

}  // namespace dlq
