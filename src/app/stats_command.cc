#include "app/stats_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <set>

#include "app/command.h"
#include "app/flag_validators.h"
#include "app/stats_causes.h"
#include "common/count_noun.h"
#include "common/text.h"
#include "query/scan.h"
#include "replay/audit.h"

namespace dlq {

Status ValidateStatsOptions(const StatsCommandOptions& options, SystemTime now) {
  if (options.group_by.empty()) {
    return InvalidArgument("--group-by is required: queue, day, attr:NAME, json:PATH or fingerprint");
  }
  if (!options.output.empty() && options.output != "table" && options.output != "json" && options.output != "jsonl") {
    return InvalidArgument(fmt::format("--output '{}': expected table, json or jsonl", options.output));
  }
  if (options.max_groups == 0) return InvalidArgument("--max-groups must be at least 1");
  if (auto group_by = GroupBy::Parse(options.group_by); !group_by.ok()) return group_by.status();
  if (auto filter = BuildFilter(options.filter, now); !filter.ok()) return filter.status();
  if (auto layouts = ParseLayouts(options.source); !layouts.ok()) return layouts.status();
  if (auto memory = ParseScanMemory(options.source); !memory.ok()) return memory.status();
  return ValidateCauseFlags(options.causes);
}

namespace {

// The ids of the messages that failed again after a replay, from the
// archive's audit records (those that do not parse are named on `err`).
Result<FailedAgainIndex> LoadFailedAgain(ObjectStore& store, const Destination& from, std::FILE* err) {
  auto index = ReadFailedAgain(store, ArchivePrefix(from));
  if (!index.ok()) return index.status();
  for (const auto& [key, why] : index->unreadable) {
    fmt::print(err, "warning: stats: audit record {} left out of failed_again: {}\n", TerminalSafe(key),
               TerminalSafe(why));
  }
  return index;
}

// The causes the archive keeps (a sidecar that cannot be read is a warning:
// the stats go on without it).
CauseIndex LoadCauses(ObjectStore& store, const Destination& from, std::FILE* err) {
  auto index = ReadCauseRecords(store, ArchivePrefix(from));
  if (!index.ok()) {
    fmt::print(err, "warning: stats: causes not shown: {}\n", TerminalSafe(index.status().message()));
    return {};
  }
  for (const std::string& why : index->unreadable) {
    fmt::print(err, "warning: stats: cause record left out: {}\n", TerminalSafe(why));
  }
  return std::move(index).value();
}

}  // namespace

int RunStatsCommand(const StatsCommandOptions& options, ObjectStore& store, const Destination& from, SystemTime now,
                    bool out_is_terminal, const std::atomic<bool>& stop, std::FILE* out, std::FILE* err,
                    const ExplainClients* cause_clients) {
  if (Status st = ValidateStatsOptions(options, now); !st.ok()) {
    fmt::print(err, "error: stats: {}\n", TerminalSafe(st.message()));
    return 2;
  }
  if (options.causes.enabled() && cause_clients == nullptr) {
    fmt::print(err, "error: stats: --causes needs the AWS clients\n");
    return 2;
  }
  ScanOptions scan;
  scan.filter = BuildFilter(options.filter, now).value();
  scan.layouts = ParseLayouts(options.source).value();
  scan.parallelism = options.source.parallelism;
  scan.memory_budget_bytes = ParseScanMemory(options.source).value();
  scan.stop = &stop;
  GroupBy group_by = GroupBy::Parse(options.group_by).value();
  group_by.fingerprint = scan.filter.fingerprint_options;  // --fingerprint-fields
  StatsAggregator aggregator(std::move(group_by), scan.filter.by, options.max_groups);
  auto failed_again = LoadFailedAgain(store, from, err);
  if (!failed_again.ok()) {
    fmt::print(err, "error: stats: {}\n", TerminalSafe(ReadFailure(failed_again.status(), from)));
    return 1;
  }
  std::set<std::string> counted;  // lineages: a message and its archived copy count once
  aggregator.CountFailedAgain([&](const ArchiveRecord& r) { return failed_again->CountOnce(r.message_id, counted); });
  StatsCauses causes(options.causes, LoadCauses(store, from, err));
  aggregator.ObserveRecords(
      [&](const std::optional<std::string>& key, const ArchiveRecord& r) { causes.Observe(key, r); });
  bool stopped = false;
  auto stats = ScanArchive(store, from, scan, [&](const ArchiveRecord& record, const RecordLocation&) {
    if (stop.load(std::memory_order_relaxed)) {
      stopped = true;
      return false;
    }
    aggregator.Add(record);
    return true;
  });
  if (!stats.ok() && stats.status().code() == ErrorCode::kCancelled) stopped = true;
  if (stats.ok() && stats->stopped) stopped = true;
  if (!stats.ok() && !stopped) {
    if (stats.status().code() == ErrorCode::kInvalidArgument) {
      fmt::print(err, "error: stats: {}\n", TerminalSafe(stats.status().message()));
      return 2;
    }
    fmt::print(err, "error: stats: {}\n", TerminalSafe(ReadFailure(stats.status(), from)));
    return 1;
  }
  if (stopped) {
    fmt::print(err, "stats: {}; no report\n",
               stats.ok() ? StoppedLine(*stats) : "stopped by a signal while listing the archive");
    return 130;
  }
  if (options.causes.enabled()) causes.LookUp(store, from, *cause_clients, err);
  StatsReport report = std::move(aggregator).Finish();
  causes.Apply(report);
  const std::string output = options.output.empty() ? (out_is_terminal ? "table" : "jsonl") : options.output;
  std::string text = output == "table"  ? RenderStatsTable(report)
                     : output == "json" ? RenderStatsJson(report)
                                        : RenderStatsJsonLines(report);
  if (output != "table") EscapeJsonForTerminal(text);
  std::fwrite(text.data(), 1, text.size(), out);
  std::fflush(out);
  if (report.other && output != "table") {
    fmt::print(err, "warning: more than {} groups: {} of later groups {} counted as (other)\n", report.max_groups,
               CountNoun(report.other->count, "record", "records"), report.other->count == 1 ? "is" : "are");
  }
  fmt::print(err, "stats: {} read, {}, {} skipped\n", CountNoun(stats->objects, "object", "objects"),
             CountNoun(report.records, "record", "records"), CountNoun(stats->duplicates, "duplicate", "duplicates"));
  return ReportDamage(*stats, from, err);
}

namespace {

struct StatsFlags {
  StatsCommandOptions options;
  std::string from;
};

Runner AddStatsFlags(CLI::App& cmd) {
  auto f = std::make_shared<StatsFlags>();
  AddFromFlag(cmd, f->from);
  AddFilterFlags(cmd, f->options.filter);
  cmd.add_option("--group-by", f->options.group_by, "queue, day, attr:NAME, json:PATH or fingerprint (required)");
  cmd.add_option("--output", f->options.output, "table, json or jsonl (default: table on a terminal, else jsonl)")
      ->check(CLI::IsMember({"table", "json", "jsonl"}));
  cmd.add_option("--max-groups", f->options.max_groups, "groups kept; later groups count as (other)")
      ->capture_default_str()
      ->check(IntegerValidator(1, 10'000'000));
  AddArchiveSourceFlags(cmd, f->options.source);
  AddScanMemoryFlag(cmd, f->options.source);
  AddCauseFlags(cmd, f->options.causes);
  return [f](const CommandContext& ctx) {
    if (Status st = ValidateStatsOptions(f->options, DefaultClock().Now()); !st.ok()) {
      return ctx.usage.Fail(st.message());
    }
    if (f->options.causes.enabled()) {
      return WithArchiveAndServices(ctx, f->from, [&](ObjectStore& store, const Destination& from, AwsServices& aws) {
        ExplainClients clients{aws.sqs(), aws.lambda(), aws.logs(), DefaultClock()};
        return RunStatsCommand(f->options, store, from, DefaultClock().Now(), isatty(STDOUT_FILENO) != 0, ctx.stop,
                               stdout, stderr, &clients);
      });
    }
    return WithArchive(ctx, f->from, [&](ObjectStore& store, const Destination& from) {
      return RunStatsCommand(f->options, store, from, DefaultClock().Now(), isatty(STDOUT_FILENO) != 0, ctx.stop,
                             stdout, stderr);
    });
  };
}

}  // namespace

Command StatsCommand() {
  return {"stats", "group archived messages by queue, day, attribute, JSON value or failure",
          "Exit codes: 0 done; 1 the archive could not be read; 2 usage error; 3 done, but unreadable objects or "
          "lines were skipped; 130 stopped by a signal",
          AddStatsFlags};
}

}  // namespace dlq
