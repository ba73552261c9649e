// SQS service limits and defaults, as AWS documents them. One place, so the
// archiver, monitor and clients agree.
#pragma once

#include <chrono>
#include <cstddef>

namespace dlq::sqs {

// MessageRetentionPeriod when a queue does not set it: 4 days.
inline constexpr std::chrono::seconds kDefaultRetention{345600};
// Longest visibility timeout (per receive or ChangeMessageVisibility), and
// the most a message can stay invisible after its first receive: 12 hours.
inline constexpr int kMaxVisibilityTimeoutSeconds = 43200;
inline constexpr std::chrono::hours kMaxVisibilityWindow{12};
// Entries per batch call and messages per ReceiveMessage.
inline constexpr size_t kMaxBatchEntries = 10;
// Largest message (body plus attributes): 1 MiB.
inline constexpr size_t kMaxMessageBytes = 1048576;

}  // namespace dlq::sqs
