#include "replay/live_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "archiver/drainer.h"
#include "archiver/queue_depth.h"
#include "common/count_noun.h"
#include "common/log.h"
#include "replay/origin_clue.h"
#include "sqs/limits.h"

namespace dlq {
namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

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

// One pass over a DLQ (see live_source.h). Every message received is held
// until Finish() releases what is left; only a confirmed send deletes.
class LivePass {
 public:
  LivePass(QueueClient& sqs, const QueueInfo& dlq, Replayer& replayer,
           const std::function<bool(const ArchiveRecord&)>& select, Clock& clock, const LiveReplayOptions& options)
      : sqs_(sqs),
        dlq_(dlq),
        replayer_(replayer),
        select_(select),
        clock_(clock),
        options_(options),
        ctx_(MakeArchiveContext(dlq, /*host=*/"")),
        timeout_(std::chrono::seconds(options.visibility_timeout_seconds)) {}

  Result<LiveReplayStats> Run(LiveReplayStats* so_far) {
    replayer_.OnBatchDone([this](const std::vector<const ReplayItem*>& sent, const std::vector<const ReplayItem*>&) {
      DeleteSent(sent);
    });
    if (options_.guard != nullptr) options_.guard->OnWait([this] { return LookWhileGuardWaits(); });
    auto start = ReadQueueDepth(sqs_, dlq_.url, dlq_.name);
    if (start.ok()) stats_.present_at_start = start->visible + start->in_flight;
    Status st = Loop();
    if (options_.guard != nullptr) options_.guard->OnWait(nullptr);
    ReleaseAll();
    replayer_.OnBatchDone(nullptr);  // this pass ends here; the Replayer may outlive it
    if (so_far != nullptr) *so_far = stats_;
    if (!st.ok()) return st;
    return stats_;
  }

 private:
  struct Held {
    std::string receipt_handle;
    SteadyTime visible_until;
  };
  enum class Verdict { kGoOn, kEnd };

  // SQS hands a FIFO queue's 20,001st in-flight message to nobody, silently.
  size_t MaxHeld() const { return dlq_.fifo ? std::min<size_t>(options_.max_held, 20000) : options_.max_held; }

  bool Stopping() const { return options_.stop != nullptr && options_.stop->load(); }

  Status Loop() {
    int idle = 0;
    int depth_checks = 0;
    while (!Stopping() && !stats_.at_max) {
      // A lost hold means the messages seen are no longer all held: emptiness
      // proves nothing until they are held again.
      const uint64_t lost_before = stats_.holds_lost;
      Heartbeat();
      if (held_.size() >= MaxHeld()) {
        stats_.incomplete_reason = fmt::format(
            "held {} messages, the most one pass holds at once; the rest of the DLQ was not examined", held_.size());
        return Status::Ok();
      }
      bool any_new = false;
      DLQ_RETURN_IF_ERROR(ReceiveOnce(&any_new));
      if (any_new || stats_.holds_lost != lost_before) {
        idle = 0;
        continue;
      }
      if (++idle < options_.idle_rounds) continue;
      idle = 0;
      if (CheckEnd(++depth_checks) == Verdict::kEnd) return Status::Ok();
    }
    return Status::Ok();
  }

