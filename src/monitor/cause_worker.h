// CauseWorker: the daemon's background cause lookups (doc/causes.md). After
// an archive run, the daemon hands over what the run wrote (a CauseJob); the
// worker, on its own thread, reads those objects back, groups their messages
// by failure group, looks up a few messages of each group that has fewer
// answers than `cause_samples` (causes/explain.h) and keeps the answers in
// the archive's `_causes/` sidecar. Archiving never waits on it: Submit only
// queues, and a full queue drops the newest job (counted, logged) rather than
// block a scheduler thread. Answers are cached per queue (the sidecar is read
// once per queue), so a group's cause is looked up once; consumers found are
// kept for `consumers_ttl`.
//
// `causes: auto` turns a group's lookups off at the first access denial (the
// permissions are not there; one log line says which and how to silence it);
// `causes: on` keeps trying and logs each denial.
//
// The worker also keeps, per queue, the failure groups of what it read (how
// many messages, the cause when known): TopGroups feeds the alarm
// notifications.
//
// Thread-safety: every public method may be called from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "archive/record.h"
#include "causes/archived_causes.h"
#include "causes/cause.h"
#include "causes/consumers.h"
#include "causes/sidecar.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "monitor/config.h"
#include "monitor/daemon_metrics.h"
#include "monitor/group_clients.h"
#include "sqs/queue_info.h"

namespace dlq {

// What one archive run hands over.
struct CauseJob {
  std::string group;  // the config group that watches the queue
  QueueInfo dlq;
  std::string archive_prefix;     // the group destination's prefix (archive/destination.h ArchivePrefix)
  std::vector<std::string> keys;  // the archive objects the run wrote
  // When the daemon first saw each message (its arrival ledger): the end of
  // its lookup window. Messages not listed end the window at their archiving.
  std::map<std::string, int64_t> arrivals_ms;
  std::vector<NamedLogGroup> named_log_groups;  // consumer_logs: for the queue
  size_t samples = 3;                           // per failure group, >= 1
  bool auto_mode = true;                        // causes: auto (else on)
  GroupClients clients;                         // store, sqs, logs and lambda set
};

// The log groups `consumer_logs:` names for `queue`, as the lookups take them
// (named by "consumer_logs").
std::vector<NamedLogGroup> NamedConsumerLogs(const GroupSettings& group, const std::string& queue);

struct CauseWorkerOptions {
  size_t max_pending = 64;             // jobs queued; more are dropped
  int max_filter_calls_per_job = 200;  // FilterLogEvents calls per job
  std::chrono::seconds consumers_ttl{3600};
  size_t max_messages_per_job = 100000;  // records read back per job; the rest are not sampled
  size_t max_groups_kept = 200;          // per queue, for TopGroups
};

// One failure group of a queue as the worker saw it.
struct CauseGroupSummary {
  std::string key;         // the failure group key (query/fingerprint.h)
  uint64_t messages = 0;   // archived messages of the group the worker read
  uint64_t answered = 0;   // of its messages, with a kept answer
  uint64_t found = 0;      // of those, with the cause below
  std::string example_id;  // one of its messages (the first read)
  // The most common cause among its answers; empty when none was found.
  std::string cause_type, cause_message;
  std::string absence;  // else the most common status ("not_mentioned"); empty when none answered
};

class CauseWorker {
 public:
  CauseWorker(Clock& clock, DaemonMetrics* metrics, CauseWorkerOptions options = {});
  ~CauseWorker();
  CauseWorker(const CauseWorker&) = delete;
  CauseWorker& operator=(const CauseWorker&) = delete;

  // Starts the worker thread (once). Without it, RunPending does the work.
  void Start();
  // Stops the thread after the job in progress; queued jobs are dropped.
  void Stop();

  // Queues `job` unless its group's lookups were turned off (auto) or the
  // queue is full (counted in dlq_archive_cause_jobs_dropped_total, logged).
  // True when queued.
  bool Submit(CauseJob job);
  // Runs the queued jobs on the calling thread (tests; a worker that was not started).
  void RunPending();
  // Started: blocks until no job is queued or running.
  void WaitIdle();

  // The largest failure groups of `queue` (most messages first), at most `n`.
  std::vector<CauseGroupSummary> TopGroups(const std::string& queue, size_t n) const;
  // True when `group`'s lookups were turned off (causes: auto, access denied).
  bool Disabled(const std::string& group) const;
  // Turns every group's lookups on again (a reload: the permissions may be there now).
  void EnableAll();
  size_t pending() const;

 private:
  // What the jobs of one queue learned (the job thread's).
  struct QueueCache {
    ArchivedCausesCache answers;  // the sidecar, read at the first job
    std::optional<ConsumerMap> consumers;
    SystemTime consumers_at;
  };
  // One failure group's tally, for TopGroups.
  struct GroupTally {
    uint64_t messages = 0, answered = 0;
    std::string example_id;
    std::map<std::string, std::pair<uint64_t, Cause>> causes;  // by cause key
    std::map<std::string, uint64_t> absences;                  // by status name
  };
  void Work();
  void Process(const CauseJob& job);
  // Counts a message read in its group's tally; false when its group is
  // not kept (the smallest past max_groups_kept): it is not sampled then.
  bool Tally(const CauseJob& job, const ArchiveRecord& r, const std::string& key);
  const ConsumerMap& Consumers(const CauseJob& job, QueueCache& cache, int& sqs_calls, int& lambda_calls);
  void Answered(const CauseJob& job, const std::vector<CauseRecord>& records);

  Clock& clock_;
  DaemonMetrics* const metrics_;
  const CauseWorkerOptions options_;

  mutable Mutex mu_;
  CondVar wake_;
  CondVar idle_;
  std::deque<CauseJob> jobs_ DLQ_GUARDED_BY(mu_);
  bool running_ DLQ_GUARDED_BY(mu_) = false;  // the thread is in a job
  bool started_ DLQ_GUARDED_BY(mu_) = false;
  bool stop_ DLQ_GUARDED_BY(mu_) = false;
  std::set<std::string> disabled_ DLQ_GUARDED_BY(mu_);
  std::map<std::string, std::map<std::string, GroupTally>> tallies_ DLQ_GUARDED_BY(mu_);  // queue -> group key
  std::thread thread_;
  Mutex process_mu_;  // one job at a time (the thread or RunPending)
  std::map<std::string, QueueCache> caches_ DLQ_GUARDED_BY(process_mu_);  // by queue name
};

}  // namespace dlq
