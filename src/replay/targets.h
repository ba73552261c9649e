// Where replayed messages go. TargetResolver maps each record to a verified
// destination queue, either one fixed queue (`--to-queue`) or the queue the
// message originally failed from (`--to-source`): its DeadLetterQueueSourceArn
// when the archive has it, else the DLQ's single redrive source
// (ListDeadLetterSourceQueues). Every destination is checked to exist
// (GetQueueUrl/GetQueueAttributes) the first time it is named; results,
// failures included, are cached, so resolving every record of an archive
// costs one lookup per distinct queue. Not thread-safe; `sqs` must outlive it.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "archive/record.h"
#include "common/status.h"
#include "replay/replay_terms.h"
#include "sqs/sqs_client.h"

namespace dlq {

struct ReplayTarget {
  std::string name;
  std::string url;
  std::string arn;
  bool fifo = false;
  bool content_based_deduplication = false;
};

// Resolves a queue name, URL or ARN and reads its attributes. kNotFound
// naming the queue when it does not exist; kInvalidArgument for an ARN of
// another region.
Result<ReplayTarget> ResolveReplayTarget(QueueClient& sqs, const std::string& name_url_or_arn,
                                         const std::string& region);

class TargetResolver {
 public:
  // Every record goes to `queue` (name, URL or ARN).
  static std::unique_ptr<TargetResolver> Fixed(QueueClient& sqs, std::string queue, std::string region);
  // Every record goes to the queue it failed from.
  static std::unique_ptr<TargetResolver> ToSource(QueueClient& sqs, std::string region);

  // The destination of `record`. kInvalidArgument when its source cannot be
  // told (no DeadLetterQueueSourceArn and the DLQ has no or several redrive
  // sources, the message says which), or when its DeadLetterQueueSourceArn
  // names another account or region than its DLQ and cross-account sources
  // are not allowed; kNotFound when the queue is missing.
  Result<ReplayTarget> Resolve(const ArchiveRecord& record);
  // To source only: let a record go to a source queue in another account or
  // region than its DLQ. Each such route is then listed by CrossAccountRoutes.
  void AllowCrossAccount(bool allow) { allow_cross_account_ = allow; }
  // How refusals name the caller's knobs (replay/replay_terms.h).
  void UseTerms(ReplayTerms terms) { terms_ = std::move(terms); }
  // "DLQ (account A, region R) -> source ARN", one per distinct route taken
  // across accounts or regions, sorted.
  std::vector<std::string> CrossAccountRoutes() const { return {routes_.begin(), routes_.end()}; }
  // "queue URL" for --to-queue, "source" for --to-source: the checkpoint
  // identity and the audit record use it.
  const std::string& Describe() const { return describe_; }
  // Destinations resolved so far, by URL.
  std::map<std::string, ReplayTarget> Resolved() const;

 private:
  TargetResolver(QueueClient& sqs, std::string region, std::string fixed);
  Result<ReplayTarget> Lookup(const std::string& name_url_or_arn);
  Result<ReplayTarget> SingleRedriveSource(const ArchiveRecord& record);
  Status CheckSameAccount(const ArchiveRecord& record);

  QueueClient& sqs_;
  std::string region_;
  std::string fixed_;  // empty: to source
  std::string describe_;
  std::map<std::string, Result<ReplayTarget>> by_name_;  // name/URL/ARN -> resolution
  std::map<std::string, Result<ReplayTarget>> by_dlq_;   // DLQ URL or name -> its single source
  bool allow_cross_account_ = false;
  ReplayTerms terms_;
  std::set<std::string> routes_;  // cross-account routes taken
};

}  // namespace dlq