  // After idle_rounds receives without anything new.
  Verdict CheckEnd(int depth_checks) {
    auto depth = ReadQueueDepth(sqs_, dlq_.url, dlq_.name);
    if (!depth.ok()) {
      stats_.incomplete_reason = fmt::format("could not read the depth of {}: {}", dlq_.name, depth.status().message());
      return Verdict::kEnd;
    }
    const int64_t held = static_cast<int64_t>(held_.size());
    if (depth->visible == 0 && depth->in_flight <= held) {
      stats_.complete = true;
      return Verdict::kEnd;
    }
    if (depth_checks < options_.depth_checks) {
      clock_.SleepFor(std::chrono::milliseconds(200));  // SQS's counts lag a little behind deletes
      return Verdict::kGoOn;
    }
    if (depth->visible > 0 && dlq_.fifo && held > 0) {
      stats_.incomplete_reason = fmt::format(
          "~{} not examined: they follow, in their FIFO groups, messages this pass held (SQS hands "
          "out a group's messages in order); run again, or narrow the filter to whole groups",
          CountNoun(static_cast<uint64_t>(depth->visible), "message", "messages"));
    } else if (depth->visible > 0) {
      stats_.incomplete_reason = fmt::format(
          "receives brought nothing new while ~{} stayed visible (the DLQ is being refilled, or SQS "
          "did not hand them out); run again",
          CountNoun(static_cast<uint64_t>(depth->visible), "message", "messages"));
    } else {
      stats_.incomplete_reason = fmt::format(
          "~{} in flight without this pass holding them (another consumer, or a receive whose "
          "reply was lost); run again after {}s",
          CountNoun(static_cast<uint64_t>(depth->in_flight - held), "message is", "messages are"),
          options_.visibility_timeout_seconds);
    }
    return Verdict::kEnd;
  }

  // Receives once and holds everything received; corrupt receipts are
  // released at once (received again, intact with luck).
  Result<std::vector<Message>> ReceiveAndHold(int wait_time_seconds) {
    ReceiveOptions ro;
    ro.max_messages = static_cast<int>(sqs::kMaxBatchEntries);
    ro.wait_time_seconds = wait_time_seconds;
    ro.visibility_timeout = options_.visibility_timeout_seconds;
    std::vector<CorruptMessage> corrupt;
    ro.corrupt = &corrupt;
    // No ro.cancel: a receive abandoned on a stop may have taken messages
    // whose reply is then never read, and they would stay invisible for the
    // visibility timeout. The poll is short (wait_time_seconds), so a stop
    // waits for it and releases what it brought.
    ++stats_.receive_calls;
    const SteadyTime started = clock_.SteadyNow();
    auto received = sqs_.ReceiveMessages(dlq_.url, ro);
    if (!received.ok()) return received.status().WithContext(fmt::format("receive from {}", dlq_.name));
    stats_.received += received->size();
    stats_.corrupt += corrupt.size();
    // Hold the whole receive first, so an error or a stop part-way through it
    // releases the messages not yet looked at too.
    for (const CorruptMessage& c : corrupt) Hold(c.message_id, c.receipt_handle, started);
    for (const Message& m : *received) Hold(m.message_id, m.receipt_handle, started);
    std::vector<std::string> corrupt_ids;
    for (const CorruptMessage& c : corrupt) {
      if (!seen_.contains(c.message_id)) corrupt_ids.push_back(c.message_id);
    }
    Release(corrupt_ids);
    return std::move(received).value();
  }

  Status ReceiveOnce(bool* any_new) {
    // FIFO: a group stays blocked while this pass holds its messages, so do
    // not sit in a long poll when holding some.
    DLQ_ASSIGN_OR_RETURN(std::vector<Message> received,
                         ReceiveAndHold(dlq_.fifo && !held_.empty() ? 0 : options_.wait_time_seconds));
    if (Stopping()) return Status::Ok();
    DLQ_RETURN_IF_ERROR(TakeRefailures(received));
    for (Message& m : received) pending_.push_back(std::move(m));
    while (!pending_.empty() && !stats_.at_max) {
      Message m = std::move(pending_.front());
      pending_.pop_front();
      if (!seen_.insert(m.message_id).second) continue;  // held again; examined once
      *any_new = true;
      ++stats_.examined;
      ArchiveRecord record = MakeArchiveRecord(m, ctx_, clock_.Now());
      if (!select_(record)) {
        ++stats_.not_selected;
        continue;
      }
      // Selected once it matched, even when the Add that follows stops the
      // run (a guard's breach): it is then a selected message not sent.
      ++stats_.selected;
      // A guarded Add may block; while it waits, LookWhileGuardWaits adds to pending_.
      DLQ_ASSIGN_OR_RETURN(bool added, replayer_.Add(ReplayItem{std::move(record), m.receipt_handle}));
      if (!added) {
        stats_.at_max = true;
        --stats_.examined;
        --stats_.selected;
        seen_.erase(m.message_id);
        break;
      }
    }
    return replayer_.Flush();
  }

