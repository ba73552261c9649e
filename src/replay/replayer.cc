#include "replay/replayer.h"

#include <fmt/format.h>

#include <algorithm>
#include <future>

#include "common/count_noun.h"
#include "common/time_util.h"
#include "sqs/limits.h"
#include "sqs/md5.h"

namespace dlq {
namespace {

std::string Attribute(const ArchiveRecord& r, const char* name) {
  auto it = r.attributes.find(name);
  return it == r.attributes.end() ? std::string() : it->second;
}

// Orders a FIFO group: SequenceNumber (a decimal of up to 128 bits), then
// sent_at, then the id; records without a sequence number first.
std::string FifoSortKey(const ArchiveRecord& r) {
  std::string seq = Attribute(r, "SequenceNumber");
  int64_t sent = r.sent_at ? ToUnixMillis(*r.sent_at) : 0;
  return fmt::format("{}{:0>40}|{:020}|{}", seq.empty() ? '0' : '1', seq, sent, r.message_id);
}

// The SendMessageBatch entry `e{i}` that puts `r` back on `target`.
SendEntry EntryFor(const ArchiveRecord& r, const ReplayTarget& target, size_t i) {
  SendEntry e;
  e.id = fmt::format("e{}", i);
  e.body = r.body;
  if (target.keep_attributes) e.message_attributes = r.message_attributes;
  if (std::string trace = Attribute(r, "AWSTraceHeader"); !trace.empty()) {
    e.message_system_attributes["AWSTraceHeader"] = trace;
  }
  if (target.fifo) {
    e.message_group_id = Attribute(r, "MessageGroupId");
    e.message_deduplication_id = Attribute(r, "MessageDeduplicationId");
    if (e.message_deduplication_id.empty() && !target.content_based_deduplication) {
      e.message_deduplication_id = r.message_id;
    }
  }
  return e;
}

}  // namespace

size_t MessageSize(const std::string& body, const MessageAttributes& attributes) {
  size_t n = body.size();
  for (const auto& [name, v] : attributes) {
    n += name.size() + v.data_type.size() + (v.IsBinary() ? v.binary_value.size() : v.string_value.size());
  }
  return n;
}

Status ReplayOptions::Validate() const {
  if (rate < 0) return InvalidArgument("the rate must be positive");
  if (send_attempts < 1) return InvalidArgument("send attempts must be at least 1");
  if (concurrency < 1 || concurrency > 64) return InvalidArgument("the concurrency must be 1..64");
  if (fifo_buffer_records < 1) return InvalidArgument("the FIFO buffer must hold at least one record");
  return backoff.Validate();
}

std::string DryRunLine(const DryRunEntry& e) {
  switch (e.kind) {
    case DryRunEntry::kAlreadyReplayed:
      return fmt::format("skip {}: already replayed to {} by an earlier run", e.message_id, e.destination);
    case DryRunEntry::kCopy:
      return fmt::format("skip {}: a copy of the same message (it failed again after a replay) is sent as {}",
                         e.message_id, e.sent_as);
    case DryRunEntry::kUnresolved: return fmt::format("cannot send {}: {}", e.message_id, e.reason);
    case DryRunEntry::kWouldSend: break;
  }
  if (e.target != TargetKind::kQueue) {
    return fmt::format("would send {} to {} {} ({} bytes; {})", e.message_id, TargetKindName(e.target), e.destination,
                       e.bytes, e.how);
  }
  if (!e.how.empty()) {
    return fmt::format("would send {} to queue {} ({} bytes{}; {})", e.message_id, e.destination, e.bytes,
                       e.fifo ? ", group " + e.group : "", e.how);
  }
  return fmt::format("would send {} to {} ({} bytes{})", e.message_id, e.destination, e.bytes,
                     e.fifo ? ", group " + e.group : "");
}

Replayer::Replayer(QueueClient& sqs, TargetResolver& targets, Clock& clock, ReplayOptions options,
                   RecordTransform* transform)
    : sqs_(sqs), targets_(targets), clock_(clock), options_(std::move(options)), transform_(transform) {}

Status Replayer::Start() {
  DLQ_RETURN_IF_ERROR(options_.Validate());
  progress_.identity_text = options_.identity_text;
  progress_.identity = CheckpointIdentity(options_.identity_text);
  if (options_.checkpoint_path.empty()) return Status::Ok();
  DLQ_ASSIGN_OR_RETURN(std::optional<CheckpointState> loaded, LoadCheckpoint(options_.checkpoint_path));
  if (!loaded) return Status::Ok();
  if (loaded->identity != progress_.identity) {
    return InvalidArgument(fmt::format(
        "checkpoint {} was written for another replay; it replays\n{}this run replays\n{}use another --checkpoint "
        "file, or delete it to start over",
        options_.checkpoint_path, loaded->identity_text, options_.identity_text));
  }
  resume_ = std::move(loaded);
  resume_failed_.insert(resume_->failed_ids.begin(), resume_->failed_ids.end());
  progress_.failed_ids = resume_->failed_ids;
  progress_.sent = resume_->sent;
  progress_.failed = resume_->failed;
  return Status::Ok();
}

Status Replayer::CheckStop() const {
  if (options_.stop != nullptr && options_.stop->load()) return Cancelled("replay stopped by a signal");
  return Status::Ok();
}

Result<bool> Replayer::Add(ReplayItem item) {
  DLQ_RETURN_IF_ERROR(CheckStop());
  if (options_.max > 0 && stats_.accepted >= options_.max) return false;
  if (options_.gate != nullptr && !options_.dry_run) DLQ_RETURN_IF_ERROR(options_.gate->BeforeAdd(*this));
  ++stats_.accepted;
  auto resolved = targets_.Resolve(item.record);
  if (!resolved.ok()) {
    const ErrorCode code = resolved.status().code();
    if (!targets_.RefusesPerMessage() || (code != ErrorCode::kInvalidArgument && code != ErrorCode::kNotFound)) {
      return resolved.status();
    }
    Unresolved(item, resolved.status());
    return true;
  }
  ReplayTarget target = std::move(*resolved);
  if (transform_ != nullptr) {
    DLQ_ASSIGN_OR_RETURN(item.record, transform_->Apply(item.record));
  }
  Pending p{std::move(item), std::move(target), 0};
  p.bytes = MessageSize(p.item.record.body, p.item.record.message_attributes);
  if (p.target.fifo) {
    fifo_records_ += 1;
    fifo_bytes_ += p.bytes;
    auto key = std::make_pair(p.target.url, Attribute(p.item.record, "MessageGroupId"));
    fifo_[key].push_back(std::move(p));
    if (fifo_records_ >= options_.fifo_buffer_records || fifo_bytes_ >= options_.fifo_buffer_bytes) {
      DLQ_RETURN_IF_ERROR(FlushFifo());
    }
  } else {
    DLQ_RETURN_IF_ERROR(Enqueue(std::move(p)));
  }
  return true;
}

Status Replayer::Enqueue(Pending p) {
  const std::string url = p.target.url;
  OpenBatch& ob = open_[url];
  if (!ob.entries.empty() &&
      (ob.entries.size() >= sqs::kMaxBatchEntries || ob.bytes + p.bytes > sqs::kMaxMessageBytes)) {
    DLQ_RETURN_IF_ERROR(Dispatch(url));
  }
  OpenBatch& batch = open_[url];
  batch.bytes += p.bytes;
  batch.entries.push_back(std::move(p));
  if (batch.entries.size() >= sqs::kMaxBatchEntries) return Dispatch(url);
  return Status::Ok();
}

Status Replayer::Dispatch(const std::string& url) {
  auto it = open_.find(url);
  if (it == open_.end() || it->second.entries.empty()) return Status::Ok();
  std::vector<Pending> batch = std::move(it->second.entries);
  open_.erase(it);
  return SendBatch(std::move(batch));
}

Status Replayer::FlushFifo() {
  auto groups = std::move(fifo_);
  fifo_.clear();
  fifo_records_ = fifo_bytes_ = 0;
  for (auto& [key, items] : groups) {
    std::vector<std::pair<std::string, Pending*>> sorted;
    sorted.reserve(items.size());
    for (Pending& p : items) sorted.emplace_back(FifoSortKey(p.item.record), &p);
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string& last = fifo_last_key_[key];
    for (auto& [sort_key, p] : sorted) {
      if (!last.empty() && sort_key < last) ++stats_.order_breaks;
      if (sort_key > last) last = sort_key;
      DLQ_RETURN_IF_ERROR(Enqueue(std::move(*p)));
    }
  }
  return Status::Ok();
}

Status Replayer::Flush() {
  Status st = FlushFifo();
  while (st.ok() && !open_.empty()) st = Dispatch(open_.begin()->first);
  Status drained = Drain(0);
  return st.ok() ? drained : st;
}

Status Replayer::Finish() {
  DLQ_RETURN_IF_ERROR(Flush());
  if (resume_ && dispatched_ < resume_->done && !(options_.max > 0 && stats_.accepted >= options_.max)) {
    return InvalidArgument(
        fmt::format("checkpoint {} says {} finished, but this run selected only {}: the archive or the "
                    "selection changed since it was written; delete the checkpoint to start over",
                    options_.checkpoint_path, CountNoun(resume_->done, "message was", "messages were"), dispatched_));
  }
  return Status::Ok();
}

void Replayer::Unresolved(const ReplayItem& item, const Status& why) {
  ++stats_.unresolved;
  failures_.push_back({item.record.message_id, "", why.message(), /*unresolved=*/true});
  if (options_.dry_run) {
    if (on_dry_run_) {
      on_dry_run_(
          DryRunEntry{.kind = DryRunEntry::kUnresolved, .message_id = item.record.message_id, .reason = why.message()});
    }
    return;
  }
  // The live form releases it: it stays in its DLQ.
  if (on_batch_done_) on_batch_done_({}, {&item});
}

void Replayer::Fail(const Pending& p, std::string reason) {
  ++stats_.failed;
  ++progress_.failed;
  failures_.push_back({p.item.record.message_id, p.target.url, std::move(reason)});
  progress_.failed_ids.push_back(p.item.record.message_id);
}

Status Replayer::SendBatch(std::vector<Pending> batch) {
  DLQ_RETURN_IF_ERROR(CheckStop());
  std::vector<Pending> to_send;
  for (Pending& p : batch) {
    const uint64_t ordinal = dispatched_++;
    progress_.chain = ChainNext(progress_.chain, p.item.record.message_id);
    if (resume_ && ordinal < resume_->done) {
      if (resume_failed_.count(p.item.record.message_id) != 0) {
        retry_after_verify_.push_back(std::move(p));
      } else {
        ++stats_.resumed;
      }
      if (ordinal + 1 == resume_->done) {
        if (progress_.chain != resume_->chain) {
          return InvalidArgument(fmt::format(
              "checkpoint {} does not match this input: the first {} messages selected now differ from the ones "
              "it finished (the archive or the selection changed); delete it to start over",
              options_.checkpoint_path, resume_->done));
        }
        // Items an earlier run gave up on: once more, in their own batches.
        std::vector<Pending> retry = std::move(retry_after_verify_);
        retry_after_verify_.clear();
        std::map<std::string, std::vector<Pending>> by_url;
        for (Pending& r : retry) {
          std::erase(progress_.failed_ids, r.item.record.message_id);
          --progress_.failed;
          by_url[r.target.url].push_back(std::move(r));
        }
        for (auto& [url, items] : by_url) {
          std::vector<Pending> chunk;
          size_t bytes = 0;
          for (Pending& r : items) {
            if (!chunk.empty() && (chunk.size() >= sqs::kMaxBatchEntries || bytes + r.bytes > sqs::kMaxMessageBytes)) {
              DLQ_RETURN_IF_ERROR(SendNow(chunk, resume_->done));
              chunk.clear();
              bytes = 0;
            }
            bytes += r.bytes;
            chunk.push_back(std::move(r));
          }
          if (!chunk.empty()) DLQ_RETURN_IF_ERROR(SendNow(chunk, resume_->done));
        }
      }
      continue;
    }
    if (options_.skip) {
      DLQ_ASSIGN_OR_RETURN(ReplaySkip skip, options_.skip(p.target.url, p.item.record));
      if (skip.kind == ReplaySkip::kAlreadyReplayed) {
        ++stats_.already_replayed;
        if (options_.dry_run && on_dry_run_) {
          on_dry_run_(DryRunEntry{.kind = DryRunEntry::kAlreadyReplayed,
                                  .message_id = p.item.record.message_id,
                                  .destination = p.target.url});
        }
        continue;
      }
      if (skip.kind == ReplaySkip::kCopy) {
        ++stats_.skipped_copies;
        if (options_.dry_run && on_dry_run_) {
          on_dry_run_(DryRunEntry{.kind = DryRunEntry::kCopy,
                                  .message_id = p.item.record.message_id,
                                  .destination = p.target.url,
                                  .sent_as = skip.sent_as});
        }
        continue;
      }
    }
    to_send.push_back(std::move(p));
  }
  if (to_send.empty()) return Status::Ok();
  return SendNow(to_send, dispatched_);
}

Status Replayer::SendNow(std::vector<Pending>& batch, uint64_t done_after) {
  DLQ_RETURN_IF_ERROR(CheckStop());
  Flight flight;
  flight.done_after = done_after;
  flight.batch = std::make_shared<std::vector<Pending>>(std::move(batch));
  std::vector<Pending>& items = *flight.batch;
  for (size_t i = 0; i < items.size(); ++i) {
    Pending& p = items[i];
    const ArchiveRecord& r = p.item.record;
    std::string problem;
    if (p.target.kind == TargetKind::kQueue && p.bytes > sqs::kMaxMessageBytes) {
      problem = fmt::format("message is {} bytes, over the SQS limit of {}", p.bytes, sqs::kMaxMessageBytes);
    } else if (p.target.fifo && Attribute(r, "MessageGroupId").empty()) {
      problem = fmt::format("{} is a FIFO queue and the message has no MessageGroupId", p.target.name);
    } else if (transform_ == nullptr && Md5OfBody(r.body) != r.md5_of_body) {
      problem = "archived body does not match its md5_of_body (corrupt record); not sent";
    } else if (transform_ == nullptr && Md5OfMessageAttributes(r.message_attributes) != r.md5_of_message_attributes) {
      problem = "archived message attributes do not match md5_of_message_attributes (corrupt record); not sent";
    }
    if (!problem.empty()) {
      Fail(p, std::move(problem));
      flight.failed_early.push_back(&p.item);
    } else {
      flight.ready.push_back(i);
    }
  }
  if (options_.dry_run) {
    for (size_t i : flight.ready) {
      const Pending& p = items[i];
      ++stats_.would_send;
      if (on_dry_run_) {
        on_dry_run_(DryRunEntry{.kind = DryRunEntry::kWouldSend,
                                .message_id = p.item.record.message_id,
                                .destination = p.target.url,
                                .bytes = p.bytes,
                                .fifo = p.target.fifo,
                                .group = p.target.fifo ? Attribute(p.item.record, "MessageGroupId") : std::string(),
                                .target = p.target.kind,
                                .how = p.target.how});
      }
    }
    return Status::Ok();
  }
  // The batch is sent on its own thread; up to `concurrency` batches are in
  // flight, completed in the order they were dispatched (so the checkpoint's
  // count only ever covers confirmed batches). A FIFO batch goes alone, after
  // everything before it, so order within a group holds.
  const bool fifo = items.front().target.fifo;
  if (fifo) DLQ_RETURN_IF_ERROR(Drain(0));
  if (!first_dispatch_) first_dispatch_ = clock_.SteadyNow();
  auto shared = flight.batch;
  std::vector<size_t> ready = flight.ready;
  const bool synchronous = options_.gate != nullptr && options_.gate->Synchronous();
  flight.outcome = std::async(std::launch::async, [this, shared, ready, synchronous] {
    std::vector<const Pending*> entries;
    entries.reserve(ready.size());
    for (size_t i : ready) entries.push_back(&(*shared)[i]);
    if (shared->front().target.kind != TargetKind::kQueue) return TransmitOrigin(entries, synchronous);
    return Transmit(shared->front().target.url, entries);
  });
  in_flight_.push_back(std::move(flight));
  return Drain(fifo ? 0 : static_cast<size_t>(options_.concurrency - 1));
}

Replayer::Outcome Replayer::Transmit(const std::string& url, const std::vector<const Pending*>& ready) {
  Outcome out;
  out.ok.assign(ready.size(), false);
  out.reasons.assign(ready.size(), "");
  out.new_ids.assign(ready.size(), "");
  out.refused.assign(ready.size(), false);
  std::mt19937_64 rng(std::random_device{}());
  std::vector<size_t> pending(ready.size());
  for (size_t i = 0; i < ready.size(); ++i) pending[i] = i;
  for (int attempt = 0; attempt < options_.send_attempts && !pending.empty(); ++attempt) {
    if (attempt > 0) {
      out.retries += pending.size();
      clock_.SleepFor(BackoffDelay(options_.backoff, attempt - 1, rng));
      if (Status st = CheckStop(); !st.ok()) {
        out.fatal = st;
        break;
      }
    }
    AwaitTokens(pending.size());
    std::vector<SendEntry> entries;
    std::vector<std::string> ids;
    for (size_t i : pending) {
      entries.push_back(EntryFor(ready[i]->item.record, ready[i]->target, i));
      ids.push_back(entries.back().id);
    }
    auto reply = sqs_.SendMessageBatch(url, entries);
    if (!reply.ok()) {
      for (size_t i : pending) out.reasons[i] = reply.status().ToString();
      if (!reply.status().retryable()) {
        out.fatal = reply.status().WithContext(fmt::format("SendMessageBatch to {}", url));
        break;
      }
      continue;
    }
    if (Status st = ValidateBatchReply(*reply, ids); !st.ok()) {
      out.fatal = st.WithContext(fmt::format("SendMessageBatch to {}", url));
      break;
    }
    pending = RecordReply(*reply, ready, out);
  }
  return out;
}

Replayer::Outcome Replayer::TransmitOrigin(const std::vector<const Pending*>& ready, bool synchronous) {
  Outcome out;
  out.ok.assign(ready.size(), false);
  out.reasons.assign(ready.size(), "");
  out.new_ids.assign(ready.size(), "");
  out.refused.assign(ready.size(), false);
  if (options_.origin_sender == nullptr) {
    out.fatal = FailedPrecondition(fmt::format("nothing can send to {} {} in this run",
                                               TargetKindName(ready.front()->target.kind), ready.front()->target.url));
    return out;
  }
  std::mt19937_64 rng(std::random_device{}());
  for (size_t i = 0; i < ready.size(); ++i) {
    const Pending& p = *ready[i];
    int attempt = 0, throttles = 0;
    SteadyTime throttled_since{};
    while (true) {
      if (Status st = CheckStop(); !st.ok()) {
        out.fatal = st;
        return out;
      }
      AwaitTokens(1);
      OriginDelivery d = options_.origin_sender->Deliver(p.target, p.item.record, synchronous);
      out.new_ids[i] = d.new_id;
      out.reasons[i] = d.reason;
      if (d.outcome == OriginDelivery::kDelivered) {
        out.ok[i] = true;
        break;
      }
      if (d.outcome == OriginDelivery::kRefused) {
        out.refused[i] = !d.new_id.empty();  // the origin ran it and it failed; else it never took it
        break;
      }
      if (d.outcome == OriginDelivery::kFatal) {
        out.fatal = d.error;
        return out;
      }
      if (d.outcome == OriginDelivery::kThrottled) {
        // A pause, not a failure: the origin's concurrency is full.
        ++out.throttled;
        const SteadyTime now = clock_.SteadyNow();
        if (throttles == 0) throttled_since = now;
        if (now - throttled_since > options_.max_throttled) {
          out.reasons[i] = fmt::format(
              "still throttled after {}: {}",
              FormatDuration(std::chrono::duration_cast<std::chrono::seconds>(options_.max_throttled)), d.reason);
          break;
        }
        clock_.SleepFor(BackoffDelay(options_.backoff, std::min(throttles++, 6), rng));
        continue;
      }
      if (++attempt >= options_.send_attempts) break;
      ++out.retries;
      clock_.SleepFor(BackoffDelay(options_.backoff, attempt - 1, rng));
    }
  }
  return out;
}

void Replayer::AwaitTokens(size_t n) {
  if (options_.rate <= 0) return;
  MutexLock lock(bucket_mu_);
  // Made on first use, so reading the archive before the first send
  // does not fill it. Burst: one second's worth, so a pause in reading
  // (the next archive object) does not lose the tokens accrued meanwhile.
  if (!bucket_) bucket_.emplace(options_.rate, std::max<double>(sqs::kMaxBatchEntries, options_.rate), clock_);
  bucket_->Acquire(static_cast<double>(n));
}

std::vector<size_t> Replayer::RecordReply(const SendBatchResult& reply, const std::vector<const Pending*>& ready,
                                          Outcome& out) {
  std::vector<size_t> again;
  auto index_of = [](const std::string& id) { return static_cast<size_t>(std::stoul(id.substr(1))); };
  for (const SentMessage& sent : reply.sent) {
    size_t i = index_of(sent.id);
    const ArchiveRecord& r = ready[i]->item.record;
    std::string want_body = Md5OfBody(r.body);
    std::string want_attrs = ready[i]->target.keep_attributes ? Md5OfMessageAttributes(r.message_attributes) : "";
    if (sent.md5_of_body != want_body || sent.md5_of_message_attributes != want_attrs) {
      // Not retried: SQS accepted the message; a resend would duplicate it.
      out.reasons[i] = fmt::format(
          "MD5Mismatch: SQS returned MD5OfMessageBody {} / MD5OfMessageAttributes {}, expected {} / {} (sent as "
          "{}; not resent)",
          sent.md5_of_body, sent.md5_of_message_attributes.empty() ? "(none)" : sent.md5_of_message_attributes,
          want_body, want_attrs.empty() ? "(none)" : want_attrs, sent.message_id);
      continue;
    }
    out.ok[i] = true;
    out.new_ids[i] = sent.message_id;
  }
  for (const BatchEntryError& f : reply.failed) {
    size_t i = index_of(f.id);
    out.reasons[i] = fmt::format("{}: {}", f.code, f.message);
    if (!f.sender_fault && f.code != "MD5Mismatch") again.push_back(i);
  }
  return again;
}

Status Replayer::Drain(size_t keep) {
  Status first_error;
  while (in_flight_.size() > keep) {
    Flight flight = std::move(in_flight_.front());
    in_flight_.pop_front();
    Status st = Complete(flight);
    if (!st.ok() && first_error.ok()) {
      first_error = st;
      keep = 0;  // an error ends the run: wait for everything still in flight
    }
  }
  return first_error;
}

Status Replayer::Complete(Flight& flight) {
  Outcome out = flight.outcome.get();
  Status recorded;
  std::vector<const ReplayItem*> sent_items, failed_items = flight.failed_early;
  std::vector<ReplayedMessage> batch_sent, batch_refused;
  for (size_t j = 0; j < flight.ready.size(); ++j) {
    Pending& p = (*flight.batch)[flight.ready[j]];
    if (out.ok[j]) {
      ++stats_.sent;
      ++progress_.sent;
      stats_.bytes_sent += p.bytes;
      ++sent_by_destination_[p.target.url];
      sent_.push_back({p.item.record.message_id, out.new_ids[j], p.target.url});
      if (options_.gate != nullptr) batch_sent.push_back(sent_.back());
      if (options_.on_sent && recorded.ok()) recorded = options_.on_sent(p.target.url, p.item.record.message_id);
      sent_items.push_back(&p.item);
    } else {
      Fail(p, out.reasons[j].empty() ? "not sent" : out.reasons[j]);
      if (out.refused[j]) {
        ++stats_.refused;
        failures_.back().refused = true;
        batch_refused.push_back({p.item.record.message_id, out.new_ids[j], p.target.url});
      }
      failed_items.push_back(&p.item);
    }
  }
  if (options_.gate != nullptr && !batch_refused.empty()) {
    Status st = options_.gate->OnFailedAtOnce(batch_refused);
    if (recorded.ok()) recorded = st;
  }
  // The gate learns what was sent even when the run stops here: it was sent.
  if (options_.gate != nullptr && !batch_sent.empty()) {
    Status st = options_.gate->OnSent(batch_sent);
    if (recorded.ok()) recorded = st;
  }
  stats_.retries += out.retries;
  stats_.throttled += out.throttled;
  ++stats_.batches;
  stats_.send_seconds = std::chrono::duration<double>(clock_.SteadyNow() - *first_dispatch_).count();
  if (on_batch_done_) on_batch_done_(sent_items, failed_items);
  if (!out.fatal.ok()) return out.fatal;
  DLQ_RETURN_IF_ERROR(recorded);
  progress_.done = std::max(progress_.done, flight.done_after);
  if (!options_.checkpoint_path.empty())
    DLQ_RETURN_IF_ERROR(SaveCheckpoint(options_.checkpoint_path, progress_, options_.checkpoint_mode));
  if (on_progress_) on_progress_(stats_);
  if (stats_.failed > options_.max_failures) {
    return FailedPrecondition(fmt::format("stopping: {} failed (more than {})",
                                          CountNoun(stats_.failed, "message", "messages"), options_.max_failures));
  }
  return Status::Ok();
}

}  // namespace dlq
