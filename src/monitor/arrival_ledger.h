// ArrivalLedger: what the daemon learned of each message of one DLQ by
// receiving it (a learning pass or an archive run), keyed by message id: its
// SentTimestamp (so its expiry), when it was first seen, SQS's
// ApproximateReceiveCount at that first sight, and how many receives were
// ours. A plain value: no locking (the Daemon keeps it under the queue's
// mutex), no I/O; Save() and Load() hand its entries to a state store.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"

namespace dlq {

struct LedgerEntry {
  std::string message_id;
  SystemTime sent;
  SystemTime first_seen;
  int first_receive_count = 0;  // ApproximateReceiveCount as SQS reported it at first sight (ours included)
  int own_receives = 0;         // receives by dlq-archive, first sight included
};

// One message as a receive pass saw it (the pass may receive it more than once).
struct ReceivedMessage {
  std::string message_id;
  std::optional<SystemTime> sent;
  int first_receive_count = 0;  // ApproximateReceiveCount at the pass's first receive
  int receives = 0;             // how often the pass received it
  bool deleted = false;         // the pass deleted it (archived)
};

class ArrivalLedger {
 public:
  // Adds what a pass saw at `now`: new messages get an entry, known ones add
  // their receives; deleted ones are forgotten. Messages without a
  // SentTimestamp are recorded as sent at `now` minus the retention (they may
  // expire at once).
  void Merge(const std::vector<ReceivedMessage>& seen, std::chrono::seconds retention, SystemTime now);
  // Forgets every entry (the queue was seen empty).
  void Clear() {
    if (!entries_.empty()) ++generation_;
    entries_.clear();
  }
  // Forgets entries whose expiry (sent + retention) is at or before `now`:
  // SQS has deleted them.
  void PruneExpired(std::chrono::seconds retention, SystemTime now);

  // The nearest expiry among the entries (sent + retention); nullopt when empty.
  std::optional<SystemTime> NearestExpiry(std::chrono::seconds retention) const;
  // The oldest SentTimestamp among the entries.
  std::optional<SystemTime> OldestSent() const;
  // Receives of `message_id` that were ours (0 when unknown).
  int OwnReceives(const std::string& message_id) const;
  const LedgerEntry* Find(const std::string& message_id) const;
  size_t size() const { return entries_.size(); }
  // Changes whenever the entries change (not on Load): what a saved copy
  // was taken at tells whether it is still current.
  uint64_t generation() const { return generation_; }

  std::vector<LedgerEntry> Save() const;
  void Load(const std::vector<LedgerEntry>& entries);

 private:
  std::map<std::string, LedgerEntry> entries_;
  uint64_t generation_ = 0;
};

// The consumer's share of SQS's receive count: reported minus ours, never
// below 0 (SQS's count is approximate).
int ConsumerReceiveCount(int reported, int own);

}  // namespace dlq
