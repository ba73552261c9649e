// BatchBuilder: accumulates the JSON lines of one queue's messages and seals
// them into one gzip object with its key. Not thread-safe (one per pipeline
// stage). The caller keeps each Message's id and receipt handle alongside:
// the builder keeps only the records (the ids are in them, in Add order).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include "archive/key_layout.h"
#include "archive/record.h"
#include "common/clock.h"
#include "common/status.h"
#include "sqs/types.h"

namespace dlq {

struct BatchLimits {
  // Defaults: 10,000 messages (1,000 ReceiveMessage calls of 10), 64 MiB of
  // JSON (a sub-second level-6 compress, one single-part PUT), 30 s (bounded
  // latency and visibility-timeout exposure for slow trickles).
  size_t max_messages = 10000;
  size_t max_bytes = 64u << 20;  // uncompressed JSON bytes
  std::chrono::milliseconds max_age{30000};
  int gzip_level = 6;

  Status Validate() const;
};

struct SealedBatch {
  std::string key;
  std::string gz;       // the object body
  size_t messages = 0;  // records in the object
  size_t uncompressed_bytes = 0;
  SystemTime started_at;  // first Add; the time in the key
  SystemTime sealed_at;
};

class BatchBuilder {
 public:
  // `clock` must outlive the builder. `limits` must pass Validate().
  BatchBuilder(ArchiveContext context, KeyTemplate key_template, std::string prefix, BatchLimits limits,
               const Clock& clock);

  // Appends `msg` (archived_at = clock now; own_receive_count: how many of
  // its receives were ours, when known). Returns true when the batch is now
  // full and should be sealed. A single message larger than max_bytes is
  // accepted and fills the batch on its own.
  bool Add(const Message& msg, std::optional<int64_t> own_receive_count = std::nullopt);

  bool Full() const;
  // Full, or non-empty and older than max_age.
  bool ShouldSeal() const;
  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }
  size_t bytes() const { return buffer_.size(); }

  // Compresses the batch, assigns a fresh key and resets the builder, which
  // keeps its buffer's capacity for the next batch. The object body is
  // written into `gz_buffer` (pass the `gz` of a finished batch to reuse its
  // capacity). kFailedPrecondition when empty; compression errors are
  // returned and the batch is kept so the call may be retried.
  Result<SealedBatch> Finish(std::string gz_buffer = {});

 private:
  ArchiveContext context_;
  KeyTemplate key_template_;
  std::string prefix_;
  BatchLimits limits_;
  const Clock& clock_;
  std::string buffer_;
  size_t count_ = 0;  // records in buffer_
  SystemTime started_at_;
};

}  // namespace dlq
