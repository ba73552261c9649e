#include "archive/gzip.h"

#include <fmt/format.h>
#include <isa-l/igzip_lib.h>
#include <libdeflate.h>
#include <sys/mman.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <memory>
#include <new>
#include <utility>

#include "common/allocator.h"

namespace dlq {
namespace {

struct CompressorCache {
  std::array<libdeflate_compressor*, 13> by_level{};
  ~CompressorCache() {
    for (libdeflate_compressor* c : by_level)
      if (c != nullptr) libdeflate_free_compressor(c);
  }
};

libdeflate_compressor* CompressorFor(int level) {
  thread_local CompressorCache cache;
  libdeflate_compressor*& c = cache.by_level[static_cast<size_t>(level)];
  if (c == nullptr) c = libdeflate_alloc_compressor(level);
  return c;
}

// ISA-L's igzip at its level 1, streamed into `out` a step at a time, so
// only the pages the output needs are touched (a reused buffer stays as
// resident as its largest object, not as the worst-case bound). False when
// igzip fails (libdeflate then does it).
bool IgzipLevel1(std::string_view data, std::string& out) {
  if (data.size() > UINT32_MAX / 2) return false;
  thread_local std::unique_ptr<uint8_t[]> level_buf(new (std::nothrow) uint8_t[ISAL_DEF_LVL1_DEFAULT]);
  if (level_buf == nullptr) return false;
  isal_zstream s;
  isal_deflate_init(&s);
  s.level = 1;
  s.level_buf = level_buf.get();
  s.level_buf_size = ISAL_DEF_LVL1_DEFAULT;
  s.gzip_flag = IGZIP_GZIP;
  s.end_of_stream = 1;
  s.flush = NO_FLUSH;
  s.next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(data.data()));
  s.avail_in = static_cast<uint32_t>(data.size());
  constexpr size_t kStep = size_t{256} << 10;
  size_t written = 0;
  out.clear();  // keeps the capacity; resize() below value-fills only the next step
  do {
    out.resize(written + kStep);
    s.next_out = reinterpret_cast<uint8_t*>(out.data() + written);
    s.avail_out = static_cast<uint32_t>(kStep);
    const uint32_t in_before = s.avail_in;
    if (isal_deflate(&s) != COMP_OK) return false;
    if (s.avail_out == kStep && s.avail_in == in_before && s.internal_state.state != ZSTATE_END) return false;
    written = out.size() - s.avail_out;
  } while (s.avail_out == 0 || s.internal_state.state != ZSTATE_END);
  out.resize(written);
  return s.avail_in == 0;
}

struct InflateStream {
  z_stream zs{};
  bool initialised = false;
  ~InflateStream() {
    if (initialised) inflateEnd(&zs);
  }
};

}  // namespace

Status GzipCompressInto(std::string_view data, int level, std::string& out) {
  if (level < 0 || level > 12) return InvalidArgument(fmt::format("gzip: compression level {} not in [0, 12]", level));
  if (level == 1) {
    // Reserving touches no page; the output is written a step at a time.
    const size_t room = data.size() + data.size() / 64 + 1024;
    ReserveHugeBuffer(out, room);
    if (IgzipLevel1(data, out)) return Status::Ok();
  }
  libdeflate_compressor* c = CompressorFor(level);
  if (c == nullptr) return Internal("gzip: cannot allocate a libdeflate compressor");
  // resize() value-fills only what lies beyond the current size.
  out.resize(std::max(out.size(), libdeflate_gzip_compress_bound(c, data.size())));
  size_t n = libdeflate_gzip_compress(c, data.data(), data.size(), out.data(), out.size());
  if (n == 0) return Internal(fmt::format("gzip: compression of {} bytes failed", data.size()));
  out.resize(n);
  return Status::Ok();
}

Result<std::string> GzipCompress(std::string_view data, int level) {
  std::string out;
  DLQ_RETURN_IF_ERROR(GzipCompressInto(data, level, out));
  return out;
}

