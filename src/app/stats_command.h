// `dlq-archive stats --from URL [filters] --group-by G`: failure statistics
// over an archive (src/query/stats.h), read with the shared scan (filters,
// partition pruning, de-duplication by message id).
#pragma once

#include <atomic>
#include <string>

#include "app/services.h"
#include "query/filter.h"
#include "query/stats.h"
#include "s3/object_store.h"

namespace dlq {

struct StatsCommandOptions {
  std::string from;  // s3://BUCKET/PREFIX or file:///DIR, as given to `archive --to`
  FilterFlags filter;
  std::string group_by;
  std::string output;  // table | json | jsonl; empty: table on a terminal, jsonl otherwise
  size_t max_groups = kDefaultMaxGroups;
  int parallelism = 0;  // scan workers; 0: the scan's default
};

// Validates the options (flags, --group-by, the filter as of `now`) before
// anything is opened: kInvalidArgument naming the flag (exit 2).
Status ValidateStatsOptions(const StatsCommandOptions& options, SystemTime now);

// Runs stats over `store` (the archive named by options.from) and writes the
// report to `out`, warnings and errors to `err`. `stop` is polled per record.
// Exit codes: 0 done; 1 the archive could not be listed; 2 bad input; 3 done,
// but unreadable objects or lines were skipped (each reported by key and line);
// 130 stopped.
int RunStats(const StatsCommandOptions& options, ObjectStore& store, SystemTime now, bool stdout_is_terminal,
             const std::atomic<bool>& stop, std::string& out, std::string& err);

// The command: opens the store (S3 through `services`, which may be null for
// file://) and prints to stdout/stderr.
int RunStatsCommand(const StatsCommandOptions& options, AwsServices* services, const std::atomic<bool>& stop);

}  // namespace dlq
