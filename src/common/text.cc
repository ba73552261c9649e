#include "common/text.h"

#include <openssl/crypto.h>

#include <cstdint>

#include "common/crypto.h"
#include "common/json_writer.h"

namespace dlq {
namespace {

enum class UnitKind { kText, kControl, kInvalid };

// One character of `s` at `i`: its kind, its length in bytes (1 for an
// invalid byte) and, for a control character, its code point.
struct Unit {
  UnitKind kind;
  size_t size;
  uint32_t code_point;
};

Unit NextUnit(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x20 || c == 0x7F) return {UnitKind::kControl, 1, c};
  const size_t n = Utf8SequenceLength(reinterpret_cast<const unsigned char*>(s.data() + i), s.size() - i);
  if (n == 0) return {UnitKind::kInvalid, 1, 0};
  if (n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) <= 0x9F) {
    return {UnitKind::kControl, 2, static_cast<unsigned char>(s[i + 1])};  // C1: U+0080-U+009F
  }
  return {UnitKind::kText, n, 0};
}

void AppendHex(std::string& out, std::string_view prefix, uint32_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  out += prefix;
  out.push_back(kDigits[(v >> 4) & 0xF]);
  out.push_back(kDigits[v & 0xF]);
}

void AppendControl(std::string& out, uint32_t code_point, TextLines lines) {
  const bool kept = lines == TextLines::kMulti && (code_point == '\n' || code_point == '\t');
  if (kept) {
    out.push_back(static_cast<char>(code_point));
  } else if (code_point == '\n') {
    out += "\\n";
  } else if (code_point == '\t') {
    out += "\\t";
  } else if (code_point == '\r') {
    out += "\\r";
  } else {
    AppendHex(out, code_point >= 0x80 ? "\\u00" : "\\x", code_point);
  }
}

}  // namespace

std::string TerminalSafe(std::string_view s, TextLines lines) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    // Runs of plain text are copied at once.
    size_t run = i;
    Unit u{UnitKind::kText, 0, 0};
    while (run < s.size() && (u = NextUnit(s, run)).kind == UnitKind::kText) run += u.size;
    out.append(s.substr(i, run - i));
    if (run == s.size()) break;
    if (u.kind == UnitKind::kControl) {
      AppendControl(out, u.code_point, lines);
    } else {
      AppendHex(out, "\\x", static_cast<unsigned char>(s[run]));
    }
    i = run + u.size;
  }
  return out;
}

void EscapeJsonForTerminal(std::string& json) {
  auto special = [&](size_t i) {
    const auto c = static_cast<unsigned char>(json[i]);
    return c == 0x7F || (c == 0xC2 && i + 1 < json.size() && static_cast<unsigned char>(json[i + 1]) <= 0x9F);
  };
  size_t i = 0;
  while (i < json.size() && !special(i)) ++i;
  if (i == json.size()) return;  // the usual case: nothing to rewrite
  std::string out(json, 0, i);
  while (i < json.size()) {
    if (!special(i)) {
      out.push_back(json[i++]);
    } else if (json[i] == 0x7F) {
      out += "\\u007f";
      ++i;
    } else {
      AppendHex(out, "\\u00", static_cast<unsigned char>(json[i + 1]));
      i += 2;
    }
  }
  json = std::move(out);
}

std::string OneLinePreview(std::string_view s, size_t width) {
  std::string out;
  size_t chars = 0;
  size_t last = 0;  // where the last character written starts in `out`
  for (size_t i = 0; i < s.size();) {
    if (chars == width) {
      out.resize(width == 0 ? 0 : last);  // the last character gives way to the ellipsis
      out += "…";
      return out;
    }
    last = out.size();
    const Unit u = NextUnit(s, i);
    if (u.kind == UnitKind::kControl) {
      out.push_back(' ');
    } else if (u.kind == UnitKind::kInvalid) {
      AppendHex(out, "\\x", static_cast<unsigned char>(s[i]));
    } else {
      out.append(s.substr(i, u.size));
    }
    ++chars;
    i += u.size;
  }
  return out;
}

std::string EscapeControlBytes(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c != 0x7f) {
      out.push_back(ch);
      continue;
    }
    out += "\\x";
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0xf]);
  }
  return out;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  const Sha256Digest da = Sha256(a), db = Sha256(b);
  return CRYPTO_memcmp(da.data(), db.data(), da.size()) == 0;
}

}  // namespace dlq
