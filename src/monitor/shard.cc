#include "monitor/shard.h"

#include <fmt/format.h>

#include "common/crypto.h"
#include "common/strings.h"

namespace dlq {

Result<ShardSpec> ParseShardSpec(std::string_view text) {
  const std::string_view shown = text.substr(0, std::min<size_t>(text.size(), 64));
  const std::string bad = fmt::format("shard \"{}\" is not INDEX/COUNT (e.g. 0/3: the first of three replicas)", shown);
  size_t slash = text.find('/');
  if (slash == std::string_view::npos) return InvalidArgument(bad);
  std::optional<int64_t> index = ParseInt64(Trim(text.substr(0, slash)));
  std::optional<int64_t> count = ParseInt64(Trim(text.substr(slash + 1)));
  if (!index || !count) return InvalidArgument(bad);
  if (*count < 1 || *count > kMaxShards) {
    return InvalidArgument(fmt::format("shard {}: COUNT must be in 1..{}", shown, kMaxShards));
  }
  if (*index < 0 || *index >= *count) {
    return InvalidArgument(
        fmt::format("shard {}: INDEX must be in 0..{} (shards are numbered from 0)", shown, *count - 1));
  }
  return ShardSpec{static_cast<int>(*index), static_cast<int>(*count)};
}

std::string FormatShardSpec(const ShardSpec& shard) {
  return fmt::format("{}/{}", shard.index, shard.count);
}

std::string ShardKey(const QueueInfo& queue) {
  if (!queue.arn.empty()) return queue.arn;
  if (!queue.account_id.empty() && !queue.region.empty() && !queue.name.empty()) {
    return fmt::format("arn:aws:sqs:{}:{}:{}", queue.region, queue.account_id, queue.name);
  }
  return queue.url;
}

uint64_t ShardWeight(std::string_view key, int index) {
  std::string input(key);
  input += '#';
  input += std::to_string(index);
  Sha256Digest d = Sha256(input);
  uint64_t w = 0;
  for (int i = 0; i < 8; ++i) w = (w << 8) | d[static_cast<size_t>(i)];
  return w;
}

int ShardOwner(std::string_view key, int count) {
  int best = 0;
  uint64_t best_weight = 0;
  for (int i = 0; i < count; ++i) {
    uint64_t w = ShardWeight(key, i);
    if (i == 0 || w > best_weight) {
      best = i;
      best_weight = w;
    }
  }
  return best;
}

bool OwnsKey(const ShardSpec& shard, std::string_view key) {
  return shard.count <= 1 || ShardOwner(key, shard.count) == shard.index;
}

}  // namespace dlq
