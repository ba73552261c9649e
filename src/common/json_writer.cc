#include "common/json_writer.h"

#include <fmt/format.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <array>
#include <bit>
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstring>

namespace dlq {
namespace {

constexpr uint64_t kOnes = 0x0101010101010101ULL;
constexpr uint64_t kHighBits = 0x8080808080808080ULL;
constexpr uint64_t kLow7 = 0x7F7F7F7F7F7F7F7FULL;

// Exact per-byte mask (0x80 in each byte position) of bytes that need attention:
// < 0x20, '"', '\\' (escaped) and >= 0x80 (UTF-8 to validate).
inline uint64_t SpecialMask(uint64_t v) {
  uint64_t below_space = ~(((v & kLow7) + kOnes * (0x80 - 0x20)) | v) & kHighBits;
  uint64_t q = v ^ (kOnes * static_cast<uint8_t>('"'));
  uint64_t is_quote = ~(((q & kLow7) + kLow7) | q) & kHighBits;
  uint64_t b = v ^ (kOnes * static_cast<uint8_t>('\\'));
  uint64_t is_backslash = ~(((b & kLow7) + kLow7) | b) & kHighBits;
  return below_space | is_quote | is_backslash | (v & kHighBits);
}

constexpr std::array<bool, 256> MakeSpecialTable() {
  std::array<bool, 256> t{};
  for (int c = 0; c < 0x20; ++c) t[c] = true;
  for (int c = 0x80; c < 0x100; ++c) t[c] = true;
  t['"'] = true;
  t['\\'] = true;
  return t;
}
constexpr std::array<bool, 256> kSpecial = MakeSpecialTable();

#if defined(__SSE2__)
// SpecialMask for 16 bytes: bit i set when byte i needs attention. The signed
// compare catches bytes < 0x20 and bytes >= 0x80 (negative) at once.
inline unsigned SpecialMask16(__m128i v) {
  const __m128i special =
      _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
                   _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))));
  return static_cast<unsigned>(_mm_movemask_epi8(special));
}
#endif

// Length of the longest prefix of `s` with no byte that needs attention
// (SpecialMask's bytes). Reads only.
size_t CleanPrefix(std::string_view s) {
  const char* const begin = s.data();
  const char* p = begin;
  const char* const end = p + s.size();
#if defined(__SSE2__)
  for (; end - p >= 16; p += 16) {
    if (const unsigned mask = SpecialMask16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); mask != 0) {
      return static_cast<size_t>(p - begin) + static_cast<size_t>(std::countr_zero(mask));
    }
  }
#endif
  for (; end - p >= 8; p += 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    if (const uint64_t mask = SpecialMask(v); mask != 0) {
      return static_cast<size_t>(p - begin) + static_cast<size_t>(std::countr_zero(mask)) / 8;
    }
  }
  while (p < end && !kSpecial[static_cast<unsigned char>(*p)]) ++p;
  return static_cast<size_t>(p - begin);
}

// JSON escapes for bytes < 0x20, '"' and '\\', padded to 8 bytes so they are
// copied with one fixed-size memcpy; len is the escape's real length.
struct Escape {
  char text[8];
  uint8_t len;
};

constexpr std::array<Escape, 128> MakeEscapes() {
  std::array<Escape, 128> t{};
  constexpr char kHex[] = "0123456789abcdef";
  for (int c = 0; c < 0x20; ++c) t[c] = {{'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xf], 0, 0}, 6};
  t['"'] = {{'\\', '"'}, 2};
  t['\\'] = {{'\\', '\\'}, 2};
  t['\n'] = {{'\\', 'n'}, 2};
  t['\r'] = {{'\\', 'r'}, 2};
  t['\t'] = {{'\\', 't'}, 2};
  t['\b'] = {{'\\', 'b'}, 2};
  t['\f'] = {{'\\', 'f'}, 2};
  return t;
}
constexpr std::array<Escape, 128> kEscapes = MakeEscapes();

}  // namespace

size_t Utf8SequenceLength(const unsigned char* p, size_t n) {
  unsigned char c = p[0];
  if (c < 0x80) return 1;
  auto cont = [&](size_t i) { return i < n && (p[i] & 0xC0) == 0x80; };
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && p[1] < 0xA0) return 0;   // overlong
    if (c == 0xED && p[1] >= 0xA0) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && p[1] < 0x90) return 0;   // overlong
    if (c == 0xF4 && p[1] >= 0x90) return 0;  // > U+10FFFF
    return 4;
  }
  return 0;
}

