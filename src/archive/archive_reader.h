// ArchiveReader: streams the records stored under a prefix of an ObjectStore,
// de-duplicated by (queue, message_id) (guarantee 3). Corrupt objects and
// lines are reported with key and line number and skipped; only storage
// errors (List/Get failing) stop the scan. Not thread-safe; the store must
// outlive the reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "archive/record.h"
#include "common/clock.h"
#include "common/status.h"
#include "s3/object_store.h"

namespace dlq {

// Time bounds are half-open: [from, to).
struct RecordFilter {
  std::string queue;                             // empty: every queue
  std::optional<SystemTime> sent_from, sent_to;  // records without sent_at never match a sent bound
  std::optional<SystemTime> archived_from, archived_to;
  std::string body_contains;  // plain substring, empty: no filter
  std::string body_regex;     // ECMAScript regex (std::regex_search), empty: no filter

  bool Matches(const ArchiveRecord& r) const;  // ignores body_regex
};

struct ArchiveReaderOptions {
  std::string prefix;  // listing prefix, e.g. "dlq-archive/orders-dlq/"
  RecordFilter filter;
  bool deduplicate = true;
  size_t max_object_bytes = size_t{1} << 30;  // decompressed size limit per object
  size_t max_reported_errors = 100;           // ReadStats::errors is capped; counts are not
};

struct ReadError {
  std::string key;
  uint64_t line = 0;  // 1-based; 0 when the whole object is unreadable
  std::string message;
};

struct ReadStats {
  uint64_t objects = 0;
  uint64_t lines = 0;
  uint64_t records = 0;     // delivered to the callback
  uint64_t duplicates = 0;  // skipped by de-duplication
  uint64_t filtered = 0;    // skipped by the filter
  uint64_t corrupt_lines = 0;
  uint64_t corrupt_objects = 0;
  std::vector<ReadError> errors;  // first max_reported_errors problems
};

struct RecordLocation {
  const std::string& key;
  uint64_t line;
};

class ArchiveReader {
 public:
  ArchiveReader(ObjectStore& store, ArchiveReaderOptions options);

  // Calls `fn` for each matching record, objects in listing (key) order and
  // lines in file order; the first copy of a duplicated message wins. `fn`
  // returns false to stop early. kInvalidArgument for a bad body_regex;
  // storage errors carry the key or prefix as context.
  Result<ReadStats> ForEach(const std::function<bool(const ArchiveRecord&, const RecordLocation&)>& fn);

 private:
  ObjectStore& store_;
  ArchiveReaderOptions options_;
};

}  // namespace dlq
