// `dlq-archive check --config FILE`: validates the config, discovers every
// group's queues and prints the resolved plan (queues, retention, redrive
// sources, alarms with thresholds) with a safety analysis per queue.
// Exit code: 0 all safe; 1 some queue UNSAFE or a group failed; 2 bad config.
#pragma once

#include <string>

#include "app/run_command.h"

namespace dlq {

struct CheckCommandOptions {
  std::string config_path;
  std::string output = "text";  // text | json
  ServicesOptions services;
};

// Builds the report from an already loaded config (testable with fakes).
// Writes the text or JSON report to `out` and returns the exit code.
int CheckConfig(const MonitorConfig& config, const GroupClientsFactory& factory, const std::string& output,
                std::string& out);

int RunCheckCommand(const CheckCommandOptions& options);

struct Command;
// The `check` entry of the command line (app/command.h).
Command CheckCommand();

}  // namespace dlq
