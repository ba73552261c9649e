#include "monitor/state_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "common/time_util.h"

namespace dlq {
namespace {

namespace fs = std::filesystem;
using std::chrono::hours;
using std::chrono::seconds;

const SystemTime kT0 = FromUnixMillis(int64_t{1764300000} * 1000);

class StateStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("state_store_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "state.sqlite").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<StateStore> Open() {
    SqliteStateStoreOptions o;
    o.now = kT0;
    o.on_moved_aside = [this](const std::string& moved, const Status& why) {
      moved_to_ = moved;
      moved_why_ = why;
    };
    auto s = OpenSqliteStateStore(path_, o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }

  static QueueRecord Record(SystemTime now) {
    QueueRecord r;
    r.key = {"orders", "https://sqs.us-east-1.amazonaws.com/1/orders-dlq"};
    r.name = "orders-dlq";
    r.last_empty = now - hours(2);
    r.nonempty_since = now - hours(1);
    r.runs = 3;
    r.archived = 42;
    r.failed_runs = 1;
    r.consecutive_failures = 0;
    r.last_error = StoredError{now - hours(1), "NoSuchBucket", "NotFound", "bucket is gone"};
    r.last_run_at = now - seconds(30);
    r.last_run_archived = 7;
    r.saved_at = now;
    StoredAlarm a;
    a.name = "orders-dlq-expiry";
    a.spec_key = "spec-1";
    a.snapshot.state = AlarmState::kAlarm;
    a.snapshot.periods = {{100, 6.0, 1.0, 5.0, 2.0}, {101, 0.5, 0.5, 0.5, 1.0}};
    a.snapshot.history = {Transition{AlarmState::kInsufficientData, AlarmState::kAlarm, now - seconds(60),
                                     "Threshold Crossed", 5.0, true}};
    r.alarms.push_back(a);
    r.samples = {{.time = now - seconds(60), .visible = 5, .not_visible = 0, .delayed = 0, .expiry_in_s = 10.5},
                 {.time = now, .visible = 0, .not_visible = 0, .delayed = 0, .expiry_in_s = std::nullopt}};
    return r;
  }

  fs::path dir_;
  std::string path_;
  std::string moved_to_;
  Status moved_why_;
};

TEST_F(StateStoreTest, RoundTripsAQueueAcrossReopen) {
  const QueueRecord in = Record(kT0);
  {
    auto store = Open();
    ASSERT_TRUE(store->SaveQueues({&in, 1}).ok());
  }
  auto store = Open();
  auto out = store->LoadQueue(in.key);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_TRUE(out->has_value());
  const QueueRecord& r = **out;
  EXPECT_EQ(r.name, "orders-dlq");
  EXPECT_EQ(r.last_empty, in.last_empty);
  EXPECT_EQ(r.nonempty_since, in.nonempty_since);
  EXPECT_FALSE(r.learned_at.has_value());
  EXPECT_EQ(r.runs, 3u);
  EXPECT_EQ(r.archived, 42u);
  EXPECT_EQ(r.failed_runs, 1u);
  ASSERT_TRUE(r.last_error.has_value());
  EXPECT_EQ(r.last_error->code, "NoSuchBucket");
  EXPECT_EQ(r.last_error->message, "bucket is gone");
  EXPECT_EQ(r.last_run_archived, 7u);
  ASSERT_EQ(r.alarms.size(), 1u);
  EXPECT_EQ(r.alarms[0].spec_key, "spec-1");
  EXPECT_EQ(r.alarms[0].snapshot.state, AlarmState::kAlarm);
  ASSERT_EQ(r.alarms[0].snapshot.periods.size(), 2u);
  EXPECT_EQ(r.alarms[0].snapshot.periods[0].index, 100);
  EXPECT_EQ(r.alarms[0].snapshot.periods[0].max, 5.0);
  EXPECT_EQ(r.alarms[0].snapshot.periods[1].sum, 0.5);
  ASSERT_EQ(r.alarms[0].snapshot.history.size(), 1u);
  EXPECT_EQ(r.alarms[0].snapshot.history[0].to, AlarmState::kAlarm);
  EXPECT_EQ(r.alarms[0].snapshot.history[0].value, 5.0);
  EXPECT_TRUE(r.alarms[0].snapshot.history[0].initial);
  ASSERT_EQ(r.samples.size(), 2u);
  EXPECT_EQ(r.samples[0].visible, 5);
  EXPECT_EQ(r.samples[0].expiry_in_s, 10.5);
  EXPECT_FALSE(r.samples[1].expiry_in_s.has_value());
  EXPECT_TRUE(moved_to_.empty());
}

TEST_F(StateStoreTest, SavesAppendSamplesAndTransitionsAndReplaceTheRest) {
  auto store = Open();
  QueueRecord r = Record(kT0);
  ASSERT_TRUE(store->SaveQueues({&r, 1}).ok());
  r = Record(kT0 + seconds(120));
  r.runs = 4;
  r.samples.resize(1);  // only the newest is new
  ASSERT_TRUE(store->SaveQueues({&r, 1}).ok());
  auto out = store->LoadQueue(r.key);
  ASSERT_TRUE(out.ok() && out->has_value());
  EXPECT_EQ((*out)->runs, 4u);
  EXPECT_EQ((*out)->samples.size(), 3u);
  EXPECT_EQ((*out)->alarms[0].snapshot.history.size(), 2u);
}

TEST_F(StateStoreTest, TheFileAndItsWalAreOwnerOnlyWhateverTheUmask) {
  struct Umask022 {
    mode_t old = ::umask(022);
    ~Umask022() { ::umask(old); }
  } umask022;
  auto mode = [](const std::string& p) {
    struct stat st {};
    EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
    return st.st_mode & 0777;
  };
  {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    const QueueRecord r = Record(kT0);
    ASSERT_TRUE(store->SaveQueues({&r, 1}).ok());
    EXPECT_EQ(mode(path_), 0600u);
    ASSERT_TRUE(fs::exists(path_ + "-wal"));
    EXPECT_EQ(mode(path_ + "-wal"), 0600u);
  }
  // A file an earlier version left readable by others is narrowed on open.
  fs::permissions(path_, fs::perms(0644));
  auto again = Open();
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(mode(path_), 0600u);
}

TEST_F(StateStoreTest, UnknownQueueLoadsNothing) {
  auto store = Open();
  auto out = store->LoadQueue({"g", "https://nowhere"});
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->has_value());
}

TEST_F(StateStoreTest, CorruptFileIsMovedAsideAndAFreshOneCreated) {
  {
    std::ofstream f(path_, std::ios::binary);
    f << std::string(8192, 'x');  // not an SQLite file
  }
  auto store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(moved_to_, path_ + ".corrupt-20251128T032000Z");  // kT0 in UTC
  EXPECT_EQ(moved_why_.code(), ErrorCode::kDataLoss) << moved_why_.ToString();
  EXPECT_TRUE(fs::exists(moved_to_));
  QueueRecord r = Record(kT0);
  EXPECT_TRUE(store->SaveQueues({&r, 1}).ok());
}

TEST_F(StateStoreTest, DamagedPagesAreMovedAside) {
  {
    auto store = Open();
    std::vector<QueueRecord> many;
    for (int i = 0; i < 200; ++i) {
      QueueRecord r = Record(kT0);
      r.key.url += std::to_string(i);
      many.push_back(r);
    }
    ASSERT_TRUE(store->SaveQueues(many).ok());
  }
  {
    // Scribble over the middle of the file (every page but the header).
    std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096 + 100);
    f << std::string(20000, '\x5a');
  }
  auto store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_FALSE(moved_to_.empty()) << "a damaged file must be moved aside";
  auto out = store->LoadQueue(Record(kT0).key);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->has_value());
}

