#include "replay/redrive_guard.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/count_noun.h"
#include "common/log.h"
#include "replay/redrive_journal.h"

namespace dlq {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr uint64_t kUnbounded = std::numeric_limits<uint64_t>::max();

// Whole seconds, rounded up: "95 s left" never says 0 while time is left.
int64_t CeilSeconds(Duration d) {
  return std::chrono::ceil<seconds>(std::max(d, Duration::zero())).count();
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
    : options_(std::move(options)), clock_(clock), backlog_(backlog), refailures_(refailures) {
  status_.total = total;
  if (options_.BackpressureOnly()) {
    targets_.push_back(kUnbounded);  // one step, no waits: only the backlog bound holds it back
    status_.sent_per_step.assign(1, 0);
    return;
  }
  targets_.push_back(options_.canary);
  for (size_t i = 0; i < options_.ramp.size(); ++i) {
    if (i + 1 == options_.ramp.size()) {
      targets_.push_back(kUnbounded);  // the rest, however many there turn out to be
      break;
    }
    // The small epsilon keeps 0.05 x 1000 at 50, not 51.
    const auto t = static_cast<uint64_t>(std::ceil(options_.ramp[i] * static_cast<double>(total) - 1e-9));
    if (t > targets_.back()) targets_.push_back(t);  // steps the canary already covered are skipped
  }
  status_.steps = static_cast<int>(targets_.size()) - 1;
  status_.sent_per_step.assign(targets_.size(), 0);
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
      Resume(*loaded);
    }
    DLQ_ASSIGN_OR_RETURN(journal_, RedriveJournalWriter::Open(journal_path, mode, valid_bytes));
  }
  if (status_.phase == RedrivePhase::kStopped) {
    return Aborted(fmt::format("{} (an earlier run stopped; delete {} to redrive the rest with a new canary)",
                               status_.reason, journal_path));
  }
  if (!resumed) return EnterPhase(SendingPhase(), clock_.Now());
  Report();
  return Status::Ok();
}

void RedriveGuard::Resume(const RedriveJournal& journal) {
  for (const JournalSent& s : journal.sent) {
    // The journal keeps the send order; the step of each send follows from the step targets.
    size_t step = 0;
    while (step + 1 < targets_.size() && send_times_.size() >= targets_[step]) ++step;
    Watch(s.message, s.at, step);
  }
  status_.sent = journal.sent.size();
  for (const RefailedMessage& r : journal.refailed) {
    if (refailed_ids_.insert(r.new_message_id).second) status_.refailures.push_back(r);
  }
  status_.refailed = status_.refailures.size();
  if (journal.phases.empty()) return;
  for (size_t i = 0; i + 1 < journal.phases.size(); ++i) {
    if (journal.phases[i].phase == RedrivePhase::kPaused) {
      status_.paused_for += std::chrono::duration_cast<milliseconds>(journal.phases[i + 1].at - journal.phases[i].at);
    }
  }
  const JournalPhase& last = journal.phases.back();
  step_ = std::min<size_t>(static_cast<size_t>(last.step), targets_.size() - 1);
  status_.step = static_cast<int>(step_);
  switch (last.phase) {
    case RedrivePhase::kCanary:
    case RedrivePhase::kRamp:
    case RedrivePhase::kSending:
    case RedrivePhase::kPaused:  // the backlog is sampled again before the next item
      status_.phase = SendingPhase();
      break;
    case RedrivePhase::kWaiting:
    case RedrivePhase::kFinalCheck:
      status_.phase = last.phase;
      wait_start_ = last.at;
      break;
    case RedrivePhase::kDone: status_.phase = RedrivePhase::kDone; break;
    case RedrivePhase::kStopped:
      status_.phase = RedrivePhase::kStopped;
      status_.reason = fmt::format("{} of {} failed again in {}", status_.refailed,
                                   CountNoun(status_.sent, "message sent", "messages sent"), StepName());
      break;
  }
}

bool RedriveGuard::Sending() const {
  return status_.phase == RedrivePhase::kCanary || status_.phase == RedrivePhase::kRamp ||
         status_.phase == RedrivePhase::kSending;
}

