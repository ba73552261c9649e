// Which queues a pattern (`archive --queue-prefix`) selects. A pattern may
// match live work queues as well as DLQs, and draining a work queue deletes
// live work, so it selects only dead-letter queues: queues that some queue
// names in its redrive policy (ListDeadLetterSourceQueues non-empty). Queues
// named one by one (--queue) never pass through here: Lambda, SNS and
// EventBridge DLQs have no redrive source and are taken as named.
#pragma once

#include <string>
#include <vector>

#include "sqs/sqs_client.h"

namespace dlq {

struct SkippedQueue {
  std::string url;
  std::string reason;  // why it was left out, ending with what would take it
};

struct PatternSelection {
  std::vector<std::string> taken;  // URLs, in the order given
  std::vector<SkippedQueue> skipped;
};

// Splits `urls` into dead-letter queues (taken) and the rest (skipped, each
// with why). An endpoint without ListDeadLetterSourceQueues (InvalidAction,
// UnsupportedOperation: fauxqs) is answered from every queue's RedrivePolicy,
// read once (ListQueues and one GetQueueAttributes per queue), as the
// daemon's discovery does. Any other failure (a denied permission) skips the
// queue with the error in the reason: the safe side. `any_queue` takes every
// URL and makes no call. Never fails; `sqs` is only read from.
PatternSelection SelectDeadLetterQueues(QueueClient& sqs, const std::vector<std::string>& urls, bool any_queue);

}  // namespace dlq
