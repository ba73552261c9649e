// The replay ledger: which message ids earlier replays delivered to which
// destination queue, so a rerun skips them (`replay --again` sends anyway).
//
// Stored in the audit location, beside the audit records (doc/replay.md):
//   {prefix}/_audit/sent/<dest>/<yyyymmddThhmmssZ>-<run>-<part>.ids
//       one per run, destination and part: the original ids sent there;
//   {prefix}/_audit/index/<dest>/<parts covered, 10 digits>-<16 hex>.idx
//       a compact cache: the parts it covers and the hashes of their ids.
// <dest> is the first 32 hex digits of SHA-256 of the destination URL. Every
// object is written create-only under a fresh name and never rewritten, so
// concurrent runs and crashes cannot corrupt the ledger: a torn or hostile
// index is ignored (the parts are the truth), and the index is rebuilt when a
// reader finds more than kLedgerCompactAfter parts it does not cover.
//
// Ids are kept as 64-bit hashes (the first 8 bytes of SHA-256): 8 bytes per
// id in memory; two different ids collide with probability below 1e-7 at
// 1,000,000 ids (the message would be reported as skipped). Thread-compatible:
// one thread drives a ReplayLedger.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "s3/object_store.h"

namespace dlq {

inline constexpr size_t kLedgerCompactAfter = 8;  // parts outside the index before a reader rebuilds it
inline constexpr size_t kLedgerPartIds = 5000;    // ids per part object written during a run

uint64_t LedgerIdHash(std::string_view message_id);
// The <dest> component of the keys for a destination URL.
std::string LedgerDestinationKey(std::string_view destination_url);

// A part: the ids one run sent to one destination.
struct LedgerPart {
  std::string destination;
  std::vector<std::string> ids;
};
std::string SerializeLedgerPart(const LedgerPart& part);
// kInvalidArgument for anything that is not a part (outside input: fuzzed).
Result<LedgerPart> ParseLedgerPart(std::string_view text);

// An index: the parts (by file name) it covers and the sorted, unique
// hashes of their ids.
struct LedgerIndex {
  std::string destination;
  std::vector<std::string> parts;
  std::vector<uint64_t> hashes;
};
std::string SerializeLedgerIndex(const LedgerIndex& index);
Result<LedgerIndex> ParseLedgerIndex(std::string_view text);

// What loading one destination took, for the summary and the benchmark.
struct LedgerLoadStats {
  uint64_t parts_read = 0;
  uint64_t index_ids = 0;             // ids taken from an index
  bool index_written = false;         // this load rebuilt the index
  std::vector<std::string> warnings;  // unreadable index or part objects (named)
};

class ReplayLedger {
 public:
  // `prefix`: the audit location's prefix (ArchivePrefix). `store` must outlive it.
  ReplayLedger(ObjectStore& store, std::string prefix, Clock& clock);

  // True when an earlier run recorded `message_id` as delivered to
  // `destination_url`. The first question about a destination loads its
  // index and parts; an object that cannot be listed or read is an error
  // (never "not sent"); a malformed part is too, a malformed index is skipped.
  Result<bool> AlreadySent(const std::string& destination_url, std::string_view message_id);

  // Records ids sent by this run; parts are written every kLedgerPartIds ids
  // of a destination and by Flush.
  Status RecordSent(const std::string& destination_url, const std::string& message_id);
  Status Flush();

  // Loads rebuild no index (a dry run writes nothing).
  void DisableIndexRebuild() { rebuild_index_ = false; }

  const LedgerLoadStats& load_stats() const { return load_stats_; }
  const std::string& run_id() const { return run_id_; }

 private:
  Status Load(const std::string& destination_url);
  Status WritePart(const std::string& destination_url, std::vector<std::string>& ids);
  std::string Dir(const char* kind, const std::string& destination_url) const;

  ObjectStore& store_;
  std::string prefix_;
  Clock& clock_;
  std::string run_stamp_, run_id_;
  uint64_t next_part_ = 0;
  bool rebuild_index_ = true;
  std::map<std::string, std::vector<uint64_t>> sent_;    // destination URL -> sorted hashes (loaded)
  std::map<std::string, std::vector<std::string>> new_;  // destination URL -> ids not yet written
  LedgerLoadStats load_stats_;
};

}  // namespace dlq
