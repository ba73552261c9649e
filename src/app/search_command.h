// `dlq-archive search`: the archive's records that match a filter, as a
// table, JSON lines (the archive line format), message ids or a count.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>

#include "app/archive_source.h"
#include "archive/destination.h"
#include "common/clock.h"
#include "query/filter.h"
#include "s3/object_store.h"

namespace dlq {

struct SearchCommandOptions {
  FilterFlags filter;
  ArchiveSourceFlags source;
  std::string output;  // table | jsonl | ids | count; empty: table on a terminal, else jsonl
  uint64_t limit = 0;  // 0: no limit
  // Only messages that failed again after a replay: an original or new id of
  // a "failed-again" message in an audit record under the archive's _audit/.
  bool failed_again = false;
  // Only messages whose cause, as the archive's causes sidecar keeps it, has
  // this text in its type, message or key (case-insensitive); empty: any.
  std::string cause;
};

// Writes results to `out` and warnings to `err`. Returns 0, 1 (the archive
// or, with failed_again, its audit records, or with cause, its causes sidecar, cannot be read), 2 (a malformed filter
// or template: nothing is read), 3 (done, but unreadable objects or lines were skipped) or 130 (`stop` was set: the
// output so far is partial, and says so on `err`). `out_is_terminal` picks the default output.
int RunSearchCommand(const SearchCommandOptions& options, ObjectStore& store, const Destination& from, SystemTime now,
                     bool out_is_terminal, std::FILE* out, std::FILE* err, const std::atomic<bool>* stop = nullptr);

struct Command;
// The `search` entry of the command line (app/command.h).
Command SearchCommand();

}  // namespace dlq
