#include "app/queue_selection.h"

#include <fmt/format.h>

#include <optional>
#include <set>

#include "monitor/discovery.h"

namespace dlq {
namespace {

// The endpoint does not implement the call (fauxqs, some emulators).
bool Unsupported(const Status& st) {
  return st.aws() && (st.aws()->error_code == "InvalidAction" || st.aws()->error_code == "UnsupportedOperation");
}

// Every deadLetterTargetArn named by a queue's RedrivePolicy in the account:
// what ListDeadLetterSourceQueues would tell, read from every queue.
Result<std::set<std::string>> RedriveTargets(QueueClient& sqs) {
  DLQ_ASSIGN_OR_RETURN(std::vector<std::string> all, sqs.ListQueues(""));
  std::set<std::string> targets;
  for (const std::string& url : all) {
    auto attrs = sqs.GetQueueAttributes(url, {"RedrivePolicy"});
    if (!attrs.ok()) continue;  // gone since the listing
    auto it = attrs->find("RedrivePolicy");
    if (it == attrs->end() || it->second.empty()) continue;
    auto policy = ParseRedrivePolicy(it->second);
    if (policy.ok()) targets.insert(policy->dead_letter_target_arn);
  }
  return targets;
}

}  // namespace

PatternSelection SelectDeadLetterQueues(QueueClient& sqs, const std::vector<std::string>& urls, bool any_queue) {
  PatternSelection out;
  std::optional<Result<std::set<std::string>>> targets;  // read once, on the first unsupported call
  for (const std::string& url : urls) {
    if (any_queue) {
      out.taken.push_back(url);
      continue;
    }
    auto sources = sqs.ListDeadLetterSourceQueues(url);
    if (!sources.ok() && Unsupported(sources.status())) {
      if (!targets) targets = RedriveTargets(sqs);
      auto arn = sqs.GetQueueAttributes(url, {"QueueArn"});
      if (targets->ok() && arn.ok() && arn->contains("QueueArn")) {
        if ((*targets)->contains(arn->at("QueueArn"))) {
          out.taken.push_back(url);
        } else {
          out.skipped.push_back({url,
                                 "not a dead-letter queue (no queue's RedrivePolicy names it: this endpoint has no "
                                 "ListDeadLetterSourceQueues, so every queue's policy was read); --queue or "
                                 "--any-queue takes it"});
        }
        continue;
      }
      sources = !targets->ok() ? targets->status() : !arn.ok() ? arn.status() : sources.status();
    }
    if (!sources.ok()) {
      out.skipped.push_back(
          {url, fmt::format("cannot tell whether it is a dead-letter queue (ListDeadLetterSourceQueues: {}); "
                            "--queue or --any-queue takes it",
                            sources.status().message())});
    } else if (sources->empty()) {
      out.skipped.push_back(
          {url, "not a dead-letter queue (no queue names it in a redrive policy); --queue or --any-queue takes it"});
    } else {
      out.taken.push_back(url);
    }
  }
  return out;
}

}  // namespace dlq