TEST_F(StateStoreTest, ASecondOpenOfTheSameFileFailsAndMovesNothing) {
  auto first = Open();
  QueueRecord r = Record(kT0);
  ASSERT_TRUE(first->SaveQueues({&r, 1}).ok());
  auto second = OpenSqliteStateStore(path_, {.now = kT0, .on_moved_aside = {}});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), ErrorCode::kUnavailable) << second.status().ToString();
  EXPECT_FALSE(fs::exists(path_ + ".corrupt-20251128T032000Z"));
}

TEST_F(StateStoreTest, PruneKeepsTheNewestSamplesAndTransitionsAndForgetsStaleQueues) {
  auto store = Open();
  QueueRecord live = Record(kT0);
  live.samples.clear();
  for (int i = 0; i < 50; ++i) live.samples.push_back({.time = kT0 + seconds(i), .visible = i});
  for (int i = 0; i < 10; ++i) {
    live.alarms[0].snapshot.history.push_back(
        Transition{AlarmState::kOk, AlarmState::kAlarm, kT0 + seconds(i), "r", std::nullopt, false});
  }
  QueueRecord stale = Record(kT0 - hours(24 * 30));
  stale.key.url = "https://sqs.us-east-1.amazonaws.com/1/gone-dlq";
  ASSERT_TRUE(store->SaveQueues(std::vector<QueueRecord>{live, stale}).ok());

  auto counts = store->Prune({.now = kT0 + seconds(60),
                              .max_age = hours(24 * 14),
                              .max_samples = 20,
                              .max_transitions = 4,
                              .watched_queues = std::nullopt});
  ASSERT_TRUE(counts.ok()) << counts.status().ToString();
  EXPECT_EQ(counts->queues, 1u);
  auto out = store->LoadQueue(live.key);
  ASSERT_TRUE(out.ok() && out->has_value());
  ASSERT_EQ((*out)->samples.size(), 20u);
  EXPECT_EQ((*out)->samples.front().visible, 30);
  EXPECT_EQ((*out)->samples.back().visible, 49);
  EXPECT_EQ((*out)->alarms[0].snapshot.history.size(), 4u);
  auto gone = store->LoadQueue(stale.key);
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->has_value());
}

