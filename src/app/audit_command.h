// `dlq-archive audit ls|show`: the replay audit trail of an archive (or of an
// --audit-to location): `ls` lists every record under {prefix}/_audit/ (when,
// who, outcome, counts, where to), in the order they finished; `show ID` prints one in full
// with each message's original id, new id and outcome. Text output is
// terminal-safe; --output json writes JSON. Records are outside input: one
// that does not parse is named on `err` and left out (exit 3), never trusted.
#pragma once

#include <atomic>
#include <cstdio>
#include <string>

#include "archive/destination.h"
#include "s3/object_store.h"

namespace dlq {

struct AuditCommandOptions {
  std::string id;               // show: the record's id (its file name without .json), or its 16-hex suffix
  std::string output = "text";  // text | json
};

// Returns 0; 1 (the location cannot be listed or read, or show found no such
// record); 3 (listed, but unreadable records were left out); 130 (`stop`).
int RunAuditLsCommand(const AuditCommandOptions& options, ObjectStore& store, const Destination& from, std::FILE* out,
                      std::FILE* err, const std::atomic<bool>* stop = nullptr);
int RunAuditShowCommand(const AuditCommandOptions& options, ObjectStore& store, const Destination& from, std::FILE* out,
                        std::FILE* err);

struct Command;
// The `audit` entry of the command line (app/command.h).
Command AuditCommand();

}  // namespace dlq
