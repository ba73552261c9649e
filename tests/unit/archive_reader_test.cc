#include "archive/archive_reader.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "archive/gzip.h"
#include "archive/record.h"
#include "common/time_util.h"

namespace dlq {
namespace {

// Minimal in-memory ObjectStore with small List pages and a failing Get on command.
class MemoryStore : public ObjectStore {
 public:
  Status Put(const std::string& key, std::string_view data, const PutOptions&) override {
    objects_[key] = std::string(data);
    return Status::Ok();
  }
  Result<std::string> Get(const std::string& key, std::optional<std::pair<uint64_t, uint64_t>>) override {
    ++gets;
    if (key == fail_get_key) return Unavailable("injected 503");
    auto it = objects_.find(key);
    if (it == objects_.end()) return NotFound("no such key " + key);
    return it->second;
  }
  Result<ObjectInfo> Head(const std::string& key) override {
    auto it = objects_.find(key);
    if (it == objects_.end()) return NotFound(key);
    return ObjectInfo{key, it->second.size(), "", {}};
  }
  Result<ListPage> List(const std::string& prefix, const std::string&, const std::string& token) override {
    ++lists;
    ListPage page;
    auto it = token.empty() ? objects_.lower_bound(prefix) : objects_.upper_bound(token);
    for (; it != objects_.end() && it->first.rfind(prefix, 0) == 0; ++it) {
      if (page.objects.size() == 2) {
        page.next_token = page.objects.back().key;
        break;
      }
      page.objects.push_back({it->first, it->second.size(), "", {}});
    }
    return page;
  }
  Status Delete(const std::string& key) override {
    objects_.erase(key);
    return Status::Ok();
  }
  Result<DestinationCheck> CheckWritable() override { return DestinationCheck{}; }
  std::string Describe() const override { return "mem://test"; }

  std::string fail_get_key;
  int gets = 0;
  int lists = 0;

