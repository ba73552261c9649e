#include "archiver/queue_depth.h"

#include <fmt/format.h>

#include <optional>

#include "common/strings.h"

namespace dlq {

Result<QueueDepth> ReadQueueDepth(QueueClient& sqs, const std::string& queue_url, const std::string& queue_name) {
  DLQ_ASSIGN_OR_RETURN(auto attrs, sqs.GetQueueAttributes(queue_url, {"ApproximateNumberOfMessages",
                                                                      "ApproximateNumberOfMessagesNotVisible"}));
  auto read = [&](const char* name) -> std::optional<int64_t> {
    auto it = attrs.find(name);
    return it == attrs.end() ? std::nullopt : ParseInt64(it->second);
  };
  auto visible = read("ApproximateNumberOfMessages");
  auto in_flight = read("ApproximateNumberOfMessagesNotVisible");
  if (!visible || !in_flight) return Unavailable(fmt::format("{} did not report its depth", queue_name));
  return QueueDepth{*visible, *in_flight};
}

}  // namespace dlq
