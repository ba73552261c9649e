#include "app/replay_guards.h"

#include <fmt/format.h>

namespace dlq {

Status CheckFilterNotEmpty(bool archive_form, bool dry_run, bool all, const Filter& filter) {
  if (!archive_form || dry_run || all || !filter.Empty()) return Status();
  return InvalidArgument(
      "no filter selects every message in the archive: narrow it (--queue, --attr, --since, --id, ...) or pass "
      "--all to replay them all (--dry-run shows what --all would send)");
}

std::string DescribeDlqSpan(const DlqCounts& counts) {
  std::string out = fmt::format("{} dead-letter {}:", counts.size(), counts.size() == 1 ? "queue" : "queues");
  bool first = true;
  for (const auto& [name, n] : counts) {
    out += fmt::format("{} {} ({})", first ? "" : ",", name.empty() ? "(unnamed)" : name, n);
    first = false;
  }
  return out;
}

Status CheckDlqSpan(const DlqCounts& counts, bool fixed_destination, bool dry_run, bool all_queues,
                    const std::string& destination) {
  if (!fixed_destination || dry_run || all_queues || counts.size() <= 1) return Status();
  return InvalidArgument(
      fmt::format("the selection spans {}; --to-queue would send them all into {}: narrow it with --queue, or pass "
                  "--all-queues if that is what you want; nothing was sent",
                  DescribeDlqSpan(counts), destination));
}

}  // namespace dlq