 private:
  std::map<std::string, std::string> objects_;
};

ArchiveContext Ctx(const std::string& queue) {
  ArchiveContext c;
  c.queue = queue;
  return c;
}

Message Msg(const std::string& id, const std::string& body, int64_t sent_ms) {
  Message m;
  m.message_id = id;
  m.body = body;
  m.attributes["SentTimestamp"] = std::to_string(sent_ms);
  return m;
}

void PutLines(MemoryStore& store, const std::string& key, const std::string& lines) {
  ASSERT_TRUE(store.Put(key, GzipCompress(lines, 6).value(), PutOptions{}).ok());
}

std::string Line(const std::string& queue, const std::string& id, const std::string& body, int64_t sent_ms = 1000) {
  std::string out;
  AppendRecordJson(Msg(id, body, sent_ms), Ctx(queue), FromUnixMillis(5000), out);
  return out;
}

std::vector<std::string> ReadIds(MemoryStore& store, ArchiveReaderOptions opts, ReadStats* stats_out = nullptr) {
  ArchiveReader reader(store, std::move(opts));
  std::vector<std::string> ids;
  Result<ReadStats> stats = reader.ForEach([&](const ArchiveRecord& r, const RecordLocation&) {
    ids.push_back(r.message_id);
    return true;
  });
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  if (stats.ok() && stats_out != nullptr) *stats_out = *stats;
  return ids;
}

TEST(ArchiveReader, DeduplicatesByMessageIdAcrossObjectsAndPages) {
  MemoryStore store;
  PutLines(store, "a/q/1.json.gz", Line("q", "m1", "one") + Line("q", "m2", "two"));
  PutLines(store, "a/q/2.json.gz", Line("q", "m2", "two") + Line("q", "m3", "three"));  // re-archived after a crash
  PutLines(store, "a/q/3.json.gz", Line("q", "m1", "one"));
  PutLines(store, "a/q/4.json.gz", Line("q", "m4", "four"));
  PutLines(store, "b/other.json.gz", Line("q", "m9", "not under prefix"));
  ReadStats stats;
  EXPECT_EQ(ReadIds(store, {.prefix = "a/"}, &stats), (std::vector<std::string>{"m1", "m2", "m3", "m4"}));
  EXPECT_EQ(stats.objects, 4u);
  EXPECT_EQ(stats.records, 4u);
  EXPECT_EQ(stats.duplicates, 2u);
  EXPECT_EQ(store.lists, 2);  // paginated

  ArchiveReaderOptions no_dedup{.prefix = "a/"};
  no_dedup.deduplicate = false;
  EXPECT_EQ(ReadIds(store, no_dedup).size(), 6u);
}

TEST(ArchiveReader, SameMessageIdInDifferentQueuesIsNotADuplicate) {
  MemoryStore store;
  PutLines(store, "k1", Line("q1", "m1", "x") + Line("q2", "m1", "x"));
  EXPECT_EQ(ReadIds(store, {}).size(), 2u);
}

TEST(ArchiveReader, ReportsCorruptLinesWithKeyAndLineNumberAndKeepsGoing) {
  MemoryStore store;
  PutLines(store, "a/1.json.gz",
           Line("q", "m1", "one") + "{not json\n" + "\n" + R"({"schema":1})" + "\n" + Line("q", "m2", "two"));
  ASSERT_TRUE(store.Put("a/2.json.gz", "this is not gzip", PutOptions{}).ok());
  PutLines(store, "a/3.json.gz", Line("q", "m3", "three"));
  ReadStats stats;
  EXPECT_EQ(ReadIds(store, {.prefix = "a/"}, &stats), (std::vector<std::string>{"m1", "m2", "m3"}));
  EXPECT_EQ(stats.corrupt_lines, 2u);
  EXPECT_EQ(stats.corrupt_objects, 1u);
  ASSERT_EQ(stats.errors.size(), 3u);
  EXPECT_EQ(stats.errors[0].key, "a/1.json.gz");
  EXPECT_EQ(stats.errors[0].line, 2u);
  EXPECT_EQ(stats.errors[1].line, 4u);
  EXPECT_NE(stats.errors[1].message.find("\"queue\" is missing"), std::string::npos) << stats.errors[1].message;
  EXPECT_EQ(stats.errors[2].key, "a/2.json.gz");
  EXPECT_EQ(stats.errors[2].line, 0u);
}

TEST(ArchiveReader, RejectsObjectsOverTheSizeLimit) {
  MemoryStore store;
  PutLines(store, "big", Line("q", "m1", std::string(10000, 'a')));
  ArchiveReaderOptions opts;
  opts.max_object_bytes = 1000;
  ReadStats stats;
  EXPECT_TRUE(ReadIds(store, opts, &stats).empty());
  EXPECT_EQ(stats.corrupt_objects, 1u);
  EXPECT_NE(stats.errors.at(0).message.find("exceeds the limit"), std::string::npos);
}

TEST(ArchiveReader, FiltersByQueueTimeAndBody) {
  MemoryStore store;
  PutLines(store, "k",
           Line("q1", "a", "order 17 failed", 1000) + Line("q2", "b", "order 18 failed", 2000) +
               Line("q1", "c", "payment 19 failed", 3000) + Line("q1", "d", "order 20 ok", 4000));
  ArchiveReaderOptions o;
  o.filter.queue = "q1";
  EXPECT_EQ(ReadIds(store, o), (std::vector<std::string>{"a", "c", "d"}));
  o.filter.sent_from = FromUnixMillis(3000);
  EXPECT_EQ(ReadIds(store, o), (std::vector<std::string>{"c", "d"}));
  o.filter.sent_to = FromUnixMillis(4000);
  EXPECT_EQ(ReadIds(store, o), (std::vector<std::string>{"c"}));

  ArchiveReaderOptions body;
  body.filter.body_contains = "order";
  EXPECT_EQ(ReadIds(store, body), (std::vector<std::string>{"a", "b", "d"}));
  body.filter.body_regex = "order [0-9]+ failed";
  ReadStats stats;
  EXPECT_EQ(ReadIds(store, body, &stats), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(stats.filtered, 2u);

  ArchiveReaderOptions archived;
  archived.filter.archived_to = FromUnixMillis(5000);
  EXPECT_TRUE(ReadIds(store, archived).empty());
}

TEST(ArchiveReader, BadRegexIsInvalidArgument) {
  MemoryStore store;
  ArchiveReaderOptions o;
  o.filter.body_regex = "([unclosed";
  ArchiveReader reader(store, o);
  Result<ReadStats> r = reader.ForEach([](const ArchiveRecord&, const RecordLocation&) { return true; });
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
}

TEST(ArchiveReader, StorageErrorsStopTheScanWithTheKey) {
  MemoryStore store;
  PutLines(store, "a/1", Line("q", "m1", "x"));
  PutLines(store, "a/2", Line("q", "m2", "x"));
  store.fail_get_key = "a/2";
  ArchiveReader reader(store, {.prefix = "a/"});
  int seen = 0;
  Result<ReadStats> r = reader.ForEach([&](const ArchiveRecord&, const RecordLocation&) { return ++seen > 0; });
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().retryable());
  EXPECT_NE(r.status().message().find("a/2"), std::string::npos);
  EXPECT_EQ(seen, 1);
}

TEST(ArchiveReader, CallbackCanStopEarlyAndSeesLocation) {
  MemoryStore store;
  PutLines(store, "k1", Line("q", "m1", "x") + Line("q", "m2", "x"));
  PutLines(store, "k2", Line("q", "m3", "x"));
  ArchiveReader reader(store, {});
  std::vector<std::pair<std::string, uint64_t>> where;
  Result<ReadStats> r = reader.ForEach([&](const ArchiveRecord&, const RecordLocation& loc) {
    where.emplace_back(loc.key, loc.line);
    return where.size() < 2;
  });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(where, (std::vector<std::pair<std::string, uint64_t>>{{"k1", 1}, {"k1", 2}}));
  EXPECT_EQ(store.gets, 1);
}

TEST(ArchiveReader, ReadsMultiMemberObjects) {
  MemoryStore store;
  std::string gz = GzipCompress(Line("q", "m1", "x"), 6).value() + GzipCompress(Line("q", "m2", "y"), 1).value();
  ASSERT_TRUE(store.Put("k", gz, PutOptions{}).ok());
  EXPECT_EQ(ReadIds(store, {}), (std::vector<std::string>{"m1", "m2"}));
}

}  // namespace
}  // namespace dlq
