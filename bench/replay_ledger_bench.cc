// The replay ledger's skip check (replay/ledger.h) with 1,000,000 ids
// delivered by 1,000 earlier runs (1,000 ids each) to one destination:
// the cost of one AlreadySent question once loaded, and of the load itself
// from the index alone, from the index plus 8 new parts (the most a reader
// leaves unindexed), and from the 1,000 parts with no index. The store is in
// memory: the object store's latency is not part of these figures
// (bench/replay/README.md).
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <map>
#include <string>

#include "common/clock.h"
#include "replay/ledger.h"
#include "s3/object_store.h"

namespace dlq {
namespace {

constexpr char kDest[] = "https://sqs.us-east-1.amazonaws.com/123456789012/orders";
constexpr int kRuns = 1000, kIdsPerRun = 1000;

// Enough of an ObjectStore for the ledger: one page, prefix match.
class MemoryStore final : public ObjectStore {
 public:
  Status Put(const std::string& key, std::string_view data, const PutOptions&) override {
    objects_[key] = std::string(data);
    return Status::Ok();
  }
  Result<std::string> Get(const std::string& key, std::optional<std::pair<uint64_t, uint64_t>>) override {
    auto it = objects_.find(key);
    if (it == objects_.end()) return NotFound(key);
    return it->second;
  }
  Result<ObjectInfo> Head(const std::string& key) override { return NotFound(key); }
  Result<ListPage> List(const std::string& prefix, const std::string&, const std::string&) override {
    ListPage page;
    for (auto it = objects_.lower_bound(prefix); it != objects_.end() && it->first.starts_with(prefix); ++it) {
      page.objects.push_back({it->first, it->second.size(), "", SystemTime()});
    }
    return page;
  }
  Status Delete(const std::string& key) override {
    objects_.erase(key);
    return Status::Ok();
  }
  Result<DestinationCheck> CheckWritable() override { return DestinationCheck{}; }
  std::string Describe() const override { return "memory://"; }
  size_t Erase(const std::string& prefix) {
    return std::erase_if(objects_, [&](const auto& kv) { return kv.first.starts_with(prefix); });
  }

 private:
  std::map<std::string, std::string> objects_;
};

std::string Id(int run, int i) {
  return fmt::format("{:08x}-87a3-44ab-83d2-{:012x}", run, static_cast<uint64_t>(i) * 7919);
}

// 1,000 parts of 1,000 ids; then a reader rebuilds the index over them.
MemoryStore& Ledger() {
  static MemoryStore* store = [] {
    auto* s = new MemoryStore;
    const std::string dir = "dlq-archive/_audit/sent/" + LedgerDestinationKey(kDest) + "/";
    for (int run = 0; run < kRuns; ++run) {
      LedgerPart part{kDest, {}};
      for (int i = 0; i < kIdsPerRun; ++i) part.ids.push_back(Id(run, i));
      (void)s->Put(dir + fmt::format("20251127T{:06}Z-{:016x}-000000.ids", run, run), SerializeLedgerPart(part), {});
    }
    ReplayLedger builder(*s, "dlq-archive", DefaultClock());
    (void)builder.AlreadySent(kDest, "warm-up");
    return s;
  }();
  return *store;
}

void BM_LookupWithAMillionEarlierIds(benchmark::State& state) {
  ReplayLedger ledger(Ledger(), "dlq-archive", DefaultClock());
  ledger.DisableIndexRebuild();
  (void)ledger.AlreadySent(kDest, "load");
  // Half the questions hit (a rerun), half miss (new messages).
  std::vector<std::string> ids;
  for (int i = 0; i < 1000; ++i) ids.push_back(i % 2 ? Id(i, i) : Id(kRuns + i, i));
  size_t n = 0, hits = 0;
  for (auto _ : state) {
    auto r = ledger.AlreadySent(kDest, ids[n++ % ids.size()]);
    hits += r.ok() && *r;
    benchmark::DoNotOptimize(hits);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.counters["hit_ratio"] = static_cast<double>(hits) / static_cast<double>(n);
}
BENCHMARK(BM_LookupWithAMillionEarlierIds);

// One load of the destination's million ids. Arg: 0 index only, 8 index plus
// 8 new parts, -1 the 1,000 parts without an index.
void BM_LoadAMillionEarlierIds(benchmark::State& state) {
  MemoryStore& base = Ledger();
  MemoryStore store = base;
  const std::string dest = LedgerDestinationKey(kDest);
  if (state.range(0) < 0) store.Erase("dlq-archive/_audit/index/");
  for (int64_t p = 0; p < state.range(0); ++p) {
    LedgerPart part{kDest, {}};
    for (int i = 0; i < kIdsPerRun; ++i) part.ids.push_back(Id(kRuns + static_cast<int>(p), i));
    (void)store.Put("dlq-archive/_audit/sent/" + dest + fmt::format("/20251128T{:06}Z-x-000000.ids", p),
                    SerializeLedgerPart(part), {});
  }
  uint64_t ids = 0;
  for (auto _ : state) {
    ReplayLedger ledger(store, "dlq-archive", DefaultClock());
    ledger.DisableIndexRebuild();
    auto r = ledger.AlreadySent(kDest, Id(0, 0));
    if (!r.ok() || !*r) state.SkipWithError("the first id was not found");
    ids = ledger.load_stats().index_ids + ledger.load_stats().parts_read * kIdsPerRun;
  }
  state.counters["ids_loaded"] = static_cast<double>(ids);
}
BENCHMARK(BM_LoadAMillionEarlierIds)->Arg(0)->Arg(8)->Arg(-1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace dlq
