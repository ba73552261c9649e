#include "causes/explain.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

namespace dlq {

Status ExplainRequest::Validate() const {
  if (samples_per_group < 1) return InvalidArgument("the cause samples per group must be at least 1");
  if (dlq.name.empty()) return InvalidArgument("the DLQ has no name");
  return lookup.Validate();
}

bool ReusableCause(const CauseRecord& kept, const std::vector<NamedLogGroup>& named_log_groups) {
  if (IsSettled(kept.status)) return true;
  if (kept.status != CauseStatus::kNotMentioned && kept.status != CauseStatus::kNoConsumer &&
      kept.status != CauseStatus::kLogGroupNotFound) {
    return false;
  }
  for (const NamedLogGroup& n : named_log_groups) {
    if (std::find(kept.log_groups.begin(), kept.log_groups.end(), n.log_group) == kept.log_groups.end()) return false;
  }
  return true;
}

ExplainResult ExplainFailures(const ExplainRequest& request, const ExplainClients& clients) {
  ExplainResult result;
  result.max_filter_calls = request.lookup.max_filter_calls;
  auto reusable = [&](const LookupMessage& m) {
    if (request.known == nullptr) return false;
    const CauseRecord* kept = request.known->Find(m.queue, m.message_id);
    return kept != nullptr && ReusableCause(*kept, request.named_log_groups);
  };
  // The sample of each group: kept answers first, then the earliest sent.
  std::map<std::string, std::vector<const LookupMessage*>> groups;
  std::vector<std::string> order;
  for (const LookupMessage& m : request.messages) {
    auto [it, inserted] = groups.try_emplace(m.group_key);
    if (inserted) order.push_back(m.group_key);
    it->second.push_back(&m);
  }
  std::vector<const LookupMessage*> to_look_up;
  for (const std::string& key : order) {
    std::vector<const LookupMessage*>& members = groups[key];
    std::vector<std::tuple<bool, int64_t, std::string_view, const LookupMessage*>> ranked;
    ranked.reserve(members.size());
    for (const LookupMessage* m : members) ranked.emplace_back(!reusable(*m), m->sent_ms, m->message_id, m);
    const size_t n = std::min(request.samples_per_group, ranked.size());
    std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(n), ranked.end());
    for (size_t i = 0; i < n; ++i) {
      ++result.sampled;
      if (!std::get<0>(ranked[i])) {
        ++result.reused;
      } else {
        to_look_up.push_back(std::get<3>(ranked[i]));
      }
    }
  }
  if (to_look_up.empty()) return result;

  if (request.consumers != nullptr) {
    result.consumers = *request.consumers;
  } else {
    result.consumers =
        DiscoverConsumers(clients.sqs, clients.lambda, request.dlq, request.named_log_groups, request.discovery);
    result.calls.sqs = result.consumers->sqs_calls;
    result.calls.lambda = result.consumers->lambda_calls;
  }
  std::vector<std::string> ids;
  ids.reserve(to_look_up.size());
  for (const LookupMessage* m : to_look_up) ids.push_back(m->message_id);
  CauseLookup lookup(clients.logs, *result.consumers, clients.clock, request.lookup);
  // Every id of the run (the message's own is ignored by CauseFinder).
  for (const LookupMessage* m : to_look_up) {
    std::optional<CauseRecord> r = lookup.LookUp(*m, ids);
    if (!r) {
      ++result.left_out;
      continue;
    }
    result.records.push_back(std::move(*r));
  }
  result.calls.filter_log_events = lookup.calls().filter_log_events;
  result.calls.describe_log_groups = lookup.calls().describe_log_groups;
  return result;
}

std::string DescribeExplainCalls(const ExplainResult& r) {
  std::string out = fmt::format("causes: {} message{} sampled, {} looked up, {} already kept", r.sampled,
                                r.sampled == 1 ? "" : "s", r.records.size(), r.reused);
  if (r.left_out > 0) {
    out += fmt::format(", {} left for the next run (the cap of {} FilterLogEvents calls was reached)", r.left_out,
                       r.max_filter_calls);
  }
  out += fmt::format("; {} call{}: FilterLogEvents {} (at most {}), DescribeLogGroups {}, SQS {}, Lambda {}",
                     r.calls.total(), r.calls.total() == 1 ? "" : "s", r.calls.filter_log_events, r.max_filter_calls,
                     r.calls.describe_log_groups, r.calls.sqs, r.calls.lambda);
  return out;
}

}  // namespace dlq
