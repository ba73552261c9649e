// CopyLedger: what one drain run did with each message it took to archive,
// by message id, so that a message SQS hands out more than once (its
// visibility ran out, or SQS's at-least-once delivery: moto does it whenever
// two receives run at once) counts once. It keeps DrainCounters' archived,
// deleted, duplicates and delete_failures as distinct messages and counts
// every further copy in received_again. How the drainer settles copies:
// doc/drainer.md ("Copies").
//
// Thread-safe (its own mutex). Memory: one entry per message the run took;
// `counters` must outlive it.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "archiver/drain_stats.h"
#include "archiver/held_batch.h"
#include "common/mutex.h"

namespace dlq {

class CopyLedger {
 public:
  explicit CopyLedger(DrainCounters& counters) : counters_(counters) {}

  // Where the run has a message it receives to archive.
  enum class Seen {
    kFirst,   // new to the run: take it
    kHeld,    // a copy; the run holds the message, not yet in a stored object
    kStored,  // a copy; the message is in a stored object
  };
  // Records a receipt of `message_id` to archive; a copy counts in received_again.
  Seen Take(const std::string& message_id) DLQ_EXCLUDES(mu_);
  // `held` (a batch's receipts, copies among them) is in a stored object:
  // counts archived each message stored for the first time.
  void Stored(const std::vector<HeldMessage>& held) DLQ_EXCLUDES(mu_);
  // A delete with one of the message's receipt handles succeeded: counts
  // deleted the first time, and takes back a duplicate or delete failure
  // another handle of it counted.
  void Deleted(const std::string& message_id) DLQ_EXCLUDES(mu_);
  // A delete left the message in the DLQ: its handle was stale (`expired`:
  // a duplicate once a later run archives it again) or every attempt failed.
  // Counted unless another handle deleted it; returns whether it counted.
  bool NotDeleted(const std::string& message_id, bool expired) DLQ_EXCLUDES(mu_);

 private:
  enum class Left : unsigned char { kNo, kExpired, kFailed };
  struct Entry {
    bool stored = false;
    bool deleted = false;
    Left left = Left::kNo;
  };
  void TakeBack(Entry& e) DLQ_REQUIRES(mu_);

  DrainCounters& counters_;
  mutable Mutex mu_;
  std::unordered_map<std::string, Entry> entries_ DLQ_GUARDED_BY(mu_);
};

}  // namespace dlq
