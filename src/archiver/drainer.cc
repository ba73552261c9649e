#include "archiver/drainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "archive/expiry.h"
#include "common/log.h"
#include "common/strings.h"

namespace dlq {
namespace {

constexpr std::chrono::hours kMaxVisibilityWindow{12};
constexpr size_t kSqsBatch = 10;
// Local retries of receives and deletes (after AwsClient's own retries):
// full jitter, cap 100 ms doubling to 5 s.
const RetryOptions kLocalRetry{.max_attempts = 6,
                               .base_delay = std::chrono::milliseconds(100),
                               .max_delay = std::chrono::milliseconds(5000)};
// Messages not selected are held invisible at most this many at a time.
constexpr size_t kMaxSkippedHeld = 10000;

bool IsReceiptHandleError(const BatchEntryError& e) {
  return e.code == "ReceiptHandleIsInvalid" || e.code == "InvalidReceiptHandle" ||
         e.code == "AWS.SimpleQueueService.ReceiptHandleIsInvalid" ||
         (e.code == "InvalidParameterValue" && e.message.find("eceipt") != std::string::npos);
}

}  // namespace

BatchLimits DrainOptions::DefaultBatchLimits() {
  BatchLimits limits;
  limits.max_messages = 10000;
  limits.max_bytes = 8u << 20;  // keeps peak memory well under 64 MiB with 2 batches in flight
  limits.max_age = std::chrono::seconds(30);
  limits.gzip_level = 1;  // JSON compresses well at level 1; level 6 costs ~3x the CPU
  return limits;
}

PutOptions DrainOptions::DefaultPutOptions() {
  PutOptions put;
  put.content_type = "application/gzip";
  put.create_only = true;
  return put;
}

Status DrainOptions::Validate() const {
  DLQ_RETURN_IF_ERROR(batch.Validate());
  if (visibility_timeout < std::chrono::seconds(10) || visibility_timeout > std::chrono::hours(12)) {
    return InvalidArgument("visibility timeout must be between 10s and 12h");
  }
  if (receivers < 1 || receivers > 64) return InvalidArgument("concurrency (receivers) must be between 1 and 64");
  if (deleters < 1 || deleters > 64) return InvalidArgument("deleters must be between 1 and 64");
  if (max_batches_in_flight < 1 || max_batches_in_flight > 16) {
    return InvalidArgument("max batches in flight must be between 1 and 16");
  }
  if (wait_time_seconds < 0 || wait_time_seconds > 20) return InvalidArgument("wait time must be 0..20 seconds");
  if (empty_receives_to_drain < 1) return InvalidArgument("empty receives to drain must be >= 1");
  if (delete_attempts < 1) return InvalidArgument("delete attempts must be >= 1");
  if (selection.kind != SelectionKind::kAll && selection.window.count() < 0) {
    return InvalidArgument("selection window must not be negative");
  }
  if (put.sse != "" && put.sse != "AES256" && put.sse != "aws:kms") {
    return InvalidArgument("--sse must be AES256 or aws:kms");
  }
  if (!put.sse_kms_key_id.empty() && put.sse != "aws:kms") {
    return InvalidArgument("--sse-kms-key-id needs --sse aws:kms");
  }
  if (!put.create_only) return InvalidArgument("archive objects are always written create-only");
  if (visibility_timeout < 4 * std::chrono::duration_cast<std::chrono::seconds>(heartbeat_interval)) {
    return InvalidArgument("visibility timeout must be at least 4 heartbeat intervals");
  }
  return Status::Ok();
}

Result<QueueInfo> ResolveQueue(QueueClient& sqs, const std::string& name_or_url, const std::string& default_region) {
  QueueInfo q;
  if (StartsWith(name_or_url, "http://") || StartsWith(name_or_url, "https://")) {
    q.url = name_or_url;
    while (!q.url.empty() && q.url.back() == '/') q.url.pop_back();
    q.name = q.url.substr(q.url.rfind('/') + 1);
  } else {
    q.name = name_or_url;
    auto url = sqs.GetQueueUrl(name_or_url, "");
    if (!url.ok()) return url.status().WithContext(fmt::format("queue {}", name_or_url));
    q.url = *url;
  }
  auto attrs = sqs.GetQueueAttributes(q.url, {"All"});
  if (!attrs.ok()) return attrs.status().WithContext(fmt::format("queue {}", q.name));
  q.region = default_region;
  if (auto it = attrs->find("QueueArn"); it != attrs->end()) {
    q.arn = it->second;
    auto parts = Split(q.arn, ':');  // arn:aws:sqs:region:account:name
    if (parts.size() >= 6) {
      q.region = std::string(parts[3]);
      q.account_id = std::string(parts[4]);
    }
  }
  if (auto it = attrs->find("FifoQueue"); it != attrs->end()) q.fifo = it->second == "true";
  if (EndsWith(q.name, ".fifo")) q.fifo = true;
  if (auto it = attrs->find("MessageRetentionPeriod"); it != attrs->end()) {
    try {
      q.retention = std::chrono::seconds(std::stoll(it->second));
    } catch (...) {
      return Internal(fmt::format("queue {}: bad MessageRetentionPeriod '{}'", q.name, it->second));
    }
  }
  return q;
}

QueueDrainer::QueueDrainer(QueueClient& sqs, ObjectStore& store, Clock& clock, QueueInfo queue, DrainOptions options,
                           ArchiveContext context)
    : sqs_(sqs),
      store_(store),
      clock_(clock),
      queue_(std::move(queue)),
      options_(std::move(options)),
      context_(std::move(context)),
      builder_(std::make_unique<BatchBuilder>(context_, options_.key_template, options_.prefix, options_.batch,
                                              clock_)) {}

QueueDrainer::~QueueDrainer() = default;

QueueDrainer::Batch* QueueDrainer::FindBatchLocked(uint64_t seq) {
  if (building_.seq == seq) return &building_;
  for (Batch& b : upload_queue_)
    if (b.seq == seq) return &b;
  for (Batch* b : uploading_)
    if (b->seq == seq) return b;
  for (Batch* b : sealing_batches_)
    if (b->seq == seq) return b;
  return nullptr;
}

void QueueDrainer::RequestStop() {
  stop_requested_ = true;
  stop_ = true;
  cv_.notify_all();
}

DrainStats QueueDrainer::Snapshot() const {
  DrainStats s;
  s.received = counters_.received;
  s.selected = counters_.selected;
  s.skipped = counters_.skipped;
  s.archived = counters_.archived;
  s.deleted = counters_.deleted;
  s.duplicates = counters_.duplicates;
  s.delete_failures = counters_.delete_failures;
  s.released = counters_.released;
  s.objects = counters_.objects;
  s.bytes_uploaded = counters_.bytes_uploaded;
  s.visibility_extensions = counters_.visibility_extensions;
  s.receive_calls = counters_.receive_calls;
  s.approximate_remaining = counters_.approximate_remaining;
  return s;
}

void QueueDrainer::Fail(const Status& status) {
  {
    std::lock_guard lock(mu_);
    if (first_error_.ok()) first_error_ = status;
  }
  Log().Log(LogLevel::kError, "archive.error", {{"queue", queue_.name}, {"error", status.ToString()}});
  stop_ = true;
  cv_.notify_all();
}

bool QueueDrainer::ShouldStopReceiving() const { return stop_.load(); }

bool QueueDrainer::Selected(const Message& m) const {
  SystemTime now = clock_.Now();
  switch (options_.selection.kind) {
    case SelectionKind::kAll: return true;
    case SelectionKind::kOlderThan: {
      auto sent = AttributeMillis(m, "SentTimestamp");
      return !sent || *sent <= now - options_.selection.window;
    }
    case SelectionKind::kExpiringWithin:
      return ComputeExpiry(m, queue_.fifo, queue_.retention, now) <= now + options_.selection.window;
  }
  return true;
}

bool QueueDrainer::CheckDrained() {
  // Selection modes and dry runs release what they do not take, so the queue
  // never empties: no progress over several receives means every visible
  // message was seen.
  auto attrs = sqs_.GetQueueAttributes(queue_.url, {"ApproximateNumberOfMessages"});
  if (attrs.ok()) {
    auto it = attrs->find("ApproximateNumberOfMessages");
    if (it != attrs->end()) {
      try {
        counters_.approximate_remaining = std::stoll(it->second);
      } catch (...) {
      }
    }
  }
  if (options_.selection.kind != SelectionKind::kAll || options_.dry_run || options_.keep) return true;
  return attrs.ok() && counters_.approximate_remaining.load() == 0;
}

void QueueDrainer::ReceiverLoop() {
  int consecutive_errors = 0;
  int depth_checks = 0;
  std::mt19937_64 rng(std::random_device{}());
  while (!ShouldStopReceiving()) {
    ReceiveOptions ro;
    ro.max_messages = static_cast<int>(kSqsBatch);
    ro.wait_time_seconds = options_.wait_time_seconds;
    ro.visibility_timeout = static_cast<int>(options_.visibility_timeout.count());
    ++counters_.receive_calls;
    auto got = sqs_.ReceiveMessages(queue_.url, ro);
    if (!got.ok()) {
      const Status& st = got.status();
      // MD5 mismatches are retried: the message stays in the queue and a new
      // receive usually gets it intact. Persistent ones stop the drain.
      if ((st.retryable() || st.code() == ErrorCode::kDataLoss) && ++consecutive_errors < 5) {
        Log().Log(LogLevel::kWarn, "archive.receive_retry", {{"queue", queue_.name}, {"error", st.ToString()}});
        clock_.SleepFor(BackoffDelay(kLocalRetry, consecutive_errors, rng));
        continue;
      }
      Fail(st.WithContext(fmt::format("receive from {}", queue_.name)));
      return;
    }
    consecutive_errors = 0;
    std::vector<Message>& msgs = *got;
    counters_.received += msgs.size();

    std::vector<Message> take;
    std::vector<Held> release_now;
    bool progress = false;
    auto now = clock_.SteadyNow();
    {
      std::lock_guard lock(mu_);
      for (Message& m : msgs) {
        bool selected = Selected(m);
        bool track = !selected || options_.dry_run || options_.keep;
        if (track) {
          bool fresh = seen_skipped_.insert(m.message_id).second;
          if (!fresh && options_.keep) continue;  // an archived copy came back: leave it be
          if (fresh) progress = true;
          if (fresh && selected && options_.dry_run) ++counters_.selected;
          if (fresh && !selected) ++counters_.skipped;
          if (selected && !options_.dry_run) {
            take.push_back(std::move(m));
            continue;
          }
          // Not taken: held invisible until the pass ends, so the next
          // receives reach messages not seen yet, then released in bulk.
          skipped_held_.push_back({m.message_id, m.receipt_handle, now, now + options_.visibility_timeout});
          continue;
        }
        progress = true;
        take.push_back(std::move(m));
      }
      if (skipped_held_.size() >= kMaxSkippedHeld) release_now.swap(skipped_held_);
    }
    if (!release_now.empty()) {
      ReleaseHeld(release_now, /*count_released=*/false);  // not archived by choice, not a failure
    }
    // Enforce --max-messages across receivers.
    if (options_.max_messages > 0 && !take.empty()) {
      uint64_t before = budget_used_.fetch_add(take.size());
      uint64_t allowed = before >= options_.max_messages ? 0 : std::min<uint64_t>(take.size(), options_.max_messages - before);
      if (allowed < take.size()) {
        std::vector<Held> over;
        for (size_t i = allowed; i < take.size(); ++i) over.push_back({take[i].message_id, take[i].receipt_handle, {}, {}});
        take.resize(allowed);
        ReleaseHeld(over);
        stop_ = true;
      } else if (before + take.size() >= options_.max_messages) {
        stop_ = true;
      }
    }
    if (options_.dry_run && options_.max_messages > 0 && counters_.selected >= options_.max_messages) stop_ = true;
    if (!take.empty()) AddSelected(take);

    if (msgs.empty() || !progress) {
      if (++no_progress_receives_ >= options_.empty_receives_to_drain) {
        no_progress_receives_ = 0;
        if (CheckDrained()) {
          drained_ = true;
          stop_ = true;
          cv_.notify_all();
        } else if (++depth_checks >= 20) {
          Log().Log(LogLevel::kWarn, "archive.not_drained",
                    {{"queue", queue_.name},
                     {"approximate_remaining", static_cast<int64_t>(counters_.approximate_remaining.load())}});
          stop_ = true;
          cv_.notify_all();
        }
      }
    } else {
      no_progress_receives_ = 0;
      depth_checks = 0;
    }
  }
}

void QueueDrainer::AddSelected(std::vector<Message>& msgs) {
  auto now = clock_.SteadyNow();
  size_t i = 0;
  while (i < msgs.size()) {
    bool need_seal = false;
    {
      std::lock_guard lock(mu_);
      while (i < msgs.size() && !builder_->Full()) {
        if (builder_->empty()) building_.seq = next_seq_++;
        builder_->Add(msgs[i]);
        building_.held.push_back({msgs[i].message_id, msgs[i].receipt_handle, now, now + options_.visibility_timeout});
        ++counters_.selected;
        ++i;
      }
      need_seal = builder_->Full();
    }
    if (need_seal) SealBuilding(/*wait=*/true, /*only_if_full=*/true);
  }
}

void QueueDrainer::SealBuilding(bool wait, bool only_if_full) {
  std::unique_lock lock(mu_);
  // Batches whose object is stored and which are only deleting hold receipt
  // handles, not data: they do not count against the in-flight bound.
  auto in_flight = [&] {
    return upload_queue_.size() + uploading_.size() - static_cast<size_t>(deleting_) + static_cast<size_t>(sealing_);
  };
  if (wait) {
    cv_.wait(lock, [&] {
      return in_flight() < static_cast<size_t>(options_.max_batches_in_flight) || !first_error_.ok();
    });
  } else if (in_flight() >= static_cast<size_t>(options_.max_batches_in_flight)) {
    return;
  }
  if (builder_->empty()) return;
  // Another receiver sealed the full batch while this one waited: keep filling.
  if (only_if_full && !builder_->Full()) return;
  if (!first_error_.ok()) return;  // Run() releases the building batch
  std::unique_ptr<BatchBuilder> full = std::move(builder_);
  builder_ = std::make_unique<BatchBuilder>(context_, options_.key_template, options_.prefix, options_.batch, clock_);
  Batch batch = std::move(building_);
  building_ = Batch{};
  ++sealing_;
  sealing_batches_.push_back(&batch);
  lock.unlock();

  auto sealed = full->Finish();

  lock.lock();
  --sealing_;
  std::erase(sealing_batches_, &batch);
  if (!sealed.ok()) {
    lock.unlock();
    Fail(sealed.status().WithContext(fmt::format("compress batch of {}", queue_.name)));
    ReleaseHeld(batch.held);
    cv_.notify_all();
    return;
  }
  batch.sealed = std::move(*sealed);
  upload_queue_.push_back(std::move(batch));
  cv_.notify_all();
}

Status QueueDrainer::UploadBatch(Batch& batch) {
  const SealedBatch& sb = *batch.sealed;
  Status st = store_.Put(sb.key, sb.gz, options_.put);
  if (st.code() == ErrorCode::kAlreadyExists) {
    // A batch id collision is astronomically unlikely; never overwrite.
    return st.WithContext(fmt::format("upload {} refused to overwrite", sb.key));
  }
  if (!st.ok()) return st.WithContext(fmt::format("upload {} to {}", sb.key, store_.Describe()));
  return Status::Ok();
}

void QueueDrainer::DeleteBatch(Batch& batch) {
  const std::vector<Held>& held = batch.held;
  size_t chunks = (held.size() + kSqsBatch - 1) / kSqsBatch;
  std::atomic<size_t> next{0};
  auto worker = [&] {
    std::mt19937_64 rng(std::random_device{}());
    for (size_t c = next++; c < chunks; c = next++) {
      size_t begin = c * kSqsBatch;
      size_t end = std::min(held.size(), begin + kSqsBatch);
      std::vector<DeleteEntry> pending;
      for (size_t i = begin; i < end; ++i) pending.push_back({std::to_string(i - begin), held[i].receipt_handle});
      for (int attempt = 0; attempt < options_.delete_attempts && !pending.empty(); ++attempt) {
        if (attempt > 0) {
          clock_.SleepFor(BackoffDelay(kLocalRetry, attempt, rng));
        }
        auto r = sqs_.DeleteMessageBatch(queue_.url, pending);
        if (!r.ok()) {
          Log().Log(LogLevel::kWarn, "archive.delete_retry",
                    {{"queue", queue_.name}, {"attempt", attempt + 1}, {"error", r.status().ToString()}});
          if (!r.status().retryable() && r.status().code() != ErrorCode::kInternal) break;
          continue;
        }
        counters_.deleted += r->successful_ids.size();
        std::vector<DeleteEntry> retry;
        for (const BatchEntryError& e : r->failed) {
          auto it = std::find_if(pending.begin(), pending.end(), [&](const DeleteEntry& d) { return d.id == e.id; });
          if (it == pending.end()) continue;
          if (IsReceiptHandleError(e)) {
            // The message became visible again before we deleted it: it is
            // still in the DLQ and will be archived again (a duplicate).
            ++counters_.duplicates;
            Log().Log(LogLevel::kWarn, "archive.duplicate",
                      {{"queue", queue_.name}, {"message_id", held[begin + std::stoul(e.id)].message_id},
                       {"reason", e.code}});
          } else {
            retry.push_back(*it);
          }
        }
        pending = std::move(retry);
      }
      if (!pending.empty()) {
        counters_.delete_failures += pending.size();
        for (const DeleteEntry& d : pending) {
          Log().Log(LogLevel::kWarn, "archive.delete_failed",
                    {{"queue", queue_.name}, {"message_id", held[begin + std::stoul(d.id)].message_id},
                     {"note", "archived; stays in the DLQ and will be archived again"}});
        }
      }
    }
  };
  int n = static_cast<int>(std::min<size_t>(chunks, static_cast<size_t>(options_.deleters)));
  std::vector<std::thread> threads;
  for (int t = 1; t < n; ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
}

void QueueDrainer::ReleaseHeld(const std::vector<Held>& held, bool count_released) {
  for (size_t begin = 0; begin < held.size(); begin += kSqsBatch) {
    size_t end = std::min(held.size(), begin + kSqsBatch);
    std::vector<VisibilityEntry> entries;
    for (size_t i = begin; i < end; ++i) entries.push_back({std::to_string(i - begin), held[i].receipt_handle, 0});
    auto r = sqs_.ChangeMessageVisibilityBatch(queue_.url, entries);
    if (!r.ok()) {
      // They become visible when their visibility timeout runs out anyway.
      Log().Log(LogLevel::kWarn, "archive.release_failed",
                {{"queue", queue_.name}, {"messages", static_cast<int64_t>(entries.size())},
                 {"error", r.status().ToString()}});
    }
    if (count_released) counters_.released += entries.size();
  }
}

void QueueDrainer::UploaderLoop() {
  while (true) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !upload_queue_.empty() || (receivers_done_ && sealing_ == 0); });
    if (upload_queue_.empty()) return;
    Batch batch = std::move(upload_queue_.front());
    upload_queue_.pop_front();
    uploading_.push_back(&batch);
    bool failed = !first_error_.ok();
    lock.unlock();

