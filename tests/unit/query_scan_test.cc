#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "archive/gzip.h"
#include "common/time_util.h"
#include "query/scan.h"
#include "testing/fake_clock.h"
#include "testing/fake_object_store.h"

namespace dlq {
namespace {

const SystemTime kDay1 = *ParseIso8601("2026-11-19T10:00:00Z");
const SystemTime kDay2 = *ParseIso8601("2026-11-20T10:00:00Z");

Message Msg(const std::string& id, const std::string& body, SystemTime sent,
            std::map<std::string, std::string> attrs = {}) {
  Message m;
  m.message_id = id;
  m.body = body;
  m.md5_of_body = Md5Hex(body);
  m.attributes["SentTimestamp"] = std::to_string(ToUnixMillis(sent));
  m.attributes["ApproximateReceiveCount"] = "3";
  for (auto& [k, v] : attrs) m.message_attributes[k] = {"String", v, ""};
  return m;
}

std::string Lines(const std::string& queue, const std::vector<Message>& msgs, SystemTime archived_at) {
  ArchiveContext ctx;
  ctx.queue = queue;
  std::string out;
  for (const Message& m : msgs) AppendRecordJson(m, ctx, archived_at, out);
  return out;
}

std::string Key(const std::string& tmpl, const std::string& queue, SystemTime t, const std::string& batch,
                const std::string& prefix = "dlq-archive") {
  return KeyTemplate::Parse(tmpl).value().Render({prefix, queue, "us-east-1", "123456789012", t, batch});
}

void PutObject(FakeObjectStore& store, const std::string& key, const std::string& lines) {
  store.Insert(key, GzipCompress(lines, 6).value());
}

Destination From(const std::string& uri = "s3://bucket") {
  return ParseDestination(uri).value();
}

struct Collected {
  std::vector<std::string> ids;
  std::vector<std::string> where;  // key:line
  ScanStats stats;
};

Collected Scan(FakeObjectStore& store, ScanOptions options, const Destination& from = From()) {
  Collected c;
  Result<ScanStats> st = ScanArchive(store, from, options, [&](const ArchiveRecord& r, const RecordLocation& loc) {
    c.ids.push_back(r.message_id);
    c.where.push_back(loc.key + ":" + std::to_string(loc.line));
    return true;
  });
  EXPECT_TRUE(st.ok()) << st.status().ToString();
  if (st.ok()) c.stats = *st;
  return c;
}

TEST(ScanTest, DeliversMatchesInKeyOrderAndDropsLaterCopies) {
  FakeObjectStore store;
  PutObject(store, Key(std::string(kDefaultKeyTemplate), "orders-dlq", kDay1, "0000000000000001"),
            Lines("orders-dlq", {Msg("a", "order 1 failed", kDay1), Msg("b", "order 2 ok", kDay1)}, kDay1));
  // A crash between upload and delete archived "a" again, in a later object.
  PutObject(store, Key(std::string(kDefaultKeyTemplate), "orders-dlq", kDay2, "0000000000000002"),
            Lines("orders-dlq", {Msg("c", "order 3 failed", kDay2), Msg("a", "order 1 failed", kDay1)}, kDay2));
  ScanOptions o;
  o.parallelism = 4;
  o.filter.body_contains = "failed";
  Collected c = Scan(store, o);
  EXPECT_EQ(c.ids, (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(c.where[0], "dlq-archive/orders-dlq/20261119/orders-dlq-100000-0000000000000001.json.gz:1");
  EXPECT_EQ(c.where[1], "dlq-archive/orders-dlq/20261120/orders-dlq-100000-0000000000000002.json.gz:1");
  EXPECT_EQ(c.stats.duplicates, 1u);
  EXPECT_EQ(c.stats.records, 2u);
  EXPECT_EQ(c.stats.objects, 2u);
  EXPECT_EQ(c.stats.lines, 4u);
  EXPECT_TRUE(c.stats.complete());

  o.deduplicate = false;
  EXPECT_EQ(Scan(store, o).ids, (std::vector<std::string>{"a", "c", "a"}));
}

// The raw-line prefilter must never change the answer: compare with decoding
// every line, over records written in every way the format allows.
TEST(ScanTest, PrefilterAgreesWithDecodingEveryLine) {
  FakeObjectStore store;
  std::vector<Message> msgs = {
      Msg("m1", R"({"error":{"type":"Timeout"},"tenant":"acme"})", kDay1, {{"tenant", "acme"}, {"kind", "x/y"}}),
      Msg("m2", R"({"error":{"type":"Time\u006fut"}})", kDay1, {{"tenant", "acme"}}),  // body's own \u escape
      Msg("m3", "path a/b Timeout", kDay1, {{"tenant", "acme"}}),
      Msg("m4", std::string("bad utf8 \xff Timeout", 18), kDay1, {{"tenant", "acme"}}),  // body_base64
      Msg("m5", "Timeout", kDay1, {{"tenant", "other"}}),
      Msg("m6", "no match here", kDay1, {{"tenant", "acme"}}),
      Msg("m7", "quote \" and \\ and Timeout", kDay1, {{"tenant", "ac\"me"}}),
  };
  msgs[3].message_attributes["tenant"] = {"String", "acme", ""};
  msgs.push_back(Msg("m8", "Timeout", kDay1));
  msgs.back().message_attributes["tenant"] = {"String", std::string("\xfe", 1), ""};  // StringValueBase64
  std::string lines = Lines("orders-dlq", msgs, kDay1);
  // A line from another writer: other key order, escaped '/' and \u escapes.
  lines +=
      R"({"message_id":"m9","queue":"orders-dlq","schema":1,"body":"Time\u006fut a\/b","md5_of_body":"x",)"
      R"("message_attributes":{"tenant":{"DataType":"String","StringValue":"\u0061cme"}},)"
      R"("archived_at":"2026-11-19T10:00:00Z","expires_at":"2026-11-23T10:00:00Z","sent_at":"2026-11-19T10:00:00Z"})"
      "\n";
  PutObject(store, Key(std::string(kDefaultKeyTemplate), "orders-dlq", kDay1, "00000000000000aa"), lines);

  std::vector<FilterFlags> filters = {
      {.body_contains = "Timeout"},
      {.attrs = {"tenant=acme"}},
      {.attrs = {"tenant=acme"}, .body_contains = "Timeout"},
      {.attrs = {"tenant=ac\"me"}},
      {.attrs = {"kind=x/y"}},
      {.body_contains = "a/b"},
      {.ids = {"m9"}},
      {.queues = {"orders-dlq"}, .attr_exists = {"tenant"}},
      {.json = {"$.error.type=Timeout"}},
      {.body_contains = "\" and \\"},
      {.attrs = {"tenant=\xfe"}},
      {.body_contains = "\xff Timeout"},
  };
  for (const FilterFlags& flags : filters) {
    ScanOptions o;
    o.filter = BuildFilter(flags, kDay2).value();
    std::set<std::string> expected;
    std::string_view rest = lines;
    while (!rest.empty()) {
      size_t nl = rest.find('\n');
      Result<ArchiveRecord> r = ParseRecordJson(rest.substr(0, nl));
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      if (o.filter.Matches(*r)) expected.insert(r->message_id);
      rest.remove_prefix(nl + 1);
    }
    Collected c = Scan(store, o);
    EXPECT_EQ(std::set<std::string>(c.ids.begin(), c.ids.end()), expected) << o.filter.Canonical();
    EXPECT_FALSE(expected.empty()) << o.filter.Canonical();
  }
  // The prefilter does skip work: a selective filter decodes few lines.
  ScanOptions o;
  o.filter.attr_equals = {{"tenant", "other"}};
  Collected c = Scan(store, o);
  EXPECT_EQ(c.ids, (std::vector<std::string>{"m5"}));
  EXPECT_LT(c.stats.parsed, c.stats.lines);
}

TEST(ScanTest, DamagedObjectsAreReportedByKeyAndLineAndTheRestIsRead) {
  FakeObjectStore store;
  const std::string tmpl(kDefaultKeyTemplate);
  std::vector<Message> many;
  for (int i = 0; i < 2000; ++i) many.push_back(Msg("t" + std::to_string(i), "payload " + std::to_string(i), kDay1));
  std::string gz = GzipCompress(Lines("q", many, kDay1), 6).value();
  const std::string truncated_key = Key(tmpl, "q", kDay1, "0000000000000001");
  store.Insert(truncated_key, gz.substr(0, gz.size() / 2));
  const std::string garbage_key = Key(tmpl, "q", kDay1, "0000000000000002");
  store.Insert(garbage_key, "this is not gzip");
  std::string bad_lines = Lines("q", {Msg("g1", "good", kDay1)}, kDay1) + "{not json\n" +
                          R"({"schema":2,"queue":"q","message_id":"future"})"
                          "\n" +
                          Lines("q", {Msg("g2", "good", kDay1)}, kDay1);
  const std::string lines_key = Key(tmpl, "q", kDay1, "0000000000000003");
  PutObject(store, lines_key, bad_lines);

  ScanOptions o;
  o.parallelism = 2;
  Collected c = Scan(store, o);
  // Every line decompressed before the damage is delivered.
  ASSERT_GT(c.ids.size(), 2u);
  EXPECT_EQ(c.ids[0], "t0");
  EXPECT_EQ(c.ids[c.ids.size() - 2], "g1");
  EXPECT_EQ(c.ids.back(), "g2");
  const size_t salvaged = c.ids.size() - 2;
  EXPECT_LT(salvaged, 2000u);
  EXPECT_EQ(c.stats.skipped_objects, 1u);
  EXPECT_EQ(c.stats.skipped_lines, 3u);  // the cut line, "{not json", the schema-2 line
  EXPECT_FALSE(c.stats.complete());
  ASSERT_EQ(c.stats.errors.size(), 4u);
  EXPECT_EQ(c.stats.errors[0].key, truncated_key);
  EXPECT_EQ(c.stats.errors[0].line, salvaged + 1);
  EXPECT_NE(c.stats.errors[0].message.find("truncated"), std::string::npos) << c.stats.errors[0].message;
  EXPECT_EQ(c.stats.errors[1].key, garbage_key);
  EXPECT_EQ(c.stats.errors[1].line, 0u);
  EXPECT_EQ(c.stats.errors[2].key, lines_key);
  EXPECT_EQ(c.stats.errors[2].line, 2u);
  EXPECT_EQ(c.stats.errors[3].line, 3u);
  EXPECT_NE(c.stats.errors[3].message.find("unsupported schema version 2"), std::string::npos)
      << c.stats.errors[3].message;
}

TEST(ScanTest, UnreadableObjectIsReportedByKeyAndSkipped) {
  FakeObjectStore store;
  const std::string tmpl(kDefaultKeyTemplate);
  const std::string k1 = Key(tmpl, "q", kDay1, "0000000000000001");
  PutObject(store, k1, Lines("q", {Msg("a", "x", kDay1)}, kDay1));
  PutObject(store, Key(tmpl, "q", kDay1, "0000000000000002"), Lines("q", {Msg("b", "x", kDay1)}, kDay1));
  store.FailNextGet(PermissionDenied("AccessDenied (HTTP 403): KMS key denied"));
  ScanOptions o;
  o.parallelism = 1;  // the first Get is the first key's
  Collected c = Scan(store, o);
  EXPECT_EQ(c.ids, (std::vector<std::string>{"b"}));
  EXPECT_EQ(c.stats.skipped_objects, 1u);
  ASSERT_EQ(c.stats.errors.size(), 1u);
  EXPECT_EQ(c.stats.errors[0].key, k1);
  EXPECT_NE(c.stats.errors[0].message.find("KMS key denied"), std::string::npos);
  EXPECT_NE(c.stats.errors[0].message.find(k1), std::string::npos);
}

TEST(ScanTest, ListingFailureIsAnError) {
  class FailingList : public ObjectStore {
   public:
    Status Put(const std::string&, std::string_view, const PutOptions&) override { return Internal("unused"); }
    Result<std::string> Get(const std::string&, std::optional<std::pair<uint64_t, uint64_t>>) override {
      return Internal("unused");
    }
    Result<ObjectInfo> Head(const std::string&) override { return Internal("unused"); }
    Result<ListPage> List(const std::string&, const std::string&, const std::string&) override {
      return Unavailable("503 SlowDown");
    }
    Status Delete(const std::string&) override { return Internal("unused"); }
    Result<DestinationCheck> CheckWritable() override { return Internal("unused"); }
    std::string Describe() const override { return "s3://bucket"; }
  } failing;
  Result<ScanStats> st = ScanArchive(failing, From(), ScanOptions{}, [](auto&, auto&) { return true; });
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("list"), std::string::npos);
  EXPECT_NE(st.status().message().find("dlq-archive/"), std::string::npos);
}

// Queue and date partitions the filter excludes are never listed into or fetched, in every layout.
TEST(ScanTest, PrunesPartitionsByQueueAndDateInEveryLayout) {
  const std::vector<std::string> templates = {std::string(kDefaultKeyTemplate), std::string(kHiveKeyTemplate),
                                              "{prefix}/{region}/{yyyy}/{mm}/{dd}/{queue}/{hh}-{batch_id}.json.gz"};
  for (const std::string& tmpl : templates) {
    FakeObjectStore store;
    int n = 0;
    for (const std::string q : {"orders-dlq", "billing-dlq"}) {
      for (int day = 10; day <= 20; ++day) {
        SystemTime t = *ParseIso8601(fmt::format("2026-11-{:02}T08:00:00Z", day));
        PutObject(store, Key(tmpl, q, t, fmt::format("{:016x}", ++n), "archive/p"),
                  Lines(q, std::vector<Message>{Msg(fmt::format("{}-{}", q, day), "body", t)}, t));
      }
    }
    ScanOptions o;
    if (tmpl != kDefaultKeyTemplate && tmpl != kHiveKeyTemplate)
      o.layouts.templates = {KeyTemplate::Parse(tmpl).value()};
    o.filter =
        BuildFilter({.queues = {"orders-dlq"}, .since = "2026-11-18", .until = "2026-11-19", .by = "archived"}, kDay2)
            .value();
    Collected c = Scan(store, o, From("s3://bucket/archive/p"));
    EXPECT_EQ(c.ids, (std::vector<std::string>{"orders-dlq-18"})) << tmpl;
    // Day 18, plus day 17 (a batch started the day before may hold records archived after midnight).
    EXPECT_EQ(store.get_calls(), 2) << tmpl;
    EXPECT_GT(c.stats.pruned_prefixes, 0u) << tmpl;

    // By sent time only `since` prunes (a message may be archived long after it was sent).
    int gets = store.get_calls();
    o.filter = BuildFilter({.queues = {"orders-dlq"}, .since = "2026-11-18", .until = "2026-11-19"}, kDay2).value();
    EXPECT_EQ(Scan(store, o, From("s3://bucket/archive/p")).ids, (std::vector<std::string>{"orders-dlq-18"}));
    EXPECT_EQ(store.get_calls() - gets, 4) << tmpl;  // days 17..20
  }
}

TEST(ScanTest, KeysNoLayoutExplainsAreReadNotPruned) {
  FakeObjectStore store;
  // Written with a custom template the reader was not told about.
  PutObject(store, "dlq-archive/custom/orders-dlq/x.json.gz", Lines("orders-dlq", {Msg("a", "b", kDay1)}, kDay1));
  PutObject(store, "dlq-archive/_audit/replay-1.json", "{\"not\":\"an archive object\"}");
  ScanOptions o;
  o.filter.queues = {"orders-dlq"};
  o.filter.since = kDay1;
  Collected c = Scan(store, o);
  EXPECT_EQ(c.ids, (std::vector<std::string>{"a"}));
  EXPECT_TRUE(c.stats.complete());  // _audit/ is not part of the archive
  EXPECT_EQ(c.stats.unrecognised_key, "dlq-archive/custom/orders-dlq/x.json.gz");
  EXPECT_EQ(c.stats.pruned_prefixes, 0u);
}

TEST(ScanTest, DeduplicationStaysWithinItsMemoryBoundUsingMorePasses) {
  FakeObjectStore store;
  const std::string tmpl(kDefaultKeyTemplate);
  std::vector<std::string> all;
  for (int obj = 0; obj < 10; ++obj) {
    std::vector<Message> msgs;
    for (int i = 0; i < 100; ++i) {
      msgs.push_back(Msg(fmt::format("id-{}", obj * 100 + i), "x", kDay1));
      all.push_back(msgs.back().message_id);
      // Every 10th message was archived twice, the copy three objects later.
      if (obj >= 3 && i % 10 == 0) msgs.push_back(Msg(fmt::format("id-{}", (obj - 3) * 100 + i), "x", kDay1));
    }
    PutObject(store, Key(tmpl, "q", kDay1, fmt::format("{:016x}", obj)), Lines("q", msgs, kDay1));
  }
  ScanOptions o;
  o.parallelism = 3;
  o.dedup_memory_bytes = 4096;  // 256 slots: 192 ids per pass
  Collected c = Scan(store, o);
  EXPECT_GT(c.stats.passes, 4);
  EXPECT_EQ(c.ids.size(), all.size());
  EXPECT_EQ(std::set<std::string>(c.ids.begin(), c.ids.end()), std::set<std::string>(all.begin(), all.end()));
  EXPECT_EQ(c.stats.duplicates, 70u);
  // The first copy wins even across passes.
  for (size_t i = 0; i < c.ids.size(); ++i) {
    if (c.ids[i] == "id-0") {
      EXPECT_EQ(c.where[i], Key(tmpl, "q", kDay1, fmt::format("{:016x}", 0)) + ":1");
    }
  }
}

TEST(ScanTest, StopsWhenTheCallbackSaysSo) {
  FakeObjectStore store;
  for (int obj = 0; obj < 20; ++obj) {
    PutObject(store, Key(std::string(kDefaultKeyTemplate), "q", kDay1, fmt::format("{:016x}", obj)),
              Lines("q", std::vector<Message>{Msg(fmt::format("id-{}", obj), "x", kDay1)}, kDay1));
  }
  ScanOptions o;
  o.parallelism = 2;
  int calls = 0;
  Result<ScanStats> st = ScanArchive(store, From(), o, [&](auto&, auto&) { return ++calls < 3; });
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(calls, 3);
  EXPECT_LT(store.get_calls(), 20);
}

TEST(ScanTest, BadRegexIsInvalidArgument) {
  FakeObjectStore store;
  ScanOptions o;
  o.filter.body_regex = "(";
  Result<ScanStats> st = ScanArchive(store, From(), o, [](auto&, auto&) { return true; });
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.status().code(), ErrorCode::kInvalidArgument);
}

TEST(ScanTest, SameMessageIdInDifferentQueuesIsNotADuplicate) {
  FakeObjectStore store;
  const std::string tmpl(kDefaultKeyTemplate);
  PutObject(store, Key(tmpl, "q1", kDay1, "0000000000000001"),
            Lines("q1", {Msg("m1", "x", kDay1)}, kDay1) + Lines("q2", {Msg("m1", "x", kDay1)}, kDay1));
  Collected c = Scan(store, ScanOptions{});
  EXPECT_EQ(c.ids, (std::vector<std::string>{"m1", "m1"}));
  EXPECT_EQ(c.stats.duplicates, 0u);
}

TEST(ScanTest, ObjectOverTheSizeLimitIsReportedAndSkipped) {
  FakeObjectStore store;
  const std::string k = Key(std::string(kDefaultKeyTemplate), "q", kDay1, "0000000000000001");
  PutObject(store, k, Lines("q", {Msg("m1", std::string(10000, 'a'), kDay1)}, kDay1));
  ScanOptions o;
  o.max_object_bytes = 1000;
  Collected c = Scan(store, o);
  EXPECT_TRUE(c.ids.empty());
  // The limit cuts the first line: it is reported as the damaged line 1.
  EXPECT_EQ(c.stats.skipped_lines, 1u);
  ASSERT_EQ(c.stats.errors.size(), 1u);
  EXPECT_EQ(c.stats.errors[0].key, k);
  EXPECT_EQ(c.stats.errors[0].line, 1u);
  EXPECT_NE(c.stats.errors[0].message.find("exceeds the limit"), std::string::npos) << c.stats.errors[0].message;
}

TEST(ScanTest, ReadsMultiMemberGzipObjects) {
  FakeObjectStore store;
  store.Insert(Key(std::string(kDefaultKeyTemplate), "q", kDay1, "0000000000000001"),
               GzipCompress(Lines("q", {Msg("m1", "x", kDay1)}, kDay1), 6).value() +
                   GzipCompress(Lines("q", {Msg("m2", "y", kDay1)}, kDay1), 1).value());
  EXPECT_EQ(Scan(store, ScanOptions{}).ids, (std::vector<std::string>{"m1", "m2"}));
}

// ---- Bounded scans: stop, deadline, memory.

std::string ObjKey(int n, const std::string& queue = "q") {
  return Key(std::string(kDefaultKeyTemplate), queue, kDay1, fmt::format("{:016x}", n));
}

// `count` records of `body_bytes` each: a large, very compressible object.
std::string BigLines(const std::string& prefix, int count, size_t body_bytes) {
  std::vector<Message> msgs;
  for (int i = 0; i < count; ++i)
    msgs.push_back(Msg(fmt::format("{}-{}", prefix, i), std::string(body_bytes, 'a'), kDay1));
  return Lines("q", msgs, kDay1);
}

TEST(ScanTest, StopFlagEndsTheScanInsideAnObject) {
  FakeObjectStore store;
  // 4000 records of 1 KiB: about 4.5 MiB decompressed, read in 18 pieces.
  PutObject(store, ObjKey(1), BigLines("m", 4000, 1000));
  PutObject(store, ObjKey(2), BigLines("n", 10, 10));
  std::atomic<bool> stop{false};
  std::atomic<int> reservations{0};
  ScanOptions o;
  o.parallelism = 1;
  o.stop = &stop;
  // Set by the worker itself while it reads object 1 (the fifth match it
  // queues), so the stop lands mid-object without any sleep.
  o.on_reserved = [&](size_t) {
    if (++reservations == 8) stop = true;
  };
  std::vector<std::string> ids;
  Result<ScanStats> st = ScanArchive(store, From(), o, [&](const ArchiveRecord& r, const RecordLocation&) {
    ids.push_back(r.message_id);
    return true;
  });
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_TRUE(st->stopped);
  EXPECT_EQ(st->stop_reason, ScanStop::kCancelled);
  EXPECT_EQ(ScanStopName(st->stop_reason), "cancelled");
  EXPECT_EQ(st->objects_listed, 2u);
  EXPECT_EQ(st->objects_done, 0u);
  EXPECT_LT(ids.size(), 10u);
  // How far it got: at most the piece in which the flag was set, and the
  // piece after it, of the 4.5 MiB.
  EXPECT_GT(st->bytes, 0u);
  EXPECT_LE(st->bytes, uint64_t{512} << 10);
}

TEST(ScanTest, DeadlineEndsTheScanInsideAnObjectAndSaysHowFarItGot) {
  FakeObjectStore store;
  PutObject(store, ObjKey(1), BigLines("m", 1, 100));
  // 64 MiB of one repeated record line, ~200 KiB compressed.
  const std::string line = BigLines("big", 1, 100);
  std::string big;
  while (big.size() < (size_t{64} << 20)) big += line;
  PutObject(store, ObjKey(2), big);
  big = std::string();
  // Monotonic time moves 1 ms on every reading: the 100 ms deadline passes
  // after 100 readings, whatever the machine's speed.
  FakeClock clock;
  clock.AdvanceOnEachSteadyRead(std::chrono::milliseconds(1));
  ScanOptions o;
  o.parallelism = 1;  // object 1 is finished before object 2 starts
  o.deduplicate = false;
  o.filter.ids = {"nothing-matches"};
  o.clock = &clock;
  o.deadline = clock.SteadyNow() + std::chrono::milliseconds(100);
  Result<ScanStats> st = ScanArchive(store, From(), o, [](auto&, auto&) { return true; });
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_TRUE(st->stopped);
  EXPECT_EQ(st->stop_reason, ScanStop::kDeadline);
  EXPECT_EQ(ScanStopName(st->stop_reason), "deadline");
  EXPECT_EQ(st->objects_listed, 2u);
  EXPECT_EQ(st->objects_done, 1u);
  // At least one reading per 256 KiB piece: 100 readings stop it within
  // 25 MiB of the 64 MiB.
  EXPECT_GT(st->bytes, 0u);
  EXPECT_LT(st->bytes, uint64_t{26} << 20);
}

TEST(ScanTest, ASlowObjectIsCutShortAtItsShareAndTheObjectsAfterItAreStillRead) {
  FakeObjectStore store;
  // 64 MiB of one repeated record line, ~200 KiB compressed: the slow one, first in key order.
  const std::string line = BigLines("slow", 1, 100);
  std::string slow;
  while (slow.size() < (size_t{64} << 20)) slow += line;
  PutObject(store, ObjKey(1), slow);
  slow = std::string();
  PutObject(store, ObjKey(2), BigLines("wanted", 1, 100));
  // Monotonic time moves 1 ms on every reading (at least one per 256 KiB
  // piece): reading all of object 1 would take past the 200 ms deadline.
  FakeClock clock;
  clock.AdvanceOnEachSteadyRead(std::chrono::milliseconds(1));
  ScanOptions o;
  o.parallelism = 1;
  o.filter.ids = {"wanted-0"};
  o.clock = &clock;
  o.deadline = clock.SteadyNow() + std::chrono::milliseconds(200);
  o.max_object_time = std::chrono::milliseconds(25);
  Collected c = Scan(store, o);
  EXPECT_EQ(c.ids, (std::vector<std::string>{"wanted-0"}));
  EXPECT_FALSE(c.stats.stopped);
  EXPECT_EQ(c.stats.objects_done, 2u);
  ASSERT_EQ(c.stats.cut_short.size(), 1u);
  EXPECT_EQ(c.stats.cut_short[0].key, ObjKey(1));
  EXPECT_GT(c.stats.cut_short[0].lines_read, 0u);
  EXPECT_LT(c.stats.cut_short[0].bytes_read, uint64_t{16} << 20);
  EXPECT_FALSE(c.stats.complete());
  ASSERT_EQ(c.stats.errors.size(), 1u);
  EXPECT_EQ(c.stats.errors[0].key, ObjKey(1));
  EXPECT_NE(c.stats.errors[0].message.find("cut short after 25 ms"), std::string::npos) << c.stats.errors[0].message;
}

TEST(ScanTest, WithoutAShareASlowObjectHoldsBackTheOthersUntilTheDeadline) {
  // The control for the test above: the same archive and deadline, no share.
  FakeObjectStore store;
  const std::string line = BigLines("slow", 1, 100);
  std::string slow;
  while (slow.size() < (size_t{64} << 20)) slow += line;
  PutObject(store, ObjKey(1), slow);
  slow = std::string();
  PutObject(store, ObjKey(2), BigLines("wanted", 1, 100));
  FakeClock clock;
  clock.AdvanceOnEachSteadyRead(std::chrono::milliseconds(1));
  ScanOptions o;
  o.parallelism = 1;
  o.filter.ids = {"wanted-0"};
  o.clock = &clock;
  o.deadline = clock.SteadyNow() + std::chrono::milliseconds(200);
  Collected c = Scan(store, o);
  EXPECT_TRUE(c.ids.empty());
  EXPECT_TRUE(c.stats.stopped);
  EXPECT_EQ(c.stats.objects_done, 0u);
  EXPECT_TRUE(c.stats.cut_short.empty());
}

TEST(ScanTest, DeadlineThatPassesWhileListingIsDeadlineExceeded) {
  FakeObjectStore store;
  PutObject(store, ObjKey(1), BigLines("m", 1, 100));
  FakeClock clock;
  ScanOptions o;
  o.clock = &clock;
  o.deadline = clock.SteadyNow();
  Result<ScanStats> st = ScanArchive(store, From(), o, [](auto&, auto&) { return true; });
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.status().code(), ErrorCode::kDeadlineExceeded);
  EXPECT_EQ(store.get_calls(), 0);
}

TEST(ScanTest, MemoryBudgetHoldsWithSixteenWorkers) {
  FakeObjectStore store;
  std::set<std::string> all;
  for (int obj = 0; obj < 48; ++obj) {
    // ~400 KiB decompressed each, lines of 20 KiB: windows, compressed
    // objects and queued matches all count.
    std::string lines = BigLines(fmt::format("o{}", obj), 20, 20000);
    for (int i = 0; i < 20; ++i) all.insert(fmt::format("o{}-{}", obj, i));
    PutObject(store, ObjKey(obj), lines);
  }
  ScanOptions o;
  o.parallelism = 16;
  o.memory_budget_bytes = size_t{4} << 20;
  size_t peak = 0;
  o.on_reserved = [&](size_t reserved) { peak = std::max(peak, reserved); };
  std::set<std::string> seen;
  Result<ScanStats> st = ScanArchive(store, From(), o, [&](const ArchiveRecord& r, const RecordLocation&) {
    seen.insert(r.message_id);
    return true;
  });
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(seen, all);
  EXPECT_TRUE(st->complete());
  EXPECT_FALSE(st->stopped);
  EXPECT_EQ(st->objects_done, 48u);
  EXPECT_EQ(st->peak_reserved_bytes, peak);
  EXPECT_LE(peak, o.memory_budget_bytes);
  // More than one object's working set at a time: the workers did share it.
  EXPECT_GT(peak, size_t{1} << 20);
}

TEST(ScanTest, LineLongerThanTheLimitIsSkippedWithKeyAndLineAndTheScanGoesOn) {
  FakeObjectStore store;
  // A valid record whose body alone is 2 MiB, between two small ones.
  std::string lines = BigLines("a", 1, 10) + Lines("q", {Msg("huge", std::string(2 << 20, 'x'), kDay1)}, kDay1) +
                      Lines("q", {Msg("b", "after", kDay1)}, kDay1);
  PutObject(store, ObjKey(1), lines);
  PutObject(store, ObjKey(2), Lines("q", {Msg("c", "next object", kDay1)}, kDay1));
  ScanOptions o;
  o.max_line_bytes = size_t{1} << 20;
  size_t peak = 0;
  o.on_reserved = [&](size_t reserved) { peak = std::max(peak, reserved); };
  Collected c = Scan(store, o);
  EXPECT_EQ(c.ids, (std::vector<std::string>{"a-0", "b", "c"}));
  EXPECT_EQ(c.where[1], ObjKey(1) + ":3");
  EXPECT_EQ(c.stats.skipped_lines, 1u);
  ASSERT_EQ(c.stats.errors.size(), 1u);
  EXPECT_EQ(c.stats.errors[0].key, ObjKey(1));
  EXPECT_EQ(c.stats.errors[0].line, 2u);
  EXPECT_NE(c.stats.errors[0].message.find("longer than the 1048576 bytes"), std::string::npos)
      << c.stats.errors[0].message;
  // The 2 MiB line was never held whole: the window stopped at the limit.
  EXPECT_LT(peak, size_t{2} << 20);
}

TEST(ScanTest, GzipBombIsReadInPiecesWithinTheBudgetAndReported) {
  FakeObjectStore store;
  // 24 MiB of newline-free bytes, ~24 KiB compressed: one endless line.
  PutObject(store, ObjKey(1), std::string(size_t{24} << 20, 'z'));
  // 64 MiB of blank lines over a 32 MiB object limit.
  PutObject(store, ObjKey(2), std::string(size_t{64} << 20, '\n'));
  PutObject(store, ObjKey(3), Lines("q", {Msg("after", "x", kDay1)}, kDay1));
  ScanOptions o;
  o.parallelism = 3;
  o.memory_budget_bytes = size_t{8} << 20;
  o.max_object_bytes = size_t{32} << 20;
  size_t peak = 0;
  o.on_reserved = [&](size_t reserved) { peak = std::max(peak, reserved); };
  Collected c = Scan(store, o);
  EXPECT_EQ(c.ids, (std::vector<std::string>{"after"}));
  EXPECT_LE(peak, o.memory_budget_bytes);
  ASSERT_EQ(c.stats.errors.size(), 2u);
  EXPECT_EQ(c.stats.errors[0].key, ObjKey(1));
  EXPECT_EQ(c.stats.errors[0].line, 1u);
  EXPECT_NE(c.stats.errors[0].message.find("longer than"), std::string::npos) << c.stats.errors[0].message;
  EXPECT_EQ(c.stats.errors[1].key, ObjKey(2));
  EXPECT_NE(c.stats.errors[1].message.find("exceeds the limit of 33554432 bytes"), std::string::npos)
      << c.stats.errors[1].message;
}

TEST(ScanTest, ObjectLargerThanItsShareOfTheBudgetIsRefusedByKey) {
  FakeObjectStore store;
  // Incompressible: 1 MiB compressed, over 1/8 of a 4 MiB budget.
  std::string noise;
  uint64_t x = 88172645463325252ull;
  while (noise.size() < (size_t{1} << 20)) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    noise.append(reinterpret_cast<const char*>(&x), 8);
  }
  store.Insert(ObjKey(1), noise);
  PutObject(store, ObjKey(2), Lines("q", {Msg("ok", "x", kDay1)}, kDay1));
  ScanOptions o;
  o.memory_budget_bytes = size_t{4} << 20;
  Collected c = Scan(store, o);
  EXPECT_EQ(c.ids, (std::vector<std::string>{"ok"}));
  EXPECT_EQ(c.stats.skipped_objects, 1u);
  ASSERT_EQ(c.stats.errors.size(), 1u);
  EXPECT_EQ(c.stats.errors[0].key, ObjKey(1));
  EXPECT_EQ(c.stats.errors[0].line, 0u);
  EXPECT_NE(c.stats.errors[0].message.find("4194304"), std::string::npos) << c.stats.errors[0].message;
  EXPECT_EQ(store.get_calls(), 1);  // refused by its listed size, never fetched
}

