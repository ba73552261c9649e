// `dlq-archive stats --from URL [filters] --group-by G`: failure statistics
// over an archive (src/query/stats.h), read with the shared scan (filters,
// partition pruning, de-duplication by message id).
#pragma once

#include <atomic>
#include <cstdio>
#include <string>

#include "app/archive_source.h"
#include "app/cause_flags.h"
#include "archive/destination.h"
#include "common/clock.h"
#include "query/filter.h"
#include "query/stats.h"
#include "s3/object_store.h"

namespace dlq {

struct StatsCommandOptions {
  FilterFlags filter;
  ArchiveSourceFlags source;
  std::string group_by;
  std::string output;  // table | json | jsonl; empty: table on a terminal, jsonl otherwise
  size_t max_groups = kDefaultMaxGroups;
  CauseFlags causes;  // --causes, --logs, --cause-samples, --cause-max-calls
};

// Checks every flag (--group-by, --output, --max-groups, the filter as of
// `now`, --key-template) before anything is opened: kInvalidArgument naming
// the flag (exit 2).
Status ValidateStatsOptions(const StatsCommandOptions& options, SystemTime now);

// Runs stats over the archive `from` in `store`: the report to `out`,
// warnings (unreadable objects and lines, by key and line) and a summary to
// `err`. The causes the archive's sidecar keeps are always shown (columns
// FOUND and CAUSE, a "cause" object; none when no group has one); with
// options.causes enabled, `cause_clients` (required then) look up those of a
// sample of each group, and the calls made are printed on `err`. `stop` is polled per matching record. Exit codes: 0
// done; 1 the archive could not be listed; 2 bad input; 3 done, but unreadable objects or lines were skipped; 130
// stopped (no report).
int RunStatsCommand(const StatsCommandOptions& options, ObjectStore& store, const Destination& from, SystemTime now,
                    bool out_is_terminal, const std::atomic<bool>& stop, std::FILE* out, std::FILE* err,
                    const ExplainClients* cause_clients = nullptr);

struct Command;
// The `stats` entry of the command line (app/command.h).
Command StatsCommand();

}  // namespace dlq
