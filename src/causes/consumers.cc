#include "causes/consumers.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "common/strings.h"
#include "sqs/redrive_policy.h"

namespace dlq {
namespace {

std::string NameFromUrl(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url.substr(url.rfind('/') + 1);
}

bool Unsupported(const Status& s) {
  return s.aws() && (s.aws()->error_code == "InvalidAction" || s.aws()->error_code == "UnsupportedOperation" ||
                     s.aws()->error_code == "UnknownOperationException");
}

class Discoverer {
 public:
  Discoverer(QueueClient& sqs, LambdaApi& lambda, const QueueInfo& dlq, const ConsumerDiscoveryOptions& options)
      : sqs_(sqs), lambda_(lambda), dlq_(dlq), options_(options) {
    map_.dlq = dlq.name;
  }

  ConsumerMap Run(const std::vector<NamedLogGroup>& named) {
    std::vector<std::string> urls = SourceUrls();
    for (const std::string& url : urls) AddSource(url);
    if (options_.discover_lambda) {
      for (const SourceQueue& s : map_.sources) AddConsumers(s);
    }
    for (const NamedLogGroup& n : named) {
      if (n.log_group.empty() || !seen_.insert(n.log_group).second) continue;
      ConsumerLogGroup g;
      g.log_group = n.log_group;
      g.how = fmt::format("named by {}", n.named_by.empty() ? "the user" : n.named_by);
      map_.log_groups.push_back(std::move(g));
    }
    return std::move(map_);
  }

 private:
  void Note(std::string what, const Status& st) {
    if (st.code() == ErrorCode::kPermissionDenied && map_.denied.ok()) map_.denied = st;
    map_.notes.push_back(fmt::format("{}: {}", what, st.message()));
  }

  std::string DlqArn() const {
    if (!dlq_.arn.empty()) return dlq_.arn;
    if (dlq_.region.empty() || dlq_.account_id.empty()) return "";
    return fmt::format("arn:aws:sqs:{}:{}:{}", dlq_.region, dlq_.account_id, dlq_.name);
  }

  std::vector<std::string> SourceUrls() {
    ++map_.sqs_calls;
    auto listed = sqs_.ListDeadLetterSourceQueues(dlq_.url);
    if (listed.ok()) return std::move(listed).value();
    if (!Unsupported(listed.status())) {
      Note(fmt::format("ListDeadLetterSourceQueues for {}", dlq_.name), listed.status());
      return {};
    }
    return SourcesByScan();
  }

  // Every queue's RedrivePolicy, for endpoints without ListDeadLetterSourceQueues.
  std::vector<std::string> SourcesByScan() {
    const std::string arn = DlqArn();
    if (arn.empty()) {
      map_.notes.push_back(fmt::format("the sources of {} could not be scanned: its ARN is unknown", dlq_.name));
      return {};
    }
    ++map_.sqs_calls;
    auto all = sqs_.ListQueues("");
    if (!all.ok()) {
      Note("ListQueues (to read every RedrivePolicy)", all.status());
      return {};
    }
    std::vector<std::string> out;
    int scanned = 0;
    for (const std::string& url : *all) {
      if (++scanned > options_.max_queues_scanned) {
        map_.notes.push_back(
            fmt::format("only the first {} queues' RedrivePolicy were read", options_.max_queues_scanned));
        break;
      }
      ++map_.sqs_calls;
      auto attrs = sqs_.GetQueueAttributes(url, {"RedrivePolicy"});
      if (!attrs.ok()) continue;
      auto it = attrs->find("RedrivePolicy");
      if (it == attrs->end() || it->second.empty()) continue;
      auto policy = ParseRedrivePolicy(it->second);
      if (policy.ok() && policy->dead_letter_target_arn == arn) out.push_back(url);
    }
    return out;
  }

  void AddSource(const std::string& url) {
    SourceQueue s;
    s.url = url;
    s.name = NameFromUrl(url);
    ++map_.sqs_calls;
    auto attrs = sqs_.GetQueueAttributes(url, {"QueueArn", "VisibilityTimeout", "RedrivePolicy"});
    if (!attrs.ok()) {
      Note(fmt::format("GetQueueAttributes of source {}", s.name), attrs.status());
    } else {
      if (auto it = attrs->find("QueueArn"); it != attrs->end()) s.arn = it->second;
      if (auto it = attrs->find("VisibilityTimeout"); it != attrs->end()) {
        if (auto v = ParseInt64(it->second); v && *v >= 0) s.visibility_timeout_ms = *v * 1000;
      }
      if (auto it = attrs->find("RedrivePolicy"); it != attrs->end()) {
        if (auto p = ParseRedrivePolicy(it->second); p.ok()) s.max_receive_count = p->max_receive_count;
      }
    }
    map_.sources.push_back(std::move(s));
  }

