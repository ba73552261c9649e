// `dlq-archive run --config FILE`: the monitoring daemon (src/monitor/daemon.h)
// over real AWS clients. Also the per-group client factory `check` uses.
#pragma once

#include <atomic>
#include <optional>
#include <string>

#include "app/services.h"
#include "monitor/config.h"
#include "monitor/daemon_metrics.h"
#include "monitor/group_clients.h"

namespace dlq {

struct RunCommandOptions {
  std::string config_path;
  ServicesOptions services;        // global flags; a group's region/profile/endpoint_url override them
  int listen_port = -1;            // >= 0 overrides the config's listen port
  std::optional<ShardSpec> shard;  // --shard I/N: overrides the config's shard (also on reload)
  // --log-level / --log-format when given: they win over the config's log section.
  std::optional<std::string> log_level, log_format;
  FileModes file_modes;  // of what file:// destinations get (DLQ_FILE_MODE)
};

// Builds each group's AWS services and archive store. The group's
// endpoint_url applies to SQS only (AWS_ENDPOINT_URL_SQS). role_arn is not
// supported yet: such a group fails with kFailedPrecondition naming it.
// `metrics` (optional) counts every AWS call; it must outlive the clients.
// A file:// destination's files and directories get `modes`.
GroupClientsFactory MakeAwsGroupClientsFactory(const ServicesOptions& base, DaemonMetrics* metrics,
                                               const FileModes& modes = {});

// Loads and validates the config (exit 2 with every problem on failure),
// then runs until `stop`; SIGHUP reloads the config. Returns the exit code.
int RunRunCommand(const RunCommandOptions& options, std::atomic<bool>& stop);

struct Command;
// The `run` entry of the command line (app/command.h).
Command RunCommand();

}  // namespace dlq
