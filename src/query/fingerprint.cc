#include "query/fingerprint.h"

#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "common/crypto.h"
#include "common/json_writer.h"
#include "common/log.h"

namespace dlq {
namespace {

constexpr int kMaxDepth = 16;
constexpr size_t kMaxArrayShapes = 8;  // distinct element shapes listed per array
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

void AppendShape(simdjson::dom::element e, int depth, std::string& out);

// Appends `text` masked, as a JSON string literal. Not reentrant (a leaf).
void AppendMaskedJsonString(std::string_view text, std::string& out) {
  thread_local std::string masked;
  masked.clear();
  AppendMaskedText(text, masked);
  AppendJsonString(out, masked);
}

void AppendShape(simdjson::dom::element e, int depth, std::string& out) {
  using simdjson::dom::element_type;
  if (depth >= kMaxDepth && (e.type() == element_type::OBJECT || e.type() == element_type::ARRAY)) {
    out += kEllipsis;
    return;
  }
  switch (e.type()) {
    case element_type::OBJECT: {
      // Each field rendered as "key":shape, sorted as text, duplicates merged.
      std::vector<std::string> fields;
      simdjson::dom::object object;
      if (e.get_object().get(object) != simdjson::SUCCESS) break;
      for (auto field : object) {
        std::string& f = fields.emplace_back();
        AppendMaskedJsonString(field.key, f);
        f.push_back(':');
        AppendShape(field.value, depth + 1, f);
      }
      std::sort(fields.begin(), fields.end());
      fields.erase(std::unique(fields.begin(), fields.end()), fields.end());
      out.push_back('{');
      for (size_t k = 0; k < fields.size(); ++k) {
        if (k > 0) out.push_back(',');
        out += fields[k];
      }
      out.push_back('}');
      break;
    }
    case element_type::ARRAY: {
      std::vector<std::string> shapes;
      simdjson::dom::array array;
      if (e.get_array().get(array) != simdjson::SUCCESS) break;
      std::string s;
      for (auto item : array) {
        s.clear();
        AppendShape(item, depth + 1, s);
        if (std::find(shapes.begin(), shapes.end(), s) != shapes.end()) continue;
        if (shapes.size() == kMaxArrayShapes) {
          shapes.emplace_back(kEllipsis);
          break;
        }
        shapes.push_back(s);
      }
      out.push_back('[');
      for (size_t k = 0; k < shapes.size(); ++k) {
        if (k > 0) out.push_back(',');
        out += shapes[k];
      }
      out.push_back(']');
      break;
    }
    case element_type::STRING: {
      std::string_view text;
      if (e.get_string().get(text) == simdjson::SUCCESS) AppendMaskedJsonString(text, out);
      break;
    }
    case element_type::INT64:
    case element_type::UINT64: {
      int64_t i = 0;
      uint64_t u = 0;
      std::string digits = e.get_int64().get(i) == simdjson::SUCCESS    ? std::to_string(i)
                           : e.get_uint64().get(u) == simdjson::SUCCESS ? std::to_string(u)
                                                                        : std::string();
      out += IsEpoch(digits) ? "<ts>" : "<num>";
      break;
    }
    case element_type::DOUBLE: out += "<num>"; break;
    case element_type::BOOL: {
      bool b = false;
      out += e.get_bool().get(b) == simdjson::SUCCESS && b ? "true" : "false";
      break;
    }
    case element_type::NULL_VALUE: out += "null"; break;
  }
}

}  // namespace

void CapKey(std::string& key, size_t max_bytes) {
  if (!simdjson::validate_utf8(key.data(), key.size())) key = "base64:" + Base64Encode(key);
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

std::string FingerprintBody(std::string_view body) {
  size_t b = 0, e = body.size();
  while (b < e && IsSpace(body[b])) ++b;
  while (e > b && IsSpace(body[e - 1])) --e;
  std::string_view trimmed = body.substr(b, e - b);
  std::string out;
  if (!trimmed.empty() && (trimmed.front() == '{' || trimmed.front() == '[')) {
    thread_local simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (parser.parse(trimmed.data(), trimmed.size(), true).get(root) == simdjson::SUCCESS) {
      AppendShape(root, 0, out);
      CapKey(out, kMaxFingerprintBytes);
      return out;
    }
  }
  AppendMaskedText(trimmed, out);
  CapKey(out, kMaxFingerprintBytes);
  return out;
}

}  // namespace dlq
