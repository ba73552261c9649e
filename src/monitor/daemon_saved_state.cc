#include "monitor/daemon_saved_state.h"

#include <fmt/format.h>

#include <filesystem>

#include "common/file_util.h"
#include "common/log.h"
#include "monitor/state_store.h"

namespace dlq {

using daemon_internal::QueueState;

namespace {

// Replaces the stored ledger of the queue at `url` with `entries`: whole, as
// a ledger changes once per receive pass, not per collection.
Status ReplaceLedger(StateStore& store, const std::string& url, std::vector<LedgerEntry> entries, SystemTime now) {
  std::vector<LedgerRow> rows;
  rows.reserve(entries.size());
  for (LedgerEntry& e : entries) {
    rows.push_back({url, std::move(e.message_id), e.sent, e.first_seen, e.first_receive_count, e.own_receives});
  }
  Status st = store.PruneLedger(url, now + std::chrono::hours(24 * 366)).status();
  return st.ok() ? store.UpsertLedger(rows) : st;
}

// The alarm's state for the store, with only the transitions not saved yet.
void AddStoredAlarm(QueueRecord& r, const Alarm* alarm, const std::map<std::string, std::vector<Transition>>& unsaved) {
  if (alarm == nullptr) return;
  StoredAlarm& a = r.alarms.emplace_back();
  a.name = alarm->spec().name;
  a.spec_key = SpecKey(alarm->spec());
  a.snapshot = alarm->Snapshot();
  auto it = unsaved.find(a.name);
  a.snapshot.history = it != unsaved.end() ? it->second : std::vector<Transition>{};
}

}  // namespace

DaemonStateKeeper::DaemonStateKeeper(const DaemonOptions& options, Clock& clock,
                                     const daemon_internal::WatchedGroups& watched)
    : options_(options), clock_(clock), watched_(watched) {}

void DaemonStateKeeper::Open(const MonitorConfig& config) {
  if (options_.state_store != nullptr) {
    store_ = options_.state_store;
    return;
  }
  if (config.state_dir.empty()) {
    Log().Log(LogLevel::kWarn, "state_in_memory",
              {{"consequence",
                "state_dir is not set: alarm states, history, charts and run totals are kept in memory only; a "
                "restart forgets them and re-notifies alarms"}});
    return;
  }
  namespace fs = std::filesystem;
  // Created owner-only: the state file names every watched queue and holds
  // the message-id ledger.
  if (auto mode = MakePrivateDirectories(config.state_dir); !mode.ok()) {
    Log().Log(LogLevel::kError, "state_dir_failed", {{"path", config.state_dir}, {"error", mode.status().ToString()}});
  } else if ((*mode & 077) != 0) {
    Log().Log(LogLevel::kWarn, "state_dir_open_to_others",
              {{"path", config.state_dir},
               {"mode", fmt::format("{:04o}", *mode)},
               {"consequence",
                "other users may list or read the state (queue URLs, the message-id ledger, alarm history); "
                "run chmod 700 on it"}});
  }
  const std::string path =
      (fs::path(config.state_dir) / StateFileName(config.shard.index, config.shard.count)).string();
  SqliteStateStoreOptions o;
  o.now = clock_.Now();
  o.on_moved_aside = [&path](const std::string& moved, const Status& why) {
    Log().Log(LogLevel::kError, "state_file_corrupt",
              {{"path", path},
               {"moved_to", moved},
               {"error", why.ToString()},
               {"consequence", "starting with empty state (alarms, history and totals are learnt again)"}});
  };
  auto store = OpenSqliteStateStore(path, o);
  if (!store.ok()) {
    Log().Log(LogLevel::kError, "state_open_failed",
              {{"path", path},
               {"error", store.status().ToString()},
               {"consequence", "state is kept in memory only until the next start"}});
    return;
  }
  owned_store_ = std::move(*store);
  store_ = owned_store_.get();
  Log().Log(LogLevel::kInfo, "state_opened", {{"path", path}});
}

bool DaemonStateKeeper::Restore(QueueState& q, const std::string& group, const DiscoveredQueue& dq) {
  if (store_ == nullptr) return false;
  auto kept = store_->LoadQueue({group, dq.url});
  if (!kept.ok()) {
    Log().Log(LogLevel::kError, "state_load_failed",
              {{"group", group}, {"queue", dq.name}, {"error", kept.status().ToString()}});
    return false;
  }
  if (!kept->has_value()) return false;
  QueueRecord& r = **kept;
  MutexLock lock(q.mu);
  for (const QueueSample& sample : r.samples) q.seen.history.Add(sample);
  q.seen.last_empty = r.last_empty;
  if (auto rows = store_->LoadLedger(dq.url); rows.ok()) {
    std::vector<LedgerEntry> entries;
    entries.reserve(rows->size());
    for (LedgerRow& row : *rows) {
      entries.push_back({std::move(row.message_id), row.sent_time, row.first_seen,
                         static_cast<int>(row.first_receive_count), static_cast<int>(row.own_receives)});
    }
    q.seen.ledger.Load(entries);
    q.saved_ledger_generation = q.seen.ledger.generation();
  } else {
    Log().Log(LogLevel::kError, "state_load_failed",
              {{"group", group}, {"queue", dq.name}, {"error", rows.status().ToString()}});
  }
  q.seen.learned_at = r.learned_at;
  q.seen.pass_baseline = r.pass_baseline;
  q.seen.oldest_sent = r.oldest_sent;
  q.nonempty_since = r.nonempty_since;
  static_cast<ArchiveTotals&>(q.archive) = r;
  q.restored = std::move(r);  // the alarms take theirs when Watch creates them
  return true;
}

void DaemonStateKeeper::Save(SystemTime now) {
  if (store_ == nullptr) return;
  std::vector<QueueRecord> records;
  std::vector<std::string> watched;
  std::vector<QueueState*> saved;
  struct LedgerSave {
    QueueState* queue;
    std::string url;
    std::vector<LedgerEntry> entries;
    uint64_t generation;
  };
  std::vector<LedgerSave> ledgers;  // of the queues whose ledger changed since it was saved
  bool every_group_discovered = true;
  {
    MutexLock lock(watched_.mu);
    for (const auto& g : watched_.groups) {
      every_group_discovered = every_group_discovered && g->last_discovery && g->error.empty();
      for (const auto& [url, q] : g->queues) {
        MutexLock l(q->mu);
        QueueRecord& r = records.emplace_back();
        r.key = {q->id.group, url};
        r.name = q->id.dq.name;
        r.last_empty = q->seen.last_empty;
        r.nonempty_since = q->nonempty_since;
        r.learned_at = q->seen.learned_at;
        r.pass_baseline = q->seen.pass_baseline;
        r.oldest_sent = q->seen.oldest_sent;
        static_cast<ArchiveTotals&>(r) = q->archive;
        AddStoredAlarm(r, q->alarms.expiry.get(), q->unsaved_transitions);
        AddStoredAlarm(r, q->alarms.depth.get(), q->unsaved_transitions);
        r.samples = q->unsaved_samples;
        if (q->seen.ledger.generation() != q->saved_ledger_generation) {
          ledgers.push_back({q.get(), url, q->seen.ledger.Save(), q->seen.ledger.generation()});
        }
        r.saved_at = now;
        watched.push_back(url);
        saved.push_back(q.get());
      }
    }
  }
  if (Status st = store_->SaveQueues(records); !st.ok()) {
    if (!save_failing_) {
      Log().Log(LogLevel::kError, "state_save_failed",
                {{"path", store_->path()}, {"error", st.ToString()}, {"consequence", "retried after each collection"}});
    }
    save_failing_ = true;
    return;  // what is unsaved stays for the next save
  }
  if (save_failing_) Log().Log(LogLevel::kInfo, "state_save_recovered", {{"path", store_->path()}});
  save_failing_ = false;
  // Only this thread adds to the unsaved parts, so all of them were saved.
  for (QueueState* q : saved) {
    MutexLock l(q->mu);
    q->unsaved_samples.clear();
    q->unsaved_transitions.clear();
  }
  for (LedgerSave& l : ledgers) {
    if (Status st = ReplaceLedger(*store_, l.url, std::move(l.entries), now); !st.ok()) {
      Log().Log(LogLevel::kError, "state_save_failed",
                {{"path", store_->path()}, {"error", st.ToString()}, {"consequence", "retried after each collection"}});
      continue;
    }
    MutexLock l2(l.queue->mu);
    l.queue->saved_ledger_generation = l.generation;
  }
  Prune(now, std::move(watched), every_group_discovered);
}

void DaemonStateKeeper::Prune(SystemTime now, std::vector<std::string> watched, bool every_group_discovered) {
  if (last_prune_ && now - *last_prune_ < options_.state_prune_interval) return;
  last_prune_ = now;
  PruneOptions prune;
  prune.now = now;
  prune.max_samples = options_.history_samples;
  // Ledger rows of queues no longer watched go, unless a group could not
  // tell what it watches.
  if (every_group_discovered) prune.watched_queues = std::move(watched);
  auto pruned = store_->Prune(prune);
  if (!pruned.ok()) {
    Log().Log(LogLevel::kError, "state_prune_failed",
              {{"path", store_->path()}, {"error", pruned.status().ToString()}});
  }
}

}  // namespace dlq
