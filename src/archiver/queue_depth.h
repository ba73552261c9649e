// A queue's depth as SQS reports it, read the same way by the archiver's
// end-of-queue checks and the live replay pass. Thread-safe if `sqs` is.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "sqs/sqs_client.h"

namespace dlq {

struct QueueDepth {
  int64_t visible = 0;    // ApproximateNumberOfMessages
  int64_t in_flight = 0;  // ApproximateNumberOfMessagesNotVisible
};

// One GetQueueAttributes call on `queue_url`: its error as it came, or
// kUnavailable naming `queue_name` when the reply lacks either count.
Result<QueueDepth> ReadQueueDepth(QueueClient& sqs, const std::string& queue_url, const std::string& queue_name);

}  // namespace dlq
