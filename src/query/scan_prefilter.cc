// The raw-line prefilter (scan_internal.h; doc/querying.md, "How search
// reads the archive").
#include <fmt/format.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <bit>
#include <utility>

#include "query/scan_internal.h"

namespace dlq::scan_internal {
namespace {

// True when `s` is written verbatim inside a JSON string by the archiver
// (nothing to escape), so its bytes appear as they are in the line.
bool Verbatim(std::string_view s) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || c == '"' || c == '\\') return false;
  }
  return true;
}

}  // namespace

Prefilter Prefilter::For(const Filter& f) {
  Prefilter p;
  auto add = [&](std::string n) { p.needles.push_back(std::move(n)); };
  if (f.queues.size() == 1 && Verbatim(f.queues[0])) add(fmt::format("\"queue\":\"{}\",", f.queues[0]));
  if (f.ids.size() == 1 && Verbatim(f.ids[0])) add(fmt::format("\"message_id\":\"{}\",", f.ids[0]));
  for (const auto& [name, value] : f.attr_equals) {
    if (!Verbatim(name) || !Verbatim(value)) continue;
    add(fmt::format("\"{}\":{{\"DataType\":\"", name));
    add(fmt::format("\"StringValue\":\"{}\"}}", value));
  }
  for (const std::string& name : f.attr_exists) {
    if (Verbatim(name)) add(fmt::format("\"{}\":{{\"DataType\":\"", name));
  }
  if (!f.body_contains.empty() && Verbatim(f.body_contains)) add(f.body_contains);
  for (const auto& [path, value] : f.json_equals) {
    if (!value.empty() && Verbatim(value)) add(value);
  }
  std::stable_sort(p.needles.begin(), p.needles.end(),
                   [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  return p;
}

void FindNonCanonical(std::string_view text, std::vector<size_t>& out) {
  out.clear();
  const char* p = text.data();
  const size_t n = text.size();
  auto at = [&](size_t i) -> bool {
    if (p[i] == '\\' && i + 1 < n) {
      if (p[i + 1] == '/') return true;
      if (p[i + 1] == 'u')
        return !(i + 5 < n && p[i + 2] == '0' && p[i + 3] == '0' && (p[i + 4] == '0' || p[i + 4] == '1'));
      return false;
    }
    return p[i] == '6' && i + 4 < n && p[i + 1] == '4' && p[i + 2] == '"' && p[i + 3] == ':' && p[i + 4] == '"';
  };
  size_t i = 0;
#if defined(__SSE2__)
  // Candidates: '\' followed by 'u' or '/', and '6' followed by '4' and '"'; rare in canonical text.
  const __m128i backslash = _mm_set1_epi8('\\'), u = _mm_set1_epi8('u'), slash = _mm_set1_epi8('/');
  const __m128i six = _mm_set1_epi8('6'), four = _mm_set1_epi8('4'), quote = _mm_set1_epi8('"');
  for (; i + 18 <= n; i += 16) {
    __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + 1));
    __m128i v2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + 2));
    __m128i esc =
        _mm_and_si128(_mm_cmpeq_epi8(v0, backslash), _mm_or_si128(_mm_cmpeq_epi8(v1, u), _mm_cmpeq_epi8(v1, slash)));
    __m128i b64 =
        _mm_and_si128(_mm_cmpeq_epi8(v0, six), _mm_and_si128(_mm_cmpeq_epi8(v1, four), _mm_cmpeq_epi8(v2, quote)));
    unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(esc, b64)));
    while (mask != 0) {
      size_t k = i + static_cast<size_t>(std::countr_zero(mask));
      if (at(k)) out.push_back(k);
      mask &= mask - 1;
    }
  }
#endif
  for (; i < n; ++i) {
    if ((p[i] == '\\' || p[i] == '6') && at(i)) out.push_back(i);
  }
}

}  // namespace dlq::scan_internal
