#include "replay/targets.h"

#include <fmt/format.h>

#include "common/strings.h"
#include "replay/origins.h"
#include "sqs/queue_info.h"

namespace dlq {

std::string_view TargetKindName(TargetKind kind) {
  switch (kind) {
    case TargetKind::kQueue: return "queue";
    case TargetKind::kFunction: return "function";
    case TargetKind::kTopic: return "topic";
    case TargetKind::kBus: return "bus";
    case TargetKind::kHttp: return "http";
  }
  return "queue";
}

Result<ReplayTarget> ResolveReplayTarget(QueueClient& sqs, const std::string& name_url_or_arn,
                                         const std::string& region) {
  DLQ_ASSIGN_OR_RETURN(QueueInfo info, ResolveQueue(sqs, name_url_or_arn, region));
  ReplayTarget t;
  t.name = info.name;
  t.url = info.url;
  t.arn = info.arn;
  t.fifo = info.fifo;
  if (t.fifo) {
    auto attrs = sqs.GetQueueAttributes(t.url, {"ContentBasedDeduplication"});
    if (!attrs.ok()) return attrs.status().WithContext(fmt::format("queue {}", t.name));
    auto it = attrs->find("ContentBasedDeduplication");
    t.content_based_deduplication = it != attrs->end() && it->second == "true";
  }
  return t;
}

TargetResolver::TargetResolver(QueueClient& sqs, std::string region, std::string fixed)
    : sqs_(sqs), region_(std::move(region)), fixed_(std::move(fixed)) {
  describe_ = fixed_.empty() ? "source" : fixed_;
}

std::unique_ptr<TargetResolver> TargetResolver::Fixed(QueueClient& sqs, std::string queue, std::string region) {
  return std::unique_ptr<TargetResolver>(new TargetResolver(sqs, std::move(region), std::move(queue)));
}

std::unique_ptr<TargetResolver> TargetResolver::ToSource(QueueClient& sqs, std::string region) {
  return std::unique_ptr<TargetResolver>(new TargetResolver(sqs, std::move(region), ""));
}

std::unique_ptr<TargetResolver> TargetResolver::ToOrigin(QueueClient& sqs, std::string region,
                                                         OriginResolver& origins) {
  auto t = std::unique_ptr<TargetResolver>(new TargetResolver(sqs, std::move(region), ""));
  t->origins_ = &origins;
  t->describe_ = "origin";
  return t;
}

void TargetResolver::AllowCrossAccount(bool allow) {
  allow_cross_account_ = allow;
  if (origins_ != nullptr) origins_->AllowCrossAccount(allow);
}

void TargetResolver::UseTerms(ReplayTerms terms) {
  terms_ = std::move(terms);
  if (origins_ != nullptr) origins_->UseTerms(terms_);
}

std::vector<std::string> TargetResolver::CrossAccountRoutes() const {
  std::set<std::string> all = routes_;
  if (origins_ != nullptr) {
    for (const std::string& r : origins_->CrossAccountRoutes()) all.insert(r);
  }
  return {all.begin(), all.end()};
}

// An origin that is a queue (an EventBridge rule's SQS target, an SNS
// subscription's queue) is checked like any destination queue and keeps how
// it was found.
Result<ReplayTarget> TargetResolver::ResolveOrigin(const ArchiveRecord& record) {
  DLQ_ASSIGN_OR_RETURN(ReplayTarget origin, origins_->Resolve(record));
  if (origin.kind != TargetKind::kQueue) {
    origin_targets_.emplace(origin.url, origin);
    return origin;
  }
  DLQ_ASSIGN_OR_RETURN(ReplayTarget queue, Lookup(origin.arn.empty() ? origin.url : origin.arn));
  queue.how = origin.how;
  queue.keep_attributes = origin.keep_attributes;
  queue.shape = origin.shape;
  queue.subscription_arn = origin.subscription_arn;
  queue.topic_arn = origin.topic_arn;
  return queue;
}

Result<ReplayTarget> TargetResolver::Lookup(const std::string& name_url_or_arn) {
  auto it = by_name_.find(name_url_or_arn);
  if (it == by_name_.end()) {
    auto r = ResolveReplayTarget(sqs_, name_url_or_arn, region_);
    if (!r.ok() && r.status().code() == ErrorCode::kNotFound) {
      r = r.status().WithContext("destination queue does not exist");
    }
    it = by_name_.emplace(name_url_or_arn, std::move(r)).first;
  }
  return it->second;
}

Result<ReplayTarget> TargetResolver::SingleRedriveSource(const ArchiveRecord& record) {
  const std::string dlq = record.queue_url.empty() ? record.queue : record.queue_url;
  auto it = by_dlq_.find(dlq);
  if (it != by_dlq_.end()) return it->second;
  auto resolve = [&]() -> Result<ReplayTarget> {
    DLQ_ASSIGN_OR_RETURN(QueueInfo dlq_info, ResolveQueue(sqs_, dlq, region_));
    auto sources = sqs_.ListDeadLetterSourceQueues(dlq_info.url);
    if (!sources.ok()) return sources.status().WithContext(fmt::format("redrive sources of {}", dlq_info.name));
    if (sources->empty()) {
      return InvalidArgument(fmt::format(
          "{}: message {} has no DeadLetterQueueSourceArn and no queue names {} as its dead-letter queue, so its "
          "source is unknown; use {}",
          terms_.to_source, record.message_id, dlq_info.name, terms_.to_queue));
    }
    if (sources->size() > 1) {
      std::string names;
      for (size_t i = 0; i < sources->size() && i < 5; ++i) {
        names += (i ? ", " : "") + (*sources)[i].substr((*sources)[i].rfind('/') + 1);
      }
      if (sources->size() > 5) names += ", ...";
      return InvalidArgument(fmt::format(
          "{} is ambiguous: message {} has no DeadLetterQueueSourceArn and {} is the dead-letter queue of {} queues "
          "({}); use {}, or filter with {} to one source",
          terms_.to_source, record.message_id, dlq_info.name, sources->size(), names, terms_.to_queue, terms_.narrow));
    }
    return Lookup(sources->front());
  };
  return by_dlq_.emplace(dlq, resolve()).first->second;
}

namespace {

// The account in a queue URL's path (https://HOST/ACCOUNT/NAME), or "".
std::string AccountOfUrl(const std::string& url) {
  size_t name = url.rfind('/');
  if (name == std::string::npos || name == 0) return "";
  size_t account = url.rfind('/', name - 1);
  if (account == std::string::npos) return "";
  return url.substr(account + 1, name - account - 1);
}

}  // namespace

Status TargetResolver::CheckSameAccount(const ArchiveRecord& record) {
  auto parts = Split(record.source_queue_arn, ':');  // arn:PARTITION:sqs:REGION:ACCOUNT:NAME
  if (parts.size() != 6) return Status();            // not an ARN: Lookup says so
  const std::string source_region(parts[3]), source_account(parts[4]);
  const std::string dlq_account = record.account_id.empty() ? AccountOfUrl(record.queue_url) : record.account_id;
  const std::string dlq_region = record.region.empty() ? region_ : record.region;
  const bool other_account = !dlq_account.empty() && source_account != dlq_account;
  const bool other_region = !dlq_region.empty() && source_region != dlq_region;
  if (!other_account && !other_region) return Status();
  const std::string dlq = record.queue.empty() ? record.queue_url : record.queue;
  if (!allow_cross_account_) {
    return InvalidArgument(fmt::format(
        "{}: message {} of DLQ {} (account {}, region {}) names its source {}, in another {}; "
        "nothing goes across accounts or regions without {}",
        terms_.to_source, record.message_id, dlq, dlq_account.empty() ? "?" : dlq_account,
        dlq_region.empty() ? "?" : dlq_region, record.source_queue_arn,
        other_account ? (other_region ? "account and region" : "account") : "region", terms_.allow_cross_account));
  }
  routes_.insert(fmt::format("{} (account {}, region {}) -> {}", dlq, dlq_account.empty() ? "?" : dlq_account,
                             dlq_region.empty() ? "?" : dlq_region, record.source_queue_arn));
  return Status();
}

Result<ReplayTarget> TargetResolver::Resolve(const ArchiveRecord& record) {
  if (origins_ != nullptr) return ResolveOrigin(record);
  if (!fixed_.empty()) return Lookup(fixed_);
  if (!record.source_queue_arn.empty()) {
    DLQ_RETURN_IF_ERROR(CheckSameAccount(record));
    return Lookup(record.source_queue_arn);
  }
  return SingleRedriveSource(record);
}

std::map<std::string, ReplayTarget> TargetResolver::Resolved() const {
  std::map<std::string, ReplayTarget> out;
  for (const auto& [k, r] : by_name_) {
    if (r.ok()) out.emplace(r->url, *r);
  }
  for (const auto& [url, t] : origin_targets_) out.emplace(url, t);
  return out;
}

}  // namespace dlq
