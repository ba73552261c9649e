// The buckets of a replay's summary (doc/replay.md "What a replay says"):
// every selected message is in exactly one, and they add up to `selected`,
// in the summary, `--output json`, the audit record, `audit ls` and
// `audit show`.
#pragma once

#include <cstdint>
#include <string>

#include "common/json_writer.h"
#include "replay/replayer.h"

namespace dlq {

struct ReplayBuckets {
  uint64_t selected = 0;              // matched the filter (at most --max)
  uint64_t sent = 0;                  // sent, and not found in a DLQ again by this run
  uint64_t failed = 0;                // could not be sent (the reasons are listed)
  uint64_t failed_again = 0;          // sent, then found in a DLQ again by this run's guard
  uint64_t already_replayed = 0;      // skipped: an earlier run delivered it (or a copy of it) to the same destination
  uint64_t copies = 0;                // skipped: another copy of the same message is sent by this run
  uint64_t resumed = 0;               // skipped: finished by an earlier run of the same checkpoint
  uint64_t skipped_failed_again = 0;  // skipped because they had failed again (audit records of older versions only)
  uint64_t would_send = 0;            // a dry run: would be sent
  uint64_t not_sent = 0;              // not sent: the run stopped first (still in the archive, or in the DLQ)
  uint64_t unresolved = 0;            // --to-origin: not sent, where it came from could not be told (named)

  // Everything but `selected`: equal to it.
  uint64_t Sum() const {
    return sent + failed + failed_again + already_replayed + copies + resumed + skipped_failed_again + would_send +
           not_sent + unresolved;
  }
};

// `selected`: what matched; `failed_again`: re-failures of messages this run
// sent. The messages taken but neither sent, failed nor skipped are
// `not_sent`; when the engine saw more than `selected` (the archive grew
// between the two passes), `selected` is raised to what it saw.
ReplayBuckets MakeBuckets(uint64_t selected, const ReplayStats& stats, uint64_t failed_again);

// "selected 200, sent 150, failed 0, failed again 3, skipped 40 already
// replayed, skipped 2 copies sent in this run, not sent 5 (still in the
// archive)": selected, sent (would send in a dry run) and failed always, the
// others when not zero (`resumed` also when `show_resumed`). `where` names
// where the not-sent messages are ("the archive", "the DLQ").
std::string BucketsText(const ReplayBuckets& b, bool dry_run, bool show_resumed, const std::string& where);

// {"selected":..,"sent":..,"failed":..,"failed_again":..,"already_replayed":..,"copies":..,"resumed":..,
//  "skipped_failed_again":..,"would_send":..,"not_sent":..,"unresolved":..}
void WriteBucketsJson(JsonWriter& w, const ReplayBuckets& b);

}  // namespace dlq
