// `dlq-archive stack --config FILE --lambda-code s3://B/K [options]`: prints
// the CloudFormation template (src/deploy/stack.h) for the config's groups.
// Discovery runs as for `check` unless --no-discovery, which takes only the
// queues the config names (no AWS call) with assumed retention periods.
// Exit: 0 printed (warnings, e.g. unsafe queues, on stderr); 1 discovery
// failed; 2 bad config or options.
#pragma once

#include <string>
#include <vector>

#include "app/services.h"
#include "deploy/stack.h"
#include "monitor/group_clients.h"

namespace dlq {

struct StackCommandOptions {
  std::string config_path;
  std::vector<std::string> groups;  // empty: every group
  bool no_discovery = false;
  std::string assumed_retention = "4d";  // --no-discovery: each DLQ's retention
  std::string assumed_source_retention;  // --no-discovery: its sources' ("" = unknown)
  std::string output = "yaml";           // yaml | json
  StackOptions stack;
  ServicesOptions services;
};

// Generates the template from a loaded config; `factory` gives each group's
// SQS client for discovery (unused with no_discovery). Writes the template to
// `out`, warnings and errors to `err`; returns the exit code.
int RunStack(const StackCommandOptions& options, const MonitorConfig& config, const GroupClientsFactory& factory,
             std::string& out, std::string& err);

// Loads the config for `stack`. A ${VAR} in a setting neither the template
// nor discovery reads (webhook URLs and headers, dashboard tokens) need not
// be set; an unset one in a setting the stack uses (destination, queues,
// role_arn, ...) is kInvalidArgument naming the variable and the setting.
// Otherwise as LoadMonitorConfig.
Result<MonitorConfig> LoadStackConfig(const std::string& path, const Environment& env);

int RunStackCommand(const StackCommandOptions& options);

struct Command;
// The `stack` entry of the command line (app/command.h).
Command StackCommand();

}  // namespace dlq