    if (failed) {
      ReleaseHeld(batch.held);
    } else {
      Status st = UploadBatch(batch);
      if (!st.ok()) {
        Fail(st);
        ReleaseHeld(batch.held);
      } else {
        counters_.archived += batch.held.size();
        ++counters_.objects;
        counters_.bytes_uploaded += batch.sealed->gz.size();
        {
          std::lock_guard g(mu_);
          keys_.push_back(batch.sealed->key);
        }
        Log().Log(LogLevel::kInfo, "archive.object",
                  {{"queue", queue_.name}, {"key", batch.sealed->key},
                   {"messages", static_cast<int64_t>(batch.held.size())},
                   {"bytes", static_cast<int64_t>(batch.sealed->gz.size())}});
        batch.sealed->gz.clear();
        batch.sealed->gz.shrink_to_fit();
        if (!options_.keep) {
          {
            std::lock_guard g(mu_);
            batch.deleting = true;
            ++deleting_;
          }
          cv_.notify_all();  // a slot for the next batch is free
          DeleteBatch(batch);
        }
      }
    }
    lock.lock();
    if (batch.deleting) --deleting_;
    std::erase(uploading_, &batch);
    cv_.notify_all();
  }
}

void QueueDrainer::HeartbeatLoop() {
  const auto timeout = options_.visibility_timeout;
  std::unique_lock lock(mu_);
  while (!heartbeat_stop_) {
    cv_.wait_for(lock, options_.heartbeat_interval);
    if (heartbeat_stop_) break;
    auto now = clock_.SteadyNow();
    bool seal = !builder_->empty() && builder_->ShouldSeal();

    struct Due {
      uint64_t seq;
      size_t index;
      std::string receipt_handle;
      int seconds;
    };
    std::vector<Due> due;
    auto scan = [&](Batch& batch, bool building) {
      for (size_t i = 0; i < batch.held.size(); ++i) {
        const Held& h = batch.held[i];
        if (h.visible_until - now > timeout / 2) continue;
        auto cap_left = std::chrono::duration_cast<std::chrono::seconds>(h.received_at + kMaxVisibilityWindow - now);
        auto extend = std::min(timeout, cap_left - std::chrono::seconds(30));
        if (extend < std::chrono::seconds(10)) {
          if (building) seal = true;  // cannot extend much longer: get it archived now
          continue;
        }
        due.push_back({batch.seq, i, h.receipt_handle, static_cast<int>(extend.count())});
      }
    };
    scan(building_, true);
    for (Batch& b : upload_queue_) scan(b, false);
    for (Batch* b : uploading_) scan(*b, false);
    for (Batch* b : sealing_batches_) scan(*b, false);

    if (!due.empty()) {
      lock.unlock();
      std::vector<std::pair<size_t, std::chrono::steady_clock::time_point>> extended;  // index into due
      for (size_t begin = 0; begin < due.size(); begin += kSqsBatch) {
        size_t end = std::min(due.size(), begin + kSqsBatch);
        std::vector<VisibilityEntry> entries;
        for (size_t i = begin; i < end; ++i) {
          entries.push_back({std::to_string(i - begin), due[i].receipt_handle, due[i].seconds});
        }
        auto r = sqs_.ChangeMessageVisibilityBatch(queue_.url, entries);
        auto after = clock_.SteadyNow();
        if (r.ok()) {
          counters_.visibility_extensions += r->successful_ids.size();
          for (const std::string& id : r->successful_ids) {
            size_t i = begin + std::stoul(id);
            extended.emplace_back(i, after + std::chrono::seconds(due[i].seconds));
          }
        } else {
          Log().Log(LogLevel::kWarn, "archive.heartbeat_failed",
                    {{"queue", queue_.name}, {"error", r.status().ToString()}});
        }
      }
      lock.lock();
      for (const auto& [i, until] : extended) {
        if (Batch* b = FindBatchLocked(due[i].seq); b != nullptr && due[i].index < b->held.size()) {
          b->held[due[i].index].visible_until = until;
        }
      }
    }
    if (seal) {
      lock.unlock();
      SealBuilding(/*wait=*/false, /*only_if_full=*/false);
      lock.lock();
    }
  }
}

