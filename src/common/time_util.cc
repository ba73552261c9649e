#include "common/time_util.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <iterator>

namespace dlq {
namespace {

// Writes v as two digits (0-99).
void Put2(char* p, int v) {
  p[0] = static_cast<char>('0' + v / 10);
  p[1] = static_cast<char>('0' + v % 10);
}

// Days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool ReadInt(std::string_view s, size_t pos, size_t len, int& out) {
  if (pos + len > s.size()) return false;
  for (size_t i = pos; i < pos + len; ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  auto r = std::from_chars(s.data() + pos, s.data() + pos + len, out);
  return r.ec == std::errc();
}

}  // namespace

CivilTime ToCivilTime(SystemTime t) {
  constexpr int64_t kMsPerDay = 86400000;
  const int64_t ms = ToUnixMillis(t);
  const int64_t days = ms >= 0 ? ms / kMsPerDay : -((-ms + kMsPerDay - 1) / kMsPerDay);
  const int64_t rem = ms - days * kMsPerDay;
  // Howard Hinnant's civil_from_days.
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t month = mp < 10 ? mp + 3 : mp - 9;
  CivilTime c;
  c.year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  c.month = static_cast<int>(month);
  c.day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  c.hour = static_cast<int>(rem / 3600000);
  c.minute = static_cast<int>(rem / 60000 % 60);
  c.second = static_cast<int>(rem / 1000 % 60);
  c.millis = static_cast<int>(rem % 1000);
  return c;
}

// Signing formats both on every request: written digit by digit, not by fmt.
std::string FormatAmzDate(SystemTime t) {
  const CivilTime c = ToCivilTime(t);
  if (c.year < 0 || c.year > 9999) {
    return fmt::format("{:04}{:02}{:02}T{:02}{:02}{:02}Z", c.year, c.month, c.day, c.hour, c.minute, c.second);
  }
  char buf[16];
  Put2(buf, static_cast<int>(c.year / 100));
  Put2(buf + 2, static_cast<int>(c.year % 100));
  Put2(buf + 4, c.month);
  Put2(buf + 6, c.day);
  buf[8] = 'T';
  Put2(buf + 9, c.hour);
  Put2(buf + 11, c.minute);
  Put2(buf + 13, c.second);
  buf[15] = 'Z';
  return std::string(buf, sizeof(buf));
}

std::string FormatAmzDay(SystemTime t) {
  std::string date = FormatAmzDate(t);
  date.resize(date.find('T'));
  return date;
}

void AppendIso8601(std::string& out, SystemTime t) {
  const CivilTime c = ToCivilTime(t);
  if (c.year < 0 || c.year > 9999) {
    fmt::format_to(std::back_inserter(out), "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", c.year, c.month, c.day,
                   c.hour, c.minute, c.second, c.millis);
    return;
  }
  char buf[24];
  Put2(buf, static_cast<int>(c.year / 100));
  Put2(buf + 2, static_cast<int>(c.year % 100));
  buf[4] = '-';
  Put2(buf + 5, c.month);
  buf[7] = '-';
  Put2(buf + 8, c.day);
  buf[10] = 'T';
  Put2(buf + 11, c.hour);
  buf[13] = ':';
  Put2(buf + 14, c.minute);
  buf[16] = ':';
  Put2(buf + 17, c.second);
  buf[19] = '.';
  buf[20] = static_cast<char>('0' + c.millis / 100);
  Put2(buf + 21, c.millis % 100);
  buf[23] = 'Z';
  out.append(buf, sizeof(buf));
}

std::string FormatIso8601(SystemTime t) {
  std::string out;
  AppendIso8601(out, t);
  return out;
}

std::optional<SystemTime> ParseIso8601(std::string_view s) {
  int y, mo, d, h, mi, se;
  if (!ReadInt(s, 0, 4, y) || s.size() < 19 || s[4] != '-' || !ReadInt(s, 5, 2, mo) || s[7] != '-' ||
      !ReadInt(s, 8, 2, d) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !ReadInt(s, 11, 2, h) || s[13] != ':' ||
      !ReadInt(s, 14, 2, mi) || s[16] != ':' || !ReadInt(s, 17, 2, se)) {
    return std::nullopt;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) return std::nullopt;
  // system_clock (nanoseconds in int64) covers 1678-2262; stay well inside it.
  if (y < 1700 || y >= 2200) return std::nullopt;
  size_t pos = 19;
  int64_t frac_ms = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
      if (digits < 3) frac_ms = frac_ms * 10 + (s[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0) return std::nullopt;
    for (int i = digits; i < 3; ++i) frac_ms *= 10;
  }
  int64_t offset_s = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    int sign = s[pos] == '-' ? -1 : 1;
    if (!ReadInt(s, pos + 1, 2, oh) || pos + 3 >= s.size()) return std::nullopt;
    size_t mpos = s[pos + 3] == ':' ? pos + 4 : pos + 3;
    if (!ReadInt(s, mpos, 2, om)) return std::nullopt;
    offset_s = sign * (int64_t{oh} * 3600 + int64_t{om} * 60);
    pos = mpos + 2;
  } else if (pos != s.size()) {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  int64_t days = DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  int64_t secs = days * 86400 + int64_t{h} * 3600 + int64_t{mi} * 60 + se - offset_s;
  return FromUnixMillis(secs * 1000 + frac_ms);
}

std::optional<SystemTime> ParseHttpDate(std::string_view s) {
  // "Wed, 12 Oct 2009 17:50:00 GMT"
  static constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  if (s.size() < 29) return std::nullopt;
  int d, y, h, mi, se;
  if (!ReadInt(s, 5, 2, d) || !ReadInt(s, 12, 4, y) || !ReadInt(s, 17, 2, h) || !ReadInt(s, 20, 2, mi) ||
      !ReadInt(s, 23, 2, se) || y < 1700 || y >= 2200) {
    return std::nullopt;
  }
  std::string_view mon = s.substr(8, 3);
  int m = 0;
  for (int i = 0; i < 12; ++i)
    if (kMonths[i] == mon) m = i + 1;
  if (m == 0) return std::nullopt;
  int64_t days = DaysFromCivil(y, static_cast<unsigned>(m), static_cast<unsigned>(d));
  return FromUnixMillis((days * 86400 + int64_t{h} * 3600 + int64_t{mi} * 60 + se) * 1000);
}

SystemTime FromUnixMillis(int64_t ms) {
  return SystemTime(std::chrono::milliseconds(ms));
}
int64_t ToUnixMillis(SystemTime t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
int64_t ToUnixSeconds(SystemTime t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

std::optional<std::chrono::seconds> ParseDuration(std::string_view s) {
  if (s.empty()) return std::nullopt;
  int64_t total = 0;
  size_t pos = 0;
  bool any = false;
  while (pos < s.size()) {
    int64_t n = 0;
    size_t start = pos;
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
      n = n * 10 + (s[pos] - '0');
      if (n > 100'000'000'000LL) return std::nullopt;
      ++pos;
    }
    if (pos == start) return std::nullopt;
    int64_t unit = 1;
    if (pos < s.size()) {
      switch (s[pos]) {
        case 's': unit = 1; break;
        case 'm': unit = 60; break;
        case 'h': unit = 3600; break;
        case 'd': unit = 86400; break;
        case 'w': unit = int64_t{7} * 86400; break;
        default: return std::nullopt;
      }
      ++pos;
    } else if (any) {
      return std::nullopt;  // "1h30" is ambiguous
    }
    total += n * unit;
    any = true;
  }
  return std::chrono::seconds(total);
}

std::string FormatDuration(std::chrono::seconds d) {
  int64_t s = d.count();
  if (s == 0) return "0s";
  std::string out;
  if (s < 0) {
    out = "-";
    s = -s;
  }
  const std::pair<int64_t, char> units[] = {{86400, 'd'}, {3600, 'h'}, {60, 'm'}, {1, 's'}};
  for (auto [u, c] : units) {
    if (s >= u) {
      out += fmt::format("{}{}", s / u, c);
      s %= u;
    }
  }
  return out;
}

}  // namespace dlq
