#include "query/key_pattern.h"

#include <chrono>

namespace dlq {
namespace {

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

bool AllDigits(std::string_view s) {
  for (char c : s)
    if (!IsDigit(c)) return false;
  return true;
}

int ToInt(std::string_view s) {
  int v = 0;
  for (char c : s) v = v * 10 + (c - '0');
  return v;
}

bool Set(int& field, int value, int unknown) {
  if (field != unknown && field != value) return false;
  field = value;
  return true;
}

bool IsQueueChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsDigit(c) || c == '-' || c == '_' || c == '.';
}
bool IsRegionChar(char c) {
  return (c >= 'a' && c <= 'z') || IsDigit(c) || c == '-';
}
bool IsHexChar(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'f');
}

}  // namespace

std::optional<std::pair<SystemTime, SystemTime>> KeyFacts::Span() const {
  using namespace std::chrono;
  if (year == 0) return std::nullopt;
  year_month_day first{std::chrono::year(year), std::chrono::month(month == 0 ? 1 : month),
                       std::chrono::day(day == 0 ? 1 : day)};
  if (!first.ok()) return std::nullopt;
  sys_days start_day(first);
  SystemTime start = start_day;
  if (month == 0) return std::make_pair(start, SystemTime(sys_days(first + years(1))));
  if (day == 0) return std::make_pair(start, SystemTime(sys_days(first + months(1))));
  if (hour < 0) return std::make_pair(start, start + hours(24));
  start += hours(hour);
  return std::make_pair(start, start + hours(1));
}

KeyPattern::KeyPattern(const KeyTemplate& key_template, std::string_view prefix) {
  while (!prefix.empty() && prefix.front() == '/') prefix.remove_prefix(1);
  while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  using Part = KeyTemplate::Part;
  Level current;
  auto add_literal = [&](std::string_view text) {
    for (char c : text) {
      if (c == '/') {
        if (!current.empty()) levels_.push_back(std::move(current));
        current.clear();
        continue;
      }
      if (current.empty() || current.back().kind != Kind::kLiteral) current.push_back({Kind::kLiteral, {}});
      current.back().literal.push_back(c);
    }
  };
  for (const KeyTemplate::Segment& s : key_template.segments()) {
    switch (s.part) {
      case Part::kLiteral: add_literal(s.literal); break;
      case Part::kPrefix: add_literal(prefix); break;
      case Part::kQueue: current.push_back({Kind::kQueue, {}}); break;
      case Part::kRegion: current.push_back({Kind::kRegion, {}}); break;
      case Part::kAccountId: current.push_back({Kind::kAccountId, {}}); break;
      case Part::kYyyymmdd: current.push_back({Kind::kYyyymmdd, {}}); break;
      case Part::kYyyy: current.push_back({Kind::kYyyy, {}}); break;
      case Part::kMm: current.push_back({Kind::kMm, {}}); break;
      case Part::kDd: current.push_back({Kind::kDd, {}}); break;
      case Part::kHh: current.push_back({Kind::kHh, {}}); break;
      case Part::kHhmmss: current.push_back({Kind::kHhmmss, {}}); break;
      case Part::kIsoDate: current.push_back({Kind::kIsoDate, {}}); break;
      case Part::kBatchId: current.push_back({Kind::kHex, {}}); break;
    }
  }
  if (!current.empty()) levels_.push_back(std::move(current));
  // The last level names objects; the literal directory is the leading
  // literal levels before it.
  while (literal_levels_ + 1 < levels_.size() && levels_[literal_levels_].size() == 1 &&
         levels_[literal_levels_][0].kind == Kind::kLiteral) {
    literal_dir_ += levels_[literal_levels_][0].literal + "/";
    ++literal_levels_;
  }
}

bool KeyPattern::MatchLevel(size_t level, std::string_view text, KeyFacts& facts) const {
  if (level >= levels_.size() || text.empty()) return false;
  return MatchFrom(levels_[level], 0, text, facts);
}

bool KeyPattern::Match(std::string_view key, KeyFacts& facts) const {
  size_t level = 0;
  while (!key.empty()) {
    size_t slash = key.find('/');
    std::string_view part = key.substr(0, slash);
    if (!MatchLevel(level++, part, facts)) return false;
    key.remove_prefix(slash == std::string_view::npos ? key.size() : slash + 1);
  }
  return level == levels_.size();
}

bool KeyPattern::MatchFrom(const Level& tokens, size_t ti, std::string_view text, KeyFacts& facts) const {
  if (ti == tokens.size()) return text.empty();
  const Token& t = tokens[ti];
  auto fixed = [&](size_t n, auto&& capture) {
    if (text.size() < n) return false;
    KeyFacts saved = facts;
    if (capture(text.substr(0, n)) && MatchFrom(tokens, ti + 1, text.substr(n), facts)) return true;
    facts = saved;
    return false;
  };
  auto digits = [](std::string_view s, int& field, int unknown, int lo, int hi) {
    if (!AllDigits(s)) return false;
    int v = ToInt(s);
    return v >= lo && v <= hi && Set(field, v, unknown);
  };
  // Variable-length placeholders try every length, longest first.
  auto variable = [&](auto&& is_char, bool capture_queue) {
    size_t n = 0;
    while (n < text.size() && is_char(text[n])) ++n;
    for (; n >= 1; --n) {
      KeyFacts saved = facts;
      if (capture_queue) {
        std::string_view q = text.substr(0, n);
        if (!facts.queue.empty() && facts.queue != q) {
          facts = saved;
          continue;
        }
        facts.queue = std::string(q);
      }
      if (MatchFrom(tokens, ti + 1, text.substr(n), facts)) return true;
      facts = saved;
    }
    return false;
  };
  switch (t.kind) {
    case Kind::kLiteral:
      return text.substr(0, t.literal.size()) == t.literal &&
             MatchFrom(tokens, ti + 1, text.substr(t.literal.size()), facts);
    case Kind::kQueue: return variable(IsQueueChar, true);
    case Kind::kRegion: return variable(IsRegionChar, false);
    case Kind::kAccountId: return variable(IsDigit, false);
    case Kind::kHex: return variable(IsHexChar, false);
    case Kind::kYyyy: return fixed(4, [&](std::string_view s) { return digits(s, facts.year, 0, 1, 9999); });
    case Kind::kMm: return fixed(2, [&](std::string_view s) { return digits(s, facts.month, 0, 1, 12); });
    case Kind::kDd: return fixed(2, [&](std::string_view s) { return digits(s, facts.day, 0, 1, 31); });
    case Kind::kHh: return fixed(2, [&](std::string_view s) { return digits(s, facts.hour, -1, 0, 23); });
    case Kind::kHhmmss:
      return fixed(6,
                   [&](std::string_view s) { return AllDigits(s) && digits(s.substr(0, 2), facts.hour, -1, 0, 23); });
    case Kind::kYyyymmdd:
      return fixed(8, [&](std::string_view s) {
        return digits(s.substr(0, 4), facts.year, 0, 1, 9999) && digits(s.substr(4, 2), facts.month, 0, 1, 12) &&
               digits(s.substr(6, 2), facts.day, 0, 1, 31);
      });
    case Kind::kIsoDate:
      return fixed(10, [&](std::string_view s) {
        return s[4] == '-' && s[7] == '-' && digits(s.substr(0, 4), facts.year, 0, 1, 9999) &&
               digits(s.substr(5, 2), facts.month, 0, 1, 12) && digits(s.substr(8, 2), facts.day, 0, 1, 31);
      });
  }
  return false;
}

}  // namespace dlq
