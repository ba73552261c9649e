// QueueInfo and ResolveQueue: a queue named by name, URL or ARN, resolved
// with GetQueueUrl and GetQueueAttributes.
#pragma once

#include <chrono>
#include <string>

#include "common/status.h"
#include "sqs/limits.h"
#include "sqs/sqs_client.h"

namespace dlq {

// A queue as the archiver, the daemon and replay use it: its name, URL,
// ARN, region, account, FIFO-ness and retention.
struct QueueInfo {
  std::string name;
  std::string url;
  std::string arn;
  std::string region;
  std::string account_id;
  bool fifo = false;
  std::chrono::seconds retention{sqs::kDefaultRetention};
};

// Resolves a name or URL into QueueInfo with GetQueueUrl/GetQueueAttributes.
Result<QueueInfo> ResolveQueue(QueueClient& sqs, const std::string& name_or_url, const std::string& default_region);

}  // namespace dlq