  // The guard's on_wait: keeps the holds and looks at the DLQ, where
  // re-failures land; other messages received wait in pending_.
  Status LookWhileGuardWaits() {
    Heartbeat();
    DLQ_ASSIGN_OR_RETURN(std::vector<Message> received, ReceiveAndHold(/*wait_time_seconds=*/0));
    DLQ_RETURN_IF_ERROR(TakeRefailures(received));
    for (Message& m : received) pending_.push_back(std::move(m));
    return Status::Ok();
  }

  // Removes from `received` the messages this guarded run sent that came
  // back (their MessageId is a new id it sent): counted, given to the
  // guard, released, never examined or sent again.
  Status TakeRefailures(std::vector<Message>& received) {
    if (options_.guard == nullptr) return Status::Ok();
    std::vector<RefailedMessage> found;
    std::vector<std::string> release;
    std::erase_if(received, [&](const Message& m) {
      // Its own id (an SQS destination), or, sent to an origin, the key it is
      // known by (replay/origin_clue.h).
      std::string key;
      for (std::string& k : RefailureKeysOf(m)) {
        if (options_.guard->IsOurs(k)) {
          key = std::move(k);
          break;
        }
      }
      if (key.empty()) return false;
      if (seen_.insert(key).second) {
        const ReplayedMessage& sent = options_.guard->Watched(key);
        found.push_back({sent.message_id, key, sent.destination, dlq_.url, clock_.Now()});
        ++stats_.refailed;
      }
      release.push_back(m.message_id);
      return true;
    });
    Release(release);
    return options_.guard->Refailed(found);
  }

  void Hold(const std::string& id, const std::string& receipt_handle, SteadyTime received) {
    held_[id] = Held{receipt_handle, received + timeout_};
  }

  // The Replayer confirmed these sent: delete them (one retry of the entries
  // that failed; a failed delete means a duplicate on the next run, never a
  // loss, unless the ledger skips it). Failed sends, and sent messages whose
  // delete failed, stay held and go back at the end.
  void DeleteSent(const std::vector<const ReplayItem*>& sent) {
    std::vector<DeleteEntry> deletes;
    std::vector<std::string> delete_ids;
    std::vector<Held> delete_holds;
    for (const ReplayItem* item : sent) {
      auto it = held_.find(item->record.message_id);
      if (it == held_.end()) continue;
      deletes.push_back({fmt::format("d{}", deletes.size()), it->second.receipt_handle});
      delete_ids.push_back(it->first);
      delete_holds.push_back(it->second);
      held_.erase(it);
    }
    auto call = [&](const std::vector<DeleteEntry>& c) { return sqs_.DeleteMessageBatch(dlq_.url, c); };
    std::vector<std::string> failed_ids = InChunks(deletes, call);
    if (!failed_ids.empty()) {
      std::vector<DeleteEntry> again;
      for (const DeleteEntry& d : deletes) {
        if (std::find(failed_ids.begin(), failed_ids.end(), d.id) != failed_ids.end()) again.push_back(d);
      }
      failed_ids = InChunks(again, call);
      for (const std::string& id : failed_ids) {
        size_t index = static_cast<size_t>(std::stoul(id.substr(1)));
        Log().Log(LogLevel::kWarn, "replay.delete_failed", {{"queue", dlq_.name}, {"message_id", delete_ids[index]}});
        held_[delete_ids[index]] = delete_holds[index];  // still ours: released with the rest at the end
      }
    }
    stats_.delete_failures += failed_ids.size();
    stats_.deleted += deletes.size() - failed_ids.size();
  }

