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
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
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
};

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

// The messages that failed again after a replay, as every audit record
// directly under {prefix}/_audit/ lists them: `ids` holds their original
// and their new ids (a message back in its DLQ is archived under its new id).
struct FailedAgainIndex {
  std::set<std::string> ids;
  std::vector<FailedAgainMessage> messages;                     // in key order, then record order
  std::vector<std::pair<std::string, std::string>> unreadable;  // key, why: records left out
  bool Contains(const std::string& message_id) const { return ids.count(message_id) > 0; }
};
// Lists and reads the records; an error when the directory cannot be listed
// or a record cannot be read (a record that does not parse is only named in
// `unreadable`). Memory: the failed-again messages, one record at a time.
Result<FailedAgainIndex> ReadFailedAgain(ObjectStore& store, const std::string& prefix);

}  // namespace dlq
