#include "archive/expiry.h"

#include <charconv>
#include <cstdint>
#include <string>

#include "common/time_util.h"

namespace dlq {

std::optional<SystemTime> AttributeMillis(const Message& msg, const std::string& name) {
  auto it = msg.attributes.find(name);
  if (it == msg.attributes.end() || it->second.empty()) return std::nullopt;
  int64_t ms = 0;
  const std::string& v = it->second;
  auto r = std::from_chars(v.data(), v.data() + v.size(), ms);
  // Also reject times past 2200-01-01 (SystemTime holds nanoseconds and overflows in 2262).
  constexpr int64_t kMaxMillis = 7258118400000;
  if (r.ec != std::errc() || r.ptr != v.data() + v.size() || ms < 0 || ms >= kMaxMillis) return std::nullopt;
  return FromUnixMillis(ms);
}

SystemTime ExpiryFromSentTime(std::optional<SystemTime> sent, bool fifo, std::chrono::seconds retention,
                              SystemTime now_if_unknown) {
  // Both queue types use the same lower bound; see the header and doc/archive-format.md.
  // For FIFO the true expiry is (move time + retention), which is never earlier.
  (void)fifo;
  if (!sent) return now_if_unknown;
  return *sent + retention;
}

SystemTime ComputeExpiry(const Message& msg, bool fifo, std::chrono::seconds retention, SystemTime now_if_unknown) {
  return ExpiryFromSentTime(AttributeMillis(msg, "SentTimestamp"), fifo, retention, now_if_unknown);
}

}  // namespace dlq
