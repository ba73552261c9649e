// The archive scan engine behind search, show, stats and replay.
//
// ListArchive walks the archive's keys level by level through the key
// layouts that may have written them (KeyPattern) and prunes whole
// partitions whose queue or date the filter excludes; keys no layout
// explains are listed unpruned, so pruning never hides an object.
// ScanArchive fetches and decodes the listed objects on `parallelism`
// workers, rejects most lines with a cheap substring test on the raw line
// before parsing (see doc/querying.md, "How search reads the archive"), fully
// decodes only the survivors and delivers matches in key order, then line
// order, de-duplicated by (queue, message_id): the first copy wins.
//
// Memory is bounded whatever the archive size: the sorted key list (about
// 100 bytes an object), at most parallelism + 2 objects in flight (each at
// most max_object_bytes decompressed, plus its matching records), and the
// de-duplication table (dedup_memory_bytes: 16-byte hashes, 75% full at
// most). When more distinct messages match than the table holds, the hash
// space is split: this pass goes on with the lower half and the upper half is
// finished by another pass over the same key list, which re-reads the
// objects (so an archive read takes ceil(matches / capacity) passes at worst).
//
// Damage is reported, never fatal: an object that cannot be fetched or
// decompressed and a line that cannot be parsed (including a newer `schema`)
// are counted and reported with key and line, and the rest is still read.
// Only a failing listing ends the scan with an error.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "archive/destination.h"
#include "archive/key_layout.h"
#include "archive/record.h"
#include "common/status.h"
#include "query/filter.h"
#include "query/key_pattern.h"
#include "s3/object_store.h"

namespace dlq {

// Key layouts a reader assumes: `templates` if given, else the default and
// the Hive template. {prefix} is the destination's prefix, or "dlq-archive"
// when it has none (as `archive --to` writes).
struct ArchiveLayouts {
  std::vector<KeyTemplate> templates;
};
std::vector<KeyPattern> LayoutPatterns(const ArchiveLayouts& layouts, const Destination& from);

// An archive object as listed, with what its key says (queue and date when a
// layout matched it).
struct ArchiveObject {
  ObjectInfo info;
  KeyFacts facts;
  bool matched = false;  // a layout explained the key
};

struct ListOptions {
  ArchiveLayouts layouts;
  std::vector<std::string> queues;  // prune other queues; empty: all
  // Prune partitions whose key time span lies entirely outside [since, until).
  std::optional<SystemTime> since, until;
  // Checked before every List call: once true, ListArchive ends with
  // kCancelled. Not owned; may be null.
  const std::atomic<bool>* stop = nullptr;
};

struct ListStats {
  uint64_t list_calls = 0;
  uint64_t pruned_prefixes = 0;  // partitions skipped without listing inside them
  // A key no layout explains, seen in the first page of keys; when set,
  // nothing was pruned (pass the archive's key template to prune).
  std::string unrecognised_key;
  // What the store's listings left out (a file:// archive's symbolic links
  // and special files), by path, each once: not read, so results may be
  // incomplete.
  std::vector<SkippedEntry> skipped;
};

// Every object under the archive (except `{prefix}/_audit/`) that the options
// do not prune, sorted by key. Objects whose key no layout explains are kept,
// and when the first page of keys holds one, nothing is pruned at all (a
// level of an unknown layout could be mistaken for a queue or a date).
// Errors: the store's listing error with the prefix as context.
Result<std::vector<ArchiveObject>> ListArchive(ObjectStore& store, const Destination& from, const ListOptions& options,
                                               ListStats* stats = nullptr);

struct ScanOptions {
  Filter filter;
  bool deduplicate = true;  // by (queue, message_id) across objects (the archive is at-least-once)
  int parallelism = 0;      // fetch/decode workers; 0: the hardware threads for file://, 16 for s3://
  ArchiveLayouts layouts;
  size_t max_object_bytes = size_t{1} << 30;      // decompressed size limit per object
  size_t dedup_memory_bytes = size_t{128} << 20;  // de-duplication table (see above); at least 4 KiB
  size_t max_reported_errors = 100;               // ScanStats::errors is capped; counts are not
  // Checked while listing and after every object: once true, the scan ends
  // with ScanStats::stopped (kCancelled if it was still listing). Not owned;
  // may be null. A signal handler sets it.
  const std::atomic<bool>* stop = nullptr;
};

// A problem met while reading: `line` is 1-based, 0 when the whole object is
// unreadable.
struct ReadError {
  std::string key;
  uint64_t line = 0;
  std::string message;
};

// Where a delivered record is stored.
struct RecordLocation {
  const std::string& key;
  uint64_t line;
};

struct ScanStats {
  uint64_t objects = 0;           // objects fetched (each pass counts)
  uint64_t compressed_bytes = 0;  // fetched
  uint64_t bytes = 0;             // decompressed
  uint64_t lines = 0;             // non-empty lines seen
  uint64_t parsed = 0;            // lines fully decoded (the rest failed the raw-line prefilter)
  uint64_t records = 0;           // delivered to the callback
  uint64_t duplicates = 0;        // matching copies dropped by de-duplication
  uint64_t skipped_lines = 0;     // unparseable lines and the cut line of a truncated object
  uint64_t skipped_objects = 0;   // objects that could not be fetched or decompressed at all
  uint64_t pruned_prefixes = 0;
  std::string unrecognised_key;               // see ListStats
  std::vector<SkippedEntry> skipped_entries;  // see ListStats::skipped
  int passes = 0;
  std::vector<ReadError> errors;  // the first max_reported_errors problems, with key and line
  bool stopped = false;           // ended early by ScanOptions::stop

  bool complete() const { return skipped_lines == 0 && skipped_objects == 0 && skipped_entries.empty(); }
};

// Calls `fn` for each matching record, one call at a time (never
// concurrently), in key then line order within a pass; `fn` returns false to
// stop. kInvalidArgument for a filter whose regex does not compile; the
// listing's error when the archive cannot be listed.
Result<ScanStats> ScanArchive(ObjectStore& store, const Destination& from, const ScanOptions& options,
                              const std::function<bool(const ArchiveRecord&, const RecordLocation&)>& fn);

}  // namespace dlq
