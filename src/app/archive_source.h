// What the archive-reading commands (ls, search, show) share: the flags that
// name the archive's key layouts and read parallelism, and how damage found
// while reading is reported. Pure helpers; the caller opens the store.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "archive/destination.h"
#include "common/status.h"
#include "query/read_failure.h"  // ReadFailure, for the reading commands
#include "query/scan.h"

namespace CLI {  // NOLINT(readability-identifier-naming): CLI11's namespace
class App;
}  // namespace CLI

namespace dlq {

struct ArchiveSourceFlags {
  std::vector<std::string> key_templates;  // --key-template (repeatable); empty: default and Hive
  int parallelism = 0;                     // --parallelism; 0: automatic
  std::string memory;                      // --memory / DLQ_SCAN_MEMORY (a byte size); empty: the default
};

// Registers the required --from URL of a command that reads the archive.
void AddFromFlag(CLI::App& cmd, std::string& from);

// Registers --key-template and --parallelism on `cmd`.
void AddArchiveSourceFlags(CLI::App& cmd, ArchiveSourceFlags& flags);

// Registers --memory (environment DLQ_SCAN_MEMORY) on a command that scans.
void AddScanMemoryFlag(CLI::App& cmd, ArchiveSourceFlags& flags);

// The layouts the flags name. kInvalidArgument naming --key-template.
Result<ArchiveLayouts> ParseLayouts(const ArchiveSourceFlags& flags);

// The scan's memory budget the flags name (ScanOptions' default when none).
// kInvalidArgument naming --memory when it is not a size of at least 4 MiB.
Result<size_t> ParseScanMemory(const ArchiveSourceFlags& flags);

// The line a reading command prints when a stop signal ended its scan:
// how far it got ("stopped by a signal after 3 of 40 objects (12.0 MiB
// read)"), or that it stopped while listing.
std::string StoppedLine(const ScanStats& stats);

// "s3://bucket/" or "file:///dir/": what a key is prefixed with in messages.
std::string KeyUriPrefix(const Destination& from);

// Prints one warning per entry a listing left out ("warning: URI: skipped:
// why"), terminal-safe.
void ReportSkipped(const std::vector<SkippedEntry>& skipped, const Destination& from, std::FILE* err);
// The same lines, as text.
std::string SkippedText(const std::vector<SkippedEntry>& skipped, const Destination& from);

// Prints every entry the listing skipped and every reported problem
// ("warning: URI line N: ..."), how many more were not shown, and a note when
// the listing could not prune, keys and messages terminal-safe
// (common/text.h). Returns 3 when anything was skipped, else 0.
int ReportDamage(const ScanStats& stats, const Destination& from, std::FILE* err);

}  // namespace dlq
