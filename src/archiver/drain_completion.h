// JudgeCompletion: what a drain run that neither failed nor was stopped
// amounts to (drained, incomplete with a reason, or ended by the message
// budget). A pure function of what the run observed; thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dlq {

// What the run observed, read after its threads ended.
struct CompletionFacts {
  bool queue_seen_empty = false;         // the receivers ended on an empty queue
  std::string incomplete_reason;         // set during the run; empty: none
  std::vector<std::string> corrupt_ids;  // failed the MD5 check on every receive
  uint64_t released = 0;                 // released unarchived (stats.released)
  // The pass released messages it examined before its end (it could hold no
  // more): it reached every message only if it examined as many as were there.
  bool examined_released_early = false;
  uint64_t examined = 0;       // distinct messages examined (skipped + selected)
  int64_t initial_total = -1;  // visible + in flight at the start, -1 unknown
  size_t max_examined_held = 0;
  bool budget_reached = false;  // ended by max_messages
};

struct Completion {
  bool drained = false;
  bool incomplete = false;
  std::string reason;  // why not drained (may be set when ended by the budget too)
};

// `final_check`, when set (a whole-queue drain), runs only once everything
// else says complete: it looks at the queue and returns "" when it shows 0
// visible and 0 in flight, else the reason the run is incomplete.
Completion JudgeCompletion(const CompletionFacts& facts, const std::function<std::string()>& final_check);

}  // namespace dlq
