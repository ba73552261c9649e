// Time formatting and parsing in the forms AWS and the archive use. All UTC.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"

namespace dlq {

// A UTC instant broken into calendar fields (proleptic Gregorian).
struct CivilTime {
  int64_t year;
  int month, day, hour, minute, second, millis;
};
// Pure arithmetic (no gmtime, no time zone lock): cheap enough for every
// request and record.
CivilTime ToCivilTime(SystemTime t);

// "20150830T123600Z" (SigV4 X-Amz-Date).
std::string FormatAmzDate(SystemTime t);
// "20150830" (SigV4 credential scope date).
std::string FormatAmzDay(SystemTime t);
// "2025-09-10T12:30:00.123Z" (millisecond precision).
std::string FormatIso8601(SystemTime t);
// FormatIso8601 appended to `out`, digit by digit (archive records write three per message).
void AppendIso8601(std::string& out, SystemTime t);
// Accepts "2025-09-10T12:30:00Z", fractional seconds, and "+00:00" offsets.
std::optional<SystemTime> ParseIso8601(std::string_view text);
// "Wed, 12 Oct 2009 17:50:00 GMT" (HTTP Date).
std::optional<SystemTime> ParseHttpDate(std::string_view text);

SystemTime FromUnixMillis(int64_t ms);
int64_t ToUnixMillis(SystemTime t);
int64_t ToUnixSeconds(SystemTime t);

// Durations such as "90s", "15m", "4h", "4d", "1h30m", "345600" (seconds).
std::optional<std::chrono::seconds> ParseDuration(std::string_view text);
std::string FormatDuration(std::chrono::seconds d);  // "4d", "1h30m", "45s"

}  // namespace dlq
