// ReplayJobs: the dashboard's replays that send, each run on a thread of its
// own (a guarded redrive waits processing windows: minutes, longer than any
// HTTP request), with what it last reported, its result once it ends, and a
// stop flag. The registry keeps at most `keep` jobs: starting one more drops
// the oldest finished job (joining its thread), and is refused while every
// kept job still runs.
//
// Thread-safety: every method may be called from any thread at once. The
// destructor (and Shutdown) sets every job's stop flag first, then joins
// every thread: it returns once every job's work has returned. The Clock
// must outlive the registry; work must return soon after its stop flag is set
// (a replay finishes the batch in flight and answers 130).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"

namespace dlq {

// What a replay from the dashboard did (the `replay` command's exit code and
// its summary lines; the audit record's key is in `output`).
struct DashboardReplayResult {
  int exit_code = 0;
  std::string output;  // stdout: the summary and "audit: ..." line (a dry run: without the per-message lines)
  std::string errors;  // stderr: per-message failures, warnings
  std::map<std::string, uint64_t> destinations;  // a dry run: queue URL -> messages that would go there
  std::string summary;  // the run as one JSON document (`replay --output json`); "" when refused before sending
};

// A replayed message found in a DLQ again (replay/redrive_guard.h's
// RefailedMessage, as the dashboard shows it).
struct ReplayRefailure {
  std::string message_id;      // the original id, as archived
  std::string new_message_id;  // the id the copy got, and has in the DLQ again
  std::string destination;     // queue URL it was replayed to
  std::string dlq;             // queue URL it landed in again
  SystemTime found_at;
};

// The latest status a guarded replay reported (replay/redrive_guard.h's
// RedriveStatus, with the phase by name). `phase` stays empty for a replay
// that reports nothing (no canary).
struct ReplayProgress {
  std::string phase;   // canary, waiting, ramp, paused, final-check, done, stopped
  std::string reason;  // why it waits, pauses or stopped; "" otherwise
  int step = 0, steps = 0;
  uint64_t total = 0, sent = 0, refailed = 0, dlq_receives = 0;
  int64_t backlog = -1;  // the destination's last sampled depth; -1 unknown
  std::optional<std::chrono::seconds> backlog_age;
  std::chrono::milliseconds paused_for{0};
  std::vector<ReplayRefailure> refailures;  // in the order found
};

// What a replay job's work is given: its stop flag, and where to report.
struct ReplayJobControl {
  std::string id;                                     // the job's; "" for a dry run
  const std::atomic<bool>* stop = nullptr;            // never null in a job
  std::function<void(const ReplayProgress&)> report;  // may be empty (a dry run)
};
using ReplayJobWork = std::function<DashboardReplayResult(const ReplayJobControl& control)>;

// Who started a job, and what it replays.
struct ReplayJobSpec {
  std::string queue;
  std::string fingerprint;  // a failure group, or "" for `ids`
  size_t ids = 0;           // messages named by id
  std::string actor;        // as the audit record names the caller
  bool to_origin = false;   // back where each message came from, else to its source queue
};

// One job as of one moment.
struct ReplayJobSnapshot {
  std::string id;
  ReplayJobSpec spec;
  SystemTime started_at;
  std::optional<SystemTime> finished_at;  // set once done
  bool done = false;
  bool stop_requested = false;
  DashboardReplayResult result;  // meaningful once done
  ReplayProgress progress;
};

class ReplayJobs {
 public:
  ReplayJobs(Clock& clock, size_t keep);
  ~ReplayJobs();
  ReplayJobs(const ReplayJobs&) = delete;
  ReplayJobs& operator=(const ReplayJobs&) = delete;

  // Starts `work` on a new thread and returns the job's id (letters, digits
  // and '-'). kUnavailable when `keep` jobs are kept and none has finished,
  // or after Shutdown.
  Result<std::string> Start(ReplayJobSpec spec, ReplayJobWork work);
  // nullopt for an unknown (or dropped) id.
  std::optional<ReplayJobSnapshot> Get(const std::string& id) const;
  // Every kept job, the newest first.
  std::vector<ReplayJobSnapshot> List() const;
  // Sets the job's stop flag. kNotFound for an unknown id,
  // kFailedPrecondition when it has already finished.
  Status Stop(const std::string& id);
  // Sets every stop flag, then joins every thread. Idempotent.
  void Shutdown();

 private:
  struct Job;
  static ReplayJobSnapshot Snap(const Job& job);

  Clock& clock_;
  const size_t keep_;
  mutable Mutex mu_;
  std::vector<std::shared_ptr<Job>> jobs_ DLQ_GUARDED_BY(mu_);  // oldest first
  uint64_t next_ DLQ_GUARDED_BY(mu_) = 1;
  bool closed_ DLQ_GUARDED_BY(mu_) = false;
};

}  // namespace dlq
