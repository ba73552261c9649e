// libFuzzer target for `run --shard I/N` (ParseShardSpec): an accepted spec
// has 0 <= index < count <= kMaxShards and formats back to an equal spec; the
// input, as a queue key, has exactly one owner among `count` shards.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "monitor/shard.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto spec = dlq::ParseShardSpec(in);
  if (!spec.ok()) return 0;
  if (spec->index < 0 || spec->index >= spec->count || spec->count > dlq::kMaxShards) std::abort();
  auto again = dlq::ParseShardSpec(dlq::FormatShardSpec(*spec));
  if (!again.ok() || again->index != spec->index || again->count != spec->count) std::abort();
  const int count = spec->count < 16 ? spec->count : 16;
  int owners = 0;
  for (int i = 0; i < count; ++i) owners += dlq::OwnsKey(dlq::ShardSpec{i, count}, in) ? 1 : 0;
  if (owners != 1) std::abort();
  return 0;
}