  void AddConsumers(const SourceQueue& s) {
    if (s.arn.empty()) return;
    ++map_.lambda_calls;
    auto mappings = lambda_.ListEventSourceMappings(s.arn);
    if (!mappings.ok()) {
      Note(fmt::format("ListEventSourceMappings for {}", s.arn), mappings.status());
      return;
    }
    for (const EventSourceMapping& m : *mappings) {
      ++map_.lambda_calls;
      auto config = lambda_.GetFunctionConfiguration(m.function_arn);
      ConsumerLogGroup g;
      g.source_queue_arn = s.arn;
      if (!config.ok()) {
        Note(fmt::format("GetFunctionConfiguration of {}", m.function_arn), config.status());
        // The function's name is the ARN's last part; its default group is a fair guess.
        std::string name = m.function_arn.substr(m.function_arn.rfind(':') + 1);
        if (name.empty()) continue;
        g.function_name = name;
        g.log_group = "/aws/lambda/" + name;
        g.how = fmt::format(
            "function {} (event source mapping {} from {}; Lambda's default log group, its "
            "configuration unread)",
            name, m.uuid, s.name);
      } else {
        g.function_name = config->function_name;
        g.log_group = config->LogGroupOrDefault();
        g.log_format = config->log_format;
        g.timeout_seconds = config->timeout_seconds;
        g.how = fmt::format("function {} (event source mapping {} from {}; {})", config->function_name, m.uuid, s.name,
                            config->log_group.empty() ? "Lambda's default log group" : "LoggingConfig.LogGroup");
      }
      if (!m.state.empty() && m.state != "Enabled") g.how += fmt::format(", mapping {}", m.state);
      if (!seen_.insert(g.log_group).second) continue;
      map_.log_groups.push_back(std::move(g));
    }
  }

  QueueClient& sqs_;
  LambdaApi& lambda_;
  const QueueInfo& dlq_;
  const ConsumerDiscoveryOptions& options_;
  ConsumerMap map_;
  std::set<std::string> seen_;
};

}  // namespace

ConsumerMap DiscoverConsumers(QueueClient& sqs, LambdaApi& lambda, const QueueInfo& dlq,
                              const std::vector<NamedLogGroup>& named, const ConsumerDiscoveryOptions& options) {
  return Discoverer(sqs, lambda, dlq, options).Run(named);
}

std::vector<const ConsumerLogGroup*> ConsumerMap::ForSource(std::string_view source_arn) const {
  bool known = false;
  for (const ConsumerLogGroup& g : log_groups)
    known = known || (!source_arn.empty() && g.source_queue_arn == source_arn);
  std::vector<const ConsumerLogGroup*> out;
  for (const ConsumerLogGroup& g : log_groups) {
    if (!known || g.source_queue_arn.empty() || g.source_queue_arn == source_arn) out.push_back(&g);
  }
  return out;
}

const SourceQueue* ConsumerMap::Source(std::string_view arn) const {
  if (arn.empty()) return sources.size() == 1 ? &sources.front() : nullptr;
  for (const SourceQueue& s : sources) {
    if (s.arn == arn) return &s;
  }
  return nullptr;
}

std::vector<std::string> ConsumerMap::Describe() const {
  std::vector<std::string> out;
  if (sources.empty()) {
    out.push_back(fmt::format("{}: no source queue names it as its dead-letter queue", dlq));
  }
  for (const SourceQueue& s : sources) {
    out.push_back(fmt::format("{}: source {} (maxReceiveCount {}, visibility timeout {}s)", dlq, s.name,
                              s.max_receive_count, s.visibility_timeout_ms / 1000));
  }
  for (const ConsumerLogGroup& g : log_groups) out.push_back(fmt::format("{}: logs {}: {}", dlq, g.log_group, g.how));
  if (log_groups.empty()) out.push_back(fmt::format("{}: no consumer log group known", dlq));
  for (const std::string& n : notes) out.push_back(fmt::format("{}: {}", dlq, n));
  return out;
}

}  // namespace dlq
