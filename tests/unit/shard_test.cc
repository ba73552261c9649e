// Rendezvous sharding of queues between daemon replicas (monitor/shard.h):
// every queue has exactly one owner, the split is balanced, and changing the
// number of replicas moves only the queues the new (or removed) shard wins.
#include "monitor/shard.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dlq {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> Keys(int n) {
  std::vector<std::string> keys;
  for (int i = 0; i < n; ++i) {
    keys.push_back("arn:aws:sqs:eu-west-1:123456789012:team-" + std::to_string(i % 17) + "-dlq-" + std::to_string(i));
  }
  return keys;
}

TEST(ShardTest, ParsesIndexOverCount) {
  auto s = ParseShardSpec("2/3");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->count, 3);
  EXPECT_EQ(FormatShardSpec(*s), "2/3");
  auto one = ParseShardSpec("0/1");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->count, 1);
}

TEST(ShardTest, RejectsMalformedAndOutOfRangeSpecsWithTheReason) {
  for (const char* bad : {"", "3", "a/3", "1/b", "1/3/4", "/3", "1/"}) {
    auto s = ParseShardSpec(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.status().code(), ErrorCode::kInvalidArgument) << bad;
    EXPECT_THAT(s.status().message(), HasSubstr("INDEX/COUNT")) << bad;
  }
  EXPECT_THAT(ParseShardSpec("3/3").status().message(), HasSubstr("INDEX must be in 0..2"));
  EXPECT_THAT(ParseShardSpec("-1/3").status().message(), HasSubstr("INDEX must be in 0..2"));
  EXPECT_THAT(ParseShardSpec("0/0").status().message(), HasSubstr("COUNT must be in 1..1024"));
  EXPECT_THAT(ParseShardSpec("0/1025").status().message(), HasSubstr("COUNT must be in 1..1024"));
}

TEST(ShardTest, WeightIsTheDocumentedSha256Prefix) {
  // First 8 bytes of SHA-256("<key>#<index>"), as doc/operations.md states
  // (computed independently with Python's hashlib).
  EXPECT_EQ(ShardWeight("arn:aws:sqs:us-east-1:123456789012:orders-dlq", 0), 0xedb9dcc99ee84affULL);
  EXPECT_EQ(ShardWeight("arn:aws:sqs:us-east-1:123456789012:orders-dlq", 1), 0x4522da1b494e73f5ULL);
  EXPECT_EQ(ShardOwner("arn:aws:sqs:us-east-1:123456789012:orders-dlq", 2), 0);
}

TEST(ShardTest, EveryQueueIsOwnedByExactlyOneShard) {
  for (int count = 1; count <= 8; ++count) {
    for (const std::string& key : Keys(500)) {
      int owners = 0;
      for (int i = 0; i < count; ++i) owners += OwnsKey(ShardSpec{i, count}, key) ? 1 : 0;
      EXPECT_EQ(owners, 1) << key << " with " << count << " shards";
    }
  }
}

TEST(ShardTest, SplitIsBalanced) {
  const auto keys = Keys(3000);
  for (int count : {2, 3, 5}) {
    std::vector<int> per(static_cast<size_t>(count), 0);
    for (const std::string& key : keys) ++per[static_cast<size_t>(ShardOwner(key, count))];
    const double fair = 3000.0 / count;
    for (int i = 0; i < count; ++i) {
      // Binomial sd is about sqrt(3000 p (1-p)) <= 28; 10% of a fair share is >= 3.5 sd.
      EXPECT_NEAR(per[static_cast<size_t>(i)], fair, fair * 0.10) << "shard " << i << " of " << count;
    }
  }
}

TEST(ShardTest, AddingAShardMovesOnlyItsShareAndOnlyToIt) {
  const auto keys = Keys(3000);
  for (int count : {1, 2, 3, 7}) {
    int moved = 0;
    for (const std::string& key : keys) {
      int before = ShardOwner(key, count), after = ShardOwner(key, count + 1);
      if (before != after) {
        ++moved;
        EXPECT_EQ(after, count) << key << ": a key may only move to the new shard";
      }
    }
    const double expected = 3000.0 / (count + 1);  // ~1/N of the keys
    EXPECT_NEAR(moved, expected, expected * 0.15) << count << " -> " << count + 1;
  }
}

TEST(ShardTest, RemovingAShardMovesOnlyTheQueuesItOwned) {
  for (const std::string& key : Keys(2000)) {
    int before = ShardOwner(key, 4), after = ShardOwner(key, 3);
    if (before != 3) {
      EXPECT_EQ(after, before) << key;
    }
  }
}

TEST(ShardTest, KeyIsTheArnWhateverTheEndpoint) {
  QueueInfo a;
  a.name = "orders-dlq";
  a.region = "us-east-1";
  a.account_id = "123456789012";
  a.url = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq";
  QueueInfo b = a;
  b.url = "http://localhost:4566/123456789012/orders-dlq";
  EXPECT_EQ(ShardKey(a), "arn:aws:sqs:us-east-1:123456789012:orders-dlq");
  EXPECT_EQ(ShardKey(a), ShardKey(b));
  QueueInfo with_arn = a;
  with_arn.arn = "arn:aws-cn:sqs:cn-north-1:123456789012:orders-dlq";
  EXPECT_EQ(ShardKey(with_arn), with_arn.arn);
  QueueInfo no_account;
  no_account.url = "http://127.0.0.1:9324/queue/orders-dlq";
  EXPECT_EQ(ShardKey(no_account), no_account.url);
}

TEST(ShardTest, OneShardOwnsEverything) {
  for (const std::string& key : Keys(100)) EXPECT_TRUE(OwnsKey(ShardSpec{}, key));
}

}  // namespace
}  // namespace dlq