RedrivePhase RedriveGuard::SendingPhase() const {
  if (options_.BackpressureOnly()) return RedrivePhase::kSending;
  return step_ == 0 ? RedrivePhase::kCanary : RedrivePhase::kRamp;
}

void RedriveGuard::Watch(const ReplayedMessage& m, SystemTime at, size_t step) {
  watched_[m.new_message_id] = m;
  step_of_[m.new_message_id] = step;
  send_times_.push_back(at);
  ++status_.sent_per_step[std::min(step, status_.sent_per_step.size() - 1)];
}

Status RedriveGuard::BeforeAdd(Replayer& replayer) {
  DLQ_RETURN_IF_ERROR(CheckStop());
  DLQ_RETURN_IF_ERROR(CheckBound());
  if (status_.phase == RedrivePhase::kWaiting) DLQ_RETURN_IF_ERROR(WaitAfterStep(*wait_start_));
  // In a resumed final check or after done, items still come (the ones an
  // earlier run sent, which the Replayer skips): taken without a phase
  // change; one actually sent reopens the last step (OnSent).
  while (Sending() && status_.sent + unconfirmed_ >= Target()) {
    DLQ_RETURN_IF_ERROR(replayer.Flush());
    unconfirmed_ = 0;
    if (status_.sent < Target()) break;  // some were skipped or failed: the step takes more
    DLQ_RETURN_IF_ERROR(WaitAfterStep(clock_.Now()));
  }
  if (Sending()) DLQ_RETURN_IF_ERROR(MaybePause(replayer));
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
  DLQ_RETURN_IF_ERROR(Journal(lines));
  if (!sent.empty() && (status_.phase == RedrivePhase::kFinalCheck || status_.phase == RedrivePhase::kDone)) {
    // A resumed run sent more than the one it resumes: the last step goes on
    // and its final window starts again at Finish.
    step_ = targets_.size() - 1;
    wait_start_.reset();
    return EnterPhase(SendingPhase(), now);
  }
  Report();
  return Status::Ok();
}

Status RedriveGuard::Refailed(const std::vector<RefailedMessage>& found) {
  std::string lines;
  for (const RefailedMessage& m : found) {
    if (!refailed_ids_.insert(m.new_message_id).second) continue;
    status_.refailures.push_back(m);
    lines += JournalRefailedLine(m);
  }
  if (lines.empty()) return Status::Ok();
  status_.refailed = status_.refailures.size();
  DLQ_RETURN_IF_ERROR(Journal(lines));
  Report();
  return Status::Ok();
}

Status RedriveGuard::Finish(Replayer& replayer) {
  if (status_.phase == RedrivePhase::kStopped) return Aborted(status_.reason);
  DLQ_RETURN_IF_ERROR(replayer.Flush());
  DLQ_RETURN_IF_ERROR(CheckStop());
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
  const std::string what = canary ? "canary window" : fmt::format("check after {}", StepName());
  DLQ_RETURN_IF_ERROR(Wait(start, canary ? options_.window : options_.check, what));
  wait_start_.reset();
  ++step_;
  return EnterPhase(RedrivePhase::kRamp, clock_.Now());
}

