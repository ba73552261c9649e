// Where replayed messages go. TargetResolver maps each record to a verified
// destination: one fixed queue (`--to-queue`), the queue the message
// originally failed from (`--to-source`: its DeadLetterQueueSourceArn when the
// archive has it, else the DLQ's single redrive source,
// ListDeadLetterSourceQueues), or its origin when that is not an SQS queue
// (`--to-origin`: a Lambda function, an EventBridge target, an SNS
// subscription's endpoint; replay/origins.h). Every destination is checked to exist
// (GetQueueUrl/GetQueueAttributes) the first time it is named; results,
// failures included, are cached, so resolving every record of an archive
// costs one lookup per distinct queue. Not thread-safe; `sqs` must outlive it.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "archive/record.h"
#include "common/status.h"
#include "replay/replay_terms.h"
#include "sqs/sqs_client.h"

namespace dlq {

class OriginResolver;

// What a destination is. Every kind but kQueue is an origin (--to-origin).
enum class TargetKind {
  kQueue,     // SendMessageBatch
  kFunction,  // a Lambda function: Invoke (Event; a guarded run's canary RequestResponse)
  kTopic,     // an SNS topic (an EventBridge rule's target): Publish
  kBus,       // an EventBridge bus (an EventBridge rule's target): PutEvents
  kHttp,      // an SNS subscription's HTTP/S endpoint: POST, as SNS delivers
};
std::string_view TargetKindName(TargetKind kind);  // "queue", "function", "topic", "bus", "http"

// How a dead-letter message becomes what goes to its origin.
enum class PayloadShape {
  kMessage,         // the body (and, to a queue, the message attributes) as they are
  kRequestPayload,  // a Lambda on-failure destination record: its requestPayload's exact text
  kSnsLambdaEvent,  // an SNS envelope wrapped as the event SNS gives a subscribed function
  kEvent,           // an EventBridge event put on a bus again (PutEventsEntryFromEvent)
};

struct ReplayTarget {
  std::string name;
  std::string url;  // a queue's URL; for an origin its key: the function ARN (qualifier kept), topic/bus ARN, URL
  std::string arn;
  bool fifo = false;
  bool content_based_deduplication = false;
  TargetKind kind = TargetKind::kQueue;
  PayloadShape shape = PayloadShape::kMessage;
  // To a queue: the dead-letter message's attributes go along. False when the
  // origin added them (EventBridge's RULE_ARN, ...) to say why it failed.
  bool keep_attributes = true;
  std::string qualifier;         // kFunction: version or alias; empty: $LATEST
  std::string subscription_arn;  // an SNS subscription's endpoint (kHttp, kSnsLambdaEvent)
  std::string topic_arn;         // that subscription's topic
  std::string dlq_arn;           // kFunction: its DeadLetterConfig target (where its re-failures land); "" none
  int timeout_seconds = 0;       // kFunction: its configured timeout; 0 unknown
  // kFunction: its EventInvokeConfig (GetFunctionEventInvokeConfig): the
  // OnFailure destination that gets a record of each failed event ("" none),
  // and the retries Lambda makes (nullopt: its default, 2). When the call
  // failed, `invoke_config_error` says why (a guarded run needs to know
  // where re-failures land; a plain one does not).
  std::string on_failure_arn;
  std::optional<int> max_retry_attempts;
  std::string invoke_config_error;
  std::string how;  // how the origin was found, for the dry run and the audit ("" for queues)
  bool origin() const { return kind != TargetKind::kQueue || !how.empty(); }
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
  // Every record goes back where it came from (replay/origins.h), which the
  // resolver decides; it must outlive this one.
  static std::unique_ptr<TargetResolver> ToOrigin(QueueClient& sqs, std::string region, OriginResolver& origins);

  // The destination of `record`. kInvalidArgument when its source cannot be
  // told (no DeadLetterQueueSourceArn and the DLQ has no or several redrive
  // sources, the message says which), or when its DeadLetterQueueSourceArn
  // names another account or region than its DLQ and cross-account sources
  // are not allowed; kNotFound when the queue is missing.
  Result<ReplayTarget> Resolve(const ArchiveRecord& record);
  // To source only: let a record go to a source queue in another account or
  // region than its DLQ. Each such route is then listed by CrossAccountRoutes.
  // To origin: the same for a function or target in another account or region.
  void AllowCrossAccount(bool allow);
  // How refusals name the caller's knobs (replay/replay_terms.h).
  void UseTerms(ReplayTerms terms);
  // "DLQ (account A, region R) -> source ARN", one per distinct route taken
  // across accounts or regions, sorted.
  std::vector<std::string> CrossAccountRoutes() const;
  // True for --to-origin: a record whose origin cannot be told is refused on
  // its own (counted, named, not sent) rather than stopping the run.
  bool RefusesPerMessage() const { return origins_ != nullptr; }
  // "queue URL" for --to-queue, "source" for --to-source, "origin" for --to-origin: the checkpoint
  // identity and the audit record use it.
  const std::string& Describe() const { return describe_; }
  // Destinations resolved so far (origins included), by URL (an origin's key).
  std::map<std::string, ReplayTarget> Resolved() const;

 private:
  TargetResolver(QueueClient& sqs, std::string region, std::string fixed);
  Result<ReplayTarget> Lookup(const std::string& name_url_or_arn);
  Result<ReplayTarget> SingleRedriveSource(const ArchiveRecord& record);
  Status CheckSameAccount(const ArchiveRecord& record);
  Result<ReplayTarget> ResolveOrigin(const ArchiveRecord& record);

  QueueClient& sqs_;
  std::string region_;
  std::string fixed_;  // empty: to source
  std::string describe_;
  std::map<std::string, Result<ReplayTarget>> by_name_;  // name/URL/ARN -> resolution
  std::map<std::string, Result<ReplayTarget>> by_dlq_;   // DLQ URL or name -> its single source
  bool allow_cross_account_ = false;
  ReplayTerms terms_;
  std::set<std::string> routes_;  // cross-account routes taken
  OriginResolver* origins_ = nullptr;
  std::map<std::string, ReplayTarget> origin_targets_;  // origins that are not queues, by key
};

}  // namespace dlq
