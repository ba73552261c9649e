// The causes side of `stats`: per group, the causes the archive's sidecar
// keeps for its messages (causes/kept_causes.h); with --causes, a lookup of a
// sample of each group's messages that have none (causes/explain.h), written
// to the sidecar; then each group's cause ("found for k of n") and the groups
// that share a cause merged (query/stats.h MergeGroupsByCause). Not
// thread-safe: Observe is called by the scan one record at a time.
#pragma once

#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "app/cause_flags.h"
#include "archive/destination.h"
#include "archive/record.h"
#include "causes/explain.h"
#include "causes/kept_causes.h"
#include "causes/sidecar.h"
#include "query/stats.h"
#include "s3/object_store.h"

namespace dlq {

class StatsCauses {
 public:
  StatsCauses(CauseFlags flags, CauseIndex known);

  // Every record the stats count, with its group's key as StatsAggregator
  // keeps it (nullopt: no value).
  void Observe(const std::optional<std::string>& key, const ArchiveRecord& record);

  // Looks up the samples that have no reusable answer, queue by queue, within
  // the flags' call cap; keeps the answers in the sidecar under `from`. What
  // was found and the calls made go to `err`. Failures of the lookup are the
  // records' statuses; a sidecar that cannot be written is a warning.
  void LookUp(ObjectStore& store, const Destination& from, const ExplainClients& clients, std::FILE* err);

  // Each group's GroupCause, then MergeGroupsByCause. Changes nothing when
  // no group's messages have an answer.
  void Apply(StatsReport& report) const { kept_.Apply(report); }

 private:
  struct Group {
    std::vector<LookupMessage> samples;  // at most flags_.samples, kept answers first, then the earliest
    std::vector<bool> reusable;          // per sample
  };
  static std::string Slot(const std::optional<std::string>& key) { return key ? "=" + *key : "!"; }
  void AddSample(Group& g, LookupMessage m, bool reusable) const;

  CauseFlags flags_;
  KeptCauses kept_;
  std::map<std::string, Group> groups_;      // by slot (with --causes)
  std::map<std::string, QueueInfo> queues_;  // by name, from the records
};

}  // namespace dlq