  // Extends the visibility of held messages with less than half of it left.
  // An entry that fails is no longer held (it comes back and is held again).
  void Heartbeat() {
    const SteadyTime now = clock_.SteadyNow();
    std::vector<VisibilityEntry> entries;
    std::vector<std::string> ids;
    for (const auto& [id, h] : held_) {
      if (h.visible_until - now > timeout_ / 2) continue;
      entries.push_back({fmt::format("v{}", entries.size()), h.receipt_handle, options_.visibility_timeout_seconds});
      ids.push_back(id);
    }
    if (entries.empty()) return;
    std::vector<std::string> failed = InChunks(
        entries, [&](const std::vector<VisibilityEntry>& c) { return sqs_.ChangeMessageVisibilityBatch(dlq_.url, c); });
    std::unordered_set<std::string> failed_set(failed.begin(), failed.end());
    for (size_t i = 0; i < entries.size(); ++i) {
      if (failed_set.contains(entries[i].id)) {
        held_.erase(ids[i]);
        ++stats_.holds_lost;
        continue;
      }
      held_[ids[i]].visible_until = now + timeout_;
      ++stats_.visibility_extensions;
    }
    if (!failed.empty()) {
      Log().Log(LogLevel::kWarn, "replay.hold_lost",
                {{"queue", dlq_.name},
                 {"messages", static_cast<int64_t>(failed.size())},
                 {"note", "their visibility could not be extended; they are received again, never sent twice"}});
    }
  }

  // Makes these held messages visible again.
  void Release(const std::vector<std::string>& ids) {
    std::vector<VisibilityEntry> entries;
    for (const std::string& id : ids) {
      auto it = held_.find(id);
      if (it == held_.end()) continue;
      entries.push_back({fmt::format("r{}", entries.size()), it->second.receipt_handle, 0});
      held_.erase(it);
    }
    std::vector<std::string> failed = InChunks(
        entries, [&](const std::vector<VisibilityEntry>& c) { return sqs_.ChangeMessageVisibilityBatch(dlq_.url, c); });
    stats_.released += entries.size() - failed.size();
    if (!failed.empty()) {
      Log().Log(LogLevel::kWarn, "replay.release_failed",
                {{"queue", dlq_.name},
                 {"messages", static_cast<int64_t>(failed.size())},
                 {"note", fmt::format("visible again within {}s", options_.visibility_timeout_seconds)}});
    }
  }

  void ReleaseAll() {
    std::vector<std::string> ids;
    ids.reserve(held_.size());
    for (const auto& [id, h] : held_) ids.push_back(id);
    Release(ids);
  }

  QueueClient& sqs_;
  const QueueInfo& dlq_;
  Replayer& replayer_;
  const std::function<bool(const ArchiveRecord&)>& select_;
  Clock& clock_;
  const LiveReplayOptions& options_;
  const ArchiveContext ctx_;
  const std::chrono::seconds timeout_;
  LiveReplayStats stats_;
  std::unordered_map<std::string, Held> held_;  // message id -> latest receipt, not deleted
  std::unordered_set<std::string> seen_;        // examined, or found again (guarded)
  std::deque<Message> pending_;                 // received and held, not looked at yet
};

}  // namespace

Status LiveReplayOptions::Validate() const {
  if (visibility_timeout_seconds < 10 || visibility_timeout_seconds > 43200) {
    return InvalidArgument("visibility timeout must be between 10s and 12h");
  }
  if (wait_time_seconds < 0 || wait_time_seconds > 20) return InvalidArgument("wait time must be 0..20 seconds");
  if (idle_rounds < 1) return InvalidArgument("idle rounds must be >= 1");
  if (depth_checks < 1) return InvalidArgument("depth checks must be >= 1");
  if (max_held < sqs::kMaxBatchEntries) return InvalidArgument("max held must be >= 10");
  return Status::Ok();
}

Result<LiveReplayStats> ReplayFromQueue(QueueClient& sqs, const QueueInfo& dlq, Replayer& replayer,
                                        const std::function<bool(const ArchiveRecord&)>& select, Clock& clock,
                                        const LiveReplayOptions& options, LiveReplayStats* so_far) {
  DLQ_RETURN_IF_ERROR(options.Validate());
  LivePass pass(sqs, dlq, replayer, select, clock, options);
  return pass.Run(so_far);
}

}  // namespace dlq
