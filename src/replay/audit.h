// The audit trail of replays: every run that sends anything stores one JSON
// document at {prefix}/_audit/<yyyymmddThhmmssZ>-<16 hex>.json in the archive
// store it read from (or, for the live form, wherever --audit-to says):
// who (caller ARN), when, what (source, filter, transform), where to, the
// counts and the ids sent and failed. Format: doc/replay.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>
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
  ReplayStats stats;
  std::map<std::string, uint64_t> sent_by_destination;
  std::vector<std::string> sent_ids;
  std::vector<ReplayFailure> failures;
};

// "{prefix}/_audit/20250910T123000Z-<id>.json" (no leading '/' when prefix is empty).
std::string AuditKey(const std::string& prefix, SystemTime at, const std::string& id);
std::string AuditJson(const AuditRecord& record);
// Stores the record create-only under a fresh AuditKey; returns the key.
Result<std::string> WriteAudit(ObjectStore& store, const std::string& prefix, const AuditRecord& record);

}  // namespace dlq
