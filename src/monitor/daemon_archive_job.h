// DaemonArchiveRun: one archive run of one watched queue, as the Daemon
// submits it to the Scheduler. A QueueDrainer slice over the group's clients
// that adds its growing counts to the metrics every progress_interval (so a
// long drain shows as it goes), counts the rest when it returns, writes the
// audit record of a run someone asked for (ArchiveNow), and reports back to
// the daemon through DaemonArchiveRunReports.
//
// Thread-safety: Run() is called once, on a scheduler thread; the reports are
// called on that thread and on the run's progress thread, never at once. The
// clock, metrics and the clients in the spec must outlive the run.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "archiver/drainer.h"
#include "common/clock.h"
#include "monitor/arrival_ledger.h"
#include "monitor/daemon_metrics.h"
#include "monitor/group_clients.h"
#include "monitor/scheduler.h"

namespace dlq {

// What to run.
struct DaemonArchiveRunSpec {
  std::string group;
  std::string destination;  // the group's destination URI (for the audit record)
  QueueInfo queue;
  DrainOptions drain;  // selection, keep (a copy), dry_run (a learning pass: receives, keeps), budget
  ArchiveContext context;
  GroupClients clients;
  std::string requested_by;  // who asked (ArchiveNow); "": nobody, no audit record
};

// How the run ended.
struct DaemonArchiveRunReport {
  DrainResult result;
  SystemTime started;
  SystemTime ended;
  bool more = false;    // stopped at its budget with messages left (never for a copy)
  bool failed = false;  // failed (a stop is not a failure)
  bool learn = false;   // a learning pass (DrainOptions::dry_run): received, kept everything
  // The run saw every queued message (drained, not stopped, ok): what it left
  // is all that arrived before `started`, and these are the nearest expiry
  // and oldest SentTimestamp among what it left.
  bool complete = false;
  std::optional<SystemTime> nearest_remaining;
  std::optional<SystemTime> oldest_sent_remaining;
  // Every message the run received (how often, whether it deleted it), for
  // the daemon's arrival ledger.
  std::vector<ReceivedMessage> received;
};

struct DaemonArchiveRunReports {
  // `archived` more messages were archived since the last call, as the run goes.
  std::function<void(uint64_t archived)> archived;
  // The run ended; called before the audit record is written and the run logged.
  std::function<void(const DaemonArchiveRunReport&)> finished;
};

class DaemonArchiveRun {
 public:
  DaemonArchiveRun(DaemonArchiveRunSpec spec, Clock& clock, DaemonMetrics& metrics,
                   std::chrono::milliseconds progress_interval, DaemonArchiveRunReports reports);

  // Runs the drain; a stop request stops it (at once when it came first).
  JobOutcome Run(const std::stop_token& stop);

 private:
  // Adds what grew since the last call to the metrics (and reports archived).
  void Publish(const DrainStats& now);
  void CountEnd(const DrainResult& r, bool failed);
  void LogEnd(const DrainResult& r, bool more) const;

  const DaemonArchiveRunSpec spec_;
  Clock& clock_;
  DaemonMetrics& metrics_;
  const std::chrono::milliseconds progress_interval_;
  const DaemonArchiveRunReports reports_;
  DrainStats published_;  // one thread publishes at a time
};

}  // namespace dlq
