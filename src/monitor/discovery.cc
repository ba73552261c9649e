#include "monitor/discovery.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "common/log.h"
#include "common/regex.h"
#include "common/strings.h"

namespace dlq {

std::chrono::seconds DiscoveredQueue::MaxSourceRetention() const {
  std::chrono::seconds max{0};
  for (const RedriveSource& s : redrive_sources) max = std::max(max, s.retention);
  return max;
}

namespace {

using Attributes = std::map<std::string, std::string>;

std::string NameFromUrl(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url.substr(url.rfind('/') + 1);
}

std::string TrimUrl(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

bool Vanished(const Status& s) {
  if (s.code() == ErrorCode::kNotFound) return true;
  return s.aws() && (s.aws()->error_code == "QueueDoesNotExist" ||
                     s.aws()->error_code == "AWS.SimpleQueueService.NonExistentQueue");
}

std::chrono::seconds RetentionOf(const Attributes& attrs, std::chrono::seconds fallback) {
  auto it = attrs.find("MessageRetentionPeriod");
  if (it == attrs.end()) return fallback;
  std::optional<int64_t> v = ParseInt64(it->second);
  if (!v || *v <= 0) return fallback;
  return std::chrono::seconds(*v);
}

class Discoverer {
 public:
  Discoverer(QueueClient& sqs, const GroupConfig& group) : sqs_(sqs), group_(group) {}

  Result<std::vector<DiscoveredQueue>> Run();

 private:
  struct Candidate {
    std::string url;
    bool named = false;  // explicitly listed: must exist
  };

  // The queue's attributes; nullopt when it no longer exists.
  Result<std::optional<const Attributes*>> Attrs(const std::string& url);
  Result<const std::vector<std::string>*> AllUrls();
  void Warn(std::string_view what, const std::string& url, const Status& status) {
    Log().Log(LogLevel::kWarn, "discovery.queue_vanished",
              {{"group", group_.name}, {"queue", url}, {"during", what}, {"error", status.ToString()}});
  }
  bool Excluded(const std::string& url) const {
    return excluded_.contains(url) || excluded_.contains(NameFromUrl(url));
  }
  void Add(const std::string& url, bool named) {
    std::string u = TrimUrl(url);
    if (Excluded(u) || !seen_.insert(u).second) return;
    candidates_.push_back({u, named});
  }
  // Candidates from the group's queues, prefixes, regex and discovery, less
  // its exclusions.
  Status AddCandidates();
  Status AddNamed();
  Status AddDiscovered();
  // The candidate with its attributes and redrive sources; nullopt (after a
  // warning) when a queue that was not named explicitly has vanished.
  Result<std::optional<DiscoveredQueue>> Describe(const Candidate& c);
  // The queues whose dead-letter queue `q` is.
  Result<std::vector<std::string>> ListSources(const DiscoveredQueue& q);
  Status AddSources(const std::vector<std::string>& urls, DiscoveredQueue& q);
  // Sources found by reading every queue's RedrivePolicy, for endpoints that
  // do not implement ListDeadLetterSourceQueues.
  Result<std::vector<std::string>> SourcesByScan(const std::string& dlq_arn);

  QueueClient& sqs_;
  const GroupConfig& group_;
  std::set<std::string> excluded_;
  std::set<std::string> seen_;
  std::vector<Candidate> candidates_;
  std::map<std::string, std::optional<Attributes>> attrs_;  // by URL; nullopt: vanished
  std::optional<std::vector<std::string>> all_urls_;
};

Result<std::optional<const Attributes*>> Discoverer::Attrs(const std::string& url) {
  auto it = attrs_.find(url);
  if (it == attrs_.end()) {
    auto got = sqs_.GetQueueAttributes(url, {"All"});
    if (!got.ok()) {
      if (!Vanished(got.status())) {
        return got.status().WithContext(fmt::format("group {}: get attributes of {}", group_.name, url));
      }
      it = attrs_.emplace(url, std::nullopt).first;
    } else {
      it = attrs_.emplace(url, std::move(got).value()).first;
    }
  }
  if (!it->second) return std::optional<const Attributes*>();
  return std::optional<const Attributes*>(&*it->second);
}

Result<const std::vector<std::string>*> Discoverer::AllUrls() {
  if (!all_urls_) {
    auto urls = sqs_.ListQueues("");
    if (!urls.ok()) return urls.status().WithContext(fmt::format("group {}: list queues", group_.name));
    all_urls_ = std::move(urls).value();
  }
  return &*all_urls_;
}

Result<std::vector<std::string>> Discoverer::SourcesByScan(const std::string& dlq_arn) {
  DLQ_ASSIGN_OR_RETURN(const std::vector<std::string>* all, AllUrls());
  std::vector<std::string> out;
  for (const std::string& url : *all) {
    DLQ_ASSIGN_OR_RETURN(auto attrs, Attrs(url));
    if (!attrs) continue;
    auto it = (*attrs)->find("RedrivePolicy");
    if (it == (*attrs)->end() || it->second.empty()) continue;
    auto policy = ParseRedrivePolicy(it->second);
    if (policy.ok() && policy->dead_letter_target_arn == dlq_arn) out.push_back(url);
  }
  return out;
}

Status Discoverer::AddDiscovered() {
  DLQ_ASSIGN_OR_RETURN(const std::vector<std::string>* all, AllUrls());
  for (const std::string& url : *all) {
    DLQ_ASSIGN_OR_RETURN(auto attrs, Attrs(url));
    if (!attrs) {
      Warn("discover", url, NotFound("queue no longer exists"));
      continue;
    }
    auto it = (*attrs)->find("RedrivePolicy");
    if (it == (*attrs)->end() || it->second.empty()) continue;
    auto policy = ParseRedrivePolicy(it->second);
    std::string region, account, name;
    if (!policy.ok() || !ParseSqsArn(policy->dead_letter_target_arn, &region, &account, &name)) {
      Log().Log(
          LogLevel::kWarn, "discovery.bad_redrive_policy",
          {{"group", group_.name},
           {"queue", url},
           {"error", policy.ok() ? std::string("deadLetterTargetArn is not an SQS ARN") : policy.status().message()}});
      continue;
    }
    // Prefer the listed URL of that name in that account; else ask SQS.
    std::string target;
    for (const std::string& candidate : *all) {
      if (NameFromUrl(candidate) != name) continue;
      if (candidate.find("/" + account + "/") != std::string::npos) {
        target = candidate;
        break;
      }
      if (target.empty()) target = candidate;
    }
    if (target.empty()) {
      auto got = sqs_.GetQueueUrl(name, account);
      if (!got.ok()) {
        if (!Vanished(got.status())) {
          return got.status().WithContext(
              fmt::format("group {}: dead-letter queue {} of {}", group_.name, policy->dead_letter_target_arn, url));
        }
        Warn("redrive target", policy->dead_letter_target_arn, got.status());
        continue;
      }
      target = *got;
    }
    Add(target, false);
  }
  return Status::Ok();
}

Result<std::vector<DiscoveredQueue>> Discoverer::Run() {
  DLQ_RETURN_IF_ERROR(AddCandidates());
  std::vector<DiscoveredQueue> out;
  for (const Candidate& c : candidates_) {
    DLQ_ASSIGN_OR_RETURN(std::optional<DiscoveredQueue> q, Describe(c));
    if (q) out.push_back(std::move(*q));
  }
  return out;
}

Status Discoverer::AddCandidates() {
  excluded_.insert(group_.exclude.begin(), group_.exclude.end());
  for (const std::string& e : group_.exclude) excluded_.insert(TrimUrl(e));
  DLQ_RETURN_IF_ERROR(AddNamed());
  for (const std::string& prefix : group_.prefixes) {
    auto urls = sqs_.ListQueues(prefix);
    if (!urls.ok()) {
      return urls.status().WithContext(fmt::format("group {}: list queues with prefix '{}'", group_.name, prefix));
    }
    for (const std::string& u : *urls) Add(u, false);
  }
  if (!group_.regex.empty()) {
    Result<Regex> re = Regex::Compile(group_.regex);
    if (!re.ok()) return re.status().WithContext(fmt::format("group {}: regex '{}'", group_.name, group_.regex));
    DLQ_ASSIGN_OR_RETURN(const std::vector<std::string>* all, AllUrls());
    for (const std::string& u : *all) {
      if (re->Search(NameFromUrl(u))) Add(u, false);
    }
  }
  if (group_.discover) DLQ_RETURN_IF_ERROR(AddDiscovered());
  return Status::Ok();
}

Status Discoverer::AddNamed() {
  for (const std::string& q : group_.queues) {
    if (StartsWith(q, "http://") || StartsWith(q, "https://")) {
      Add(q, true);
      continue;
    }
    auto url = sqs_.GetQueueUrl(q, "");
    if (!url.ok()) {
      if (Vanished(url.status())) {
        return NotFound(fmt::format("group {}: queue '{}' does not exist", group_.name, q));
      }
      return url.status().WithContext(fmt::format("group {}: queue {}", group_.name, q));
    }
    Add(*url, true);
  }
  return Status::Ok();
}

Result<std::optional<DiscoveredQueue>> Discoverer::Describe(const Candidate& c) {
  DLQ_ASSIGN_OR_RETURN(auto attrs, Attrs(c.url));
  if (!attrs) {
    if (c.named) return NotFound(fmt::format("group {}: queue '{}' does not exist", group_.name, c.url));
    Warn("attributes", c.url, NotFound("queue no longer exists"));
    return std::optional<DiscoveredQueue>();
  }
  DiscoveredQueue q;
  q.url = c.url;
  q.name = NameFromUrl(c.url);
  q.region = group_.region;
  if (auto it = (*attrs)->find("QueueArn"); it != (*attrs)->end()) {
    q.arn = it->second;
    std::string region, account;
    if (ParseSqsArn(q.arn, &region, &account, nullptr)) {
      q.region = region;
      q.account_id = account;
    }
  }
  auto fifo = (*attrs)->find("FifoQueue");
  q.fifo = (fifo != (*attrs)->end() && fifo->second == "true") || EndsWith(q.name, ".fifo");
  q.retention = RetentionOf(**attrs, q.retention);

  Result<std::vector<std::string>> sources = ListSources(q);
  if (!sources.ok()) {
    if (!Vanished(sources.status())) {
      return sources.status().WithContext(fmt::format("group {}: list redrive sources of {}", group_.name, q.name));
    }
    if (c.named) return NotFound(fmt::format("group {}: queue '{}' does not exist", group_.name, c.url));
    Warn("list sources", c.url, sources.status());
    return std::optional<DiscoveredQueue>();
  }
  DLQ_RETURN_IF_ERROR(AddSources(*sources, q));
  return std::optional<DiscoveredQueue>(std::move(q));
}

Result<std::vector<std::string>> Discoverer::ListSources(const DiscoveredQueue& q) {
  auto sources = sqs_.ListDeadLetterSourceQueues(q.url);
  if (!sources.ok() && sources.status().aws() &&
      (sources.status().aws()->error_code == "InvalidAction" ||
       sources.status().aws()->error_code == "UnsupportedOperation") &&
      !q.arn.empty()) {
    Log().Log(LogLevel::kDebug, "discovery.sources_by_scan", {{"group", group_.name}, {"queue", q.name}});
    return SourcesByScan(q.arn);
  }
  return sources;
}

Status Discoverer::AddSources(const std::vector<std::string>& urls, DiscoveredQueue& q) {
  for (const std::string& src_url : urls) {
    DLQ_ASSIGN_OR_RETURN(auto src_attrs, Attrs(src_url));
    if (!src_attrs) {
      Warn("source attributes", src_url, NotFound("queue no longer exists"));
      continue;
    }
    RedriveSource s;
    s.url = src_url;
    s.name = NameFromUrl(src_url);
    s.retention = RetentionOf(**src_attrs, s.retention);
    if (auto it = (*src_attrs)->find("RedrivePolicy"); it != (*src_attrs)->end()) {
      if (auto policy = ParseRedrivePolicy(it->second); policy.ok()) s.max_receive_count = policy->max_receive_count;
    }
    q.redrive_sources.push_back(std::move(s));
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<DiscoveredQueue>> DiscoverQueues(QueueClient& sqs, const GroupConfig& group) {
  return Discoverer(sqs, group).Run();
}

std::string GroupOverlap::Message() const {
  if (by_priority) {
    return fmt::format("queue {} matches groups {} and {}; group {} watches it (higher priority)", queue, kept, dropped,
                       kept);
  }
  return fmt::format(
      "queue {} matches groups {} and {}, which have the same priority; set `priority:` on one of them (the "
      "higher one watches it) or exclude it from the other; until then group {} watches it",
      queue, kept, dropped, kept);
}

const GroupConfig& OverlapWinner(const GroupConfig& a, const GroupConfig& b) {
  return b.priority > a.priority ? b : a;
}

std::vector<GroupOverlap> ResolveGroupOverlaps(const std::vector<const GroupConfig*>& groups,
                                               const std::vector<std::vector<DiscoveredQueue>*>& found) {
  const size_t n = std::min(groups.size(), found.size());
  std::map<std::string, size_t> owner;  // url -> index of the winning group
  for (size_t i = 0; i < n; ++i) {
    if (found[i] == nullptr) continue;
    for (const DiscoveredQueue& q : *found[i]) {
      auto [it, first] = owner.emplace(q.url, i);
      if (!first && &OverlapWinner(*groups[it->second], *groups[i]) == groups[i]) it->second = i;
    }
  }
  std::vector<GroupOverlap> out;
  for (size_t i = 0; i < n; ++i) {
    if (found[i] == nullptr) continue;
    std::erase_if(*found[i], [&](const DiscoveredQueue& q) {
      const size_t w = owner.at(q.url);
      if (w == i) return false;
      out.push_back({.queue = q.name,
                     .url = q.url,
                     .kept = groups[w]->name,
                     .dropped = groups[i]->name,
                     .by_priority = groups[w]->priority != groups[i]->priority});
      return true;
    });
  }
  return out;
}

}  // namespace dlq