milliseconds RedriveGuard::FindEvery(milliseconds wait) const {
  return std::max(options_.poll, wait / 10);
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
  const milliseconds find_every = FindEvery(length);
  SteadyTime next_find = clock_.SteadyNow() + find_every;
  for (;;) {
    DLQ_RETURN_IF_ERROR(CheckStop());
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
  if (refailures_ == nullptr || watched_.empty()) return Status::Ok();
  auto found = refailures_->Find(watched_);
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
  if (!last_sample_ || clock_.SteadyNow() - *last_sample_ >= options_.poll || WouldPassBound()) {
    DLQ_RETURN_IF_ERROR(SampleBacklog());
  }
  if (!OverBacklog(/*resuming=*/false) && !WouldPassBound()) {
    ++taken_since_sample_;
    return Status::Ok();
  }
  // Send what the engine holds (an open batch would otherwise wait for items
  // the pause withholds), then wait for the consumer.
  DLQ_RETURN_IF_ERROR(replayer.Flush());
  unconfirmed_ = 0;
  const RedrivePhase was = status_.phase;
  const SteadyTime paused_at = clock_.SteadyNow();
  const milliseconds paused_before = status_.paused_for;
  DLQ_RETURN_IF_ERROR(EnterPhase(RedrivePhase::kPaused, clock_.Now(), BacklogReason()));
  SteadyTime next_find = paused_at + FindEvery(options_.window);
  do {
    DLQ_RETURN_IF_ERROR(CheckStop());
    DLQ_RETURN_IF_ERROR(Pulse(/*bound=*/true));
    DLQ_RETURN_IF_ERROR(LookWhenDue(clock_.SteadyNow(), next_find, FindEvery(options_.window), /*bound=*/true));
    clock_.SleepFor(options_.poll);
    status_.paused_for = paused_before + std::chrono::duration_cast<milliseconds>(clock_.SteadyNow() - paused_at);
    status_.reason = BacklogReason();
    DLQ_RETURN_IF_ERROR(SampleBacklog());
  } while (OverBacklog(/*resuming=*/true));
  taken_since_sample_ = 1;  // the item about to be taken
  return EnterPhase(was, clock_.Now());
}

bool RedriveGuard::WouldPassBound() const {
  if (options_.max_backlog <= 0 || status_.backlog < 0) return false;
  const uint64_t projected = static_cast<uint64_t>(status_.backlog) + pending_at_sample_ + taken_since_sample_;
  return projected + 1 > static_cast<uint64_t>(options_.max_backlog);
}

Status RedriveGuard::SampleBacklog() {
  last_sample_ = clock_.SteadyNow();
  taken_since_sample_ = 0;
  pending_at_sample_ = unconfirmed_;
  auto sample = backlog_.Sample();
  if (!sample.ok()) {
    if (!sample.status().retryable()) return sample.status().WithContext("sample the destination's backlog");
    Log().Log(LogLevel::kWarn, "replay.backlog_sample_failed", {{"error", sample.status().ToString()}});
    return Status::Ok();
  }
  status_.backlog = sample->visible;
  status_.backlog_age = sample->oldest_age ? sample->oldest_age : EstimateAge(sample->visible);
  Report();
  return Status::Ok();
}

std::optional<seconds> RedriveGuard::EstimateAge(int64_t visible) const {
  if (visible < 0) return std::nullopt;
  if (visible == 0) return seconds(0);
  if (send_times_.empty()) return std::nullopt;  // only others' messages: no estimate
  const auto n = static_cast<uint64_t>(visible);
  const size_t oldest = n >= send_times_.size() ? 0 : send_times_.size() - n;
  return std::chrono::floor<seconds>(std::max(clock_.Now() - send_times_[oldest], SystemTime::duration::zero()));
}

bool RedriveGuard::OverBacklog(bool resuming) const {
  if (options_.max_backlog > 0 && status_.backlog >= 0) {
    const int64_t bound = resuming ? options_.max_backlog / 2 : options_.max_backlog;
    if (status_.backlog > bound) return true;
  }
  if (options_.max_backlog_age > seconds::zero() && status_.backlog_age) {
    if (resuming ? *status_.backlog_age >= options_.max_backlog_age : *status_.backlog_age > options_.max_backlog_age) {
      return true;
    }
  }
  return false;
}

std::string RedriveGuard::BacklogReason() const {
  std::vector<std::string> parts;
  if (options_.max_backlog > 0 && status_.backlog > options_.max_backlog / 2) {
    parts.push_back(fmt::format("destination backlog {} over the bound {}; resumes at {}", status_.backlog,
                                options_.max_backlog, options_.max_backlog / 2));
  }
  if (options_.max_backlog_age > seconds::zero() && status_.backlog_age &&
      *status_.backlog_age >= options_.max_backlog_age) {
    parts.push_back(fmt::format("oldest destination message {} s old, over the bound {} s; resumes under {} s",
                                status_.backlog_age->count(), options_.max_backlog_age.count(),
                                options_.max_backlog_age.count()));
  }
  if (parts.empty()) return "paused: destination backlog over its bound";
  std::string out = "paused: " + parts.front();
  for (size_t i = 1; i < parts.size(); ++i) out += "; " + parts[i];
  return out;
}

uint64_t RedriveGuard::Bound() const {
  if (step_ == 0) return options_.canary_max_refailures;
  if (options_.max_refailures) return *options_.max_refailures;
  return static_cast<uint64_t>(std::floor(options_.max_refailures_fraction * static_cast<double>(status_.sent)));
}

std::string RedriveGuard::StepName() const {
  if (status_.phase == RedrivePhase::kFinalCheck) return "the final window after " + StepName(step_);
  return StepName(step_);
}

std::string RedriveGuard::StepName(size_t step) const {
  if (step == 0) return "the canary";
  return fmt::format("ramp step {} of {}", step, status_.steps);
}

Status RedriveGuard::CheckBound() {
  if (status_.phase == RedrivePhase::kStopped) return Aborted(status_.reason);
  if (options_.BackpressureOnly()) return Status::Ok();  // no canary: re-failures are reported, never a stop
  const uint64_t bound = Bound();
  if (status_.refailed <= bound) return Status::Ok();
  const std::string breach = BreachReason(bound);
  DLQ_RETURN_IF_ERROR(EnterPhase(RedrivePhase::kStopped, clock_.Now(), breach));
  DLQ_RETURN_IF_ERROR(Settle(bound));
  status_.reason = BreachReason(bound);
  Report();
  return Aborted(status_.reason);
}

std::string RedriveGuard::BreachReason(uint64_t bound) const {
  std::string out = fmt::format("{} of {} failed again in {} (bound {})", status_.refailed,
                                CountNoun(status_.sent, "message sent", "messages sent"), StepName(), bound);
  // Re-failures of messages sent in an earlier step than the one judged (a
  // --check shorter than the processing window lets them arrive late) are
  // named with the step that sent them.
  std::map<size_t, uint64_t> earlier;
  for (const RefailedMessage& r : status_.refailures) {
    auto it = step_of_.find(r.new_message_id);
    if (it != step_of_.end() && it->second < step_) ++earlier[it->second];
  }
  for (const auto& [step, n] : earlier) {
    out += fmt::format("; {} of them sent in {}", n, StepName(step));
  }
  return out;
}

Status RedriveGuard::Settle(uint64_t bound) {
  if (send_times_.empty()) return Status::Ok();
  const SteadyTime until = clock_.SteadyNow() + (send_times_.back() + options_.window - clock_.Now());
  const milliseconds find_every = FindEvery(options_.window);
  SteadyTime next_find = clock_.SteadyNow();  // look once at once
  while (status_.refailed < status_.sent && CheckStop().ok()) {
    DLQ_RETURN_IF_ERROR(Pulse(/*bound=*/false));
    const SteadyTime now = clock_.SteadyNow();
    DLQ_RETURN_IF_ERROR(LookWhenDue(now, next_find, find_every, /*bound=*/false));
    if (now >= until) break;
    status_.reason = fmt::format("{}; sending nothing more, looking for the rest of the re-failures: {} s left",
                                 BreachReason(bound), CeilSeconds(until - now));
    Report();
    clock_.SleepFor(std::min<Duration>(options_.poll, until - now));
  }
  return Status::Ok();
}

Status RedriveGuard::CheckStop() const {
  if (options_.stop != nullptr && options_.stop->load()) return Cancelled("guarded redrive stopped by a signal");
  return Status::Ok();
}

Status RedriveGuard::EnterPhase(RedrivePhase phase, SystemTime at, std::string reason) {
  status_.phase = phase;
  status_.step = static_cast<int>(step_);
  status_.reason = std::move(reason);
  DLQ_RETURN_IF_ERROR(Journal(JournalPhaseLine(phase, status_.step, at)));
  Report();
  return Status::Ok();
}

Status RedriveGuard::Journal(const std::string& lines) {
  if (journal_ == nullptr || lines.empty()) return Status::Ok();
  return journal_->Append(lines);
}

void RedriveGuard::Report() {
  if (on_status_) on_status_(status_);
}

}  // namespace dlq
