#include "archiver/drain_completion.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/count_noun.h"

namespace dlq {

Completion JudgeCompletion(const CompletionFacts& facts, const std::function<std::string()>& final_check) {
  Completion out;
  out.reason = facts.incomplete_reason;
  bool complete =
      facts.queue_seen_empty && facts.incomplete_reason.empty() && facts.corrupt_ids.empty() && facts.released == 0;
  if (complete && facts.examined_released_early) {
    complete = facts.initial_total >= 0 && facts.examined >= static_cast<uint64_t>(facts.initial_total);
    if (!complete) {
      out.reason = fmt::format(
          "the pass examined {} distinct messages of ~{} (more than {} examined messages cannot be held at once)",
          facts.examined, facts.initial_total, facts.max_examined_held);
    }
  }
  if (complete && final_check) {
    if (std::string why = final_check(); !why.empty()) {
      complete = false;
      out.reason = std::move(why);
    }
  }
  if (facts.budget_reached) {
    // Ended by --max-messages: not a failure, and never "drained" (a
    // receiver may have seen the queue empty while the messages over the
    // limit were being put back).
    return out;
  }
  if (complete) {
    out.drained = true;
    return out;
  }
  out.incomplete = true;
  if (!facts.corrupt_ids.empty() && out.reason.empty()) {
    const bool one = facts.corrupt_ids.size() == 1;
    out.reason = fmt::format("{} failed {} MD5 check on every receive and {} left in the DLQ: {}",
                             CountNoun(facts.corrupt_ids.size(), "message", "messages"), one ? "its" : "their",
                             one ? "was" : "were", fmt::join(facts.corrupt_ids, ", "));
  }
  if (out.reason.empty()) {
    out.reason =
        fmt::format("{} released unarchived; run again", CountNoun(facts.released, "message was", "messages were"));
  }
  return out;
}

}  // namespace dlq
