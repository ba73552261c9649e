#include "app/ls_command.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "common/byte_size.h"
#include "common/text.h"
#include "common/time_util.h"
#include "query/filter.h"
#include "query/scan.h"

namespace dlq {
namespace {

std::string Day(const ArchiveObject& o) {
  if (!o.matched || o.facts.year == 0) return "?";
  if (o.facts.month == 0) return fmt::format("{:04}", o.facts.year);
  if (o.facts.day == 0) return fmt::format("{:04}-{:02}", o.facts.year, o.facts.month);
  return fmt::format("{:04}-{:02}-{:02}", o.facts.year, o.facts.month, o.facts.day);
}

// Terminal-safe, as every key and name ls prints: they come from the store.
std::string Queue(const ArchiveObject& o) {
  return o.matched && !o.facts.queue.empty() ? TerminalSafe(o.facts.queue) : "?";
}

}  // namespace

int RunLsCommand(const LsCommandOptions& options, ObjectStore& store, const Destination& from, SystemTime now,
                 std::FILE* out, std::FILE* err, const std::atomic<bool>* stop) {
  // The filter flags' own parsing, so ls accepts exactly what search does.
  FilterFlags flags;
  flags.queues = options.queues;
  flags.since = options.since;
  flags.until = options.until;
  Result<Filter> filter = BuildFilter(flags, now);
  if (!filter.ok()) {
    fmt::print(err, "error: ls: {}\n", TerminalSafe(filter.status().message()));
    return 2;
  }
  Result<ArchiveLayouts> layouts = ParseLayouts(options.source);
  if (!layouts.ok()) {
    fmt::print(err, "error: ls: {}\n", TerminalSafe(layouts.status().message()));
    return 2;
  }
  ListOptions list;
  list.layouts = std::move(*layouts);
  list.queues = filter->queues;
  list.since = filter->since;
  list.until = filter->until;
  list.stop = stop;
  ListStats stats;
  Result<std::vector<ArchiveObject>> objects = ListArchive(store, from, list, &stats);
  if (!objects.ok() && objects.status().code() == ErrorCode::kCancelled) {
    fmt::print(err, "ls: stopped by a signal while listing; nothing is printed\n");
    return 130;
  }
  if (!objects.ok()) {
    fmt::print(err, "error: ls: {}\n", TerminalSafe(ReadFailure(objects.status(), from)));
    return 1;
  }
  // Without a layout a key says nothing of its queue or day, so filters cannot apply to it.
  uint64_t total = 0;
  std::set<std::string> queues;
  std::map<std::pair<std::string, std::string>, std::pair<uint64_t, uint64_t>> by_day;  // (queue, day) -> n, bytes
  for (const ArchiveObject& o : *objects) {
    total += o.info.size;
    queues.insert(Queue(o));
    auto& [n, bytes] = by_day[{Queue(o), Day(o)}];
    ++n;
    bytes += o.info.size;
  }
  const std::string uri = TerminalSafe(KeyUriPrefix(from));
  if (options.objects) {
    fmt::print(out, "{:<10}  {:<24}  {:>10}  {}\n", "DAY", "QUEUE", "BYTES", "OBJECT");
    for (const ArchiveObject& o : *objects) {
      fmt::print(out, "{:<10}  {:<24}  {:>10}  {}{}\n", Day(o), Queue(o), o.info.size, uri, TerminalSafe(o.info.key));
    }
  } else {
    fmt::print(out, "{:<24}  {:<10}  {:>7}  {:>10}\n", "QUEUE", "DAY", "OBJECTS", "SIZE");
    for (const auto& [qd, nb] : by_day) {
      fmt::print(out, "{:<24}  {:<10}  {:>7}  {:>10}\n", qd.first, qd.second, nb.first, FormatByteSize(nb.second));
    }
  }
  fmt::print(out, "total: {} queues, {} queue-days, {} objects, {}\n", queues.size(), by_day.size(), objects->size(),
             FormatByteSize(total));
  if (!stats.unrecognised_key.empty()) {
    fmt::print(err,
               "note: {}{} does not follow the default or Hive key layout, so no partition was pruned and "
               "objects shown with '?' are not filtered by queue or date; pass --key-template\n",
               uri, TerminalSafe(stats.unrecognised_key));
  }
  if (!stats.skipped.empty()) {
    ReportSkipped(stats.skipped, from, err);
    fmt::print(err, "warning: incomplete: {} entries of the archive directory were not listed\n", stats.skipped.size());
    return 3;
  }
  return 0;
}

}  // namespace dlq
