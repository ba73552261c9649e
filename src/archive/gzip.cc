#include "archive/gzip.h"

#include <fmt/format.h>
#include <libdeflate.h>
#include <zlib.h>

#include <array>
#include <climits>
#include <memory>

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

struct InflateStream {
  z_stream zs{};
  bool initialised = false;
  ~InflateStream() {
    if (initialised) inflateEnd(&zs);
  }
};

}  // namespace

Result<std::string> GzipCompress(std::string_view data, int level) {
  if (level < 0 || level > 12) return InvalidArgument(fmt::format("gzip: compression level {} not in [0, 12]", level));
  libdeflate_compressor* c = CompressorFor(level);
  if (c == nullptr) return Internal("gzip: cannot allocate a libdeflate compressor");
  std::string out;
  out.resize(libdeflate_gzip_compress_bound(c, data.size()));
  size_t n = libdeflate_gzip_compress(c, data.data(), data.size(), out.data(), out.size());
  if (n == 0) return Internal(fmt::format("gzip: compression of {} bytes failed", data.size()));
  out.resize(n);
  return out;
}

Result<std::string> GzipDecompress(std::string_view gz, size_t max_output) {
  if (gz.empty()) return DataLoss("gzip: empty input is not a gzip file");
  InflateStream s;
  if (inflateInit2(&s.zs, 15 + 16) != Z_OK) return Internal("gzip: inflateInit2 failed");
  s.initialised = true;

  std::string out;
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
  out.resize(std::min(guess, max_output + 1));

  size_t produced = 0;
  while (in_pos < gz.size()) {
    ++member;
    if (gz.size() - in_pos < 2 || static_cast<unsigned char>(gz[in_pos]) != 0x1f ||
        static_cast<unsigned char>(gz[in_pos + 1]) != 0x8b) {
      return DataLoss(
          fmt::format("gzip: member {} at offset {}: not a gzip header (trailing garbage)", member, in_pos));
    }
    if (member > 1 && inflateReset(&s.zs) != Z_OK) return Internal("gzip: inflateReset failed");
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
      if (produced == out.size()) {
        if (produced > max_output) break;
        out.resize(std::min(std::max(out.size() * 2, size_t{4096}), max_output + 1));
      }
      size_t in_left = gz.size() - in_pos;
      size_t out_left = out.size() - produced;
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
        return DataLoss(fmt::format("gzip: decompressed size exceeds the limit of {} bytes", max_output));
      }
      if (rc == Z_STREAM_END) break;
      if (rc == Z_BUF_ERROR && s.zs.avail_out != 0) {
        return DataLoss(fmt::format("gzip: member {} is truncated at input offset {}", member, in_pos));
      }
      if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return DataLoss(fmt::format("gzip: member {} is corrupt near input offset {}: {}", member, in_pos,
                                    s.zs.msg != nullptr ? s.zs.msg : "inflate error"));
      }
    }
    if (produced > max_output) {
      return DataLoss(fmt::format("gzip: decompressed size exceeds the limit of {} bytes", max_output));
    }
  }
  out.resize(produced);
  return out;
}

}  // namespace dlq
