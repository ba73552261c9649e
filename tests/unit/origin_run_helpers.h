// What the `replay --to-origin` use-case tests on fakes share
// (replay_origin_test.cc, lambda_records_test.cc): a guarded plan with short
// windows, and a Lambda whose synchronous canary passes while the same
// payloads still fail asynchronously.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <utility>

#include "lambda_api/lambda_api.h"
#include "replay/redrive_plan.h"

namespace dlq {

// A canary of `canary` messages, then half and all, each step watched 5 s.
inline void GuardFast(RedrivePlan& plan, uint64_t canary) {
  plan.guarded = true;
  plan.canary = canary;
  plan.ramp = {0.5, 1.0};
  plan.window = std::chrono::seconds(5);
  plan.check = std::chrono::seconds(5);
}

// `handle` with every RequestResponse invocation's payload replaced by "{}":
// the canary passes, the bug shows only in the asynchronous invocations.
inline std::function<Result<InvokeResult>(const InvokeRequest&)> CanaryPasses(
    std::function<Result<InvokeResult>(const InvokeRequest&)> handle) {
  return [handle = std::move(handle)](const InvokeRequest& rq) {
    InvokeRequest copy = rq;
    if (rq.type == InvocationType::kRequestResponse) copy.payload = "{}";
    return handle(copy);
  };
}

}  // namespace dlq
