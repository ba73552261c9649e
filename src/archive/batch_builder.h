// BatchBuilder: accumulates the JSON lines of one queue's messages and seals
// them into one gzip object with its key. Not thread-safe (one per pipeline
// stage). The caller keeps each Message's id and receipt handle alongside:
// the builder keeps only the records (the ids are in them, in Add order).
//
// At gzip level 1 (igzip) the records are compressed while the batch fills,
// a piece of kStreamPiece bytes at a time, into the object body
// (GzipStream): what igzip reads was just written and is still in the cache,
// the MD5 of the body is taken as it is written, and no uncompressed copy of
// the batch is held. Add only cuts pieces; CompressPieces compresses them,
// so a caller that serialises Add under a lock can compress outside it.
// Other levels (libdeflate, one call) hold the batch's JSON and compress it
// at Finish.
//
// Threads: Add, HasPieces, TakePieces, ReturnPieces and Finish are the
// caller's to serialise (one thread or one lock). CompressPieces runs
// outside that, for the pieces TakePieces returned, in the order taken, by
// one thread at a time, and not at the same time as Finish.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "archive/gzip.h"
#include "archive/key_layout.h"
#include "archive/record.h"
#include "common/clock.h"
#include "common/crypto.h"
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
  std::optional<Md5Digest> md5;  // of gz, when taken while compressing (gzip level 1)
};

class BatchBuilder {
 public:
  // `clock` must outlive the builder. `limits` must pass Validate().
  BatchBuilder(ArchiveContext context, KeyTemplate key_template, std::string prefix, BatchLimits limits,
               const Clock& clock);

  // Appends `msg` (archived_at = clock now). Returns true when the batch is
  // now full and should be sealed. A single message larger than max_bytes is
  // accepted and fills the batch on its own.
  bool Add(const Message& msg);

  bool Full() const;
  // Full, or non-empty and older than max_age.
  bool ShouldSeal() const;
  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }
  size_t bytes() const { return bytes_; }  // uncompressed JSON bytes

  // Compresses the batch, assigns a fresh key and resets the builder, which
  // keeps its buffers' capacity for the next batch. `gz_buffer` becomes the
  // body of a batch (this one's, or at level 1, where the body is written
  // while the batch fills, the next one's): pass the `gz` of a stored batch
  // to reuse its capacity. kFailedPrecondition when empty. A compression
  // error is returned; at level 1 the batch is then dropped from the builder
  // (its messages are the caller's to release), at other levels it is kept
  // so the call may be retried.
  Result<SealedBatch> Finish(std::string gz_buffer = {});

  // Level 1: pieces of JSON cut by Add and not yet compressed.
  bool HasPieces() const { return !pieces_.empty(); }
  // Hands them over, oldest first, to be passed to CompressPieces.
  std::vector<std::string> TakePieces();
  // Appends them to the body. An error is also kept and reported by Finish.
  Status CompressPieces(const std::vector<std::string>& pieces);
  // Gives the compressed pieces' buffers back for later pieces.
  void ReturnPieces(std::vector<std::string> pieces);

  // JSON bytes compressed at a time at level 1: small enough to stay in the
  // cache between being written and being compressed.
  static constexpr size_t kStreamPiece = size_t{128} << 10;

 private:
  ArchiveContext context_;
  KeyTemplate key_template_;
  std::string prefix_;
  BatchLimits limits_;
  const Clock& clock_;
  bool Streaming() const { return limits_.gzip_level == 1; }
  void StartStream();

  std::string buffer_;                     // the batch's JSON, or at level 1 the piece being filled
  std::vector<std::string> pieces_;        // level 1: cut, not yet taken
  std::vector<std::string> spare_pieces_;  // level 1: buffers for the next pieces
  size_t count_ = 0;                       // records in the batch
  size_t bytes_ = 0;                       // JSON bytes in the batch
  SystemTime started_at_;
  GzipStream stream_;    // level 1
  std::string next_gz_;  // level 1: the body buffer of the next batch
  Status stream_error_;  // level 1: the stream failed; Finish reports it
};

}  // namespace dlq
