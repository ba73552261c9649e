// The replay ledger (replay/ledger.h): parts and the index round-trip,
// torn or hostile files are refused, a corrupt index falls back to the
// parts, concurrent runs never overwrite each other, and a reader rebuilds
// the index once enough parts are outside it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "replay/ledger.h"
#include "testing/fake_clock.h"
#include "testing/fake_object_store.h"

namespace dlq {
namespace {

constexpr char kQueue[] = "https://sqs.us-east-1.amazonaws.com/123456789012/orders";
constexpr char kOther[] = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-fixed";

class ReplayLedgerTest : public ::testing::Test {
 protected:
  // One finished run that delivered `ids` to `url`.
  void Run(const std::string& url, const std::vector<std::string>& ids) {
    ReplayLedger ledger(store_, "dlq-archive", clock_);
    for (const std::string& id : ids) ASSERT_TRUE(ledger.RecordSent(url, id).ok());
    ASSERT_TRUE(ledger.Flush().ok());
    clock_.Advance(std::chrono::seconds(1));
  }
  std::vector<std::string> KeysUnder(const std::string& dir) {
    std::vector<std::string> out;
    for (const std::string& k : store_.Keys()) {
      if (k.starts_with(dir)) out.push_back(k);
    }
    return out;
  }

  FakeClock clock_;
  FakeObjectStore store_{"fake://archive", &clock_};
};

TEST(LedgerFormatTest, PartAndIndexParseBackToWhatWasWritten) {
  LedgerPart part{kQueue, {"id-1", "id-2"}};
  auto p = ParseLedgerPart(SerializeLedgerPart(part));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->destination, kQueue);
  EXPECT_EQ(p->ids, part.ids);
  LedgerIndex index{kQueue, {"a.ids", "b.ids"}, {1, 0xabcdef, UINT64_MAX}};
  auto i = ParseLedgerIndex(SerializeLedgerIndex(index));
  ASSERT_TRUE(i.ok()) << i.status().ToString();
  EXPECT_EQ(i->parts, index.parts);
  EXPECT_EQ(i->hashes, index.hashes);
}

TEST(LedgerFormatTest, RefusesTornAndMalformedFiles) {
  const std::string part = SerializeLedgerPart({kQueue, {"id-1", "id-2"}});
  EXPECT_FALSE(ParseLedgerPart(part.substr(0, part.size() - 3)).ok());  // torn: no final newline
  EXPECT_FALSE(ParseLedgerPart("").ok());
  EXPECT_FALSE(ParseLedgerPart("dlq-archive sent ids v2\ndestination x\n").ok());
  EXPECT_FALSE(ParseLedgerPart("dlq-archive sent ids v1\ndestination x\nid\x1b[2J\n").ok());
  EXPECT_FALSE(ParseLedgerPart("dlq-archive sent ids v1\ndestination x\n\n").ok());  // empty id
  const std::string head = "dlq-archive sent index v1\ndestination x\npart a.ids\nhashes\n";
  EXPECT_TRUE(ParseLedgerIndex(head + "0000000000000001\n0000000000000002\n").ok());
  EXPECT_FALSE(ParseLedgerIndex(head + "0000000000000002\n0000000000000001\n").ok());  // not sorted
  EXPECT_FALSE(ParseLedgerIndex(head + "0000000000000001\n0000000000000001\n").ok());  // not unique
  EXPECT_FALSE(ParseLedgerIndex(head + "00000000000000A1\n").ok());                    // upper case
  EXPECT_FALSE(ParseLedgerIndex(head + "+000000000000001\n").ok());
  EXPECT_FALSE(ParseLedgerIndex(head + "1\n").ok());
  EXPECT_FALSE(ParseLedgerIndex("dlq-archive sent index v1\ndestination x\npart a.ids\n").ok());  // no hashes
}

TEST_F(ReplayLedgerTest, FindsWhatEarlierRunsDeliveredToTheSameDestinationOnly) {
  Run(kQueue, {"id-1", "id-2"});
  Run(kOther, {"id-3"});
  ReplayLedger ledger(store_, "dlq-archive", clock_);
  EXPECT_TRUE(*ledger.AlreadySent(kQueue, "id-1"));
  EXPECT_TRUE(*ledger.AlreadySent(kQueue, "id-2"));
  EXPECT_FALSE(*ledger.AlreadySent(kQueue, "id-3"));
  EXPECT_TRUE(*ledger.AlreadySent(kOther, "id-3"));
  EXPECT_FALSE(*ledger.AlreadySent(kOther, "id-1"));
}

TEST_F(ReplayLedgerTest, ConcurrentRunsWriteTheirOwnPartsAndBothAreSeen) {
  ReplayLedger a(store_, "dlq-archive", clock_), b(store_, "dlq-archive", clock_);  // same second
  ASSERT_TRUE(a.RecordSent(kQueue, "id-a").ok());
  ASSERT_TRUE(b.RecordSent(kQueue, "id-b").ok());
  ASSERT_TRUE(a.Flush().ok());
  ASSERT_TRUE(b.Flush().ok());
  EXPECT_EQ(KeysUnder("dlq-archive/_audit/sent/").size(), 2u);
  ReplayLedger reader(store_, "dlq-archive", clock_);
  EXPECT_TRUE(*reader.AlreadySent(kQueue, "id-a"));
  EXPECT_TRUE(*reader.AlreadySent(kQueue, "id-b"));
}

TEST_F(ReplayLedgerTest, WritesAPartEveryFewThousandIdsSoACrashLosesFewRecords) {
  ReplayLedger ledger(store_, "dlq-archive", clock_);
  for (size_t i = 0; i < kLedgerPartIds + 1; ++i) ASSERT_TRUE(ledger.RecordSent(kQueue, fmt::format("id-{}", i)).ok());
  // No Flush (the process died): the first full part is stored.
  ReplayLedger reader(store_, "dlq-archive", clock_);
  EXPECT_TRUE(*reader.AlreadySent(kQueue, "id-0"));
  EXPECT_TRUE(*reader.AlreadySent(kQueue, fmt::format("id-{}", kLedgerPartIds - 1)));
  EXPECT_FALSE(*reader.AlreadySent(kQueue, fmt::format("id-{}", kLedgerPartIds)));
}

TEST_F(ReplayLedgerTest, RebuildsTheIndexOnceManyPartsAreOutsideItAndThenReadsOnlyTheNewParts) {
  for (size_t run = 0; run <= kLedgerCompactAfter; ++run) Run(kQueue, {fmt::format("id-{}", run)});
  {
    ReplayLedger reader(store_, "dlq-archive", clock_);
    EXPECT_TRUE(*reader.AlreadySent(kQueue, "id-0"));
    EXPECT_TRUE(reader.load_stats().index_written);
    EXPECT_EQ(reader.load_stats().parts_read, kLedgerCompactAfter + 1);
  }
  EXPECT_EQ(KeysUnder("dlq-archive/_audit/index/").size(), 1u);
  Run(kQueue, {"id-new"});
  ReplayLedger reader(store_, "dlq-archive", clock_);
  const int gets = store_.get_calls();
  EXPECT_TRUE(*reader.AlreadySent(kQueue, "id-3"));
  EXPECT_TRUE(*reader.AlreadySent(kQueue, "id-new"));
  EXPECT_FALSE(*reader.AlreadySent(kQueue, "id-other"));
  EXPECT_EQ(reader.load_stats().parts_read, 1u);  // the index covers the rest
  EXPECT_EQ(reader.load_stats().index_ids, kLedgerCompactAfter + 1);
  EXPECT_EQ(store_.get_calls() - gets, 2);  // the index and one part
  EXPECT_FALSE(reader.load_stats().index_written);
}

TEST_F(ReplayLedgerTest, ACorruptIndexIsIgnoredAndThePartsStillCount) {
  Run(kQueue, {"id-1"});
  const std::string dir = "dlq-archive/_audit/index/" + LedgerDestinationKey(kQueue) + "/";
  store_.Insert(dir + "9999999999-0000000000000000.idx", "dlq-archive sent index v1\ndestination ");  // torn
  ReplayLedger reader(store_, "dlq-archive", clock_);
  EXPECT_TRUE(*reader.AlreadySent(kQueue, "id-1"));
  ASSERT_EQ(reader.load_stats().warnings.size(), 1u);
  EXPECT_NE(reader.load_stats().warnings[0].find("9999999999-0000000000000000.idx: ignored"), std::string::npos);
}

TEST_F(ReplayLedgerTest, AnUnreadableLedgerIsAnErrorNeverNotSent) {
  Run(kQueue, {"id-1"});
  {
    ReplayLedger reader(store_, "dlq-archive", clock_);
    store_.FailNextGet(Unavailable("SlowDown"));
    EXPECT_FALSE(reader.AlreadySent(kQueue, "id-1").ok());
  }
  {
    ReplayLedger reader(store_, "dlq-archive", clock_);
    store_.FailNextList(PermissionDenied("AccessDenied"));
    EXPECT_FALSE(reader.AlreadySent(kQueue, "id-1").ok());
  }
  const std::string dir = "dlq-archive/_audit/sent/" + LedgerDestinationKey(kQueue) + "/";
  store_.Insert(dir + "20990101T000000Z-0000000000000000-000000.ids", "garbage");
  ReplayLedger reader(store_, "dlq-archive", clock_);
  auto r = reader.AlreadySent(kQueue, "id-1");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("20990101T000000Z-0000000000000000-000000.ids"), std::string::npos);
}

TEST_F(ReplayLedgerTest, APartWrittenForAnotherDestinationIsRefused) {
  const std::string dir = "dlq-archive/_audit/sent/" + LedgerDestinationKey(kQueue) + "/";
  store_.Insert(dir + "x.ids", SerializeLedgerPart({kOther, {"id-1"}}));
  ReplayLedger reader(store_, "dlq-archive", clock_);
  EXPECT_FALSE(reader.AlreadySent(kQueue, "id-1").ok());
}

TEST_F(ReplayLedgerTest, NoIndexIsWrittenWhenRebuildIsDisabled) {
  for (size_t run = 0; run <= kLedgerCompactAfter; ++run) Run(kQueue, {fmt::format("id-{}", run)});
  ReplayLedger reader(store_, "dlq-archive", clock_);
  reader.DisableIndexRebuild();
  EXPECT_TRUE(*reader.AlreadySent(kQueue, "id-0"));
  EXPECT_TRUE(KeysUnder("dlq-archive/_audit/index/").empty());
}

}  // namespace
}  // namespace dlq
