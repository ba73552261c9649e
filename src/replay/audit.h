// The audit trail of replays: every replay that is not a dry run stores one
// JSON document at {prefix}/_audit/<yyyymmddThhmmssZ>-<16 hex>.json in the
// archive it read from (or wherever --audit-to says; the live form needs it):
// who (caller ARN), when, what (source, filter, transform), where to, the
// counts and, per message, the original id, the new id and the outcome.
// Schema 3 (a guarded run's "redrive" object and outcome "failed-again");
// schemas 2 and 1 (sent_ids and failed, no new ids) are still read. The
// ids a run delivered are also in the replay ledger (replay/ledger.h), which
// reruns consult. Format: doc/replay.md.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "replay/buckets.h"
#include "replay/replayer.h"
#include "s3/object_store.h"

namespace dlq {

// What an archive run did (kind "archive": the daemon's archive now).
struct ArchiveAuditCounts {
  uint64_t received = 0, archived = 0, deleted = 0, skipped = 0, released = 0, delete_failures = 0, objects = 0,
           bytes_uploaded = 0;
};

// A message the run sent that was found in a DLQ again (outcome
// "failed-again"): it is also in AuditRecord::sent.
struct FailedAgainMessage {
  std::string message_id;      // the original id
  std::string new_message_id;  // the copy's id, which it keeps in the DLQ
  std::string destination;     // queue URL it was replayed to
  std::string dlq;             // queue URL it was found in
  SystemTime found_at;
};

// What the guard of a guarded run (--canary, --ramp) did: the "redrive" object.
struct RedriveAudit {
  uint64_t canary = 0;        // messages in the canary
  std::vector<double> ramp;   // cumulative percentages of the selection after each step
  double window_s = 0;        // the processing window waited after the canary and the last step
  std::string outcome;        // the guard's last phase: "done", "stopped", ...
  uint64_t refailed = 0;      // messages found again in a DLQ
  uint64_t dlq_receives = 0;  // messages received from DLQs to look for them
  double paused_s = 0;        // time paused for the destination's backlog
};

// kind "replay": a replay run (counts from stats, the ids sent and failed).
// kind "archive": an archive run someone asked for (the dashboard's archive
// now): source is the queue URL, destination the archive URI, counts from
// `archive`; no ids.
struct AuditRecord {
  std::string kind = "replay";
  ArchiveAuditCounts archive;  // kind "archive" only
  std::string caller_arn;      // empty when unknown; caller_error says why
  std::string caller_error;
  SystemTime started_at;
  SystemTime finished_at;
  std::string source;       // the --from URL or the --from-queue URL
  std::string filter;       // Filter::Canonical()
  std::string destination;  // the --to-queue argument or "source"
  std::string transform;    // the --transform command, empty for none
  std::string outcome;      // "done", "failed", "stopped"
  bool again = false;       // --again: earlier deliveries were not skipped
  ReplayStats stats;        // accepted, sent, failed, resumed, already_replayed, retries, bytes_sent are kept
  std::map<std::string, uint64_t> sent_by_destination;
  std::vector<ReplayedMessage> sent;  // new_message_id empty in schema 1 records
  std::vector<ReplayFailure> failures;
  uint64_t failed_again_skipped = 0;             // selected, not sent: failed again after an earlier replay
  std::optional<RedriveAudit> redrive;           // a guarded run only
  std::vector<FailedAgainMessage> failed_again;  // each one is in `sent` too
  // Every selected message in one bucket (written from this version on;
  // BucketsOf derives them for older records).
  std::optional<ReplayBuckets> buckets;
};

// The record's buckets: as stored, or derived from its counts (records
// written before buckets were: copies 0, failed again from `failed_again`,
// the rest of `selected` not sent).
ReplayBuckets BucketsOf(const AuditRecord& record);

// The largest audit record read (256 MiB): a record of a 1,000,000-message
// replay is about 205 MB. A larger object under _audit/ is not fetched: it
// is named as unreadable with its size (doc/replay.md). Replay checkpoints
// and redrive journals are held to the same bound.
inline constexpr uint64_t kMaxAuditRecordBytes = uint64_t{256} << 20;

// The record's id: its key's file name without ".json" (what `audit show` takes).
std::string AuditIdOfKey(std::string_view key);

// "{prefix}/_audit/20250910T123000Z-<id>.json" (no leading '/' when prefix is empty).
std::string AuditKey(const std::string& prefix, SystemTime at, const std::string& id);
std::string AuditJson(const AuditRecord& record);
// Reads a stored record (outside input: fuzzed). kInvalidArgument saying
// what is wrong for anything that is not a schema 1, 2 or 3 audit record.
Result<AuditRecord> ParseAuditRecord(std::string_view json);
// Stores the record create-only under a fresh AuditKey; returns the key.
Result<std::string> WriteAudit(ObjectStore& store, const std::string& prefix, const AuditRecord& record);

// What earlier replays did with the messages that failed again, from the
// audit records directly under {prefix}/_audit/, oldest first (key order:
// the key starts with the finish time). A message and the copies SQS gave new
// ids on each replay form one *lineage*, named by its first id; a copy back in
// its DLQ is archived under its new id. Each lineage that ever failed again
// has a latest outcome: failed again, or delivered by a later run (sent and
// not found again). Lineages that never failed again are not kept (the replay
// ledger, replay/ledger.h, knows their deliveries).
struct FailedAgainIndex {
  struct Latest {
    bool failed_again = true;    // false: a later run delivered the message (or one of its copies)
    std::string destination;     // where it was last sent
    std::string id;              // the id it was last sent under (the original or a copy)
    std::string new_message_id;  // the id SQS gave that copy
  };
  std::map<std::string, std::string> root_of;  // every id of a kept lineage (the root too) -> the root
  std::map<std::string, Latest> latest;        // root -> latest outcome
  std::vector<FailedAgainMessage> messages;    // every failed-again entry, in key order, then record order
  std::vector<std::pair<std::string, std::string>> unreadable;  // key, why: records left out

