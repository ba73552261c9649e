// gzip (RFC 1952) for archive objects. Thread-safe: compressors are cached
// per thread and per level.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace dlq {

// One gzip member. `level` is libdeflate's scale: 0 (stored) .. 12; 1 fastest,
// 6 the usual default. Level 1 is ISA-L's igzip level 1 (2-4x faster than
// libdeflate's level 1, output a few percent larger on text that compresses
// well; libdeflate when igzip cannot). Errors: kInvalidArgument for a bad
// level, kInternal if the compressor cannot be allocated.
Result<std::string> GzipCompress(std::string_view data, int level);
// The same into `out`, whose capacity is reused (a buffer kept across
// batches costs no allocation); on success `out` holds exactly the gzip
// bytes, on error its contents are unspecified.
Status GzipCompressInto(std::string_view data, int level, std::string& out);

// Decompresses a gzip file of one or more concatenated members (as produced
// by appending). Output larger than `max_output` bytes is rejected with
// kDataLoss before it is materialised (gzip bombs); corrupt, truncated or
// trailing non-gzip data yields kDataLoss naming the member and offset.
Result<std::string> GzipDecompress(std::string_view gz, size_t max_output);

// Output space for GzipDecompressInto: anonymous memory in huge pages where
// the kernel allows, grown by remapping and never zero-filled by us, so a
// reused buffer costs neither page faults nor memset per object. Not
// thread-safe; movable.
class GunzipBuffer {
 public:
  GunzipBuffer() = default;
  ~GunzipBuffer();
  GunzipBuffer(GunzipBuffer&& other) noexcept;
  GunzipBuffer& operator=(GunzipBuffer&& other) noexcept;
  GunzipBuffer(const GunzipBuffer&) = delete;
  GunzipBuffer& operator=(const GunzipBuffer&) = delete;

  char* data() { return data_; }
  size_t capacity() const { return capacity_; }
  // Makes capacity() at least `n`, keeping the first `keep` bytes. False
  // when the memory cannot be had.
  bool Reserve(size_t n, size_t keep);

 private:
  char* data_ = nullptr;
  size_t capacity_ = 0;
};

// The same, into `buffer` (grown as needed, never shrunk, so a reused buffer
// costs no allocation): the first `size` bytes of `buffer` are the output.
// On corrupt or truncated input `status` is kDataLoss and the first `size`
// bytes are what decompressed cleanly before the damage (for salvage).
// Uses libdeflate for well-formed input and zlib streaming otherwise.
struct GunzipResult {
  size_t size = 0;
  Status status;
};
GunzipResult GzipDecompressInto(std::string_view gz, size_t max_output, GunzipBuffer& buffer);

// Decompresses `gz` (one or more concatenated members) a piece at a time
// into buffers the caller owns, so memory is the caller's choice whatever the
// compression ratio (ISA-L's igzip inflate). Read returns the number of bytes
// written, 0 at the end; then status() is OK for a complete file, or
// kDataLoss naming the member and input offset for a truncated or corrupt one
// or trailing non-gzip data (the bytes returned before it are good). `gz`
// must outlive the stream. Not thread-safe; movable.
class GunzipStream {
 public:
  explicit GunzipStream(std::string_view gz);
  ~GunzipStream();
  GunzipStream(GunzipStream&&) noexcept;
  GunzipStream& operator=(GunzipStream&&) noexcept;

  size_t Read(char* out, size_t n);
  const Status& status() const { return status_; }
  bool done() const { return done_; }

 private:
  struct State;
  std::string_view gz_;
  size_t in_pos_ = 0;
  int member_ = 0;
  bool done_ = false;
  Status status_;
  std::unique_ptr<State> state_;
};

}  // namespace dlq