namespace {

// zlib streaming: handles every input, and on damage says where and keeps
// what decompressed before it.
GunzipResult ZlibDecompressInto(std::string_view gz, size_t max_output, GunzipBuffer& out) {
  if (gz.empty()) return {0, DataLoss("gzip: empty input is not a gzip file")};
  InflateStream s;
  if (inflateInit2(&s.zs, 15 + 16) != Z_OK) return {0, Internal("gzip: inflateInit2 failed")};
  s.initialised = true;

  size_t in_pos = 0;
  int member = 0;
  // First guess at the output size: the last member's ISIZE trailer, bounded.
  size_t guess = gz.size() * 4;
  if (gz.size() >= 18) {
    const auto* t = reinterpret_cast<const unsigned char*>(gz.data() + gz.size() - 4);
    size_t isize = static_cast<size_t>(t[0]) | static_cast<size_t>(t[1]) << 8 | static_cast<size_t>(t[2]) << 16 |
                   static_cast<size_t>(t[3]) << 24;
    // DEFLATE expands at most ~1032:1, so a larger ISIZE is a lie; do not trust it.
    guess = std::max(guess, std::min(isize + 1, gz.size() * 1032 + 64));
  }
  if (!out.Reserve(std::min(guess, max_output + 1), 0)) return {0, Internal("gzip: out of memory")};

  size_t produced = 0;
  while (in_pos < gz.size()) {
    ++member;
    if (gz.size() - in_pos < 2 || static_cast<unsigned char>(gz[in_pos]) != 0x1f ||
        static_cast<unsigned char>(gz[in_pos + 1]) != 0x8b) {
      return {produced, DataLoss(fmt::format("gzip: member {} at offset {}: not a gzip header (trailing garbage)",
                                             member, in_pos))};
    }
    if (member > 1 && inflateReset(&s.zs) != Z_OK) return {produced, Internal("gzip: inflateReset failed")};
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
      if (produced == out.capacity()) {
        if (produced > max_output) break;
        if (!out.Reserve(std::min(std::max(out.capacity() * 2, size_t{4096}), max_output + 1), produced)) {
          return {produced, Internal("gzip: out of memory")};
        }
      }
      size_t in_left = gz.size() - in_pos;
      size_t out_left = out.capacity() - produced;
      s.zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data() + in_pos));
      s.zs.avail_in = static_cast<uInt>(std::min<size_t>(in_left, UINT_MAX));
      s.zs.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
      s.zs.avail_out = static_cast<uInt>(std::min<size_t>(out_left, UINT_MAX));
      uInt avail_in_before = s.zs.avail_in;
      uInt avail_out_before = s.zs.avail_out;
      rc = inflate(&s.zs, Z_NO_FLUSH);
      in_pos += avail_in_before - s.zs.avail_in;
      produced += avail_out_before - s.zs.avail_out;
      if (produced > max_output) {
        return {max_output, DataLoss(fmt::format("gzip: decompressed size exceeds the limit of {} bytes", max_output))};
      }
      if (rc == Z_STREAM_END) break;
      if (rc == Z_BUF_ERROR && s.zs.avail_out != 0) {
        return {produced, DataLoss(fmt::format("gzip: member {} is truncated at input offset {}", member, in_pos))};
      }
      if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return {produced, DataLoss(fmt::format("gzip: member {} is corrupt near input offset {}: {}", member, in_pos,
                                               s.zs.msg != nullptr ? s.zs.msg : "inflate error"))};
      }
    }
    if (produced > max_output) {
      return {max_output, DataLoss(fmt::format("gzip: decompressed size exceeds the limit of {} bytes", max_output))};
    }
  }
  return {produced, Status::Ok()};
}

struct DecompressorHolder {
  libdeflate_decompressor* d = libdeflate_alloc_decompressor();
  ~DecompressorHolder() {
    if (d != nullptr) libdeflate_free_decompressor(d);
  }
};

uint32_t ReadLe32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<uint32_t>(u[0]) | static_cast<uint32_t>(u[1]) << 8 | static_cast<uint32_t>(u[2]) << 16 |
         static_cast<uint32_t>(u[3]) << 24;
}

// libdeflate, whole buffer: the output is sized from the last member's ISIZE
// trailer (exact for one member). Returns false when it cannot finish (damage,
// a wrong size guess, several large members); the caller then uses zlib.
bool LibdeflateDecompressInto(std::string_view gz, size_t max_output, GunzipBuffer& out, size_t& produced) {
  thread_local DecompressorHolder holder;
  if (holder.d == nullptr || gz.size() < 18) return false;
  // DEFLATE expands at most ~1032:1, so a larger ISIZE is a lie; do not trust it.
  size_t guess = std::min<size_t>(ReadLe32(gz.data() + gz.size() - 4), gz.size() * 1032 + 64);
  size_t capacity = std::min(guess + 64, max_output);
  if (!out.Reserve(capacity, 0)) return false;
  produced = 0;
  size_t in_pos = 0;
  while (in_pos < gz.size()) {
    if (gz.size() - in_pos < 18 || static_cast<unsigned char>(gz[in_pos]) != 0x1f ||
        static_cast<unsigned char>(gz[in_pos + 1]) != 0x8b) {
      return false;
    }
    size_t in_used = 0, out_used = 0;
    libdeflate_result r =
        libdeflate_gzip_decompress_ex(holder.d, gz.data() + in_pos, gz.size() - in_pos, out.data() + produced,
                                      capacity - produced, &in_used, &out_used);
    if (r != LIBDEFLATE_SUCCESS) return false;
    in_pos += in_used;
    produced += out_used;
  }
  return true;
}

}  // namespace

GunzipBuffer::~GunzipBuffer() {
  if (data_ != nullptr) munmap(data_, capacity_);
}

GunzipBuffer::GunzipBuffer(GunzipBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), capacity_(std::exchange(other.capacity_, 0)) {}

