// Failure statistics: records grouped by queue, day, attribute, JSON value or
// body fingerprint, with per group a count, the first and last time seen and
// one example message id.
//
// Memory is bounded: at most `max_groups` groups are kept (100,000 by
// default); once full, records of groups not yet seen are counted together in
// one "(other)" group and the report says so. A group key is at most
// kMaxGroupKeyBytes (longer keys are cut and keep a hash, see CapKey in
// query/fingerprint.h), stored once: 100,000 groups of 512-byte keys were measured at
// 79 MB while adding and 91 MB at the peak of Finish; typical keys are far
// shorter. De-duplication is the scan's
// job.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "archive/record.h"
#include "common/clock.h"
#include "common/status.h"
#include "query/filter.h"
#include "query/fingerprint.h"
#include "query/json_path.h"

namespace dlq {

inline constexpr size_t kDefaultMaxGroups = 100'000;
inline constexpr size_t kMaxGroupKeyBytes = 512;

// What `--group-by` names.
struct GroupBy {
  enum class Kind { kQueue, kDay, kAttribute, kJsonPath, kFingerprint };
  Kind kind = Kind::kQueue;
  std::string attribute;           // kAttribute: the attribute name
  std::optional<JsonPath> path;    // kJsonPath
  std::string text;                // as given, for the report
  FingerprintOptions fingerprint;  // kFingerprint: the discriminator fields

  // "queue", "day", "attr:NAME", "json:PATH" or "fingerprint".
  // kInvalidArgument saying what is wrong and what is accepted.
  static Result<GroupBy> Parse(std::string_view text);

  // The group of `record`; nullopt when the record has no value for it (no
  // such attribute, path absent or body not JSON, day without sent_at).
  //   queue: record.queue
  //   day: the UTC day (YYYY-MM-DD) of sent_at, or of archived_at with
  //        TimeField::kArchived
  //   attr:NAME: the message attribute's string value (Binary: "base64:" and
  //        the base64 of its bytes); else the system attribute NAME
  //        (e.g. MessageGroupId, SenderId)
  //   json:PATH: JsonPath::Lookup of the body
  //   fingerprint: FailureGroupKey of the record (query/fingerprint.h)
  std::optional<std::string> KeyOf(const ArchiveRecord& record, TimeField by) const;
};

// Why a group's messages failed, from their consumer's logs (causes/): what
// `stats` shows beside a group when causes are known.
struct GroupCause {
  std::string key;            // the cause's grouping key (causes/cause.h CauseKey); empty when none was found
  std::string type, message;  // of one message with that cause
  uint64_t found = 0;         // messages with an answer whose cause is `key`
  uint64_t answered = 0;      // messages with an answer (found or an honest absence)
  std::string absence;        // no cause found: the most frequent status ("not_mentioned")
  std::string reason;         // no cause found: one message's reason for it
  std::vector<std::string> merged_keys;  // the keys of the groups merged into this one (same cause)
};

struct GroupStats {
  std::optional<std::string> key;  // nullopt: records without a value
  uint64_t count = 0;
  std::optional<SystemTime> first_seen, last_seen;  // of the time field; unset when no record had it
  // The message id of the group's earliest record (by the time field, then
  // by id), so the example does not depend on the scan's order.
  std::string example_id;
  uint64_t failed_again = 0;        // records that failed again after a replay (when counted)
  std::optional<GroupCause> cause;  // set by the caller when causes are known

  void Add(const ArchiveRecord& record, std::optional<SystemTime> t);

 private:
  std::optional<SystemTime> example_time_;
};

struct StatsReport {
  std::string group_by;  // GroupBy::text
  TimeField by = TimeField::kSent;
  bool group_ids = false;          // each group has a GroupId (fingerprint groups: what --fingerprint takes)
  std::vector<GroupStats> groups;  // count descending, then key (no-value group last among equals)
  // Records whose group arrived after max_groups groups existed.
  std::optional<GroupStats> other;
  size_t max_groups = kDefaultMaxGroups;
  uint64_t records = 0;               // every record added, `other` included
  bool failed_again_counted = false;  // GroupStats::failed_again is filled (a column / "failed_again")
  bool causes = false;                // some group has a GroupCause (columns FOUND, CAUSE / "cause")
};

// Groups whose found causes share a key become one group (the cause is the
// better key than the body's shape): counts and failed_again summed, the
// earliest first_seen and latest last_seen, the largest group's key and
// example, the others' keys in cause->merged_keys; then sorted again. Sets
// report.causes when any group has a cause. "(other)" is left as it is.
void MergeGroupsByCause(StatsReport& report);

// Not thread-safe: the scan calls Add from one thread at a time.
class StatsAggregator {
 public:
  StatsAggregator(GroupBy group_by, TimeField by, size_t max_groups = kDefaultMaxGroups);

  // Counts, per group, the records for which `is_failed_again` is true
  // (stats_command: ids of the archive's failed-again messages). Set before Add.
  void CountFailedAgain(std::function<bool(const ArchiveRecord&)> is_failed_again) {
    is_failed_again_ = std::move(is_failed_again);
  }
  // Calls `observer` from Add with every record and its group's key as kept
  // (cut by CapKey; nullopt: no value), e.g. to sample each group. Set before Add.
  void ObserveRecords(std::function<void(const std::optional<std::string>& key, const ArchiveRecord&)> observer) {
    observer_ = std::move(observer);
  }
  void Add(const ArchiveRecord& record);
  size_t group_count() const { return groups_.size(); }
  StatsReport Finish() &&;

 private:
  GroupBy group_by_;
  TimeField by_;
  size_t max_groups_;
  uint64_t records_ = 0;
  // Keyed by "=" + key, or "!" for records without a value.
  std::unordered_map<std::string, GroupStats> groups_;
  std::optional<GroupStats> other_;
  std::function<bool(const ArchiveRecord&)> is_failed_again_;
  std::function<void(const std::optional<std::string>&, const ArchiveRecord&)> observer_;
};

// Renderings of a report. Table: one line per group (COUNT, FIRST SEEN, LAST
// SEEN, EXAMPLE ID, with group_ids ID, when counted FAILED_AGAIN, with causes FOUND
// ("k/n") and CAUSE, then GROUP; ids, causes and groups
// terminal-safe (common/text.h), long groups cut after the id) and a summary
// line. JSON: one document with every group. JSONL: one object per group
// ("(other)" last, with "other": true). With group_ids each group but
// "(other)" has an "id"; a group with a GroupCause has a "cause" object.
std::string RenderStatsTable(const StatsReport& report);
std::string RenderStatsJson(const StatsReport& report);
std::string RenderStatsJsonLines(const StatsReport& report);

}  // namespace dlq
