// The vocabulary of a guarded redrive (replay/redrive_guard.h): its phases,
// options, status and the backlog probe, shared by the guard and its parts
// (replay/redrive_steps.h, replay/refailure_watch.h,
// replay/backlog_gate.h, replay/redrive_journal.h).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

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
  // The canary's messages to a Lambda origin are invoked synchronously
  // (RequestResponse), so a function error shows at once (--to-origin).
  bool synchronous_canary = false;

  bool BackpressureOnly() const {
    return canary == 0 && (max_backlog > 0 || max_backlog_age > std::chrono::seconds(0));
  }
  Status Validate() const;
};

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
}  // namespace dlq