DrainResult QueueDrainer::Run() {
  DrainResult result;
  result.queue = queue_;
  auto start = clock_.SteadyNow();
  Log().Log(LogLevel::kInfo, "archive.start",
            {{"queue", queue_.name}, {"queue_url", queue_.url}, {"destination", store_.Describe()},
             {"dry_run", options_.dry_run}, {"keep", options_.keep}});

  std::thread heartbeat([this] { HeartbeatLoop(); });
  std::vector<std::thread> uploaders;
  uploaders.reserve(2 * static_cast<size_t>(options_.max_batches_in_flight));
  // Twice the in-flight bound: some threads delete stored batches while the
  // others upload the next ones.
  for (int i = 0; i < 2 * options_.max_batches_in_flight; ++i) uploaders.emplace_back([this] { UploaderLoop(); });
  std::vector<std::thread> receivers;
  receivers.reserve(static_cast<size_t>(options_.receivers));
  for (int i = 0; i < options_.receivers; ++i) receivers.emplace_back([this] { ReceiverLoop(); });
  for (auto& t : receivers) t.join();

  bool errored;
  {
    std::lock_guard lock(mu_);
    errored = !first_error_.ok();
  }
  if (stop_requested_ || errored) {
    // Stop: finish what is uploading; what is still being built goes back.
    std::vector<Held> rest;
    {
      std::lock_guard lock(mu_);
      rest = std::move(building_.held);
      building_ = Batch{};
      builder_ = std::make_unique<BatchBuilder>(context_, options_.key_template, options_.prefix, options_.batch,
                                                clock_);
    }
    ReleaseHeld(rest);
  } else {
    SealBuilding(/*wait=*/true, /*only_if_full=*/false);
  }
  std::vector<Held> skipped;
  {
    std::lock_guard lock(mu_);
    receivers_done_ = true;
    skipped.swap(skipped_held_);
  }
  cv_.notify_all();
  ReleaseHeld(skipped, /*count_released=*/false);
  for (auto& t : uploaders) t.join();
  {
    std::lock_guard lock(mu_);
    heartbeat_stop_ = true;
  }
  cv_.notify_all();
  heartbeat.join();

  result.stats = Snapshot();
  {
    std::lock_guard lock(mu_);
    result.keys = keys_;
    result.status = first_error_;
  }
  result.drained = drained_;
  result.stopped = stop_requested_;
  result.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(clock_.SteadyNow() - start);
  Log().Log(LogLevel::kInfo, "archive.done",
            {{"queue", queue_.name}, {"archived", static_cast<int64_t>(result.stats.archived)},
             {"deleted", static_cast<int64_t>(result.stats.deleted)},
             {"duplicates", static_cast<int64_t>(result.stats.duplicates)},
             {"objects", static_cast<int64_t>(result.stats.objects)}, {"drained", result.drained},
             {"error", result.status.ok() ? std::string() : result.status.ToString()}});
  return result;
}

}  // namespace dlq
