// When SQS will delete a DLQ message (guarantee 5). Pure functions.
// The result is the EARLIEST plausible deletion time, so the archiver is
// never late; see doc/archive-format.md "Expiry".
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "common/clock.h"
#include "sqs/types.h"

namespace dlq {

// Standard queue: SentTimestamp + the DLQ's retention (the enqueue time is
// kept on the move to the DLQ). FIFO queue: SQS restarts the clock on the
// move, but no attribute reports the move time; the move happened at or
// after SentTimestamp, so SentTimestamp + retention is the earliest plausible
// expiry for FIFO as well. Without a usable SentTimestamp the message is
// treated as due at `now_if_unknown`.
SystemTime ComputeExpiry(const Message& msg, bool fifo, std::chrono::seconds retention, SystemTime now_if_unknown);

// ComputeExpiry given the already-parsed SentTimestamp.
SystemTime ExpiryFromSentTime(std::optional<SystemTime> sent, bool fifo, std::chrono::seconds retention,
                              SystemTime now_if_unknown);

// A system attribute holding epoch milliseconds (e.g. "SentTimestamp");
// nullopt when missing, not a non-negative integer, or after the year 2200.
std::optional<SystemTime> AttributeMillis(const Message& msg, const std::string& name);

}  // namespace dlq
