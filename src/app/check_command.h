// `dlq-archive check --config FILE`: validates the config, discovers every
// group's queues and prints the resolved plan (queues, retention, redrive
// sources, alarms with thresholds) with a safety analysis per queue.
// Exit code: 0 all safe; 1 some queue UNSAFE or a group failed; 2 bad config.
//
// `check --fix-retention` prints, per standard DLQ whose retention is too
// short for its sources (safety.h AdviseRetention), the queue, its current
// and its proposed retention; with --yes it sets MessageRetentionPeriod on
// those DLQs (never on a queue that is some DLQ's redrive source) and checks
// again. Exit codes: kFix* below.
#pragma once

#include <atomic>
#include <string>

#include "app/run_command.h"

namespace dlq {

// The drain rate `check` assumes when --drain-rate is not given.
inline constexpr double kAssumedDrainRate = 400;

struct CheckCommandOptions {
  std::string config_path;
  std::string output = "text";  // text | json
  // Messages per second an archive run sustains; 0 = kAssumedDrainRate.
  double drain_rate = 0;
  bool fix_retention = false;
  bool yes = false;  // with fix_retention: apply the plan
  // Polled before each change of --fix-retention --yes; not owned, may be null.
  const std::atomic<bool>* stop = nullptr;
  ServicesOptions services;
};

// Builds the report from an already loaded config (testable with fakes).
// Writes the text or JSON report to `out` and returns the exit code.
// Reads each DLQ's depth (GetQueueAttributes); drain_rate as in CheckCommandOptions.
int CheckConfig(const MonitorConfig& config, const GroupClientsFactory& factory, const std::string& output,
                std::string& out, double drain_rate = 0);

// Exit codes of `check --fix-retention`.
inline constexpr int kFixNothingToDo = 0;  // every DLQ's retention is long enough (after --yes: now)
inline constexpr int kFixPending = 1;      // plan printed, nothing changed (no --yes); or a DLQ no raise can fix
inline constexpr int kFixBadConfig = 2;    // the config did not load
inline constexpr int kFixPartial = 3;      // some change failed or a group could not be read; see the report
inline constexpr int kFixStopped = 130;    // a signal stopped --yes between two changes; the report names both sides
// Prints the plan to `out`; with apply, carries it out and checks again.
int FixRetention(const MonitorConfig& config, const GroupClientsFactory& factory, bool apply, std::string& out,
                 const std::atomic<bool>* stop = nullptr);

int RunCheckCommand(const CheckCommandOptions& options);

struct Command;
// The `check` entry of the command line (app/command.h).
Command CheckCommand();

}  // namespace dlq
