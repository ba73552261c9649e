// `dlq-archive ls`: what the archive holds, from its keys alone (no object is
// read): per queue and day the objects and their sizes, or every object.
#pragma once

#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include "app/archive_source.h"
#include "archive/destination.h"
#include "common/clock.h"
#include "s3/object_store.h"

namespace dlq {

struct LsCommandOptions {
  std::vector<std::string> queues;
  std::string since, until;  // on the key's date (when the batch was archived); same forms as search
  ArchiveSourceFlags source;
  bool objects = false;  // one line per object instead of per queue and day
};

// When nothing is listed and no filter was given, says so on `err` with the
// prefixes that do hold archives (FindArchivePrefixes). Returns 0, 1 (the archive cannot be listed), 2 (bad flags), 3
// (listed, but entries the store skipped are named on `err`: a file:// archive's symbolic links and special files) or
// 130 (`stop` was set while listing; nothing is printed).
int RunLsCommand(const LsCommandOptions& options, ObjectStore& store, const Destination& from, SystemTime now,
                 std::FILE* out, std::FILE* err, const std::atomic<bool>* stop = nullptr);

// Prefixes one or two levels under the store's root that hold archives
// (a `_audit/` or `queue=...` child, or a child with a `yyyymmdd/` or
// `dt=...` child), without the trailing '/', in listing order. Uses at most
// `max_lists` List calls (first pages only); list errors count as nothing
// found.
std::vector<std::string> FindArchivePrefixes(ObjectStore& store, int max_lists = 60);

struct Command;
// The `ls` entry of the command line (app/command.h).
Command LsCommand();

}  // namespace dlq