TEST(ScanTest, BudgetUnderFourMebibytesIsInvalid) {
  FakeObjectStore store;
  ScanOptions o;
  o.memory_budget_bytes = size_t{1} << 20;
  Result<ScanStats> st = ScanArchive(store, From(), o, [](auto&, auto&) { return true; });
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.status().code(), ErrorCode::kInvalidArgument);
}

TEST(ListArchiveTest, ReportsQueueAndDayOfEachObject) {
  FakeObjectStore store;
  PutObject(store, Key(std::string(kHiveKeyTemplate), "orders-dlq", kDay1, "0000000000000001"), "x");
  PutObject(store, Key(std::string(kDefaultKeyTemplate), "billing-dlq", kDay2, "0000000000000002"), "x");
  Result<std::vector<ArchiveObject>> objs = ListArchive(store, From(), ListOptions{});
  ASSERT_TRUE(objs.ok());
  ASSERT_EQ(objs->size(), 2u);
  EXPECT_EQ((*objs)[0].facts.queue, "billing-dlq");
  EXPECT_EQ((*objs)[0].facts.day, 20);
  EXPECT_EQ((*objs)[1].facts.queue, "orders-dlq");
  EXPECT_EQ((*objs)[1].facts.day, 19);
  EXPECT_TRUE((*objs)[1].matched);
}

