#include "replay/redrive_guard.h"

namespace dlq {

// Stub for the header commit; the phase machine follows.
class RedriveJournalWriter {};

std::string_view RedrivePhaseName(RedrivePhase phase) {
  switch (phase) {
    case RedrivePhase::kCanary: return "canary";
    case RedrivePhase::kWaiting: return "waiting";
    case RedrivePhase::kRamp: return "ramp";
    case RedrivePhase::kPaused: return "paused";
    case RedrivePhase::kFinalCheck: return "final-check";
    case RedrivePhase::kDone: return "done";
    case RedrivePhase::kStopped: return "stopped";
  }
  return "unknown";
}

std::optional<RedrivePhase> ParseRedrivePhase(std::string_view name) {
  for (RedrivePhase p : {RedrivePhase::kCanary, RedrivePhase::kWaiting, RedrivePhase::kRamp, RedrivePhase::kPaused,
                         RedrivePhase::kFinalCheck, RedrivePhase::kDone, RedrivePhase::kStopped}) {
    if (RedrivePhaseName(p) == name) return p;
  }
  return std::nullopt;
}

Status RedriveOptions::Validate() const {
  return Status::Ok();
}
std::chrono::milliseconds ProcessingWindow(int, std::chrono::seconds, std::chrono::seconds) {
  return {};
}
std::chrono::milliseconds DefaultCheck(std::chrono::milliseconds window) {
  return window / 4;
}
uint64_t DefaultCanary(uint64_t) {
  return 10;
}
int64_t DefaultMaxBacklog(int64_t) {
  return 100;
}

RedriveGuard::RedriveGuard(RedriveOptions options, uint64_t total, Clock& clock, BacklogProbe& backlog,
                           RefailureProbe* refailures)
    : options_(std::move(options)), clock_(clock), backlog_(backlog), refailures_(refailures) {
  status_.total = total;
}
RedriveGuard::~RedriveGuard() = default;
Status RedriveGuard::Start(const std::string&, mode_t) {
  return Status::Ok();
}
Status RedriveGuard::BeforeAdd(Replayer&) {
  return Status::Ok();
}
Status RedriveGuard::OnSent(const std::vector<ReplayedMessage>&) {
  return Status::Ok();
}
Status RedriveGuard::Refailed(const std::vector<RefailedMessage>&) {
  return Status::Ok();
}
Status RedriveGuard::Finish(Replayer&) {
  return Status::Ok();
}

}  // namespace dlq