// Writes through a raw pointer into `out`, grown geometrically.
// The escape loop of every archived line: its SIMD fast path and fallback share raw pointers into `out`.
// NOLINTNEXTLINE(readability-function-size)
bool AppendJsonEscaped(std::string& out, std::string_view s) {
  static_assert(std::endian::native == std::endian::little, "SpecialMask byte order assumes little-endian");
  const size_t start = out.size();
  // Most strings (ids, digests, timestamps, plain text) need no escape: one
  // copy, and the buffer is not zero-filled first as resize() below does.
  const size_t clean = CleanPrefix(s);
  out.append(s.data(), clean);
  if (clean == s.size()) return true;
  // One step writes at most 23 bytes past dst: a 16-byte block store, or an
  // advance of up to 15 bytes followed by an 8-byte escape copy (or a 4-byte
  // UTF-8 sequence). kRoom keeps every write inside out.size().
  constexpr ptrdiff_t kRoom = 32;
  out.resize(start + s.size() + kRoom);
  char* dst = out.data() + start + clean;
  char* dst_end = out.data() + out.size();
  const char* p = s.data() + clean;
  const char* const end = s.data() + s.size();
  auto reserve_room = [&]() {
    if (dst_end - dst >= kRoom) return;
    size_t used = static_cast<size_t>(dst - out.data());
    out.resize(out.size() + static_cast<size_t>(end - p) * 2 + 64);
    dst = out.data() + used;
    dst_end = out.data() + out.size();
  };
  while (p < end) {
    reserve_room();
    unsigned char c;
#if defined(__SSE2__)
    if (end - p >= 16) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), v);
      const unsigned mask = SpecialMask16(v);
      if (mask == 0) {
        p += 16;
        dst += 16;
        continue;
      }
      size_t k = static_cast<size_t>(std::countr_zero(mask));
      p += k;
      dst += k;
      c = static_cast<unsigned char>(*p);
    } else
#endif
        if (end - p >= 8) {
      uint64_t v;
      std::memcpy(&v, p, 8);
      std::memcpy(dst, p, 8);
      uint64_t mask = SpecialMask(v);
      if (mask == 0) {
        p += 8;
        dst += 8;
        continue;
      }
      size_t k = static_cast<size_t>(std::countr_zero(mask)) / 8;
      p += k;
      dst += k;
      c = static_cast<unsigned char>(*p);
    } else {
      c = static_cast<unsigned char>(*p);
      if (!kSpecial[c]) {
        *dst++ = *p++;
        continue;
      }
    }
    if (c >= 0x80) {
      size_t len = Utf8SequenceLength(reinterpret_cast<const unsigned char*>(p), static_cast<size_t>(end - p));
      if (len == 0) {
        out.resize(start);
        return false;
      }
      std::memcpy(dst, p, len);
      dst += len;
      p += len;
      continue;
    }
    const Escape& e = kEscapes[c];
    std::memcpy(dst, e.text, 8);
    dst += e.len;
    ++p;
  }
  out.resize(static_cast<size_t>(dst - out.data()));
  return true;
}

void AppendJsonString(std::string& out, std::string_view s) {
  out.push_back('"');
  if (!AppendJsonEscaped(out, s)) {
    std::string clean;
    clean.reserve(s.size() + 8);
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    size_t i = 0;
    while (i < s.size()) {
      size_t len = Utf8SequenceLength(p + i, s.size() - i);
      if (len == 0) {
        clean.append("\xEF\xBF\xBD");
        ++i;
      } else {
        clean.append(s.data() + i, len);
        i += len;
      }
    }
    AppendJsonEscaped(out, clean);
  }
  out.push_back('"');
}

void JsonWriter::BeforeValue() {
  assert(open_.empty() ? !need_comma_ : (open_.back() == '[' || after_key_));
  if (need_comma_ && !after_key_) out_->push_back(',');
  after_key_ = false;
}

void JsonWriter::Open(char bracket) {
  BeforeValue();
  out_->push_back(bracket);
  open_.push_back(bracket);
  need_comma_ = false;
}

void JsonWriter::Close(char bracket) {
  assert(!open_.empty() && open_.back() == bracket && !after_key_);
  open_.pop_back();
  out_->push_back(bracket == '{' ? '}' : ']');
  need_comma_ = true;
}

JsonWriter& JsonWriter::BeginObject() {
  Open('{');
  return *this;
}

JsonWriter& JsonWriter::EndObject() {
  Close('{');
  return *this;
}

JsonWriter& JsonWriter::BeginArray() {
  Open('[');
  return *this;
}

JsonWriter& JsonWriter::EndArray() {
  Close('[');
  return *this;
}

JsonWriter& JsonWriter::Key(std::string_view name) {
  assert(!open_.empty() && open_.back() == '{' && !after_key_);
  if (need_comma_) out_->push_back(',');
  AppendJsonString(*out_, name);
  out_->push_back(':');
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view value) {
  BeforeValue();
  AppendJsonString(*out_, value);
  need_comma_ = true;
  return *this;
}

template <class T>
JsonWriter& JsonWriter::Integer(T value) {
  BeforeValue();
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), value);
  out_->append(buf, r.ptr);
  need_comma_ = true;
  return *this;
}

JsonWriter& JsonWriter::Int(int64_t value) {
  return Integer(value);
}

JsonWriter& JsonWriter::Uint(uint64_t value) {
  return Integer(value);
}

JsonWriter& JsonWriter::Double(double value) {
  if (!std::isfinite(value)) return Null();
  BeforeValue();
  fmt::format_to(std::back_inserter(*out_), "{}", value);
  need_comma_ = true;
  return *this;
}

JsonWriter& JsonWriter::Bool(bool value) {
  return Raw(value ? "true" : "false");
}

JsonWriter& JsonWriter::Null() {
  return Raw("null");
}

JsonWriter& JsonWriter::Raw(std::string_view json) {
  BeforeValue();
  out_->append(json);
  need_comma_ = true;
  return *this;
}

JsonWriter& JsonWriter::OptionalString(const std::optional<std::string_view>& value) {
  return value ? String(*value) : Null();
}

std::string JsonWriter::Take() {
  std::string text = std::move(*out_);
  out_->clear();
  open_.clear();
  need_comma_ = false;
  after_key_ = false;
  return text;
}

}  // namespace dlq
