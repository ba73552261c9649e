// `dlq-archive ddl --from s3://B/P`: prints the Athena DDL for the archive
// (src/query/athena_ddl.h). Touches nothing: no AWS call is made.
#pragma once

#include <string>

#include "query/athena_ddl.h"

namespace dlq {

struct DdlCommandOptions {
  AthenaDdlOptions ddl;
  std::string layout = "default";  // default | hive
  std::string queues;              // comma-separated, for an enum projection
};

// Writes the CREATE TABLE and CREATE VIEW statements to `out`, or the reason
// to `err`. Returns 0, or 2 for bad input (a file:// URL, a bad name).
int RunDdl(const DdlCommandOptions& options, std::string& out, std::string& err);
int RunDdlCommand(const DdlCommandOptions& options);

struct Command;
// The `ddl` entry of the command line (app/command.h).
Command DdlCommand();

}  // namespace dlq
