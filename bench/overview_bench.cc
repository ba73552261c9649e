// What the dashboard's overview costs the daemon per request at 1,000 queues
// (bench/dashboard/README.md, "daemon CPU"): the JSON of /api/overview, its
// ETag (SHA-256 of the JSON), comparing a new snapshot with the cached one
// (what a poll after a collection that changed nothing costs), and the page's
// first window (RenderOverviewHtml). On one core.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "common/crypto.h"
#include "common/time_util.h"
#include "dashboard/overview_html.h"
#include "monitor/overview.h"

namespace dlq {
namespace {

// Shaped like bench/dashboard's fleet: every 20th queue holds messages, is
// alarmed and has an archive run behind it.
Overview Fleet(size_t n) {
  const SystemTime now = *ParseIso8601("2026-11-23T12:00:00Z");
  Overview o;
  for (size_t i = 0; i < n; ++i) {
    const bool held = i % 20 == 0;
    OverviewQueue q;
    q.group = "dashbench";
    q.queue = fmt::format("dashbench-1a2b3c4d-q{:04}-dlq", i);
    q.region = "us-east-1";
    q.retention_s = 345600;
    q.visible = q.not_visible = q.delayed = 0;
    if (held) {
      q.nearest_expiry = now + std::chrono::seconds(345000 - i);
      q.archived = 3;
      q.last_run = OverviewLastRun{.time = now - std::chrono::seconds(120), .archived = 3, .ok = true};
    }
    q.alarms = {{.kind = "expiry", .state = held ? "ALARM" : "OK"}, {.kind = "depth", .state = "OK"}};
    o.queues.push_back(std::move(q));
  }
  o.groups.push_back({.name = "dashbench", .error = false, .problem = ""});
  return o;
}

void BM_OverviewJson(benchmark::State& state) {
  const Overview o = Fleet(1000);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string json = OverviewJson(o);
    bytes = json.size();
    benchmark::DoNotOptimize(json);
  }
  state.counters["json_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_OverviewJson)->Unit(benchmark::kMicrosecond);

void BM_OverviewEtag(benchmark::State& state) {
  const std::string json = OverviewJson(Fleet(1000));
  for (auto _ : state) benchmark::DoNotOptimize(Sha256Hex(json));
}
BENCHMARK(BM_OverviewEtag)->Unit(benchmark::kMicrosecond);

void BM_OverviewCopyAndCompare(benchmark::State& state) {
  const Overview o = Fleet(1000);
  for (auto _ : state) {
    Overview copy = o;  // about what DaemonView::BuildOverview copies
    benchmark::DoNotOptimize(copy == o);
  }
}
BENCHMARK(BM_OverviewCopyAndCompare)->Unit(benchmark::kMicrosecond);

void BM_OverviewFirstWindowHtml(benchmark::State& state) {
  const Overview o = Fleet(1000);
  const SystemTime now = *ParseIso8601("2026-11-23T12:00:00Z");
  for (auto _ : state) benchmark::DoNotOptimize(RenderOverviewHtml(o, now));
}
BENCHMARK(BM_OverviewFirstWindowHtml)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace dlq
