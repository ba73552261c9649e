#include "archiver/drainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "archiver/drain_completion.h"
#include "common/log.h"

namespace dlq {
namespace {

// "s3://bucket" and "arch/" as "s3://bucket/arch": where the run's objects go.
std::string DestinationWithPrefix(std::string store, std::string_view prefix) {
  while (!prefix.empty() && prefix.front() == '/') prefix.remove_prefix(1);
  while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  if (prefix.empty()) return store;
  while (!store.empty() && store.back() == '/') store.pop_back();
  return store + "/" + std::string(prefix);
}

}  // namespace

ArchiveContext MakeArchiveContext(const QueueInfo& queue, std::string host) {
  ArchiveContext ctx;
  ctx.queue = queue.name;
  ctx.queue_url = queue.url;
  ctx.region = queue.region;
  ctx.account_id = queue.account_id;
  ctx.archiver_version = DLQ_VERSION;
  ctx.host = std::move(host);
  ctx.fifo = queue.fifo;
  ctx.retention = queue.retention;
  return ctx;
}

QueueDrainer::QueueDrainer(QueueClient& sqs, ObjectStore& store, Clock& clock, QueueInfo queue, DrainOptions options,
                           ArchiveContext context)
    : sqs_(sqs),
      store_(store),
      clock_(clock),
      queue_(std::move(queue)),
      options_(std::move(options)),
      context_(std::move(context)),
      run_(sqs_, queue_, options_,
           [this] {
             return std::make_unique<BatchBuilder>(context_, options_.key_template, options_.prefix, options_.batch,
                                                   clock_);
           }),
      settler_(sqs_, store_, clock_, queue_, options_, run_.counters, run_.ledger, run_.copies,
               [this](const Status& status) { run_.Fail(status); }),
      receivers_(sqs_, clock_, run_, *this) {}

QueueDrainer::~QueueDrainer() = default;

int QueueDrainer::batch_buffers_made() const {
  MutexLock lock(run_.mu);
  return run_.pipeline.builders_made();
}

void QueueDrainer::RequestStop() {
  run_.RequestStop();
}

DrainStats QueueDrainer::Snapshot() const {
  DrainStats s;
  run_.counters.CopyTo(s);
  s.receivers = receivers_.level();
  s.initial_depth = initial_total_;
  return s;
}

void QueueDrainer::HandleCorrupt(const std::vector<CorruptMessage>& corrupt, SteadyTime received) {
  std::vector<HeldMessage> release;
  {
    MutexLock lock(run_.mu);
    for (const CorruptMessage& c : corrupt) {
      ++run_.counters.corrupt;
      HeldMessage receipt{c.message_id, c.receipt_handle, received, received};
      const int n = run_.selection.NoteCorrupt(receipt);
      Log().Log(LogLevel::kWarn, "archive.md5_mismatch",
                {{"queue", queue_.name}, {"message_id", c.message_id}, {"attempt", n}, {"reason", c.reason}});
      if (n < options_.corrupt_receipts_to_give_up) release.push_back(std::move(receipt));
    }
  }
  settler_.Release(release, /*count_released=*/false);
  if (!release.empty()) run_.NoteFifoLeave();
}

void QueueDrainer::HoldExamined(std::vector<HeldMessage> held) {
  if (held.empty()) return;
  std::vector<HeldMessage> release_now;
  {
    MutexLock lock(run_.mu);
    release_now = run_.selection.HoldExamined(std::move(held));
  }
  if (!release_now.empty()) {
    Log().Log(LogLevel::kWarn, "archive.examined_released_early",
              {{"queue", queue_.name},
               {"messages", static_cast<int64_t>(release_now.size())},
               {"note", "more messages examined than can be held; the pass may not reach every message"}});
    settler_.Release(release_now, /*count_released=*/false);
  }
}

bool QueueDrainer::Place(std::vector<Message>&& msgs, const std::vector<CorruptMessage>& corrupt, SteadyTime received) {
  if (!corrupt.empty()) HandleCorrupt(corrupt, received);
  // SQS started their visibility timeout when it answered, at some moment
  // after the request went out: counting from the request's start keeps
  // our deadline at or before SQS's, never after it.
  const auto now = received;
  SelectionPass::Sorted sorted;
  {
    MutexLock lock(run_.mu);
    sorted = run_.selection.Sort(std::move(msgs), clock_.Now());
  }
  run_.counters.selected += sorted.selected;
  run_.counters.skipped += sorted.skipped;
  std::vector<Message>& take = sorted.take;
  std::vector<HeldMessage> examined;
  examined.reserve(sorted.examined.size());
  for (Message& m : sorted.examined) {
    examined.push_back({std::move(m.message_id), std::move(m.receipt_handle), now, now + options_.visibility_timeout});
  }
  // Held invisible until the pass ends, so the next receives reach messages
  // not seen yet.
  HoldExamined(std::move(examined));
  if (!take.empty()) take = SettleCopies(std::move(take), received);
  // Enforce --max-messages across receivers.
  if (options_.max_messages > 0 && !take.empty()) {
    uint64_t before = budget_used_.fetch_add(take.size());
    uint64_t allowed =
        before >= options_.max_messages ? 0 : std::min<uint64_t>(take.size(), options_.max_messages - before);
    if (allowed < take.size()) {
      std::vector<HeldMessage> over;
      for (size_t i = allowed; i < take.size(); ++i)
        over.push_back({take[i].message_id, take[i].receipt_handle, {}, {}});
      take.resize(allowed);
      settler_.Release(over, /*count_released=*/false);
      run_.stop = true;
    } else if (before + take.size() >= options_.max_messages) {
      run_.stop = true;
    }
  }
  if (options_.dry_run && options_.max_messages > 0 && run_.counters.selected >= options_.max_messages)
    run_.stop = true;
  if (!take.empty()) AddSelected(std::move(take), received);
  return sorted.progress;
}

std::vector<Message> QueueDrainer::SettleCopies(std::vector<Message>&& take, SteadyTime received) {
  std::vector<Message> first;
  first.reserve(take.size());
  std::vector<HeldMessage> stored, release;
  int64_t joined = 0;
  {
    MutexLock lock(run_.mu);
    for (Message& m : take) {
      const CopyLedger::Seen seen = run_.copies.Take(m.message_id);
      if (seen == CopyLedger::Seen::kFirst) {
        first.push_back(std::move(m));
        continue;
      }
      if (seen == CopyLedger::Seen::kHeld && !run_.AbortingLocked() && run_.pipeline.AddCopy(m, received)) {
        ++joined;
        continue;
      }
      HeldMessage copy{std::move(m.message_id), std::move(m.receipt_handle), received, received, /*copy=*/true};
      (seen == CopyLedger::Seen::kStored ? stored : release).push_back(std::move(copy));
    }
  }
  if (first.size() == take.size()) return first;
  Log().Log(LogLevel::kInfo, "archive.received_again",
            {{"queue", queue_.name},
             {"joined_their_batch", joined},
             {"deleted_as_archived", static_cast<int64_t>(stored.size())},
             {"released", static_cast<int64_t>(release.size())},
             {"note", "SQS handed out messages this run holds or archived; each is archived and deleted once"}});
  // Its message is in a stored object: the copy is deleted as the original is.
  if (!stored.empty()) settler_.Delete(stored);
  // Its message is held where a copy cannot join it: the copy goes back.
  if (!release.empty()) settler_.Release(release, /*count_released=*/false);
  return first;
}

void QueueDrainer::Seal(bool wait) {
  SealBuilding(wait, /*only_if_full=*/false);
}

void QueueDrainer::AddSelected(std::vector<Message>&& msgs, SteadyTime received) {
  size_t i = 0;
  std::optional<BatchPipeline::Waiting> waiting;  // set once this receiver waits for room
  while (i < msgs.size()) {
    bool need_seal = false;
    {
      MutexLock lock(run_.mu);
      // Stopping or failed: nothing more goes into a batch.
      if (run_.AbortingLocked()) break;
      while (i < msgs.size() && !run_.pipeline.full()) {
        run_.pipeline.Add(msgs[i], i, run_.selection.OwnReceives(msgs[i].message_id), waiting, received);
        ++run_.counters.selected;
        ++i;
      }
      need_seal = run_.pipeline.full();
      if (need_seal && i < msgs.size() && !waiting) {
        // The wait for room can outlast the visibility timeout (slow
        // uploads): the heartbeat extends what waits there.
        waiting = run_.pipeline.Wait(msgs, i, received);
      }
    }
    if (need_seal) SealBuilding(/*wait=*/true, /*only_if_full=*/true);
  }
  std::vector<HeldMessage> rest;
  {
    MutexLock lock(run_.mu);
    rest = run_.pipeline.EndWait(msgs, i, waiting, received);
  }
  if (!rest.empty()) settler_.Release(rest);
}

void QueueDrainer::SealBuilding(bool wait, bool only_if_full) {
  MutexLock lock(run_.mu);
  // One batch is compressed at a time, so two batch buffers exist at most
  // (the one filling and the one compressing; each 8 MiB by default, the
  // largest part of the RSS). A compress takes tens of milliseconds, a batch
  // far longer to fill from SQS.
  auto may_seal = [&]() DLQ_REQUIRES(run_.mu) { return run_.pipeline.MaySeal(options_.max_batches_in_flight); };
  if (wait) {
    run_.cv.Wait(run_.mu, [&]() DLQ_REQUIRES(run_.mu) { return may_seal() || run_.AbortingLocked(); });
  } else if (!may_seal()) {
    return;
  }
  if (run_.AbortingLocked()) return;  // Run() releases the building batch
  if (!run_.pipeline.building()) return;
  // Another receiver sealed the full batch while this one waited: keep filling.
  if (only_if_full && !run_.pipeline.full()) return;
  HeldBatch batch;
  std::string gz;
  std::unique_ptr<BatchBuilder> full = run_.pipeline.BeginSeal(batch, gz);
  lock.Unlock();

  auto sealed = full->Finish(std::move(gz));

  lock.Lock();
  if (!sealed.ok()) {
    run_.pipeline.EndSeal(batch, std::move(full), std::nullopt);
    lock.Unlock();
    run_.Fail(sealed.status().WithContext(fmt::format("compress batch of {}", queue_.name)));
    settler_.Release(batch.held);
    run_.cv.NotifyAll();
    return;
  }
  run_.pipeline.EndSeal(batch, std::move(full), std::move(*sealed));
  run_.cv.NotifyAll();
}

void QueueDrainer::UploaderLoop() {
  while (true) {
    MutexLock lock(run_.mu);
    run_.cv.Wait(run_.mu, [&]() DLQ_REQUIRES(run_.mu) {
      return run_.pipeline.upload_queued() || (receivers_done_ && run_.pipeline.sealing() == 0);
    });
    if (!run_.pipeline.upload_queued()) return;
    HeldBatch batch;
    run_.pipeline.BeginUpload(batch);
    // Failed or stopping: batches not yet uploading go back to the queue.
    const bool release = run_.AbortingLocked();
    lock.Unlock();

    if (release) {
      settler_.Release(batch.held);
    } else {
      StoreBatch(batch);
    }
    lock.Lock();
    run_.pipeline.EndUpload(batch);
    run_.fifo.Left();  // its FIFO groups are free (NoteFifoLeave, under the lock already held)
    run_.cv.NotifyAll();
  }
}

void QueueDrainer::StoreBatch(HeldBatch& batch) {
  Status st = settler_.Upload(*batch.sealed);
  if (!st.ok()) {
    run_.Fail(st);
    settler_.Release(batch.held);
    return;
  }
  ++run_.counters.objects;
  run_.counters.bytes_uploaded += batch.sealed->gz.size();
  {
    // Under the lock: a copy may join the batch until it counts as stored.
    MutexLock g(run_.mu);
    run_.copies.Stored(batch.held);
    run_.keys.push_back(batch.sealed->key);
  }
  Log().Log(LogLevel::kInfo, "archive.object",
            {{"queue", queue_.name},
             {"key", batch.sealed->key},
             {"messages", static_cast<int64_t>(batch.sealed->messages)},
             {"bytes", static_cast<int64_t>(batch.sealed->gz.size())}});
  {
    // The body is stored: its buffer serves a later batch.
    MutexLock g(run_.mu);
    run_.pipeline.KeepBody(std::move(batch.sealed->gz), static_cast<size_t>(options_.max_batches_in_flight));
  }
  batch.sealed->gz.clear();
  batch.sealed->gz.shrink_to_fit();
  if (options_.keep) {
    // A copy: hold the originals to the end of the pass so receives
    // reach the rest, then release them.
    std::vector<HeldMessage> held;
    {
      MutexLock g(run_.mu);  // the heartbeat reads batches being uploaded
      held.swap(batch.held);
    }
    run_.counters.kept += held.size();
    HoldExamined(std::move(held));
    return;
  }
  {
    MutexLock g(run_.mu);
    run_.pipeline.BeginDelete(batch);
    run_.fifo.DeleteBegan();
  }
  run_.cv.NotifyAll();  // a slot for the next batch is free
  settler_.Delete(batch.held);
}

void QueueDrainer::HeartbeatLoop() {
  MutexLock lock(run_.mu);
  while (!heartbeat_stop_) {
    // Every interval, not at each notification (the pipeline notifies often).
    clock_.WaitFor(run_.mu, run_.cv, options_.heartbeat_interval,
                   [&]() DLQ_REQUIRES(run_.mu) { return heartbeat_stop_; });
    if (heartbeat_stop_) break;
    const SteadyTime now = clock_.SteadyNow();
    bool seal = run_.pipeline.should_seal();
    std::vector<VisibilityDue> due;
    run_.pipeline.AppendDue(now, seal, due);
    run_.selection.AppendDue(now, due);
    if (!due.empty()) {
      // Sent without the lock; the batches may move on meanwhile.
      lock.Unlock();
      std::vector<VisibilityExtension> extended = settler_.Extend(due);
      lock.Lock();
      std::vector<HeldMessage> orphans;
      for (const auto& [i, until] : extended) {
        if (!run_.selection.RecordDue(due[i], until) && !run_.pipeline.RecordDue(due[i], until)) {
          // Released (or deleted) while this extension was on the wire: the
          // extension must not hide it again.
          orphans.push_back({"", due[i].receipt_handle, now, now});
        }
      }
      if (!orphans.empty()) {
        lock.Unlock();
        settler_.Release(orphans, /*count_released=*/false);
        lock.Lock();
      }
    }
    if (seal) {
      lock.Unlock();
      SealBuilding(/*wait=*/false, /*only_if_full=*/false);
      lock.Lock();
    }
  }
}

bool QueueDrainer::FinalQueueEmpty() {
  // Approximate counts can lag a deletion by a moment: look a few times.
  for (int i = 0; i < 5; ++i) {
    if (i > 0) clock_.SleepFor(std::chrono::milliseconds(200 * i));
    if (auto c = run_.ReadCounts(); c && c->visible == 0 && c->in_flight == 0) return true;
  }
  return false;
}

DrainResult QueueDrainer::Run() {
  DrainResult result;
  result.queue = queue_;
  auto start = clock_.SteadyNow();
  Log().Log(LogLevel::kInfo, "archive.start",
            {{"queue", queue_.name},
             {"queue_url", queue_.url},
             {"destination", DestinationWithPrefix(store_.Describe(), options_.prefix)},
             {"dry_run", options_.dry_run},
             {"keep", options_.keep}});
  if (auto c = run_.ReadCounts()) initial_total_ = c->visible + c->in_flight;

  std::thread heartbeat([this] { HeartbeatLoop(); });
  std::vector<std::thread> uploaders;
  uploaders.reserve(2 * static_cast<size_t>(options_.max_batches_in_flight));
  // Twice the in-flight bound: some threads delete stored batches while the
  // others upload the next ones.
  for (int i = 0; i < 2 * options_.max_batches_in_flight; ++i) uploaders.emplace_back([this] { UploaderLoop(); });
  receivers_.Run();

  FinishBuilding();
  {
    MutexLock lock(run_.mu);
    receivers_done_ = true;
  }
  run_.cv.NotifyAll();
  for (auto& t : uploaders) t.join();
  {
    MutexLock lock(run_.mu);
    heartbeat_stop_ = true;
  }
  run_.cv.NotifyAll();
  heartbeat.join();

  result.corrupt_ids = EndPass();
  result.stats = Snapshot();
  {
    MutexLock lock(run_.mu);
    result.keys = run_.keys;
    result.status = run_.first_error;
    result.incomplete_reason = run_.incomplete_reason;
  }
  result.stopped = run_.stop_requested;
  if (result.status.ok() && !result.stopped) Judge(result);
  result.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(clock_.SteadyNow() - start);
  LogDone(result);
  return result;
}

void QueueDrainer::FinishBuilding() {
  if (!run_.Aborting()) {
    SealBuilding(/*wait=*/true, /*only_if_full=*/false);
    return;
  }
  // Stop or failure: what is still being built goes back at once.
  std::vector<HeldMessage> rest;
  {
    MutexLock lock(run_.mu);
    rest = run_.pipeline.DropBuilding();
  }
  settler_.Release(rest);
}

std::vector<std::string> QueueDrainer::EndPass() {
  // The pass is over: what it examined and what it set aside go back.
  SelectionPass::End end;
  {
    MutexLock lock(run_.mu);
    end = run_.selection.Finish();
  }
  settler_.Release(end.examined, /*count_released=*/false);
  settler_.Release(end.set_aside, /*count_released=*/false);
  return std::move(end.corrupt_ids);
}

void QueueDrainer::Judge(DrainResult& result) {
  const bool whole_queue = options_.selection.kind == SelectionKind::kAll && !options_.keep && !options_.dry_run &&
                           options_.max_messages == 0;
  CompletionFacts facts;
  facts.queue_seen_empty = run_.queue_seen_empty;
  facts.incomplete_reason = result.incomplete_reason;
  facts.corrupt_ids = result.corrupt_ids;
  facts.released = result.stats.released;
  {
    MutexLock lock(run_.mu);
    facts.examined_released_early = run_.selection.released_early();
  }
  facts.examined = result.stats.skipped + result.stats.selected;
  facts.initial_total = initial_total_;
  facts.max_examined_held = options_.max_examined_held;
  facts.budget_reached = options_.max_messages > 0 && budget_used_ >= options_.max_messages;
  std::function<std::string()> final_check;
  if (whole_queue) {
    final_check = [&]() -> std::string {
      if (FinalQueueEmpty()) return "";
      result.stats = Snapshot();
      return fmt::format(
          "the queue still shows {} visible and {} in flight at the end (new messages, or another consumer); run "
          "again after {}s",
          result.stats.approximate_remaining, result.stats.approximate_in_flight, options_.visibility_timeout.count());
    };
  }
  Completion c = JudgeCompletion(facts, final_check);
  result.drained = c.drained;
  result.incomplete = c.incomplete;
  result.incomplete_reason = std::move(c.reason);
}

void QueueDrainer::LogDone(const DrainResult& result) const {
  const char* outcome = !result.status.ok() ? "failed"
                        : result.stopped    ? "stopped"
                        : result.incomplete ? "incomplete"
                                            : "done";
  Log().Log(result.status.ok() ? LogLevel::kInfo : LogLevel::kWarn, "archive.done",
            {{"queue", queue_.name},
             {"result", std::string(outcome)},
             {"archived", static_cast<int64_t>(result.stats.archived)},
             {"deleted", static_cast<int64_t>(result.stats.deleted)},
             {"released", static_cast<int64_t>(result.stats.released)},
             {"kept", static_cast<int64_t>(result.stats.kept)},
             {"duplicates", static_cast<int64_t>(result.stats.duplicates)},
             {"received_again", static_cast<int64_t>(result.stats.received_again)},
             {"objects", static_cast<int64_t>(result.stats.objects)},
             {"receivers", result.stats.receivers},
             {"drained", result.drained}});
}

}  // namespace dlq
