// DrainStats: what a drain run counted. DrainCounters: the same counts as
// atomics, which the run's threads add to without a lock and Snapshot()
// reads at any time.
#pragma once

#include <atomic>
#include <cstdint>

namespace dlq {

struct DrainStats {
  uint64_t received = 0;  // ReceiveMessage deliveries (a message may be delivered twice)
  uint64_t selected = 0;
  uint64_t skipped = 0;   // not selected, released at once
  uint64_t archived = 0;  // distinct messages in confirmed objects
  uint64_t deleted = 0;   // distinct messages deleted
  // Archived, left in the DLQ: every receipt handle the run had for it was
  // stale at its delete (visibility ran out); a later run archives it again.
  uint64_t duplicates = 0;
  uint64_t delete_failures = 0;  // still in the DLQ after every delete attempt (archived, not lost)
  // Further receipts of a message this run already held or archived (SQS
  // handed it out again): not archived or deleted twice, not in the counts
  // above (doc/drainer.md, "Copies").
  uint64_t received_again = 0;
  uint64_t released = 0;  // returned to the queue unarchived (upload failure, stop)
  uint64_t kept = 0;      // archived and returned to the queue (keep), not deleted
  // Receives abandoned in flight by a stop or a failure: whatever SQS handed
  // them (up to 10 messages each) stays invisible for visibility_timeout.
  uint64_t abandoned_receives = 0;
  uint64_t objects = 0;
  uint64_t bytes_uploaded = 0;
  uint64_t visibility_extensions = 0;
  uint64_t receive_calls = 0;
  uint64_t corrupt = 0;                // receipts that failed the MD5 check (released, never archived)
  int64_t approximate_remaining = -1;  // last ApproximateNumberOfMessages seen, -1 unknown
  int64_t approximate_in_flight = -1;  // last ApproximateNumberOfMessagesNotVisible seen, -1 unknown
  int64_t initial_depth = -1;          // visible + in flight when the run started, -1 unknown
  int receivers = 0;                   // receivers receiving at the end (the governor's level)
};

struct DrainCounters {
  std::atomic<uint64_t> received{0}, selected{0}, skipped{0}, archived{0}, deleted{0}, duplicates{0},
      delete_failures{0}, received_again{0}, released{0}, kept{0}, abandoned_receives{0}, objects{0}, bytes_uploaded{0},
      visibility_extensions{0}, receive_calls{0}, corrupt{0};
  std::atomic<int64_t> approximate_remaining{-1}, approximate_in_flight{-1};

  // Every count above into `s` (receivers and initial_depth are not counters: left as they are).
  void CopyTo(DrainStats& s) const {
    s.received = received;
    s.selected = selected;
    s.skipped = skipped;
    s.archived = archived;
    s.deleted = deleted;
    s.duplicates = duplicates;
    s.delete_failures = delete_failures;
    s.received_again = received_again;
    s.released = released;
    s.kept = kept;
    s.abandoned_receives = abandoned_receives;
    s.objects = objects;
    s.bytes_uploaded = bytes_uploaded;
    s.visibility_extensions = visibility_extensions;
    s.receive_calls = receive_calls;
    s.corrupt = corrupt;
    s.approximate_remaining = approximate_remaining;
    s.approximate_in_flight = approximate_in_flight;
  }
};

}  // namespace dlq
