// `dlq-archive archive`: drains the selected DLQs into an archive destination.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "app/services.h"
#include "archiver/drain_options.h"

namespace dlq {

struct ArchiveCommandOptions {
  std::vector<std::string> queues;  // names or URLs
  std::string queue_prefix;         // selects only dead-letter queues (app/queue_selection.h)
  bool any_queue = false;           // --queue-prefix also takes queues that are no queue's DLQ
  std::string destination;          // s3://BUCKET/PREFIX or file:///DIR
  std::string key_template;         // empty: default (or Hive with hive)
  bool hive = false;
  DrainOptions drain;
  std::string output = "text";    // text | json
  std::string progress = "auto";  // auto | always | never
  FileModes file_modes;           // of what a file:// destination gets (DLQ_FILE_MODE)
};

// Runs the command; `stop` is polled so a signal can stop it gracefully.
// Prints the summary to stdout and returns the exit code (see cli.h).
int RunArchiveCommand(ArchiveCommandOptions options, AwsServices& services, std::atomic<bool>& stop);

struct Command;
// The `archive` entry of the command line (app/command.h).
Command ArchiveCommand();

}  // namespace dlq
