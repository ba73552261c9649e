// Scheduler: runs archive jobs across many queues, earliest deadline first,
// with a global and a per-queue concurrency cap, and adaptive concurrency
// (AIMD) when AWS throttles. A flooded queue never starves a small queue that
// is about to expire: jobs are bounded slices (the daemon gives each run a
// message budget and resubmits), and a free slot always goes to the pending
// job with the earliest deadline.
//
// Thread-safety: every public method may be called from any thread. Jobs run
// on the scheduler's worker threads; a job's `run` must return once stop is
// requested on its token (by Stop(); a std::stop_callback on the token runs on
// the thread calling Stop(), without the scheduler's lock held). A job that
// returns more=true is NOT resubmitted by the scheduler: the caller resubmits
// (e.g. from `done`) with a fresh deadline.
// `done` runs before the job stops counting as running, so a resubmission
// from `done` is never missed by WaitIdle(). A job that throws yields an
// Internal status; the worker survives. Jobs replaced or dropped by Stop()
// never run and their `done` is not called. Submit() after Stop() drops the job;
// Start() after Stop() does nothing. Never call Stop() or WaitIdle() from a job.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"

namespace dlq {

struct SchedulerOptions {
  int global_concurrency = 8;     // jobs running at once, all queues
  int per_queue_concurrency = 1;  // jobs running at once for one queue key
  int min_concurrency = 1;        // adaptive concurrency never goes below this
  // After a throttled job, the effective global limit is halved (down to
  // min_concurrency); each successful job adds one back (up to the cap).
  bool adaptive = true;
  Status Validate() const;
};

struct JobOutcome {
  Status status;
  bool throttled = false;  // AWS throttled this job (drives adaptive concurrency)
  bool more = false;       // the job stopped at its budget and work remains
};

struct ArchiveJob {
  std::string queue_key;  // e.g. region + "/" + queue URL
  SystemTime deadline;    // the nearest message expiry in this queue (earliest runs first)
  std::function<JobOutcome(std::stop_token stop)> run;
  std::function<void(const JobOutcome&)> done;  // optional; called on the worker after run
};

struct SchedulerStats {
  size_t pending = 0;
  size_t running = 0;
  int effective_concurrency = 0;
  uint64_t completed = 0;
  uint64_t throttled = 0;
};

class Scheduler {
 public:
  explicit Scheduler(SchedulerOptions options, Clock& clock);
  ~Scheduler();  // Stop()s
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  void Start() DLQ_EXCLUDES(lifecycle_mu_, mu_);
  // Signals running jobs to stop, waits for them, drops pending ones.
  void Stop() DLQ_EXCLUDES(lifecycle_mu_, mu_);
  // Queues a job. A pending (not yet running) job for the same queue_key is
  // replaced, keeping the earlier deadline; a running one is not affected.
  void Submit(ArchiveJob job) DLQ_EXCLUDES(mu_);
  // Blocks until nothing is pending or running (for tests and shutdown).
  void WaitIdle() DLQ_EXCLUDES(mu_);
  SchedulerStats Stats() const DLQ_EXCLUDES(mu_);

 private:
  struct PendingJob {
    ArchiveJob job;
    uint64_t seq = 0;  // submit order, breaks deadline ties
  };
  using OrderKey = std::pair<SystemTime, uint64_t>;  // (deadline, seq)

  void WorkerLoop() DLQ_EXCLUDES(mu_);
  // The earliest-deadline pending job whose queue is under its cap, removed
  // from the pending set and counted as running; nullopt when none may start.
  std::optional<ArchiveJob> TakeNextLocked() DLQ_REQUIRES(mu_);
  void FinishLocked(const std::string& queue_key, const JobOutcome& outcome) DLQ_REQUIRES(mu_);
  JobOutcome RunGuarded(ArchiveJob& job);
  void LogIfLate(const ArchiveJob& job) const;  // a job starting after its deadline is worth a warning

  const SchedulerOptions options_;
  Clock& clock_;

  Mutex lifecycle_mu_ DLQ_ACQUIRED_BEFORE(mu_);  // serialises Start/Stop
  std::vector<std::thread> workers_ DLQ_GUARDED_BY(lifecycle_mu_);
  std::stop_source stop_source_;  // its token is handed to running jobs

  mutable Mutex mu_;
  CondVar work_cv_;  // pending job added, slot freed, or stopping
  CondVar idle_cv_;  // nothing pending or running
  std::unordered_map<std::string, PendingJob> pending_ DLQ_GUARDED_BY(mu_);  // one per queue key
  std::map<OrderKey, std::string> order_ DLQ_GUARDED_BY(mu_);                // queue keys by (deadline, seq)
  std::unordered_map<std::string, int> running_per_key_ DLQ_GUARDED_BY(mu_);
  size_t running_ DLQ_GUARDED_BY(mu_) = 0;
  int effective_limit_ DLQ_GUARDED_BY(mu_) = 0;
  uint64_t next_seq_ DLQ_GUARDED_BY(mu_) = 0;
  uint64_t completed_ DLQ_GUARDED_BY(mu_) = 0;
  uint64_t throttled_ DLQ_GUARDED_BY(mu_) = 0;
  bool stopped_ DLQ_GUARDED_BY(mu_) = false;
};

}  // namespace dlq
