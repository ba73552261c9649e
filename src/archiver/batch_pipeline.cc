#include "archiver/batch_pipeline.h"

#include <algorithm>
#include <utility>

namespace dlq {
namespace {

constexpr size_t kReserveHeld = 16384;

}  // namespace

BatchPipeline::BatchPipeline(MakeBuilder make, size_t max_messages, std::chrono::seconds visibility_timeout)
    : make_(std::move(make)),
      reserve_(std::min(max_messages, kReserveHeld)),
      visibility_timeout_(visibility_timeout),
      builder_(make_()) {}

std::unique_ptr<BatchBuilder> BatchPipeline::NewBuilder() {
  if (spare_builder_ == nullptr) {
    ++builders_made_;
    return make_();
  }
  return std::move(spare_builder_);
}

void BatchPipeline::Add(Message& m, size_t i, int own_receives, const std::optional<Waiting>& waiting,
                        SteadyTime received) {
  if (builder_->empty()) {
    building_.seq = next_seq_++;
    // One allocation for the batch's receipt handles, not a doubling
    // chain whose last step (> 1 MiB) is mapped and faulted in anew.
    building_.held.reserve(reserve_);
  }
  builder_->Add(m, own_receives);
  if (!waiting || i < waiting->from) {
    // The builder keeps only the record: the ids move, not copied.
    building_.held.push_back(
        {std::move(m.message_id), std::move(m.receipt_handle), received, received + visibility_timeout_});
    return;
  }
  // With the deadline the heartbeat gave it; its place stays (due entries
  // name messages by index) with an empty handle, which nothing extends.
  HeldMessage& w = waiting->batch->held[i - waiting->from];
  building_.held.push_back({std::move(w.message_id), std::move(w.receipt_handle), w.received_at, w.visible_until});
  w.receipt_handle.clear();
}

BatchPipeline::Waiting BatchPipeline::Wait(const std::vector<Message>& msgs, size_t from, SteadyTime received) {
  HeldBatch& w = waiting_.emplace_back();
  w.seq = next_seq_++;
  for (size_t j = from; j < msgs.size(); ++j) {
    w.held.push_back({msgs[j].message_id, msgs[j].receipt_handle, received, received + visibility_timeout_});
  }
  return Waiting{std::prev(waiting_.end()), from};
}

std::vector<HeldMessage> BatchPipeline::EndWait(std::vector<Message>& msgs, size_t i,
                                                const std::optional<Waiting>& waiting, SteadyTime received) {
  std::vector<HeldMessage> rest;
  for (; i < msgs.size(); ++i) {
    Message& m = msgs[i];
    if (!waiting || i < waiting->from) {
      rest.push_back({std::move(m.message_id), std::move(m.receipt_handle), received, received});
      continue;
    }
    HeldMessage& w = waiting->batch->held[i - waiting->from];
    rest.push_back({std::move(w.message_id), std::move(w.receipt_handle), w.received_at, received});
    w.receipt_handle.clear();
  }
  if (waiting) waiting_.erase(waiting->batch);
  return rest;
}

bool BatchPipeline::AddCopy(const Message& m, SteadyTime received) {
  auto holds = [&](const HeldBatch& b) {
    return std::any_of(b.held.begin(), b.held.end(),
                       [&](const HeldMessage& h) { return !h.copy && h.message_id == m.message_id; });
  };
  HeldBatch* into = nullptr;
  if (holds(building_)) into = &building_;
  for (HeldBatch& b : upload_queue_)
    if (into == nullptr && holds(b)) into = &b;
  for (HeldBatch* b : uploading_)
    if (into == nullptr && !b->deleting && holds(*b)) into = b;
  for (HeldBatch* b : sealing_batches_)
    if (into == nullptr && holds(*b)) into = b;
  if (into == nullptr) return false;
  into->held.push_back({m.message_id, m.receipt_handle, received, received + visibility_timeout_, /*copy=*/true});
  return true;
}

std::vector<HeldMessage> BatchPipeline::DropBuilding() {
  std::vector<HeldMessage> rest = std::move(building_.held);
  building_ = HeldBatch{};
  builder_ = NewBuilder();
  return rest;
}

bool BatchPipeline::MaySeal(int max_in_flight) const {
  // Batches whose object is stored and which are only deleting hold receipt
  // handles, not data: they do not count against the in-flight bound.
  const size_t in_flight =
      upload_queue_.size() + uploading_.size() - static_cast<size_t>(deleting_) + static_cast<size_t>(sealing_);
  return in_flight < static_cast<size_t>(max_in_flight) && sealing_ == 0;
}

std::unique_ptr<BatchBuilder> BatchPipeline::BeginSeal(HeldBatch& batch, std::string& gz) {
  std::unique_ptr<BatchBuilder> full = std::move(builder_);
  builder_ = NewBuilder();
  if (!spare_gz_.empty()) {
    gz = std::move(spare_gz_.back());
    spare_gz_.pop_back();
  }
  batch = std::move(building_);
  building_ = HeldBatch{};
  ++sealing_;
  sealing_batches_.push_back(&batch);
  return full;
}

void BatchPipeline::EndSeal(HeldBatch& batch, std::unique_ptr<BatchBuilder> full, std::optional<SealedBatch> sealed) {
  --sealing_;
  std::erase(sealing_batches_, &batch);
  if (!sealed) return;
  // It builds the batch after next (one builder builds while this one seals).
  if (spare_builder_ == nullptr) spare_builder_ = std::move(full);
  batch.sealed = std::move(*sealed);
  upload_queue_.push_back(std::move(batch));
}

void BatchPipeline::BeginUpload(HeldBatch& batch) {
  batch = std::move(upload_queue_.front());
  upload_queue_.pop_front();
  uploading_.push_back(&batch);
}

void BatchPipeline::KeepBody(std::string&& gz, size_t keep) {
  if (spare_gz_.size() < keep) spare_gz_.push_back(std::move(gz));
}

void BatchPipeline::BeginDelete(HeldBatch& batch) {
  batch.deleting = true;
  ++deleting_;
}

void BatchPipeline::EndUpload(HeldBatch& batch) {
  if (batch.deleting) --deleting_;
  std::erase(uploading_, &batch);
}

size_t BatchPipeline::held() const {
  size_t n = building_.held.size();
  for (const HeldBatch& b : upload_queue_) n += b.held.size();
  for (const HeldBatch* b : uploading_) n += b->held.size();
  for (const HeldBatch* b : sealing_batches_) n += b->held.size();
  return n;
}

void BatchPipeline::AppendDue(SteadyTime now, bool& seal, std::vector<VisibilityDue>& due) const {
  const auto timeout = visibility_timeout_;
  dlq::AppendDue(building_, now, timeout, /*building=*/true, /*moves=*/false, seal, due);
  for (const HeldBatch& b : upload_queue_) dlq::AppendDue(b, now, timeout, false, false, seal, due);
  for (const HeldBatch* b : uploading_) dlq::AppendDue(*b, now, timeout, false, false, seal, due);
  for (const HeldBatch* b : sealing_batches_) dlq::AppendDue(*b, now, timeout, false, false, seal, due);
  for (const HeldBatch& b : waiting_) dlq::AppendDue(b, now, timeout, false, /*moves=*/true, seal, due);
}

HeldBatch* BatchPipeline::FindBatch(uint64_t seq) {
  if (building_.seq == seq) return &building_;
  for (HeldBatch& b : upload_queue_)
    if (b.seq == seq) return &b;
  for (HeldBatch* b : uploading_)
    if (b->seq == seq) return b;
  for (HeldBatch* b : sealing_batches_)
    if (b->seq == seq) return b;
  for (HeldBatch& b : waiting_)
    if (b.seq == seq) return &b;
  return nullptr;
}

HeldMessage* BatchPipeline::FindMoved(const std::string& receipt_handle) {
  auto find = [&](HeldBatch& b) -> HeldMessage* {
    for (HeldMessage& h : b.held)
      if (h.receipt_handle == receipt_handle) return &h;
    return nullptr;
  };
  if (HeldMessage* h = find(building_)) return h;
  for (HeldBatch& b : upload_queue_)
    if (HeldMessage* h = find(b)) return h;
  for (HeldBatch* b : uploading_)
    if (HeldMessage* h = find(*b)) return h;
  for (HeldBatch* b : sealing_batches_)
    if (HeldMessage* h = find(*b)) return h;
  return nullptr;
}

bool BatchPipeline::RecordDue(const VisibilityDue& d, SteadyTime until) {
  // The batch may have moved on meanwhile: match by receipt handle.
  if (HeldBatch* b = FindBatch(d.seq); b != nullptr && dlq::RecordDue(*b, d, until)) return true;
  if (HeldMessage* moved = d.moves ? FindMoved(d.receipt_handle) : nullptr) {
    moved->visible_until = until;  // left a waiting batch for another meanwhile: still ours
    return true;
  }
  return false;
}

}  // namespace dlq
