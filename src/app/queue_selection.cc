#include "app/queue_selection.h"

#include <fmt/format.h>

namespace dlq {

PatternSelection SelectDeadLetterQueues(QueueClient& sqs, const std::vector<std::string>& urls, bool any_queue) {
  PatternSelection out;
  for (const std::string& url : urls) {
    if (any_queue) {
      out.taken.push_back(url);
      continue;
    }
    auto sources = sqs.ListDeadLetterSourceQueues(url);
    if (!sources.ok()) {
      out.skipped.push_back(
          {url, fmt::format("cannot tell whether it is a dead-letter queue (ListDeadLetterSourceQueues: {}); "
                            "--queue or --any-queue takes it",
                            sources.status().message())});
    } else if (sources->empty()) {
      out.skipped.push_back(
          {url, "not a dead-letter queue (no queue names it in a redrive policy); --queue or --any-queue takes it"});
    } else {
      out.taken.push_back(url);
    }
  }
  return out;
}

}  // namespace dlq
