// `dlq-archive show MESSAGE_ID` (or `show --fingerprint ID`: the earliest
// message of that failure group): one archived message in full: every field,
// system attribute and message attribute (binary values by size and base64),
// the body (pretty-printed when it is JSON), and where it is stored (object
// key and line, and any later copies). Text output is terminal-safe
// (common/text.h TerminalSafe: the body keeps its line breaks, everything else
// is one line); --output json escapes as JSON; --raw writes the body alone,
// byte for byte as stored.
#pragma once

#include <atomic>
#include <cstdio>
#include <string>

#include "app/archive_source.h"
#include "archive/destination.h"
#include "s3/object_store.h"

namespace dlq {

struct ShowCommandOptions {
  std::string message_id;                       // may be empty when `fingerprint` is set
  std::string fingerprint, fingerprint_fields;  // as query/filter.h FilterFlags
  std::vector<std::string> queues;              // narrow the search (and prune) to these queues
  ArchiveSourceFlags source;
  std::string output = "text";  // text | json (the archive line)
  bool raw = false;             // the body alone, as stored, with no newline added (text output only)
};

// With a fingerprint the message must be in that failure group; without a
// message id the group's earliest message (by sent_at, then id) is shown.
// Text output names the message's failure group (id and key).
// Returns 0, 1 (not found, or the archive cannot be listed), 2 (bad flags) or
// 3 (found or not, but unreadable objects or lines were skipped, so a copy may
// have been missed) or 130 (`stop` was set before the archive was read; nothing
// is printed).
int RunShowCommand(const ShowCommandOptions& options, ObjectStore& store, const Destination& from, std::FILE* out,
                   std::FILE* err, const std::atomic<bool>* stop = nullptr);

// The body as shown: pretty-printed JSON (two-space indent, numbers as
// written) when it is a JSON object or array, else nullopt.
std::optional<std::string> PrettyJson(std::string_view body);

struct Command;
// The `show` entry of the command line (app/command.h).
Command ShowCommand();

}  // namespace dlq
