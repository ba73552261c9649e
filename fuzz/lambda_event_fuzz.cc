// libFuzzer target: the Lambda event parser must never crash, hang or throw,
// whatever the bytes; a rejection always says why, an accepted alarm that
// archives (state ALARM) names a queue, and a direct invoke survives the
// follow-up payload round trip.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "lambda/event.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto ev = dlq::ParseLambdaEvent(text);
  if (!ev.ok()) {
    if (ev.status().message().empty()) __builtin_trap();
    return 0;
  }
  bool alarm = ev->kind == dlq::LambdaEventKind::kAlarmAction || ev->kind == dlq::LambdaEventKind::kAlarmSns ||
               ev->kind == dlq::LambdaEventKind::kAlarmEventBridge;
  if (alarm && ev->ShouldArchive() && ev->queues.empty()) __builtin_trap();
  if (ev->kind == dlq::LambdaEventKind::kDirect) {
    auto again = dlq::ParseLambdaEvent(dlq::BuildDirectInvokePayload(ev->queues, ev->policy, ev->hop));
    if (!again.ok() || again->queues != ev->queues || again->hop != ev->hop) __builtin_trap();
  }
  return 0;
}
