// The causes sidecar of an archive: CauseRecords kept beside the archived
// messages, under {prefix}/_causes/{queue}/, one gzipped JSON-lines object
// per lookup run and queue, never overwritten (doc/archive-format.md,
// "Causes sidecar"). Archive readers (query/, `ls`, Athena) skip `_causes/`
// as they skip `_audit/`. Functions are thread-safe as far as the store is.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "causes/cause_record.h"
#include "common/clock.h"
#include "common/status.h"
#include "s3/object_store.h"

namespace dlq {

// "{archive_prefix}/_causes/" ("_causes/" for an empty prefix).
std::string CausesDir(std::string_view archive_prefix);
// The directory of one queue's objects: CausesDir + queue + "/".
std::string CausesQueueDir(std::string_view archive_prefix, std::string_view queue);
// The key of one run's object for `queue`:
// {prefix}/_causes/{queue}/{yyyymmddThhmmssZ}-{run_id}.jsonl.gz. Keys of one
// queue sort by the time of their run.
std::string CauseObjectKey(std::string_view archive_prefix, std::string_view queue, SystemTime run_time,
                           std::string_view run_id);

struct CauseWriteResult {
  std::vector<std::string> keys;  // objects written, one per queue
  size_t records = 0;
};

// Writes `records` (any queues) as one object per queue, create-only. An
// empty list writes nothing. The first failed Put ends the call with its
// error (objects already written stay: each is whole).
Result<CauseWriteResult> WriteCauseRecords(ObjectStore& store, std::string_view archive_prefix,
                                           const std::vector<CauseRecord>& records, SystemTime run_time);

// The latest record of every message (by looked_up_at, then by object key),
// per queue.
class CauseIndex {
 public:
  // Keeps `record` when it is newer than the one held for its message.
  void Add(CauseRecord record, const std::string& object_key = "");
  // nullptr when no record names the message in that queue.
  const CauseRecord* Find(std::string_view queue, std::string_view message_id) const;
  size_t size() const;
  bool empty() const { return size() == 0; }
  // Every record, by queue then message id.
  std::vector<const CauseRecord*> All() const;

  size_t objects = 0;  // objects read
  // Objects or lines that could not be read: "key: why" / "key line N: why".
  std::vector<std::string> unreadable;

 private:
  struct Held {
    CauseRecord record;
    std::string object_key;
  };
  std::map<std::string, std::unordered_map<std::string, Held>, std::less<>> queues_;
};

// Reads the sidecar of `queues` (every queue when empty). A missing
// `_causes/` is an empty index. Lines and objects that do not parse are
// listed in `unreadable` and skipped; a listing or Get failure fails the call.
Result<CauseIndex> ReadCauseRecords(ObjectStore& store, std::string_view archive_prefix,
                                    const std::vector<std::string>& queues = {});

}  // namespace dlq