  // The lineage of `id`, or nullptr when no earlier replay found it failing again.
  const std::string* RootOf(const std::string& id) const;
  // True when the latest outcome of id's lineage is a re-failure (what
  // `search --failed-again` and `replay --failed-again` select).
  bool Contains(const std::string& id) const;
  // The lineage's latest outcome, or nullptr (see RootOf).
  const Latest* LatestOf(const std::string& id) const;
  // True once per lineage whose latest outcome is a re-failure: for the
  // first of its ids met (`counted` keeps the lineages already counted), so
  // a message and its archived copy count once (stats' FAILED_AGAIN).
  bool CountOnce(const std::string& id, std::set<std::string>& counted) const;
  // Feeds one record (records oldest first).
  void Add(const AuditRecord& record);
};
// Lists and reads the records; an error when the directory cannot be listed
// or a record cannot be read (a record that does not parse, or is larger
// than kMaxAuditRecordBytes, is only named in `unreadable`). Memory: the
// lineages that failed again, one record at a time.
Result<FailedAgainIndex> ReadFailedAgain(ObjectStore& store, const std::string& prefix);

// ReadFailedAgain for a long-lived reader (the dashboard, on every request):
// audit records are written once and never changed, so a call lists the
// records and reads only those added since the last call; it reads them all
// again when one went away or an older one appeared. One index per store and
// prefix; calls are serialised per cache. Memory: each index's lineages.
class FailedAgainCache {
 public:
  Result<std::shared_ptr<const FailedAgainIndex>> Read(ObjectStore& store, const std::string& prefix) DLQ_EXCLUDES(mu_);
  // How many records were read (not served from memory) so far.
  uint64_t records_read() const DLQ_EXCLUDES(mu_);

 private:
  struct Entry {
    std::vector<std::string> keys;  // the records the index holds, in order
    std::shared_ptr<const FailedAgainIndex> index;
  };
  mutable Mutex mu_;
  std::map<std::string, Entry> entries_ DLQ_GUARDED_BY(mu_);  // store description + prefix -> entry
  uint64_t records_read_ DLQ_GUARDED_BY(mu_) = 0;
};

}  // namespace dlq
