// FingerprintBody (stats --group-by fingerprint) on the bodies of
// bench/search: ~1 KiB JSON with nested items, and a ~120-byte text failure;
// and FailureGroupKey of an EventBridge DLQ message (the reason is in its
// attributes, the ~1 KiB JSON body is not parsed). Reports bytes/s of body
// on one core.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "query/fingerprint.h"

namespace dlq {
namespace {

std::vector<std::string> JsonBodies() {
  std::vector<std::string> bodies;
  for (int i = 0; i < 1000; ++i) {
    std::string body = fmt::format(
        R"({{"order_id":{},"id":"{:08x}-87a3-44ab-83d2-{:012x}","at":"2025-09-10T12:{:02}:00.123Z","error":)"
        R"({{"type":"Timeout","message":"upstream timed out after {} ms"}},"items":[)",
        i, i, i * 7919, i % 60, 1000 + i);
    for (int j = 0; body.size() < 1000; ++j) {
      body += fmt::format(R"({{"sku":"SKU-{:06}","qty":{},"note":"gift wrap, ship to Zürich"}},)", i * 31 + j, j % 5);
    }
    body.back() = ']';
    body += "}";
    bodies.push_back(std::move(body));
  }
  return bodies;
}

std::vector<std::string> TextBodies() {
  std::vector<std::string> bodies;
  for (int i = 0; i < 1000; ++i) {
    bodies.push_back(fmt::format(
        "payment {:016x} for order {} declined at 2025-09-10T12:{:02}:00Z by gateway 10.0.{}.{}: card expired",
        i * 7919, i, i % 60, i % 256, i % 7));
  }
  return bodies;
}

void Run(benchmark::State& state, const std::vector<std::string>& bodies) {
  static const FingerprintOptions options;  // the defaults, as stats passes them
  size_t bytes = 0, i = 0;
  for (auto _ : state) {
    const std::string& body = bodies[i++ % bodies.size()];
    benchmark::DoNotOptimize(FingerprintBody(body, options));
    bytes += body.size();
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.SetItemsProcessed(state.iterations());
}

void BM_FingerprintJson1KiB(benchmark::State& state) {
  static const std::vector<std::string> bodies = JsonBodies();
  Run(state, bodies);
}
BENCHMARK(BM_FingerprintJson1KiB);

void BM_FingerprintText(benchmark::State& state) {
  static const std::vector<std::string> bodies = TextBodies();
  Run(state, bodies);
}
BENCHMARK(BM_FingerprintText);

void BM_FailureGroupEventBridgeDlq(benchmark::State& state) {
  static const std::vector<std::string> bodies = JsonBodies();
  static const FingerprintOptions options;
  ArchiveRecord r;
  r.message_attributes["RULE_ARN"] = {"String", "arn:aws:events:us-east-1:123456789012:rule/route-orders", ""};
  r.message_attributes["TARGET_ARN"] = {"String", "arn:aws:lambda:us-east-1:123456789012:function:process-order", ""};
  r.message_attributes["ERROR_CODE"] = {"String", "SDK_CLIENT_ERROR", ""};
  r.message_attributes["EXHAUSTED_RETRY_CONDITION"] = {"String", "MaximumRetryAttempts", ""};
  size_t bytes = 0, i = 0;
  for (auto _ : state) {
    r.body = bodies[i % bodies.size()];
    r.message_attributes["ERROR_MESSAGE"] = {"String", fmt::format("Lambda function returned {}", 500 + i % 4), ""};
    ++i;
    benchmark::DoNotOptimize(FailureGroupKey(r, options));
    bytes += r.body.size();
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FailureGroupEventBridgeDlq);

}  // namespace
}  // namespace dlq