TEST(KeyPatternTest, MatchesOnlyWhatTheArchiverRenders) {
  KeyPattern p(KeyTemplate::Default(), "dlq-archive");
  KeyFacts f;
  ASSERT_TRUE(p.Match("dlq-archive/orders-dlq/20261120/orders-dlq-235959-7f3a9c2e41d06b85.json.gz", f));
  EXPECT_EQ(f.queue, "orders-dlq");
  EXPECT_EQ(f.year, 2026);
  EXPECT_EQ(f.hour, 23);
  EXPECT_EQ(f.Span()->first, *ParseIso8601("2026-11-20T23:00:00Z"));
  KeyFacts g;
  EXPECT_FALSE(p.Match("dlq-archive/queue=orders-dlq/dt=2026-11-20/orders-dlq-235959-7f3a9c2e41d06b85.json.gz", g));
  KeyFacts h;  // the queue in the file name must be the directory's
  EXPECT_FALSE(p.Match("dlq-archive/orders-dlq/20261120/billing-dlq-235959-7f3a9c2e41d06b85.json.gz", h));
  KeyFacts i;
  EXPECT_FALSE(p.Match("dlq-archive/orders-dlq/20261340/orders-dlq-235959-7f3a9c2e41d06b85.json.gz", i));
  EXPECT_EQ(p.literal_dir(), "dlq-archive/");
}

}  // namespace
}  // namespace dlq
