#include "replay/dlq_span.h"

#include <fmt/format.h>

namespace dlq {

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
                    const std::string& destination, const ReplayTerms& terms) {
  if (!fixed_destination || dry_run || all_queues || counts.size() <= 1) return Status();
  return InvalidArgument(
      fmt::format("the selection spans {}; {} would send them all into {}: narrow it with {}, or pass {} if that is "
                  "what you want; nothing was sent",
                  DescribeDlqSpan(counts), terms.to_queue, destination, terms.queue_filter, terms.all_queues));
}

}  // namespace dlq
