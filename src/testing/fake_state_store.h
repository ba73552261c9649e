// FakeStateStore: a StateStore in memory with the SQLite store's semantics
// (samples and transitions appended on save, everything kept returned on
// load). Counts calls and fails on command. Outlives every Daemon using it,
// so a test can "restart" a daemon over the same state.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "monitor/state_store.h"

namespace dlq {

class FakeStateStore final : public StateStore {
 public:
  std::string path() const override { return ""; }

  Result<std::optional<QueueRecord>> LoadQueue(const QueueKey& key) override {
    ++loads;
    if (fail_loads) return Unavailable("fake state store: load fails on command");
    auto it = queues.find(key);
    if (it == queues.end()) return std::optional<QueueRecord>();
    return std::optional<QueueRecord>(it->second);
  }

  Status SaveQueues(std::span<const QueueRecord> records) override {
    ++saves;
    if (fail_saves) return Unavailable("fake state store: save fails on command");
    for (const QueueRecord& r : records) {
      QueueRecord& kept = queues[r.key];
      std::vector<QueueSample> samples = std::move(kept.samples);
      std::map<std::string, std::vector<Transition>> history;
      for (StoredAlarm& a : kept.alarms) history[a.name] = std::move(a.snapshot.history);
      kept = r;
      kept.samples = std::move(samples);
      kept.samples.insert(kept.samples.end(), r.samples.begin(), r.samples.end());
      for (StoredAlarm& a : kept.alarms) {
        std::vector<Transition> h = std::move(history[a.name]);
        h.insert(h.end(), a.snapshot.history.begin(), a.snapshot.history.end());
        a.snapshot.history = std::move(h);
      }
    }
    return Status::Ok();
  }

  Result<PruneCounts> Prune(const PruneOptions& o) override {
    PruneCounts c;
    const SystemTime cutoff = o.now - o.max_age;
    for (auto it = queues.begin(); it != queues.end();) {
      if (it->second.saved_at < cutoff) {
        it = queues.erase(it);
        ++c.queues;
        continue;
      }
      auto& s = it->second.samples;
      size_t before = s.size();
      std::erase_if(s, [&](const QueueSample& x) { return x.time < cutoff; });
      if (s.size() > o.max_samples) s.erase(s.begin(), s.end() - static_cast<std::ptrdiff_t>(o.max_samples));
      c.samples += before - s.size();
      ++it;
    }
    if (o.watched_queues) {
      std::erase_if(ledger, [&](const auto& kv) {
        bool gone =
            std::find(o.watched_queues->begin(), o.watched_queues->end(), kv.first.first) == o.watched_queues->end();
        c.ledger += gone ? 1 : 0;
        return gone;
      });
    }
    return c;
  }

  Status UpsertLedger(std::span<const LedgerRow> rows) override {
    for (const LedgerRow& r : rows) ledger[{r.queue, r.message_id}] = r;
    return Status::Ok();
  }
  Result<std::vector<LedgerRow>> LoadLedger(const std::string& queue) override {
    std::vector<LedgerRow> out;
    for (const auto& [k, r] : ledger) {
      if (k.first == queue) out.push_back(r);
    }
    return out;
  }
  Status DeleteLedger(const std::string& queue, std::span<const std::string> message_ids) override {
    for (const std::string& id : message_ids) ledger.erase({queue, id});
    return Status::Ok();
  }
  Result<uint64_t> PruneLedger(const std::string& queue, SystemTime sent_before) override {
    return static_cast<uint64_t>(std::erase_if(
        ledger, [&](const auto& kv) { return kv.first.first == queue && kv.second.sent_time < sent_before; }));
  }

  std::map<QueueKey, QueueRecord> queues;
  std::map<std::pair<std::string, std::string>, LedgerRow> ledger;
  int loads = 0, saves = 0;
  bool fail_loads = false, fail_saves = false;
};

}  // namespace dlq
