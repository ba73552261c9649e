#include "replay/buckets.h"

#include <fmt/format.h>

#include <algorithm>

namespace dlq {

ReplayBuckets MakeBuckets(uint64_t selected, const ReplayStats& s, uint64_t failed_again) {
  ReplayBuckets b;
  b.failed_again = std::min(failed_again, s.sent);
  b.sent = s.sent - b.failed_again;
  b.failed = s.failed;
  b.already_replayed = s.already_replayed;
  b.copies = s.skipped_copies;
  b.resumed = s.resumed;
  b.would_send = s.would_send;
  b.unresolved = s.unresolved;
  b.selected = std::max(selected, b.Sum());
  b.not_sent = b.selected - b.Sum();
  return b;
}

std::string BucketsText(const ReplayBuckets& b, bool dry_run, bool show_resumed, const std::string& where) {
  std::string out = dry_run ? fmt::format("selected {}, would send {}, failed {}", b.selected, b.would_send, b.failed)
                            : fmt::format("selected {}, sent {}, failed {}", b.selected, b.sent, b.failed);
  if (b.failed_again > 0) out += fmt::format(", failed again {}", b.failed_again);
  if (b.already_replayed > 0) out += fmt::format(", skipped {} already replayed", b.already_replayed);
  if (b.copies > 0) out += fmt::format(", skipped {} copies of messages sent in this run", b.copies);
  if (b.skipped_failed_again > 0) {
    out += fmt::format(", skipped {} that had failed again after a replay", b.skipped_failed_again);
  }
  if (b.resumed > 0 || show_resumed) out += fmt::format(", skipped {} (finished by an earlier run)", b.resumed);
  if (b.unresolved > 0) out += fmt::format(", origin unknown {} (not sent, still in {})", b.unresolved, where);
  if (b.not_sent > 0) out += fmt::format(", not sent {} (still in {})", b.not_sent, where);
  return out;
}

void WriteBucketsJson(JsonWriter& w, const ReplayBuckets& b) {
  w.BeginObject();
  w.Key("selected").Uint(b.selected).Key("sent").Uint(b.sent).Key("failed").Uint(b.failed);
  w.Key("failed_again").Uint(b.failed_again).Key("already_replayed").Uint(b.already_replayed);
  w.Key("copies").Uint(b.copies).Key("resumed").Uint(b.resumed);
  w.Key("skipped_failed_again").Uint(b.skipped_failed_again).Key("would_send").Uint(b.would_send);
  w.Key("not_sent").Uint(b.not_sent).Key("unresolved").Uint(b.unresolved);
  w.EndObject();
}

}  // namespace dlq
