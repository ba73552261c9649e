// KeptCauses: the causes an archive's sidecar keeps (causes/sidecar.h),
// applied to a stats report (query/stats.h): per group, the messages that have
// an answer, then each group's GroupCause ("found for k of n", or the most
// frequent honest absence) and the groups sharing a cause merged
// (MergeGroupsByCause). Read-only: it looks nothing up. `stats` and the
// dashboard's failure groups share it. Not thread-safe: Observe is called by
// the scan one record at a time.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "archive/record.h"
#include "causes/cause_record.h"
#include "causes/sidecar.h"
#include "query/stats.h"

namespace dlq {

class KeptCauses {
 public:
  explicit KeptCauses(CauseIndex index = {}) : index_(std::move(index)) {}

  // Every record the stats count, with its group's key as StatsAggregator
  // keeps it (nullopt: no value). Returns the record's kept answer, or
  // nullptr; the pointer stays valid until the next Add.
  const CauseRecord* Observe(const std::optional<std::string>& key, const ArchiveRecord& record);

  // A new answer (a lookup's): kept in the index, and counted in the group its
  // group_key names when that group was observed.
  void Add(CauseRecord record);

  const CauseIndex& index() const { return index_; }

  // Each observed group's GroupCause, then MergeGroupsByCause. Changes
  // nothing when no group's messages have an answer.
  void Apply(StatsReport& report) const;

 private:
  static std::string Slot(const std::optional<std::string>& key) { return key ? "=" + *key : "!"; }

  CauseIndex index_;
  // By slot: the (queue, message id) of the group's messages with an answer.
  std::map<std::string, std::set<std::pair<std::string, std::string>>> answered_;
};

}  // namespace dlq
