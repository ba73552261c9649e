#include "replay/live_source.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "common/log.h"
#include "sqs/limits.h"

namespace dlq {
namespace {

// Runs a batch call over entries in chunks of 10; returns the ids that failed.
template <typename Entry, typename Call>
std::vector<std::string> InChunks(const std::vector<Entry>& entries, Call call) {
  std::vector<std::string> failed;
  for (size_t i = 0; i < entries.size(); i += sqs::kMaxBatchEntries) {
    std::vector<Entry> chunk(
        entries.begin() + static_cast<ptrdiff_t>(i),
        entries.begin() + static_cast<ptrdiff_t>(std::min(entries.size(), i + sqs::kMaxBatchEntries)));
    auto r = call(chunk);
    if (!r.ok()) {
      for (const Entry& e : chunk) failed.push_back(e.id);
      continue;
    }
    for (const BatchEntryError& f : r->failed) failed.push_back(f.id);
  }
  return failed;
}

}  // namespace

Result<LiveReplayStats> ReplayFromQueue(QueueClient& sqs, const QueueInfo& dlq, Replayer& replayer,
                                        const std::function<bool(const ArchiveRecord&)>& select, Clock& clock,
                                        const LiveReplayOptions& options) {
  LiveReplayStats stats;
  const ArchiveContext ctx = MakeArchiveContext(dlq, /*host=*/"");

  std::map<std::string, std::string> held;  // message id -> receipt handle, selected and not yet settled
  auto release = [&](const std::vector<std::string>& ids) {
    std::vector<VisibilityEntry> entries;
    for (size_t i = 0; i < ids.size(); ++i) {
      auto it = held.find(ids[i]);
      if (it == held.end()) continue;
      entries.push_back({fmt::format("r{}", entries.size()), it->second, 0});
      held.erase(it);
    }
    InChunks(entries,
             [&](const std::vector<VisibilityEntry>& c) { return sqs.ChangeMessageVisibilityBatch(dlq.url, c); });
    stats.released += entries.size();
  };
  replayer.OnBatchDone([&](const std::vector<const ReplayItem*>& sent, const std::vector<const ReplayItem*>& failed) {
    std::vector<DeleteEntry> deletes;
    std::vector<std::string> delete_ids;
    for (const ReplayItem* item : sent) {
      auto it = held.find(item->record.message_id);
      if (it == held.end()) continue;
      deletes.push_back({fmt::format("d{}", deletes.size()), it->second});
      delete_ids.push_back(it->first);
      held.erase(it);
    }
    // One retry of the entries that failed: the message was sent already, so a
    // failed delete means a duplicate on the next run, never a loss.
    std::vector<std::string> failed_ids =
        InChunks(deletes, [&](const std::vector<DeleteEntry>& c) { return sqs.DeleteMessageBatch(dlq.url, c); });
    if (!failed_ids.empty()) {
      std::vector<DeleteEntry> again;
      for (const DeleteEntry& d : deletes) {
        if (std::find(failed_ids.begin(), failed_ids.end(), d.id) != failed_ids.end()) again.push_back(d);
      }
      failed_ids =
          InChunks(again, [&](const std::vector<DeleteEntry>& c) { return sqs.DeleteMessageBatch(dlq.url, c); });
      for (const std::string& id : failed_ids) {
        size_t index = static_cast<size_t>(std::stoul(id.substr(1)));
        Log().Log(LogLevel::kWarn, "replay.delete_failed", {{"queue", dlq.name}, {"message_id", delete_ids[index]}});
      }
    }
    stats.delete_failures += failed_ids.size();
    stats.deleted += deletes.size() - failed_ids.size();
    std::vector<std::string> to_release;
    to_release.reserve(failed.size());
    for (const ReplayItem* item : failed) to_release.push_back(item->record.message_id);
    release(to_release);
  });

  auto release_all_held = [&] {
    std::vector<std::string> ids;
    ids.reserve(held.size());
    for (const auto& [id, handle] : held) ids.push_back(id);
    release(ids);
  };

  std::set<std::string> seen;
  int idle = 0;
  bool at_max = false;
  while (idle < options.idle_rounds && !at_max) {
    if (options.stop != nullptr && options.stop->load()) break;
    ReceiveOptions ro;
    ro.max_messages = static_cast<int>(sqs::kMaxBatchEntries);
    ro.wait_time_seconds = options.wait_time_seconds;
    ro.visibility_timeout = options.visibility_timeout_seconds;
    std::vector<CorruptMessage> corrupt;
    ro.corrupt = &corrupt;
    // No ro.cancel: a receive abandoned on a stop may have taken messages
    // whose reply is then never read, and they would stay invisible for the
    // visibility timeout. The poll is short (wait_time_seconds), so a stop
    // waits for it and releases what it brought.
    auto received = sqs.ReceiveMessages(dlq.url, ro);
    if (!received.ok()) {
      release_all_held();
      return received.status().WithContext(fmt::format("receive from {}", dlq.name));
    }
    if (options.stop != nullptr && options.stop->load()) {
      for (const CorruptMessage& c : corrupt) held.emplace(c.message_id, c.receipt_handle);
      for (const Message& m : *received) held.emplace(m.message_id, m.receipt_handle);
      break;  // released below, with everything else held
    }
    for (const CorruptMessage& c : corrupt) {
      ++stats.corrupt;
      held.emplace(c.message_id, c.receipt_handle);
      release({c.message_id});
    }
    bool any_new = false;
    std::vector<std::string> not_selected;
    // Hold the whole receive first, so an error or a stop part-way through it
    // releases the messages not yet looked at too.
    for (const Message& m : *received) held.emplace(m.message_id, m.receipt_handle);
    for (Message& m : *received) {
      ++stats.received;
      if (seen.insert(m.message_id).second) any_new = true;
      ArchiveRecord record = MakeArchiveRecord(m, ctx, clock.Now());
      if (at_max || !select(record)) {
        if (!at_max) ++stats.not_selected;
        not_selected.push_back(m.message_id);
        continue;
      }
      auto added = replayer.Add(ReplayItem{std::move(record), m.receipt_handle});
      if (!added.ok()) {
        release_all_held();
        return added.status();
      }
      if (!*added) {
        at_max = true;
        not_selected.push_back(m.message_id);
        continue;
      }
      ++stats.selected;
    }
    release(not_selected);
    if (Status st = replayer.Flush(); !st.ok()) {
      release_all_held();
      return st;
    }
    if (options.dry_run) release_all_held();
    idle = any_new ? 0 : idle + 1;
  }
  release_all_held();
  return stats;
}

}  // namespace dlq