GunzipBuffer& GunzipBuffer::operator=(GunzipBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) munmap(data_, capacity_);
    data_ = std::exchange(other.data_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

bool GunzipBuffer::Reserve(size_t n, size_t keep) {
  if (n <= capacity_) return true;
  constexpr size_t kHugePage = size_t{2} << 20;
  // Round up to whole huge pages, with room for slightly larger objects next time.
  size_t want = (std::max(n + n / 8, capacity_ * 2) + kHugePage - 1) / kHugePage * kHugePage;
  void* p;
  if (data_ == nullptr || keep == 0) {
    if (data_ != nullptr) munmap(data_, capacity_);
    data_ = nullptr;
    capacity_ = 0;
    p = mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  } else {
    p = mremap(data_, capacity_, want, MREMAP_MAYMOVE);
  }
  if (p == MAP_FAILED) return false;
  madvise(p, want, MADV_HUGEPAGE);  // a hint; fine if the kernel declines
  data_ = static_cast<char*>(p);
  capacity_ = want;
  return true;
}

GunzipResult GzipDecompressInto(std::string_view gz, size_t max_output, GunzipBuffer& buffer) {
  size_t produced = 0;
  if (LibdeflateDecompressInto(gz, max_output, buffer, produced)) return {produced, Status::Ok()};
  return ZlibDecompressInto(gz, max_output, buffer);
}

namespace {

std::string_view IsalError(int rc) {
  switch (rc) {
    case ISAL_INVALID_BLOCK: return "invalid deflate block";
    case ISAL_INVALID_SYMBOL: return "invalid deflate symbol";
    case ISAL_INVALID_LOOKBACK: return "invalid back-reference distance";
    case ISAL_INVALID_WRAPPER: return "invalid gzip header";
    case ISAL_UNSUPPORTED_METHOD: return "unsupported compression method";
    case ISAL_INCORRECT_CHECKSUM: return "CRC-32 or length mismatch";
    default: return "inflate error";
  }
}

}  // namespace

struct GunzipStream::State {
  inflate_state inflate{};
  bool in_member = false;
};

GunzipStream::GunzipStream(std::string_view gz) : gz_(gz), state_(std::make_unique<State>()) {
  if (gz.empty()) {
    done_ = true;
    status_ = DataLoss("gzip: empty input is not a gzip file");
  }
}

GunzipStream::~GunzipStream() = default;
GunzipStream::GunzipStream(GunzipStream&&) noexcept = default;
GunzipStream& GunzipStream::operator=(GunzipStream&&) noexcept = default;

size_t GunzipStream::Read(char* out, size_t n) {
  size_t written = 0;
  while (!done_ && written < n) {
    inflate_state& s = state_->inflate;
    if (!state_->in_member) {
      if (in_pos_ == gz_.size()) {
        done_ = true;
        break;
      }
      ++member_;
      if (gz_.size() - in_pos_ < 2 || static_cast<unsigned char>(gz_[in_pos_]) != 0x1f ||
          static_cast<unsigned char>(gz_[in_pos_ + 1]) != 0x8b) {
        done_ = true;
        status_ = DataLoss(
            fmt::format("gzip: member {} at offset {}: not a gzip header (trailing garbage)", member_, in_pos_));
        break;
      }
      isal_inflate_init(&s);
      s.crc_flag = ISAL_GZIP;
      state_->in_member = true;
    }
    s.next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(gz_.data() + in_pos_));
    s.avail_in = static_cast<uint32_t>(std::min<size_t>(gz_.size() - in_pos_, UINT32_MAX));
    s.next_out = reinterpret_cast<uint8_t*>(out + written);
    s.avail_out = static_cast<uint32_t>(std::min<size_t>(n - written, UINT32_MAX));
    const uint32_t in_before = s.avail_in, out_before = s.avail_out;
    const int rc = isal_inflate(&s);
    in_pos_ += in_before - s.avail_in;
    written += out_before - s.avail_out;
    if (rc < 0) {
      done_ = true;
      status_ =
          DataLoss(fmt::format("gzip: member {} is corrupt near input offset {}: {}", member_, in_pos_, IsalError(rc)));
      break;
    }
    if (s.block_state == ISAL_BLOCK_FINISH) {
      state_->in_member = false;
      continue;
    }
    // Room left for output and no member end: the input ran out (or, with
    // input left, nothing moved at all).
    if (s.avail_out != 0 && (in_pos_ == gz_.size() || (s.avail_in == in_before && s.avail_out == out_before))) {
      done_ = true;
      status_ = DataLoss(fmt::format("gzip: member {} is truncated at input offset {}", member_, in_pos_));
      break;
    }
  }
  return written;
}

Result<std::string> GzipDecompress(std::string_view gz, size_t max_output) {
  GunzipBuffer buffer;
  GunzipResult r = GzipDecompressInto(gz, max_output, buffer);
  if (!r.status.ok()) return r.status;
  return std::string(buffer.data(), r.size);
}

}  // namespace dlq
