#include "app/stats_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

#include "archive/destination.h"
#include "query/scan.h"

namespace dlq {

Status ValidateStatsOptions(const StatsCommandOptions& options, SystemTime now) {
  if (options.from.empty()) return InvalidArgument("--from is required (s3://BUCKET/PREFIX or file:///DIR)");
  if (options.group_by.empty()) {
    return InvalidArgument("--group-by is required: queue, day, attr:NAME, json:PATH or fingerprint");
  }
  if (!options.output.empty() && options.output != "table" && options.output != "json" && options.output != "jsonl") {
    return InvalidArgument(fmt::format("--output '{}': expected table, json or jsonl", options.output));
  }
  if (options.max_groups == 0) return InvalidArgument("--max-groups must be at least 1");
  if (auto from = ParseDestination(options.from); !from.ok()) return from.status().WithContext("--from");
  if (auto group_by = GroupBy::Parse(options.group_by); !group_by.ok()) return group_by.status();
  if (auto filter = BuildFilter(options.filter, now); !filter.ok()) return filter.status();
  return Status::Ok();
}

int RunStats(const StatsCommandOptions& options, ObjectStore& store, SystemTime now, bool stdout_is_terminal,
             const std::atomic<bool>& stop, std::string& out, std::string& err) {
  auto usage = [&err](const Status& st) {
    err += fmt::format("error: stats: {}\n", st.message());
    return 2;
  };
  if (Status st = ValidateStatsOptions(options, now); !st.ok()) return usage(st);
  Destination from = ParseDestination(options.from).value();
  GroupBy group_by = GroupBy::Parse(options.group_by).value();
  Filter filter = BuildFilter(options.filter, now).value();

  ScanOptions scan;
  scan.filter = std::move(filter);
  scan.parallelism = options.parallelism;
  StatsAggregator aggregator(std::move(group_by), scan.filter.by, options.max_groups);
  bool stopped = false;
  auto stats = ScanArchive(store, from, scan, [&](const ArchiveRecord& record, const RecordLocation&) {
    if (stop.load(std::memory_order_relaxed)) {
      stopped = true;
      return false;
    }
    aggregator.Add(record);
    return true;
  });
  if (!stats.ok()) {
    err += fmt::format("error: stats: {}\n", stats.status().message());
    return stats.status().code() == ErrorCode::kInvalidArgument ? 2 : 1;
  }
  if (stopped) {
    err += "stats: stopped by a signal; no report\n";
    return 130;
  }
  for (const ReadError& e : stats->errors) {
    if (e.line > 0) {
      err += fmt::format("warning: {} line {}: {}\n", e.key, e.line, e.message);
    } else {
      err += fmt::format("warning: {}: {}\n", e.key, e.message);
    }
  }
  StatsReport report = std::move(aggregator).Finish();
  std::string output = options.output.empty() ? (stdout_is_terminal ? "table" : "jsonl") : options.output;
  if (output == "table") {
    out += RenderStatsTable(report);
  } else if (output == "json") {
    out += RenderStatsJson(report);
  } else {
    out += RenderStatsJsonLines(report);
  }
  if (report.other && output != "table") {
    err += fmt::format("warning: more than {} groups: {} records of later groups are counted as (other)\n",
                       report.max_groups, report.other->count);
  }
  err += fmt::format("stats: {} objects read, {} records, {} duplicates skipped\n", stats->objects, report.records,
                     stats->duplicates);
  if (!stats->complete()) {
    err += fmt::format(
        "warning: incomplete: {} unreadable objects and {} unreadable lines were skipped (see the warnings above)\n",
        stats->skipped_objects, stats->skipped_lines);
    return 3;
  }
  return 0;
}

int RunStatsCommand(const StatsCommandOptions& options, AwsServices* services, const std::atomic<bool>& stop) {
  std::string out, err;
  int code = 0;
  auto from = ParseDestination(options.from);
  if (!from.ok()) {
    err = fmt::format("error: stats: --from: {}\n", from.status().message());
    code = 2;
  } else if (auto store = OpenStore(*from, services); !store.ok()) {
    err = fmt::format("error: stats: {}\n", store.status().message());
    code = 1;
  } else {
    code = RunStats(options, **store, DefaultClock().Now(), isatty(STDOUT_FILENO) != 0, stop, out, err);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fwrite(err.data(), 1, err.size(), stderr);
  return code;
}

}  // namespace dlq
