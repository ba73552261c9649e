#include "archive/batch_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "archive/gzip.h"
#include "common/allocator.h"

namespace dlq {
namespace {

constexpr size_t kOvershootRoom = size_t{256} << 10;

}  // namespace

Status BatchLimits::Validate() const {
  if (max_messages == 0) return InvalidArgument("batch limits: max_messages must be at least 1");
  if (max_bytes < 1024) return InvalidArgument(fmt::format("batch limits: max_bytes {} is below 1024", max_bytes));
  if (max_age.count() <= 0) return InvalidArgument("batch limits: max_age must be positive");
  if (gzip_level < 0 || gzip_level > 12) {
    return InvalidArgument(fmt::format("batch limits: gzip_level {} not in [0, 12]", gzip_level));
  }
  return Status::Ok();
}

BatchBuilder::BatchBuilder(ArchiveContext context, KeyTemplate key_template, std::string prefix, BatchLimits limits,
                           const Clock& clock)
    : context_(std::move(context)),
      key_template_(std::move(key_template)),
      prefix_(std::move(prefix)),
      limits_(limits),
      clock_(clock) {}

bool BatchBuilder::Add(const Message& msg, std::optional<int64_t> own_receive_count) {
  SystemTime now = clock_.Now();
  if (count_ == 0) {
    started_at_ = now;
    // Room for a full batch at once, not by doubling (copies and page faults;
    // a reused builder keeps it). The last record may overshoot max_bytes.
    const size_t full = std::min<size_t>(limits_.max_bytes, size_t{16} << 20);
    ReserveHugeBuffer(buffer_, full + kOvershootRoom, /*huge_bytes=*/full);
  }
  AppendRecordJson(msg, context_, now, buffer_, own_receive_count);
  ++count_;
  return Full();
}

bool BatchBuilder::Full() const {
  return count_ >= limits_.max_messages || buffer_.size() >= limits_.max_bytes;
}

bool BatchBuilder::ShouldSeal() const {
  if (count_ == 0) return false;
  return Full() || clock_.Now() - started_at_ >= limits_.max_age;
}

Result<SealedBatch> BatchBuilder::Finish(std::string gz_buffer) {
  if (count_ == 0) return FailedPrecondition(fmt::format("batch for queue {}: nothing to seal", context_.queue));
  Status st = GzipCompressInto(buffer_, limits_.gzip_level, gz_buffer);
  if (!st.ok()) return st.WithContext(fmt::format("seal batch for queue {}", context_.queue));
  SealedBatch b;
  b.gz = std::move(gz_buffer);
  b.started_at = started_at_;
  b.sealed_at = clock_.Now();
  b.uncompressed_bytes = buffer_.size();
  b.key =
      key_template_.Render({prefix_, context_.queue, context_.region, context_.account_id, started_at_, NewBatchId()});
  b.messages = count_;
  count_ = 0;
  buffer_.clear();
  return b;
}

}  // namespace dlq
