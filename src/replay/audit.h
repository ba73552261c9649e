// The audit trail of replays: every replay that is not a dry run stores one
// JSON document at {prefix}/_audit/<yyyymmddThhmmssZ>-<16 hex>.json in the
// archive it read from (or wherever --audit-to says; the live form needs it):
// who (caller ARN), when, what (source, filter, transform), where to, the
// counts and, per message, the original id, the new id and the outcome.
// Schema 2; schema 1 (sent_ids and failed, no new ids) is still read. The
// ids a run delivered are also in the replay ledger (replay/ledger.h), which
// reruns consult. Format: doc/replay.md.
#pragma once

#include <cstdint>
#include <map>
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
};

// The record's id: its key's file name without ".json" (what `audit show` takes).
std::string AuditIdOfKey(std::string_view key);

// "{prefix}/_audit/20250910T123000Z-<id>.json" (no leading '/' when prefix is empty).
std::string AuditKey(const std::string& prefix, SystemTime at, const std::string& id);
std::string AuditJson(const AuditRecord& record);
// Reads a stored record (outside input: fuzzed). kInvalidArgument saying
// what is wrong for anything that is not a schema 1 or 2 audit record.
Result<AuditRecord> ParseAuditRecord(std::string_view json);
// Stores the record create-only under a fresh AuditKey; returns the key.
Result<std::string> WriteAudit(ObjectStore& store, const std::string& prefix, const AuditRecord& record);

}  // namespace dlq
