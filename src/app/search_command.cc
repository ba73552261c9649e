#include "app/search_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>
#include <set>

#include "app/command.h"
#include "app/flag_validators.h"
#include "causes/sidecar.h"
#include "common/count_noun.h"
#include "common/strings.h"
#include "common/text.h"
#include "common/time_util.h"
#include "query/scan.h"
#include "replay/audit.h"

namespace dlq {
namespace {

// With --failed-again: the failed-again ids of the archive's audit records
// (records that do not parse are named on `err` and left out). nullopt after
// printing the error when they cannot be read.
std::optional<FailedAgainIndex> LoadFailedAgain(ObjectStore& store, const Destination& from, std::FILE* err) {
  auto index = ReadFailedAgain(store, ArchivePrefix(from));
  if (!index.ok()) {
    fmt::print(err, "error: search: --failed-again: {}\n", TerminalSafe(ReadFailure(index.status(), from)));
    return std::nullopt;
  }
  for (const auto& [key, why] : index->unreadable) {
    fmt::print(err, "warning: search: --failed-again: audit record {} left out: {}\n", TerminalSafe(key),
               TerminalSafe(why));
  }
  return std::move(*index);
}

// With --cause: "queue\nmessage id" of every message whose kept cause has
// `text`. nullopt after printing the error when the sidecar cannot be read.
std::optional<std::set<std::string>> LoadCauseMatches(ObjectStore& store, const Destination& from,
                                                      const std::string& text, std::FILE* err) {
  auto index = ReadCauseRecords(store, ArchivePrefix(from));
  if (!index.ok()) {
    fmt::print(err, "error: search: --cause: {}\n", TerminalSafe(ReadFailure(index.status(), from)));
    return std::nullopt;
  }
  for (const std::string& why : index->unreadable) {
    fmt::print(err, "warning: search: --cause: cause record left out: {}\n", TerminalSafe(why));
  }
  const std::string needle = ToLower(text);
  std::set<std::string> out;
  for (const CauseRecord* r : index->All()) {
    if (CauseSearchText(*r).find(needle) != std::string::npos) out.insert(r->queue + "\n" + r->message_id);
  }
  return out;
}

// The scan of the search's flags; nullopt when a flag is bad (said on `err`).
std::optional<ScanOptions> SearchScan(const SearchCommandOptions& options, SystemTime now,
                                      const std::atomic<bool>* stop, std::FILE* err) {
  Result<Filter> filter = BuildFilter(options.filter, now);
  if (!filter.ok()) {
    fmt::print(err, "error: search: {}\n", TerminalSafe(filter.status().message()));
    return std::nullopt;
  }
  Result<ArchiveLayouts> layouts = ParseLayouts(options.source);
  if (!layouts.ok()) {
    fmt::print(err, "error: search: {}\n", TerminalSafe(layouts.status().message()));
    return std::nullopt;
  }
  Result<size_t> memory = ParseScanMemory(options.source);
  if (!memory.ok()) {
    fmt::print(err, "error: search: {}\n", memory.status().message());
    return std::nullopt;
  }
  ScanOptions scan;
  scan.filter = std::move(*filter);
  scan.layouts = std::move(*layouts);
  scan.parallelism = options.source.parallelism;
  scan.memory_budget_bytes = *memory;
  scan.stop = stop;
  return scan;
}

}  // namespace

int RunSearchCommand(const SearchCommandOptions& options, ObjectStore& store, const Destination& from, SystemTime now,
                     bool out_is_terminal, std::FILE* out, std::FILE* err, const std::atomic<bool>* stop) {
  std::string output = options.output.empty() ? (out_is_terminal ? "table" : "jsonl") : options.output;
  if (output != "table" && output != "jsonl" && output != "ids" && output != "count") {
    fmt::print(err, "error: search: --output '{}': must be table, jsonl, ids or count\n", TerminalSafe(output));
    return 2;
  }
  std::optional<ScanOptions> scan_options = SearchScan(options, now, stop, err);
  if (!scan_options) return 2;
  ScanOptions& scan = *scan_options;

  std::optional<FailedAgainIndex> failed_again;
  if (options.failed_again) {
    failed_again = LoadFailedAgain(store, from, err);
    if (!failed_again) return 1;
  }
  std::optional<std::set<std::string>> cause_matches;
  if (!options.cause.empty()) {
    cause_matches = LoadCauseMatches(store, from, options.cause, err);
    if (!cause_matches) return 1;
  }
  const auto started = DefaultClock().SteadyNow();
  uint64_t count = 0;
  std::string buf;
  if (output == "table") {
    fmt::print(out, "{:<24}  {:<24}  {:<36}  {:>4}  {}\n", "SENT", "QUEUE", "MESSAGE ID", "RECV", "BODY");
  }
  Result<ScanStats> stats = ScanArchive(store, from, scan, [&](const ArchiveRecord& r, const RecordLocation&) {
    if (failed_again && !failed_again->Contains(r.message_id)) return true;
    if (cause_matches && !cause_matches->contains(r.queue + "\n" + r.message_id)) return true;
    ++count;
    if (output == "jsonl") {
      buf.clear();
      AppendRecordJson(r, buf);
      EscapeJsonForTerminal(buf);
      std::fwrite(buf.data(), 1, buf.size(), out);
    } else if (output == "ids") {
      fmt::print(out, "{}\n", TerminalSafe(r.message_id));
    } else if (output == "table") {
      std::string sent = r.sent_at ? FormatIso8601(*r.sent_at) : "-";
      fmt::print(out, "{:<24}  {:<24}  {:<36}  {:>4}  {}\n", sent, TerminalSafe(r.queue), TerminalSafe(r.message_id),
                 r.receive_count, OneLinePreview(r.body, 60));
    }
    return options.limit == 0 || count < options.limit;
  });
  if (!stats.ok() && stats.status().code() == ErrorCode::kCancelled) {
    fmt::print(err, "search: stopped by a signal while listing the archive; nothing was read\n");
    return 130;
  }
  if (!stats.ok()) {
    fmt::print(err, "error: search: {}\n", TerminalSafe(ReadFailure(stats.status(), from)));
    return 1;
  }
  if (stats->stopped) {
    std::fflush(out);
    fmt::print(err, "search: {}; the {} printed {} partial\n", StoppedLine(*stats),
               CountNoun(count, "result", "results"), count == 1 ? "is" : "are");
    return 130;
  }
  if (output == "count") fmt::print(out, "{}\n", count);
  std::fflush(out);
  if (output == "table") {
    double secs = std::chrono::duration<double>(DefaultClock().SteadyNow() - started).count();
    fmt::print(err, "{} ({} dropped) from {} in {:.2f} s\n", CountNoun(count, "record", "records"),
               CountNoun(stats->duplicates, "duplicate copy", "duplicate copies"),
               CountNoun(stats->objects, "object", "objects"), secs);
  }
  return ReportDamage(*stats, from, err);
}

namespace {

struct SearchFlags {
  SearchCommandOptions options;
  std::string from;
};

Runner AddSearchFlags(CLI::App& cmd) {
  auto f = std::make_shared<SearchFlags>();
  AddFromFlag(cmd, f->from);
  AddFilterFlags(cmd, f->options.filter);
  cmd.add_option("--limit", f->options.limit, "stop after N messages (0: no limit)")
      ->check(IntegerValidator(0, UINT64_MAX));
  cmd.add_option("--output", f->options.output,
                 "table (default on a terminal), jsonl (default when piped), ids "
                 "or count")
      ->check(CLI::IsMember({"table", "jsonl", "ids", "count"}));
  cmd.add_flag("--failed-again", f->options.failed_again,
               "only messages that failed again after a replay (from the archive's audit records)");
  cmd.add_option("--cause", f->options.cause,
                 "TEXT: only messages whose cause (type, message or key, as `stats --causes` kept it) contains TEXT, "
                 "case-insensitive");
  AddArchiveSourceFlags(cmd, f->options.source);
  AddScanMemoryFlag(cmd, f->options.source);
  return [f](const CommandContext& ctx) {
    return WithArchive(ctx, f->from, [&](ObjectStore& store, const Destination& from) {
      return RunSearchCommand(f->options, store, from, DefaultClock().Now(), isatty(STDOUT_FILENO) != 0, stdout, stderr,
                              &ctx.stop);
    });
  };
}

}  // namespace

Command SearchCommand() {
  return {"search", "print the archived messages that match a filter",
          "Exit codes: 0 done; 1 the archive cannot be listed; 2 usage error; 3 done, but unreadable objects "
          "or lines were skipped (each named on stderr)",
          AddSearchFlags};
}

}  // namespace dlq