TEST_F(StateStoreTest, LedgerUpsertLoadDeleteAndPrune) {
  auto store = Open();
  const std::string q1 = "https://sqs/1/a-dlq", q2 = "https://sqs/1/b-dlq";
  std::vector<LedgerRow> rows;
  for (int i = 0; i < 5; ++i) {
    rows.push_back({q1, "m" + std::to_string(i), kT0 + seconds(i), kT0 + hours(1), 3, 1});
  }
  rows.push_back({q2, "m0", kT0, kT0, 1, 1});
  ASSERT_TRUE(store->UpsertLedger(rows).ok());
  rows[0].own_receives = 2;  // an upsert replaces the row
  ASSERT_TRUE(store->UpsertLedger({rows.data(), 1}).ok());
  auto a = store->LoadLedger(q1);
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->size(), 5u);
  EXPECT_EQ((*a)[0], rows[0]);
  EXPECT_EQ((*a)[4], rows[4]);

  const std::vector<std::string> del = {"m1"};
  ASSERT_TRUE(store->DeleteLedger(q1, del).ok());
  auto expired = store->PruneLedger(q1, kT0 + seconds(3));  // m0 and m2 are older
  ASSERT_TRUE(expired.ok());
  EXPECT_EQ(*expired, 2u);
  a = store->LoadLedger(q1);
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->size(), 2u);
  EXPECT_EQ((*a)[0].message_id, "m3");

  auto counts = store->Prune({.now = kT0, .watched_queues = std::vector<std::string>{q1}});
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->ledger, 1u);  // b-dlq is no longer watched
  auto b = store->LoadLedger(q2);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->empty());
}

TEST(StateFileNameTest, EachShardOwnsItsFile) {
  EXPECT_EQ(StateFileName(0, 1), "state.sqlite");
  EXPECT_EQ(StateFileName(1, 3), "state-shard-1-of-3.sqlite");
}

}  // namespace
}  // namespace dlq
