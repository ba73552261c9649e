// Sharding the watched queues between replicas of `dlq-archive run`: with
// `shard: {index: I, count: N}` (or `run --shard I/N`) a replica watches,
// alarms, archives and notifies for exactly the queues it owns. Ownership is
// rendezvous (highest random weight) hashing of the queue's key: each shard
// scores the key with SHA-256, the highest score owns it. Every replica
// computes the same owner from the key alone, with no coordination, so each
// queue has exactly one owner among shards 0..N-1; when N changes only the
// queues whose winner changes (about 1/N of them) move. The weights are a
// fixed function of the bytes (doc/operations.md, "Shards"), stable across
// builds and machines. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "sqs/queue_info.h"

namespace dlq {

struct ShardSpec {
  int index = 0;  // 0 <= index < count
  int count = 1;  // 1: no sharding, every queue is owned
};

inline constexpr int kMaxShards = 1024;

// "I/N" with 0 <= I < N <= kMaxShards; kInvalidArgument saying what is wrong.
Result<ShardSpec> ParseShardSpec(std::string_view text);
// "I/N".
std::string FormatShardSpec(const ShardSpec& shard);

// The key a queue is sharded by: its ARN, built from region, account and name
// when the ARN is not known (the same on every replica whatever endpoint URL
// it uses); the URL when the account is unknown.
std::string ShardKey(const QueueInfo& queue);

// The weight of `key` for shard `index`: the first 8 bytes of
// SHA-256(key + "#" + decimal index), big-endian.
uint64_t ShardWeight(std::string_view key, int index);
// The shard in [0, count) with the highest weight (ties: the lower index).
int ShardOwner(std::string_view key, int count);
// Whether `shard` owns `key` (always true when shard.count == 1).
bool OwnsKey(const ShardSpec& shard, std::string_view key);

}  // namespace dlq
