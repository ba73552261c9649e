#include "sqs/queue_info.h"

#include <fmt/format.h>

#include "common/strings.h"

namespace dlq {

Result<QueueInfo> ResolveQueue(QueueClient& sqs, const std::string& name_or_url, const std::string& default_region) {
  QueueInfo q;
  std::string owner;
  if (StartsWith(name_or_url, "http://") || StartsWith(name_or_url, "https://")) {
    q.url = name_or_url;
    while (!q.url.empty() && q.url.back() == '/') q.url.pop_back();
    q.name = q.url.substr(q.url.rfind('/') + 1);
  } else {
    q.name = name_or_url;
    if (StartsWith(name_or_url, "arn:")) {
      auto parts = Split(name_or_url, ':');  // arn:PARTITION:sqs:REGION:ACCOUNT:NAME
      if (parts.size() != 6 || parts[2] != "sqs" || parts[5].empty()) {
        return InvalidArgument(
            fmt::format("'{}' is not an SQS queue ARN (arn:aws:sqs:REGION:ACCOUNT:NAME)", name_or_url));
      }
      if (parts[3] != default_region) {
        return InvalidArgument(fmt::format("queue {} is in region {}, but the region in use is {}: pass --region {}",
                                           name_or_url, parts[3], default_region, parts[3]));
      }
      q.name = std::string(parts[5]);
      owner = std::string(parts[4]);
    }
    auto url = sqs.GetQueueUrl(q.name, owner);
    if (!url.ok()) {
      if (url.status().code() == ErrorCode::kNotFound) {
        return url.status().WithContext(
            fmt::format("queue {} not found in region {}{}", q.name, default_region,
                        owner.empty() ? " (the credentials' account)" : fmt::format(", account {}", owner)));
      }
      return url.status().WithContext(fmt::format("queue {}", name_or_url));
    }
    q.url = *url;
  }
  auto attrs = sqs.GetQueueAttributes(q.url, {"All"});
  if (!attrs.ok()) return attrs.status().WithContext(fmt::format("queue {}", q.name));
  q.region = default_region;
  if (auto it = attrs->find("QueueArn"); it != attrs->end()) {
    q.arn = it->second;
    auto parts = Split(q.arn, ':');  // arn:aws:sqs:region:account:name
    if (parts.size() >= 6) {
      q.region = std::string(parts[3]);
      q.account_id = std::string(parts[4]);
    }
  }
  if (auto it = attrs->find("FifoQueue"); it != attrs->end()) q.fifo = it->second == "true";
  if (EndsWith(q.name, ".fifo")) q.fifo = true;
  if (auto it = attrs->find("MessageRetentionPeriod"); it != attrs->end()) {
    auto secs = ParseInt64(it->second);
    if (!secs || *secs <= 0) {
      return Internal(fmt::format("queue {}: bad MessageRetentionPeriod '{}'", q.name, it->second));
    }
    q.retention = std::chrono::seconds(*secs);
  }
  return q;
}

}  // namespace dlq
