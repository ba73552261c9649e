#include "common/text_mask.h"

#include <algorithm>
#include <cstdint>

#include "common/crypto.h"
#include "common/json_writer.h"

namespace dlq {
namespace {

// Epoch seconds from 2001-09-09 (the first 10-digit value) to 2100-01-01.
constexpr uint64_t kEpochSecondsMin = 1'000'000'000, kEpochSecondsMax = 4'102'444'800;
constexpr std::string_view kEllipsis = "\xE2\x80\xA6";  // U+2026

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}
bool IsHex(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
bool IsWord(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// Characters at s[i, i+n) are all digits.
bool Digits(std::string_view s, size_t i, size_t n) {
  if (i + n > s.size()) return false;
  for (size_t k = i; k < i + n; ++k)
    if (!IsDigit(s[k])) return false;
  return true;
}

bool EndsToken(std::string_view s, size_t end) {
  return end >= s.size() || !IsWord(s[end]);
}

// Length of a UUID at i (8-4-4-4-12 hex), or 0.
size_t MatchUuid(std::string_view s, size_t i) {
  static constexpr size_t kGroups[] = {8, 4, 4, 4, 12};
  size_t p = i;
  for (size_t g = 0; g < 5; ++g) {
    if (g > 0) {
      if (p >= s.size() || s[p] != '-') return 0;
      ++p;
    }
    for (size_t k = 0; k < kGroups[g]; ++k, ++p)
      if (p >= s.size() || !IsHex(s[p])) return 0;
  }
  return EndsToken(s, p) ? p - i : 0;
}

// Length of an ISO 8601 date or date-time at i, or 0:
// YYYY-MM-DD[(T| )HH:MM[:SS[.f+]]][Z|(+|-)HH[:]MM].
size_t MatchIsoTime(std::string_view s, size_t i) {
  if (!Digits(s, i, 4) || i + 10 > s.size() || s[i + 4] != '-' || !Digits(s, i + 5, 2) || s[i + 7] != '-' ||
      !Digits(s, i + 8, 2)) {
    return 0;
  }
  size_t p = i + 10;
  if (p + 6 <= s.size() && (s[p] == 'T' || s[p] == ' ') && Digits(s, p + 1, 2) && s[p + 3] == ':' &&
      Digits(s, p + 4, 2)) {
    p += 6;
    if (p + 3 <= s.size() && s[p] == ':' && Digits(s, p + 1, 2)) {
      p += 3;
      if (p + 1 < s.size() && (s[p] == '.' || s[p] == ',') && IsDigit(s[p + 1])) {
        ++p;
        while (p < s.size() && IsDigit(s[p])) ++p;
      }
    }
    if (p < s.size() && s[p] == 'Z') {
      ++p;
    } else if (p + 3 <= s.size() && (s[p] == '+' || s[p] == '-') && Digits(s, p + 1, 2)) {
      size_t q = p + 3;
      if (q < s.size() && s[q] == ':') ++q;
      if (Digits(s, q, 2)) p = q + 2;
    }
  }
  return EndsToken(s, p) ? p - i : 0;
}

// Length of a number at i ([-]digits[.digits][(e|E)[+-]digits]) that ends a
// token, or 0. Sets `integer_digits` when it is a plain unsigned integer.
size_t MatchNumber(std::string_view s, size_t i, size_t& integer_digits) {
  size_t p = i;
  if (p < s.size() && s[p] == '-') ++p;
  size_t start = p;
  while (p < s.size() && IsDigit(s[p])) ++p;
  if (p == start) return 0;
  bool plain = s[i] != '-';
  if (p + 1 < s.size() && s[p] == '.' && IsDigit(s[p + 1])) {
    plain = false;
    p += 2;
    while (p < s.size() && IsDigit(s[p])) ++p;
  }
  if (p < s.size() && (s[p] == 'e' || s[p] == 'E')) {
    size_t q = p + 1;
    if (q < s.size() && (s[q] == '+' || s[q] == '-')) ++q;
    if (q < s.size() && IsDigit(s[q])) {
      plain = false;
      p = q;
      while (p < s.size() && IsDigit(s[p])) ++p;
    }
  }
  if (!EndsToken(s, p)) return 0;
  integer_digits = plain ? p - start : 0;
  return p - i;
}

bool IsEpoch(std::string_view digits) {
  if (digits.size() != 10 && digits.size() != 13) return false;
  uint64_t v = 0;
  for (char c : digits) v = v * 10 + static_cast<uint64_t>(c - '0');
  if (digits.size() == 13) v /= 1000;
  return v >= kEpochSecondsMin && v < kEpochSecondsMax;
}

// A word (run of [A-Za-z0-9_]) that is a hex string: 0x followed by hex
// digits, or 8+ hex digits mixing digits and letters.
bool IsHexWord(std::string_view w) {
  if (w.size() > 2 && w[0] == '0' && (w[1] == 'x' || w[1] == 'X')) {
    return std::all_of(w.begin() + 2, w.end(), IsHex);
  }
  if (w.size() < 8 || !std::all_of(w.begin(), w.end(), IsHex)) return false;
  bool digit = std::any_of(w.begin(), w.end(), IsDigit);
  bool letter = std::any_of(w.begin(), w.end(), [](char c) { return !IsDigit(c); });
  return digit && letter;
}

void AppendMaskedWord(std::string_view w, std::string& out) {
  if (IsHexWord(w)) {
    out += "<hex>";
    return;
  }
  size_t i = 0;
  while (i < w.size()) {
    if (IsDigit(w[i])) {
      while (i < w.size() && IsDigit(w[i])) ++i;
      out += "<num>";
    } else {
      out.push_back(w[i++]);
    }
  }
}

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8SequenceLength(reinterpret_cast<const unsigned char*>(s.data() + i), s.size() - i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace

void CapKey(std::string& key, size_t max_bytes) {
  if (!IsValidUtf8(key)) key = "base64:" + Base64Encode(key);
  if (key.size() <= max_bytes) return;
  std::string tag = std::string(kEllipsis) + "#" + Sha256Hex(key).substr(0, 16);
  size_t keep = max_bytes > tag.size() ? max_bytes - tag.size() : 0;
  while (keep > 0 && (static_cast<unsigned char>(key[keep]) & 0xC0) == 0x80) --keep;  // UTF-8 boundary
  key.resize(keep);
  key += tag;
}

void AppendMaskedText(std::string_view s, std::string& out) {
  const size_t start = out.size();
  bool pending_space = false;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (IsSpace(c)) {
      pending_space = out.size() > start;
      ++i;
      continue;
    }
    if (pending_space) out.push_back(' ');
    pending_space = false;
    bool boundary = i == 0 || !IsWord(s[i - 1]);
    if (!boundary || !(IsWord(c) || (c == '-' && i + 1 < s.size() && IsDigit(s[i + 1])))) {
      out.push_back(c);
      ++i;
      continue;
    }
    if (size_t n = MatchUuid(s, i)) {
      out += "<uuid>";
      i += n;
      continue;
    }
    if (size_t n = MatchIsoTime(s, i)) {
      out += "<ts>";
      i += n;
      continue;
    }
    size_t integer_digits = 0;
    if (size_t n = MatchNumber(s, i, integer_digits)) {
      out += integer_digits > 0 && IsEpoch(s.substr(i, n)) ? "<ts>" : "<num>";
      i += n;
      continue;
    }
    if (c == '-') {
      out.push_back(c);
      ++i;
      continue;
    }
    size_t end = i;
    while (end < s.size() && IsWord(s[end])) ++end;
    AppendMaskedWord(s.substr(i, end - i), out);
    i = end;
  }
}

}  // namespace dlq
