#include "app/ls_command.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <set>

#include "app/command.h"
#include "common/byte_size.h"
#include "common/count_noun.h"
#include "common/strings.h"
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

// A day directory's name: "20261120" (default layout) or "dt=..." (Hive).
bool LooksLikeDay(std::string_view name) {
  if (StartsWith(name, "dt=")) return true;
  return name.size() == 8 && std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Last segment of a common prefix ("a/b/" -> "b").
std::string_view LastSegment(std::string_view prefix) {
  if (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  size_t slash = prefix.rfind('/');
  return slash == std::string_view::npos ? prefix : prefix.substr(slash + 1);
}

}  // namespace

std::vector<std::string> FindArchivePrefixes(ObjectStore& store, int max_lists) {
  std::vector<std::string> found;
  int lists = 0;
  auto children = [&](const std::string& dir) -> std::vector<std::string> {
    if (lists >= max_lists) return {};
    ++lists;
    auto page = store.List(dir, "/", "");
    return page.ok() ? page->common_prefixes : std::vector<std::string>{};
  };
  // A prefix holds archives when it has _audit/ or _causes/, a queue=... partition, or a
  // child (a queue) with a day or dt=... partition under it.
  auto holds = [&](const std::vector<std::string>& kids) {
    for (const std::string& k : kids) {
      std::string_view name = LastSegment(k);
      if (name == "_audit" || name == "_causes" || StartsWith(name, "queue=")) return true;
    }
    for (size_t i = 0; i < kids.size() && i < 3; ++i) {
      for (const std::string& g : children(kids[i])) {
        if (LooksLikeDay(LastSegment(g))) return true;
      }
    }
    return false;
  };
  std::vector<std::string> level = children("");
  for (int depth = 1; depth <= 2 && !level.empty(); ++depth) {
    std::vector<std::string> next;
    for (const std::string& p : level) {
      if (lists >= max_lists) break;
      std::vector<std::string> kids = children(p);
      if (holds(kids)) {
        found.push_back(p.substr(0, p.size() - 1));
      } else if (depth == 1) {
        next.insert(next.end(), kids.begin(), kids.end());
      }
    }
    level = std::move(next);
  }
  return found;
}

namespace {

// What to list, parsed as search parses its filter flags (so ls accepts
// exactly what search does); nullopt after saying why on `err`.
std::optional<ListOptions> LsListOptions(const LsCommandOptions& options, SystemTime now, const std::atomic<bool>* stop,
                                         std::FILE* err) {
  FilterFlags flags;
  flags.queues = options.queues;
  flags.since = options.since;
  flags.until = options.until;
  Result<Filter> filter = BuildFilter(flags, now);
  if (!filter.ok()) {
    fmt::print(err, "error: ls: {}\n", TerminalSafe(filter.status().message()));
    return std::nullopt;
  }
  Result<ArchiveLayouts> layouts = ParseLayouts(options.source);
  if (!layouts.ok()) {
    fmt::print(err, "error: ls: {}\n", TerminalSafe(layouts.status().message()));
    return std::nullopt;
  }
  ListOptions list;
  list.layouts = std::move(*layouts);
  list.queues = filter->queues;
  list.since = filter->since;
  list.until = filter->until;
  list.stop = stop;
  return list;
}

struct LsTotals {
  uint64_t bytes = 0;
  std::set<std::string> queues;
  std::map<std::pair<std::string, std::string>, std::pair<uint64_t, uint64_t>> by_day;  // (queue, day) -> n, bytes
};

// Without a layout a key says nothing of its queue or day, so filters cannot apply to it.
LsTotals Summarize(const std::vector<ArchiveObject>& objects) {
  LsTotals t;
  for (const ArchiveObject& o : objects) {
    t.bytes += o.info.size;
    t.queues.insert(Queue(o));
    auto& [n, bytes] = t.by_day[{Queue(o), Day(o)}];
    ++n;
    bytes += o.info.size;
  }
  return t;
}

void PrintListing(std::FILE* out, bool each_object, const std::vector<ArchiveObject>& objects, const LsTotals& t,
                  const std::string& uri) {
  if (each_object) {
    fmt::print(out, "{:<10}  {:<24}  {:>10}  {}\n", "DAY", "QUEUE", "BYTES", "OBJECT");
    for (const ArchiveObject& o : objects) {
      fmt::print(out, "{:<10}  {:<24}  {:>10}  {}{}\n", Day(o), Queue(o), o.info.size, uri, TerminalSafe(o.info.key));
    }
  } else {
    fmt::print(out, "{:<24}  {:<10}  {:>7}  {:>10}\n", "QUEUE", "DAY", "OBJECTS", "SIZE");
    for (const auto& [qd, nb] : t.by_day) {
      fmt::print(out, "{:<24}  {:<10}  {:>7}  {:>10}\n", qd.first, qd.second, nb.first, FormatByteSize(nb.second));
    }
  }
  fmt::print(out, "total: {}, {}, {}, {}\n", CountNoun(t.queues.size(), "queue", "queues"),
             CountNoun(t.by_day.size(), "queue-day", "queue-days"), CountNoun(objects.size(), "object", "objects"),
             FormatByteSize(t.bytes));
}

// Nothing under --from: says where archives are instead, if anywhere.
void PointAtOtherArchives(ObjectStore& store, const Destination& from, const std::string& uri, std::FILE* err) {
  fmt::print(err, "note: nothing is archived under {}{}/\n", uri, TerminalSafe(ArchivePrefix(from)));
  std::vector<std::string> found = FindArchivePrefixes(store);
  for (const std::string& p : found) {
    if (p == ArchivePrefix(from)) continue;
    fmt::print(err, "note: archives are under {}{} (--from {}{})\n", uri, TerminalSafe(p), uri, TerminalSafe(p));
  }
}

}  // namespace

int RunLsCommand(const LsCommandOptions& options, ObjectStore& store, const Destination& from, SystemTime now,
                 std::FILE* out, std::FILE* err, const std::atomic<bool>* stop) {
  std::optional<ListOptions> list = LsListOptions(options, now, stop, err);
  if (!list) return 2;
  ListStats stats;
  Result<std::vector<ArchiveObject>> objects = ListArchive(store, from, *list, &stats);
  if (!objects.ok() && objects.status().code() == ErrorCode::kCancelled) {
    fmt::print(err, "ls: stopped by a signal while listing; nothing is printed\n");
    return 130;
  }
  if (!objects.ok()) {
    fmt::print(err, "error: ls: {}\n", TerminalSafe(ReadFailure(objects.status(), from)));
    return 1;
  }
  const std::string uri = TerminalSafe(KeyUriPrefix(from));
  PrintListing(out, options.objects, *objects, Summarize(*objects), uri);
  if (objects->empty() && options.queues.empty() && options.since.empty() && options.until.empty()) {
    PointAtOtherArchives(store, from, uri, err);
  }
  if (!stats.unrecognised_key.empty()) {
    fmt::print(err,
               "note: {}{} does not follow the default or Hive key layout, so no partition was pruned and "
               "objects shown with '?' are not filtered by queue or date; pass --key-template\n",
               uri, TerminalSafe(stats.unrecognised_key));
  }
  if (!stats.skipped.empty()) {
    ReportSkipped(stats.skipped, from, err);
    fmt::print(err, "warning: incomplete: {} of the archive directory {} not listed\n",
               CountNoun(stats.skipped.size(), "entry", "entries"), stats.skipped.size() == 1 ? "was" : "were");
    return 3;
  }
  return 0;
}

namespace {

struct LsFlags {
  LsCommandOptions options;
  std::string from;
};

Runner AddLsFlags(CLI::App& cmd) {
  auto f = std::make_shared<LsFlags>();
  AddFromFlag(cmd, f->from);
  cmd.add_option("--queue", f->options.queues, "only this queue (repeatable)");
  cmd.add_option("--since", f->options.since,
                 "only objects archived at or after T (RFC 3339, a date, or 24h / 7d ago)");
  cmd.add_option("--until", f->options.until, "only objects archived before T");
  cmd.add_flag("--objects", f->options.objects, "one line per object instead of per queue and day");
  AddArchiveSourceFlags(cmd, f->options.source);
  return [f](const CommandContext& ctx) {
    return WithArchive(ctx, f->from, [&](ObjectStore& store, const Destination& from) {
      return RunLsCommand(f->options, store, from, DefaultClock().Now(), stdout, stderr, &ctx.stop);
    });
  };
}

}  // namespace

Command LsCommand() {
  return {"ls", "list the archive's queues, days and objects with their sizes",
          "Exit codes: 0 done; 1 the archive cannot be listed; 2 usage error; 3 listed, but entries the store "
          "skipped (links, special files) are named on stderr; 130 stopped by a signal",
          AddLsFlags};
}

}  // namespace dlq
