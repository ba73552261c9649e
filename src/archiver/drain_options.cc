#include "archiver/drain_options.h"

#include "sqs/limits.h"

namespace dlq {

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
  if (depth_checks_before_incomplete < 1) return InvalidArgument("depth checks before incomplete must be >= 1");
  if (corrupt_receipts_to_give_up < 1) return InvalidArgument("corrupt receipts to give up must be >= 1");
  if (max_examined_held < sqs::kMaxBatchEntries) return InvalidArgument("max examined held must be >= 10");
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

}  // namespace dlq
