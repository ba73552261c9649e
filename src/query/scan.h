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
// Memory is bounded per scan, whatever the archive or one object holds: the
// sorted key list (about 100 bytes an object), the de-duplication table
// (dedup_memory_bytes: 16-byte hashes, 75% full at most) and what the workers
// reserve against memory_budget_bytes, shared by all of them: each object's
// compressed bytes (an object over 1/8 of the budget is refused, reported
// with its key), its decompression window (objects are decompressed and split
// into lines a piece at a time, never held whole: a line grows the window up
// to the line limit, min(max_line_bytes, budget/8 - 256 KiB); a longer line
// is skipped as damaged without being held, reported with key and line) and
// its matching records until they are delivered (estimated as the line's
// size + 512 bytes). Objects other than the one next in delivery order share
// half the budget and wait for room; the next one always has room for its
// own working set, which is what keeps the scan moving, so the reserved total
// never exceeds the budget (ScanStats::peak_reserved_bytes says how close it
// came). When more distinct messages match than the
// de-duplication table holds, the hash space is split: this pass goes on with
// the lower half and the upper half is finished by another pass over the same
// key list, which re-reads the objects (so an archive read takes
// ceil(matches / capacity) passes at worst).
//
// Stopping: ScanOptions::stop and ScanOptions::deadline are checked while
// listing, before every object, after every decompressed piece of at most
// 256 KiB, per delivered record and while waiting for memory or results, so
// a scan ends within a few milliseconds of either. An object GET in flight
// is not interrupted: the scan returns once its workers' GETs have returned
// (bounded by the store's own timeouts).
//
// Damage is reported, never fatal: an object that cannot be fetched or
// decompressed and a line that cannot be parsed (including a newer `schema`)
// are counted and reported with key and line, and the rest is still read.
// Only a failing listing ends the scan with an error.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "archive/destination.h"
#include "archive/key_layout.h"
#include "archive/record.h"
#include "common/clock.h"
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
  // Checked with `stop`: once clock->SteadyNow() reaches it, ListArchive ends
  // with kDeadlineExceeded. `clock` must be set with a deadline.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  const Clock* clock = nullptr;
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

// Every object under the archive (except `{prefix}/_audit/` and `{prefix}/_causes/`) that the options
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
  // Decompressed size limit per object: the rest of a larger one is reported
  // as damage. It bounds time, not memory (objects are read in pieces).
  size_t max_object_bytes = size_t{1} << 30;
  // A line longer than this is skipped as damaged. An SQS message is at most
  // 1 MiB of body and attributes; JSON escaping grows text at most 6x
  // (\u00XX for control characters), so a genuine record line stays under
  // about 6.5 MiB and 16 MiB leaves room for any writer's formatting.
  size_t max_line_bytes = size_t{16} << 20;
  // Shared by all workers (see above); at least 4 MiB. The default keeps a
  // 16-way scan of ordinary archive objects (a few MiB each) at full speed.
  size_t memory_budget_bytes = size_t{256} << 20;
  size_t dedup_memory_bytes = size_t{128} << 20;  // de-duplication table (see above); at least 4 KiB
  size_t max_reported_errors = 100;               // ScanStats::errors is capped; counts are not
  // Once true, the scan ends with ScanStats::stop_reason kCancelled (or
  // kCancelled as an error if it was still listing). Not owned; may be null.
  // A signal handler, or the HTTP server for a client that went away, sets it.
  const std::atomic<bool>* stop = nullptr;
  // Once clock->SteadyNow() reaches it the scan ends with stop_reason
  // kDeadline (or kDeadlineExceeded as an error if it was still listing).
  std::optional<std::chrono::steady_clock::time_point> deadline;
  const Clock* clock = nullptr;  // for the deadline; DefaultClock() when null. Not owned.
  // The time one object may take, from its GET to its last line, not
  // counting waits for memory while other objects are delivered (measured
  // with `clock`). The rest of a slower object is not read: it is named in
  // ScanStats::cut_short (and reported as damage), and the scan moves on, so
  // one slow object cannot hold back the others' results until the deadline.
  // Unset: no bound per object.
  std::optional<std::chrono::steady_clock::duration> max_object_time;
  // Test hook: called with the reserved total after every change, from any
  // worker, under the scan's lock (so calls never overlap). May be empty.
  std::function<void(size_t reserved)> on_reserved;
};

// Why a scan ended before reading everything it listed.
enum class ScanStop {
  kNone,       // it did not (it finished, or the callback returned false)
  kCancelled,  // ScanOptions::stop was set
  kDeadline,   // ScanOptions::deadline passed
};
// "cancelled", "deadline"; "" for kNone.
std::string_view ScanStopName(ScanStop stop);

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

// An object whose share of the scan's time ran out (ScanOptions::max_object_time).
struct CutShortObject {
  std::string key;
  uint64_t lines_read = 0;  // complete lines read before it was cut
  uint64_t bytes_read = 0;  // decompressed
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
  // Objects cut short, in key order (at most max_reported_errors; each is
  // also counted in skipped_lines and reported in errors).
  std::vector<CutShortObject> cut_short;
  bool stopped = false;  // ended early by ScanOptions::stop or deadline (stop_reason says which)
  ScanStop stop_reason = ScanStop::kNone;
  uint64_t objects_listed = 0;  // objects the listing returned (after pruning)
  // Objects whose every record was delivered, in the last pass started; with
  // objects_listed, how far a stopped scan got.
  uint64_t objects_done = 0;
  size_t peak_reserved_bytes = 0;  // the most memory_budget_bytes ever had reserved at once

  bool complete() const { return skipped_lines == 0 && skipped_objects == 0 && skipped_entries.empty(); }
};

// Calls `fn` for each matching record, one call at a time (never
// concurrently), in key then line order within a pass; `fn` returns false to
// stop. kInvalidArgument for a filter whose regex does not compile or a
// memory budget under 4 MiB; the listing's error when the archive cannot be
// listed (kCancelled / kDeadlineExceeded when it was stopped while listing).
Result<ScanStats> ScanArchive(ObjectStore& store, const Destination& from, const ScanOptions& options,
                              const std::function<bool(const ArchiveRecord&, const RecordLocation&)>& fn);

}  // namespace dlq
