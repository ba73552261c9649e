#include "archiver/drainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "archive/gzip.h"
#include "common/strings.h"
#include "query/scan.h"
#include "sqs/queue_client_wrapper.h"
#include "testing/fake_clock.h"
#include "testing/fake_object_store.h"
#include "testing/fake_queue.h"
#include "testing/quiescence.h"
#include "testing/scoped_capturing_logger.h"
#include "testing/virtual_clock.h"

namespace dlq {
namespace {

using Op = FakeQueueClient::Operation;
using std::chrono::seconds;

// Counts ReceiveMessage calls, the empty ones and the most running at once;
// each call first takes `delay` of `clock`'s time, so that concurrent
// receives overlap, or, `one_at_a_time`, queue behind each other (a server
// that serves one receive at a time).
class ReceiveObserver : public QueueClientWrapper {
 public:
  ReceiveObserver(QueueClient& target, Clock& clock, std::chrono::milliseconds delay, bool one_at_a_time = false)
      : QueueClientWrapper(target), clock_(clock), delay_(delay), one_at_a_time_(one_at_a_time) {}

  Result<std::vector<Message>> ReceiveMessages(const std::string& queue_url, const ReceiveOptions& options) override {
    int running = ++running_;
    for (int max = max_running_; running > max && !max_running_.compare_exchange_weak(max, running);) {
    }
    SteadyTime served;
    {
      std::lock_guard lock(server_);
      const SteadyTime now = clock_.SteadyNow();
      served = (one_at_a_time_ ? std::max(now, server_free_at_) : now) + delay_;
      if (one_at_a_time_) server_free_at_ = served;
    }
    clock_.SleepFor(served - clock_.SteadyNow());
    auto got = QueueClientWrapper::ReceiveMessages(queue_url, options);
    --running_;
    ++calls_;
    if (got.ok() && got->empty()) {
      ++empty_;
      auto attrs = target().GetQueueAttributes(queue_url, {"ApproximateNumberOfMessages"});
      if (options.wait_time_seconds > 0 && attrs.ok() && attrs->at("ApproximateNumberOfMessages") != "0") {
        ++blocked_long_polls_;
      }
    }
    return got;
  }

  int calls() const { return calls_; }
  int empty() const { return empty_; }
  int max_running() const { return max_running_; }
  // Long polls that came back empty while the queue showed visible messages
  // (in a FIFO queue: messages of groups blocked by messages in flight).
  int blocked_long_polls() const { return blocked_long_polls_; }

 private:
  Clock& clock_;
  const std::chrono::milliseconds delay_;
  const bool one_at_a_time_;
  std::mutex server_;
  SteadyTime server_free_at_{};  // under server_: when the server has served every receive so far
  std::atomic<int> calls_{0}, empty_{0}, running_{0}, max_running_{0}, blocked_long_polls_{0};
};

// The drainer's clock for a test that steps the heartbeat: a FakeClock whose
// timed waits of `tick` are counted, so the test can wait until the loop
// that waits `tick` at a time (the heartbeat) has done a round at the
// current time or later. Nothing else in the drainer waits 20 ms.
class RoundCountingClock final : public Clock {
 public:
  RoundCountingClock(FakeClock& clock, std::chrono::milliseconds tick) : clock_(clock), tick_(tick) {}
  SystemTime Now() const override { return clock_.Now(); }
  SteadyTime SteadyNow() const override { return clock_.SteadyNow(); }
  void SleepFor(Duration d) override { clock_.SleepFor(d); }
  bool WaitUntil(Mutex& mu, CondVar& cv, SteadyTime deadline, const std::function<bool()>& pred) override
      DLQ_REQUIRES(mu) {
    if (deadline - clock_.SteadyNow() == tick_) {
      std::lock_guard lock(rounds_mu_);
      ++rounds_;
      rounds_cv_.notify_all();
    }
    return clock_.WaitUntil(mu, cv, deadline, pred);
  }

  // Advances by `d`, then until the ticking loop has begun a round after
  // it: one round woken by the advance may have started before it, so wait
  // for a round, advance one tick, and wait for the next one. False when a
  // round took more than 10 s of real time.
  bool AdvanceAndAwaitRound(Duration d) {
    for (Duration step : {d, Duration(tick_)}) {
      int before = Rounds();
      clock_.Advance(step);
      std::unique_lock lock(rounds_mu_);
      if (!rounds_cv_.wait_for(lock, seconds(10), [&] { return rounds_ > before; })) return false;
    }
    return true;
  }

 private:
  int Rounds() {
    std::lock_guard lock(rounds_mu_);
    return rounds_;
  }

  FakeClock& clock_;
  const Duration tick_;
  std::mutex rounds_mu_;
  std::condition_variable rounds_cv_;
  int rounds_ = 0;
};

class DrainerTest : public ::testing::Test {
 protected:
  DrainerTest() : sqs_(clock_), store_("fake://archive", &clock_) {
    auto url = sqs_.CreateQueue("orders-dlq", {{"MessageRetentionPeriod", "345600"}, {"VisibilityTimeout", "30"}});
    EXPECT_TRUE(url.ok());
    url_ = *url;
    options_.wait_time_seconds = 0;
    // Every receiver receives (the tests of the governor turn it on: it
    // measures rates, and this clock stands still).
    options_.adaptive_receivers = false;
    options_.receivers = 2;
    options_.deleters = 2;
    options_.heartbeat_interval = std::chrono::milliseconds(20);
    options_.visibility_timeout = seconds(60);
    options_.batch.max_messages = 25;
  }

  // ApproximateNumberOfMessages: visible now.
  int64_t VisibleNow() {
    auto attrs = sqs_.GetQueueAttributes(url_, {"ApproximateNumberOfMessages"});
    return attrs.ok() ? ParseInt64(attrs->at("ApproximateNumberOfMessages")).value_or(-1) : -1;
  }

  std::vector<std::string> Send(int n, SystemTime sent_at = SystemTime{}) {
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i) {
      SendEntry e;
      e.body = "poison #" + std::to_string(i) + " \xF0\x9F\x92\xA5 \"quoted\"";
      e.message_attributes["kind"] = {"String", "order", ""};
      e.message_attributes["blob"] = {"Binary", "", std::string("\x00\x01\xff", 3)};
      auto id =
          sent_at == SystemTime{} ? sqs_.InjectMessage(url_, e, clock_.Now()) : sqs_.InjectMessage(url_, e, sent_at);
      EXPECT_TRUE(id.ok());
      ids.push_back(*id);
    }
    return ids;
  }

  // Receives everything visible now, hiding it for an hour: what a run left
  // invisible is missing from the count.
  size_t ReceiveAllVisible() {
    ReceiveOptions ro;
    ro.max_messages = 10;
    ro.visibility_timeout = 3600;
    size_t n = 0;
    for (auto got = sqs_.ReceiveMessages(url_, ro); got.ok() && !got->empty(); got = sqs_.ReceiveMessages(url_, ro)) {
      n += got->size();
    }
    return n;
  }

  // The drainer's clock from now on: virtual time, which moves only while
  // the run's threads all wait (VirtualClock). Its SQS keeps clock_.
  VirtualClock& UseVirtualTime() {
    virtual_clock_ = std::make_unique<VirtualClock>(clock_.Now());
    drain_clock_ = virtual_clock_.get();
    return *virtual_clock_;
  }

  // Up to eight receivers under the governor, receiving through `observer`
  // (the governor measures rates: on virtual time they are exact).
  void GovernEight(ReceiveObserver& observer) {
    options_.receivers = 8;
    options_.adaptive_receivers = true;
    client_ = &observer;
  }

  DrainResult Drain(QueueDrainer** out = nullptr) {
    auto q = ResolveQueue(sqs_, url_, "us-east-1");
    EXPECT_TRUE(q.ok()) << q.status().ToString();
    EXPECT_TRUE(options_.Validate().ok()) << options_.Validate().ToString();
    ArchiveContext ctx;
    ctx.queue = q->name;
    ctx.queue_url = q->url;
    ctx.region = q->region;
    ctx.account_id = q->account_id;
    ctx.retention = q->retention;
    ctx.archiver_version = "test";
    ctx.host = "test-host";
    QueueClient& client = client_ != nullptr ? *client_ : sqs_;
    drainer_ = std::make_unique<QueueDrainer>(client, store_, *drain_clock_, *q, options_, ctx);
    if (out) *out = drainer_.get();
    return drainer_->Run();
  }

  // message id -> body, as stored in the archive (de-duplicated).
  std::map<std::string, std::string> Archived(uint64_t* duplicates = nullptr) {
    std::map<std::string, std::string> out;
    ScanOptions so;
    so.parallelism = 2;
    auto stats = ScanArchive(store_, ParseDestination("s3://bucket").value(), so,
                             [&](const ArchiveRecord& r, const RecordLocation&) {
                               out[r.message_id] = r.body;
                               return true;
                             });
    EXPECT_TRUE(stats.ok()) << stats.status().ToString();
    if (stats.ok() && duplicates) *duplicates = stats->duplicates;
    if (stats.ok()) {
      EXPECT_TRUE(stats->complete());
    }
    return out;
  }

  // A FIFO queue `orders-dlq.fifo` (made the queue drained) holding
  // `per_group` messages in each of `groups` groups, sent round robin.
  std::vector<std::string> SendFifo(int groups, int per_group) {
    auto url = sqs_.CreateQueue("orders-dlq.fifo", {{"FifoQueue", "true"}, {"MessageRetentionPeriod", "345600"}});
    EXPECT_TRUE(url.ok()) << url.status().ToString();
    url_ = *url;
    std::vector<std::string> ids;
    for (int i = 0; i < groups * per_group; ++i) {
      SendEntry e;
      e.body = "fifo " + std::to_string(i);
      e.message_group_id = "g" + std::to_string(i % groups);
      e.message_deduplication_id = "d" + std::to_string(i);
      ids.push_back(*sqs_.InjectMessage(url_, e, clock_.Now()));
    }
    return ids;
  }

  // The archive's records in the order a reader meets them: objects in the
  // order they were stored (`keys`), lines in object order.
  std::vector<ArchiveRecord> RecordsInOrder(const std::vector<std::string>& keys) {
    auto objects = store_.Objects();
    std::vector<ArchiveRecord> out;
    for (const std::string& key : keys) {
      auto it = objects.find(key);
      EXPECT_NE(it, objects.end()) << key;
      if (it == objects.end()) continue;
      std::string text = GzipDecompress(it->second.data, 1 << 24).value();
      for (std::string_view line : Split(text, '\n')) {
        if (line.empty()) continue;
        auto rec = ParseRecordJson(line);
        EXPECT_TRUE(rec.ok()) << rec.status().ToString();
        if (rec.ok()) out.push_back(std::move(*rec));
      }
    }
    return out;
  }

  FakeClock clock_;
  FakeQueueClient sqs_;
  FakeObjectStore store_;
  std::string url_;
  DrainOptions options_;
  QueueClient* client_ = nullptr;                // the drainer's SQS when set (a wrapper over sqs_)
  std::unique_ptr<VirtualClock> virtual_clock_;  // see UseVirtualTime
  Clock* drain_clock_ = &clock_;                 // the drainer's clock
  std::unique_ptr<QueueDrainer> drainer_;
};

TEST_F(DrainerTest, ArchivesEveryMessageThenDeletesIt) {
  auto ids = Send(103);
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.drained);
  EXPECT_EQ(r.stats.archived, 103u);
  EXPECT_EQ(r.stats.deleted, 103u);
  EXPECT_EQ(r.stats.duplicates, 0u);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
  EXPECT_EQ(r.stats.objects, 5u);  // 4 full batches of 25 and the rest: no partial seals
  auto archived = Archived();
  ASSERT_EQ(archived.size(), 103u);
  for (const auto& id : ids) EXPECT_TRUE(archived.count(id)) << id;
  for (const auto& [key, obj] : store_.Objects()) {
    EXPECT_EQ(key.rfind("dlq-archive/orders-dlq/", 0), 0u) << key;
    EXPECT_TRUE(obj.options.create_only);
    EXPECT_EQ(key.substr(key.size() - 8), ".json.gz");
  }
}

TEST_F(DrainerTest, StartLogNamesTheDestinationWithItsKeyPrefix) {
  ScopedCapturingLogger log;
  Send(3);
  options_.prefix = "arch";
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  bool found = false;
  for (const auto& e : log->entries()) {
    if (e.event != "archive.start") continue;
    found = true;
    EXPECT_NE(e.line.find("\"destination\":\"fake://archive/arch\""), std::string::npos) << e.line;
  }
  EXPECT_TRUE(found);
}

TEST_F(DrainerTest, RecordsSayWhichReceivesWereOurs) {
  auto ids = Send(3);
  // The consumer received each message once before it reached us.
  ReceiveOptions ro;
  ro.max_messages = 10;
  ro.visibility_timeout = 0;
  ASSERT_EQ(sqs_.ReceiveMessages(url_, ro)->size(), 3u);
  // The daemon's ledger: we received ids[0] twice before this run (so did SQS).
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(sqs_.ReceiveMessages(url_, ro)->size(), 3u);
  }
  options_.prior_own_receives = [&](const std::string& id) { return id == ids[0] ? 2 : 0; };
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  std::vector<ArchiveRecord> records = RecordsInOrder(r.keys);
  ASSERT_EQ(records.size(), 3u);
  for (const ArchiveRecord& rec : records) {
    EXPECT_EQ(rec.receive_count, 4) << rec.message_id;  // SQS's count, as reported
    if (rec.message_id == ids[0]) {
      EXPECT_EQ(rec.own_receive_count, 3);  // 2 before, 1 in this run
      EXPECT_EQ(ConsumerReceiveCount(rec), 1);
    } else {
      EXPECT_EQ(rec.own_receive_count, 1) << rec.message_id;
      EXPECT_EQ(ConsumerReceiveCount(rec), 3);
    }
  }
}

TEST_F(DrainerTest, SealsOnlyFullBatchesWhileReceiversWaitForUploadSlots) {
  Send(200);
  options_.receivers = 4;
  options_.max_batches_in_flight = 1;
  options_.batch.max_messages = 25;
  VirtualClock& virtual_time = UseVirtualTime();
  store_.SetPutHook([&](const std::string&, std::string_view) {
    // Time moves on only once every receiver waits behind the slot.
    virtual_time.SleepFor(std::chrono::milliseconds(30));
    return Status::Ok();
  });
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.stats.archived, 200u);
  EXPECT_EQ(r.stats.objects, 8u);  // 8 x 25, never a partial batch sealed by a waiting receiver
}

// Batch buffers are the largest part of the RSS (8 MiB each by default):
// however fast receivers fill batches, one is compressed at a time, so two
// buffers serve the whole run.
TEST_F(DrainerTest, TwoBatchBuffersServeTheRunWhateverTheReceivers) {
  std::mt19937 rng(7);
  std::string body(200000, ' ');
  for (char& c : body) c = static_cast<char>('!' + rng() % 90);  // slow to compress
  for (int i = 0; i < 48; ++i) {
    SendEntry e;
    e.body = body;
    ASSERT_TRUE(sqs_.InjectMessage(url_, e, clock_.Now()).ok());
  }
  options_.receivers = 8;
  options_.max_batches_in_flight = 4;
  options_.batch.max_messages = 2;
  options_.batch.gzip_level = 9;
  QueueDrainer* drainer = nullptr;
  DrainResult r = Drain(&drainer);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.stats.archived, 48u);
  EXPECT_EQ(r.stats.objects, 24u);
  EXPECT_LE(drainer->batch_buffers_made(), 2);
  EXPECT_EQ(Archived().size(), 48u);
}

// A server that serves one receive at a time (a stand-in, a throttled
// endpoint): receivers beyond two only wait in its queue. The run tries
// four, sees no more messages per second, and keeps two of its eight. (The
// exact levels are ReceiverGovernor's tests, on simulated time:
// AServerThatServesOneReceiveAtATimeKeepsTwoReceivers.)
TEST_F(DrainerTest, ReceiversBeyondWhatTheServerServesAtOnceWait) {
  Send(1000);
  options_.batch.max_messages = 200;
  ReceiveObserver observer(sqs_, UseVirtualTime(), std::chrono::milliseconds(20), /*one_at_a_time=*/true);
  GovernEight(observer);
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.drained) << r.incomplete_reason;
  EXPECT_EQ(r.stats.archived, 1000u);
  EXPECT_LE(r.stats.receivers, 4);
  EXPECT_GE(r.stats.receivers, 2);
  EXPECT_GE(observer.max_running(), 4);  // the probe ran
  EXPECT_EQ(Archived().size(), 1000u);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
}

// SQS serves receives side by side: each doubling raises the rate, and all
// eight receivers receive.
TEST_F(DrainerTest, ReceiversServedSideBySideAllReceive) {
  Send(2400);
  options_.batch.max_messages = 400;
  ReceiveObserver observer(sqs_, UseVirtualTime(), std::chrono::milliseconds(20));
  GovernEight(observer);
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.drained) << r.incomplete_reason;
  EXPECT_EQ(r.stats.archived, 2400u);
  EXPECT_EQ(observer.max_running(), 8);
  EXPECT_EQ(Archived().size(), 2400u);
}

// Receivers waiting for the level do not hold a stopping run up, and what
// the run held goes back.
TEST_F(DrainerTest, AStopEndsARunWhoseReceiversWaitForTheLevel) {
  Send(3000);
  options_.batch.max_messages = 300;
  options_.max_batches_in_flight = 1;
  VirtualClock& virtual_time = UseVirtualTime();
  ReceiveObserver observer(sqs_, virtual_time, std::chrono::milliseconds(10), /*one_at_a_time=*/true);
  GovernEight(observer);
  QueueDrainer* drainer = nullptr;
  std::atomic<int> puts{0};
  SteadyTime stopped_at;
  int receivers_at_stop = 0;
  store_.SetPutHook([&](const std::string&, std::string_view) {
    // The third object is 900 messages in: past the governor's probe (about
    // 500 at this server's 1000 a second).
    if (++puts == 3) {
      receivers_at_stop = drainer->Snapshot().receivers;
      stopped_at = virtual_time.SteadyNow();
      drainer->RequestStop();
    }
    return Status::Ok();
  });
  DrainResult r = Drain(&drainer);
  const auto stopping = virtual_time.SteadyNow() - stopped_at;
  EXPECT_EQ(receivers_at_stop, 2);
  EXPECT_TRUE(r.stopped);
  EXPECT_LT(stopping, std::chrono::seconds(2));
  EXPECT_EQ(r.stats.archived, 900u);
  EXPECT_EQ(r.stats.deleted, 900u);
  EXPECT_EQ(sqs_.Depth(url_), 2100u);
  // Nothing is left invisible: the rest can all be received at once.
  EXPECT_EQ(ReceiveAllVisible(), 2100u);
}

// SQS answers an empty long poll only when nothing is visible: the run
// checks the depth at once instead of polling empty a few more times.
TEST_F(DrainerTest, AnEmptyLongPollEndsTheRunWithoutFurtherPolls) {
  auto ids = Send(40);
  options_.receivers = 1;
  options_.wait_time_seconds = 2;  // the fake answers at once
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.drained) << r.incomplete_reason;
  EXPECT_EQ(r.stats.archived, 40u);
  EXPECT_EQ(r.stats.deleted, 40u);
  EXPECT_EQ(r.stats.objects, 2u);                  // 25 and the rest, sealed by the empty poll
  EXPECT_EQ(sqs_.calls(Op::kReceiveMessages), 5);  // 4 with messages, 1 empty
  EXPECT_EQ(sqs_.Depth(url_), 0u);
  EXPECT_EQ(Archived().size(), 40u);
}

// With short polls an empty receive proves little: the run still needs
// empty_receives_to_drain of them before it checks the depth.
TEST_F(DrainerTest, EmptyShortPollsStillCountTowardsTheDepthCheck) {
  Send(40);
  options_.receivers = 1;
  options_.wait_time_seconds = 0;
  options_.empty_receives_to_drain = 3;
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.drained) << r.incomplete_reason;
  EXPECT_EQ(r.stats.archived, 40u);
  EXPECT_EQ(sqs_.calls(Op::kReceiveMessages), 7);  // 4 with messages, 3 empty
}

// Builders and object buffers are reused across batches of very different
// sizes: every object holds exactly its own records.
TEST_F(DrainerTest, ReusedBatchBuffersNeverCarryBytesIntoTheNextObject) {
  std::map<std::string, std::string> sent;
  for (int i = 0; i < 90; ++i) {
    SendEntry e;
    e.body = std::string(i < 30 ? 20000 : (i < 60 ? 7 : 3000), static_cast<char>('a' + i % 26));
    sent[*sqs_.InjectMessage(url_, e, clock_.Now())] = e.body;
  }
  options_.receivers = 1;
  options_.batch.max_messages = 10;
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.drained) << r.incomplete_reason;
  EXPECT_EQ(r.stats.objects, 9u);
  uint64_t duplicates = 0;
  EXPECT_EQ(Archived(&duplicates), sent);
  EXPECT_EQ(duplicates, 0u);
  size_t lines = 0;
  for (const auto& [key, obj] : store_.Objects()) {
    std::string text = GzipDecompress(obj.data, 1 << 22).value();
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 10) << key;
    lines += static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  }
  EXPECT_EQ(lines, 90u);
}

TEST_F(DrainerTest, DeletesNothingWhenUploadFails) {
  Send(40);
  store_.FailNextPut(PermissionDenied("AccessDenied: Access Denied"), 100);
  DrainResult r = Drain();
  EXPECT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.code(), ErrorCode::kPermissionDenied);
  EXPECT_EQ(r.stats.deleted, 0u);
  EXPECT_EQ(sqs_.calls(Op::kDeleteMessageBatch), 0);
  EXPECT_EQ(sqs_.Depth(url_), 40u);
  // Everything received was released: all 40 are receivable again at once.
  ReceiveOptions ro;
  ro.max_messages = 10;
  size_t visible = 0;
  for (int i = 0; i < 10; ++i) visible += sqs_.ReceiveMessages(url_, ro)->size();
  EXPECT_EQ(visible, 40u);
}

TEST_F(DrainerTest, RetriesPartiallyFailedDeletesAndLosesNothing) {
  Send(50);
  sqs_.FailDeleteEntries(7, "InternalError");
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.stats.deleted, 50u);
  EXPECT_EQ(r.stats.delete_failures, 0u);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
  EXPECT_EQ(Archived().size(), 50u);
}

TEST_F(DrainerTest, ExpiredReceiptHandleIsSettledByTheCopyThatComesBack) {
  Send(20);
  sqs_.FailDeleteEntries(3, "ReceiptHandleIsInvalid");
  DrainResult r = Drain();
  // The 3 stayed in the DLQ; once visible again the same run received them
  // again and, their record stored already, deleted the copies without
  // archiving them twice: nothing lost, nothing counted twice.
  EXPECT_TRUE(r.drained) << r.incomplete_reason;
  EXPECT_EQ(r.stats.received_again, 3u);
  EXPECT_EQ(r.stats.duplicates, 0u);  // counted at the stale delete, taken back by the copy's
  EXPECT_EQ(r.stats.deleted, 20u);
  EXPECT_EQ(r.stats.archived, 20u);
  EXPECT_EQ(r.stats.received, 23u);
  uint64_t dups = 0;
  auto archived = Archived(&dups);
  EXPECT_EQ(archived.size(), 20u);
  EXPECT_EQ(dups, 0u);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
}

// The run ends before an expired handle's message comes back: it stays in
// the DLQ, archived, and counts as a duplicate (a later run archives it again).
TEST_F(DrainerTest, ExpiredReceiptHandleLeftInTheDlqCountsAsDuplicate) {
  Send(20);
  options_.max_messages = 20;  // the run ends once it has taken 20
  sqs_.FailDeleteEntries(3, "ReceiptHandleIsInvalid");
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.stats.archived, 20u);
  EXPECT_EQ(r.stats.deleted, 17u);
  EXPECT_EQ(r.stats.duplicates, 3u);
  EXPECT_EQ(r.stats.received_again, 0u);
  EXPECT_EQ(r.stats.archived, r.stats.deleted + r.stats.duplicates + r.stats.delete_failures);
  EXPECT_EQ(sqs_.Depth(url_), 3u);
}

// SQS may hand a message out twice (moto does whenever two receives run at
// once): the run archives it once, deletes it with the newest handle, and
// counts the copy as received again, not as archived or deleted twice.
TEST_F(DrainerTest, AMessageHandedOutTwiceIsArchivedAndCountedOnce) {
  auto ids = Send(40);
  sqs_.RedeliverNextReceived(7);
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.drained) << r.incomplete_reason;
  EXPECT_EQ(r.stats.archived, 40u);
  EXPECT_EQ(r.stats.deleted, 40u);
  EXPECT_EQ(r.stats.duplicates, 0u);
  EXPECT_EQ(r.stats.delete_failures, 0u);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
  uint64_t dups = 0;
  auto archived = Archived(&dups);
  EXPECT_EQ(archived.size(), 40u);
  EXPECT_EQ(dups, 0u);  // one line per message
  EXPECT_EQ(r.stats.received_again, 7u);
  EXPECT_EQ(r.stats.received, 47u);
}

TEST_F(DrainerTest, CrashBetweenUploadAndDeleteYieldsDuplicatesNotLoss) {
  auto ids = Send(30);
  // First run: every delete fails hard, as if the process died after upload.
  // One object of 30 = 3 DeleteMessageBatch calls, none retried (not
  // retryable); the run stops with the permission named. One receiver, so
  // the 30 always form one object.
  options_.batch.max_messages = 30;
  options_.receivers = 1;
  sqs_.FailNext(Op::kDeleteMessageBatch, PermissionDenied("AccessDenied"), 3);
  DrainResult first = Drain();
  EXPECT_EQ(first.status.code(), ErrorCode::kPermissionDenied);
  EXPECT_EQ(first.stats.archived, 30u);
  EXPECT_EQ(first.stats.deleted, 0u);
  EXPECT_EQ(sqs_.Depth(url_), 30u);
  // The messages come back after their visibility timeout; a second run archives them again.
  clock_.Advance(seconds(120));
  DrainResult second = Drain();
  ASSERT_TRUE(second.status.ok()) << second.status.ToString();
  EXPECT_EQ(second.stats.deleted, 30u);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
  uint64_t dups = 0;
  auto archived = Archived(&dups);
  EXPECT_EQ(archived.size(), 30u);
  EXPECT_EQ(dups, 30u);  // readers de-duplicate by message_id
  for (const auto& id : ids) EXPECT_TRUE(archived.count(id));
}

TEST_F(DrainerTest, SlowUploadGetsVisibilityExtended) {
  Send(10);
  options_.visibility_timeout = seconds(20);
  // One receiver: a second one, finding the queue empty while the first
  // holds a reply it has not placed yet, waits for it on the fake clock
  // (SleepFor advances it) and could run the messages' visibility out
  // before this test's steps begin.
  options_.receivers = 1;
  // Each Put takes 3 visibility timeouts of (fake) time, in 5 s steps the
  // heartbeat follows: it looks at each new time before the next step.
  RoundCountingClock drain_clock(clock_, options_.heartbeat_interval);
  drain_clock_ = &drain_clock;
  store_.SetPutHook([&](const std::string&, std::string_view) {
    for (int i = 0; i < 12; ++i) EXPECT_TRUE(drain_clock.AdvanceAndAwaitRound(seconds(5)));
    return Status::Ok();
  });
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_GT(r.stats.visibility_extensions, 0u);
  EXPECT_EQ(r.stats.deleted, 10u);
  EXPECT_EQ(r.stats.duplicates, 0u);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
}

// A reply that arrives late: SQS started the messages' visibility timeout
// when it answered, so the drainer counts their deadline from the request's
// start, not from the reply (else it would extend them too late).
class SlowReceiveReply : public QueueClientWrapper {
 public:
  SlowReceiveReply(QueueClient& target, FakeClock& clock, std::chrono::seconds delay)
      : QueueClientWrapper(target), clock_(clock), delay_(delay) {}
  Result<std::vector<Message>> ReceiveMessages(const std::string& queue_url, const ReceiveOptions& options) override {
    auto got = QueueClientWrapper::ReceiveMessages(queue_url, options);
    if (got.ok() && !got->empty()) clock_.Advance(delay_);
    return got;
  }

 private:
  FakeClock& clock_;
  const std::chrono::seconds delay_;
};

TEST_F(DrainerTest, VisibilityDeadlineCountsFromTheReceiveRequestNotItsReply) {
  Send(10);
  options_.visibility_timeout = seconds(20);
  options_.receivers = 1;
  // The reply comes 12 s after SQS answered: 8 s of visibility are left,
  // under the half of the timeout at which the heartbeat extends.
  SlowReceiveReply slow(sqs_, clock_, seconds(12));
  client_ = &slow;
  bool extended_in_time = false;
  RoundCountingClock drain_clock(clock_, options_.heartbeat_interval);
  drain_clock_ = &drain_clock;
  store_.SetPutHook([&](const std::string&, std::string_view) {
    // The heartbeat looks at t=12 and a tick, with the messages in hand.
    EXPECT_TRUE(drain_clock.AdvanceAndAwaitRound(options_.heartbeat_interval));
    extended_in_time = sqs_.calls(Op::kChangeMessageVisibilityBatch) > 0;
    clock_.Advance(seconds(13));  // past SQS's first deadline (t=20)
    return Status::Ok();
  });
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(extended_in_time);
  EXPECT_GE(r.stats.visibility_extensions, 10u);  // at t=12; maybe again after t=25
  EXPECT_EQ(r.stats.archived, 10u);
  EXPECT_EQ(r.stats.deleted, 10u);
  EXPECT_EQ(r.stats.duplicates, 0u);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
}

TEST_F(DrainerTest, StopFinishesInFlightUploadAndReleasesTheRest) {
  Send(200);
  options_.receivers = 1;
  options_.batch.max_messages = 20;
  options_.max_batches_in_flight = 1;
  QueueDrainer* drainer = nullptr;
  std::atomic<int> puts{0};
  store_.SetPutHook([&](const std::string&, std::string_view) {
    if (++puts == 1) drainer->RequestStop();
    return Status::Ok();
  });
  auto q = ResolveQueue(sqs_, url_, "us-east-1");
  ASSERT_TRUE(q.ok());
  ArchiveContext ctx;
  ctx.queue = q->name;
  QueueDrainer d(sqs_, store_, clock_, *q, options_, ctx);
  drainer = &d;
  DrainResult r = d.Run();
  EXPECT_TRUE(r.stopped);
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_GE(r.stats.archived, 20u);
  EXPECT_EQ(r.stats.deleted, r.stats.archived);
  // No loss: every message is in the archive or (visible again) in the queue.
  EXPECT_EQ(Archived().size() + sqs_.Depth(url_), 200u);
  ReceiveOptions ro;
  size_t visible = 0;
  for (int i = 0; i < 40; ++i) visible += sqs_.ReceiveMessages(url_, ro)->size();
  EXPECT_EQ(visible, sqs_.Depth(url_));
}

TEST_F(DrainerTest, OlderThanSelectsBySentTimestampAndReleasesTheRest) {
  auto old_ids = Send(12, clock_.Now() - std::chrono::hours(30));
  auto new_ids = Send(8, clock_.Now() - std::chrono::minutes(5));
  options_.selection = {SelectionKind::kOlderThan, std::chrono::hours(24)};
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.stats.archived, 12u);
  EXPECT_EQ(r.stats.skipped, 8u);
  auto archived = Archived();
  for (const auto& id : old_ids) EXPECT_TRUE(archived.count(id));
  for (const auto& id : new_ids) EXPECT_FALSE(archived.count(id));
  EXPECT_EQ(sqs_.Depth(url_), 8u);
}

TEST_F(DrainerTest, ExpiringWithinUsesOriginalSentTimestampPlusRetention) {
  // Retention 4 days: sent 3d20h ago expires in 4h; sent 1 day ago in 3 days.
  auto soon = Send(5, clock_.Now() - std::chrono::hours(92));
  auto later = Send(5, clock_.Now() - std::chrono::hours(24));
  options_.selection = {SelectionKind::kExpiringWithin, std::chrono::hours(6)};
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok());
  auto archived = Archived();
  EXPECT_EQ(archived.size(), 5u);
  for (const auto& id : soon) EXPECT_TRUE(archived.count(id));
  for (const auto& id : later) EXPECT_FALSE(archived.count(id));
}

TEST_F(DrainerTest, MaxMessagesStopsAtTheLimit) {
  Send(60);
  options_.max_messages = 15;
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.stats.archived, 15u);
  EXPECT_EQ(r.stats.deleted, 15u);
  EXPECT_EQ(sqs_.Depth(url_), 45u);
}

TEST_F(DrainerTest, DryRunUploadsAndDeletesNothing) {
  Send(30);
  options_.dry_run = true;
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.stats.selected, 30u);
  EXPECT_EQ(store_.put_calls(), 0);
  EXPECT_EQ(sqs_.calls(Op::kDeleteMessageBatch), 0);
  EXPECT_EQ(sqs_.Depth(url_), 30u);
}

TEST_F(DrainerTest, KeepArchivesACopyWithoutDeleting) {
  Send(30);
  options_.keep = true;
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.stats.archived, 30u);
  EXPECT_EQ(sqs_.calls(Op::kDeleteMessageBatch), 0);
  EXPECT_EQ(sqs_.Depth(url_), 30u);
  EXPECT_EQ(Archived().size(), 30u);
}

TEST_F(DrainerTest, KeepCountsEveryArchivedMessageAsKeptNotAsUnarchivedRelease) {
  Send(30);
  options_.keep = true;
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok());
  EXPECT_TRUE(r.drained);
  EXPECT_EQ(r.stats.kept, 30u);
  EXPECT_EQ(r.stats.released, 0u);  // nothing went back unarchived
  EXPECT_EQ(r.stats.abandoned_receives, 0u);
}

TEST_F(DrainerTest, MissingQueueFailsWithoutDeleting) {
  Send(5);
  sqs_.FailNext(Op::kReceiveMessages, NotFound("QueueDoesNotExist: The specified queue does not exist."), 100);
  DrainResult r = Drain();
  EXPECT_EQ(r.status.code(), ErrorCode::kNotFound);
  EXPECT_NE(r.status.message().find("orders-dlq"), std::string::npos);
  EXPECT_EQ(r.stats.deleted, 0u);
  EXPECT_EQ(sqs_.Depth(url_), 5u);
}

// ---- Failure paths: every pipeline state x every fault ends the run, loses
// nothing and holds nothing.

enum class Fault { kUploadDenied, kDeleteDenied, kHeartbeatFails, kStop };
enum class State { kReceiving, kBuilding, kWaitingForSlot, kUploading, kDeleting };

struct FailureCase {
  Fault fault;
  State state;
};

std::string CaseName(const ::testing::TestParamInfo<FailureCase>& info) {
  const char* f[] = {"UploadDenied", "DeleteDenied", "HeartbeatFails", "Stop"};
  const char* st[] = {"Receiving", "Building", "WaitingForSlot", "Uploading", "Deleting"};
  return std::string(f[static_cast<int>(info.param.fault)]) + "While" + st[static_cast<int>(info.param.state)];
}

class DrainerFailureTest : public DrainerTest, public ::testing::WithParamInterface<FailureCase> {
 protected:
  // Messages neither archived nor in the queue: must be none.
  std::vector<std::string> Lost(const std::vector<std::string>& sent) {
    auto archived = Archived();
    std::set<std::string> in_queue;
    for (const Message& m : sqs_.Messages(url_)) in_queue.insert(m.message_id);
    std::vector<std::string> lost;
    for (const auto& id : sent)
      if (!archived.count(id) && !in_queue.count(id)) lost.push_back(id);
    return lost;
  }
  // Receives everything visible right now (without advancing the clock).
  size_t VisibleNow() {
    ReceiveOptions ro;
    ro.visibility_timeout = 3600;
    size_t n = 0;
    for (int i = 0; i < 200; ++i) {
      auto got = sqs_.ReceiveMessages(url_, ro);
      if (!got.ok() || got->empty()) break;
      n += got->size();
    }
    return n;
  }
};

TEST_P(DrainerFailureTest, EndsLosesNothingAndHoldsNothing) {
  const FailureCase c = GetParam();
  auto sent = Send(300);
  options_.receivers = 4;
  options_.batch.max_messages = c.state == State::kBuilding ? 1000 : 20;
  options_.max_batches_in_flight = c.state == State::kWaitingForSlot ? 1 : 2;
  std::atomic<bool> fault_on{false};
  std::atomic<int> puts{0};
  QueueDrainer* drainer = nullptr;
  std::atomic<bool> ready{false};
  // The drainer, the hook's waits and the trigger's looks share virtual
  // time: each look sees the run where it stands, whatever the machine.
  VirtualClock& virtual_time = UseVirtualTime();
  auto activate = [&] {
    if (fault_on.exchange(true)) return;
    switch (c.fault) {
      case Fault::kUploadDenied: break;  // the put hook fails from now on
      case Fault::kDeleteDenied:
        sqs_.FailNext(Op::kDeleteMessageBatch, PermissionDenied("AccessDenied: sqs:DeleteMessage"), 10000);
        break;
      case Fault::kHeartbeatFails:
        sqs_.FailNext(Op::kChangeMessageVisibilityBatch, Unavailable("InternalError"), 10000);
        break;
      case Fault::kStop: drainer->RequestStop(); break;
    }
  };
  store_.SetPutHook([&](const std::string&, std::string_view) -> Status {
    int n = ++puts;
    // The trigger thread below must fire while the run is still in its
    // state: hold the upload that would let the run move on, for at most
    // 10 s, until it has fired.
    const bool wait_for_trigger =
        c.state == State::kReceiving || c.state == State::kBuilding || (c.state == State::kDeleting && n >= 3);
    for (int i = 0; wait_for_trigger && !fault_on && i < 10000; ++i) {
      virtual_time.SleepFor(std::chrono::milliseconds(1));
    }
    if (c.state == State::kUploading && n == 1) activate();
    if (c.state == State::kWaitingForSlot) {
      if (n == 2) activate();
      virtual_time.SleepFor(std::chrono::milliseconds(20));
    }
    if (c.fault == Fault::kUploadDenied && fault_on) {
      return Status(ErrorCode::kPermissionDenied, "Access Denied").WithAws({"AccessDenied", 403, "REQ1"});
    }
    return Status::Ok();
  });
  auto q = ResolveQueue(sqs_, url_, "us-east-1");
  ASSERT_TRUE(q.ok());
  ArchiveContext ctx;
  ctx.queue = q->name;
  ctx.retention = q->retention;
  QueueDrainer d(sqs_, store_, virtual_time, *q, options_, ctx);
  drainer = &d;
  ready = true;
  std::atomic<bool> done{false};
  std::thread trigger([&] {
    while (!done && !fault_on) {
      bool fire = false;
      switch (c.state) {
        case State::kReceiving: fire = sqs_.calls(Op::kReceiveMessages) >= 3; break;
        case State::kBuilding: fire = d.Snapshot().selected >= 30; break;
        case State::kDeleting: fire = sqs_.calls(Op::kDeleteMessageBatch) >= 1; break;
        default: break;
      }
      if (fire) activate();
      virtual_time.SleepFor(std::chrono::microseconds(200));
    }
  });
  const SteadyTime start = virtual_time.SteadyNow();
  DrainResult r = d.Run();
  done = true;
  trigger.join();
  const auto took = virtual_time.SteadyNow() - start;
  EXPECT_LT(took, std::chrono::seconds(20));
  ASSERT_TRUE(fault_on) << "the fault never fired: this case tested nothing";
  EXPECT_TRUE(Lost(sent).empty()) << Lost(sent).size() << " lost";
  switch (c.fault) {
    case Fault::kUploadDenied:
      EXPECT_EQ(r.status.code(), ErrorCode::kPermissionDenied) << r.status.ToString();
      EXPECT_NE(r.status.message().find("AccessDenied"), std::string::npos) << r.status.message();
      EXPECT_NE(r.status.message().find("fake://archive/dlq-archive/orders-dlq/"), std::string::npos);
      EXPECT_NE(r.status.message().find("bucket policy"), std::string::npos);
      EXPECT_FALSE(r.drained);
      // Confirmed objects' messages were still deleted; the rest is visible again.
      EXPECT_EQ(r.stats.deleted, r.stats.archived);
      EXPECT_EQ(VisibleNow(), 300u - r.stats.deleted);
      break;
    case Fault::kDeleteDenied:
      // Archived but not deletable: the run stops, names the permission, and
      // the messages stay in the DLQ (archived, so never lost).
      EXPECT_GT(r.stats.delete_failures, 0u);
      EXPECT_EQ(r.status.code(), ErrorCode::kPermissionDenied) << r.status.ToString();
      EXPECT_NE(r.status.message().find("sqs:DeleteMessage"), std::string::npos);
      break;
    case Fault::kHeartbeatFails: EXPECT_TRUE(r.status.ok()) << r.status.ToString(); break;
    case Fault::kStop:
      EXPECT_TRUE(r.stopped);
      EXPECT_FALSE(r.drained);
      EXPECT_EQ(r.stats.deleted, r.stats.archived);
      EXPECT_EQ(VisibleNow(), 300u - r.stats.deleted);
      break;
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllStates, DrainerFailureTest, ::testing::ValuesIn([] {
      std::vector<FailureCase> cases;
      for (Fault f : {Fault::kUploadDenied, Fault::kDeleteDenied, Fault::kHeartbeatFails, Fault::kStop})
        for (State s :
             {State::kReceiving, State::kBuilding, State::kWaitingForSlot, State::kUploading, State::kDeleting})
          cases.push_back({f, s});
      return cases;
    }()),
    CaseName);

TEST_F(DrainerTest, PutDeniedMidDrainWithSmallBatchesAndManyReceiversEndsAndReleasesEverything) {
  // The reported hang: 8 receivers, 20-message batches, S3 starts refusing.
  auto sent = Send(400);
  options_.receivers = 8;
  options_.batch.max_messages = 20;
  std::atomic<int> puts{0};
  store_.SetPutHook([&](const std::string&, std::string_view) -> Status {
    if (++puts > 3) return Status(ErrorCode::kPermissionDenied, "Access Denied").WithAws({"AccessDenied", 403, "R"});
    return Status::Ok();
  });
  // The run's own waits (depth checks, backoffs) take virtual time; the
  // work between them none, however loaded the machine.
  VirtualClock& virtual_time = UseVirtualTime();
  DrainResult r = Drain();
  EXPECT_LT(virtual_time.Elapsed(), std::chrono::seconds(10));
  EXPECT_EQ(r.status.code(), ErrorCode::kPermissionDenied);
  EXPECT_EQ(r.stats.archived, 60u);
  EXPECT_EQ(r.stats.deleted, 60u);
  EXPECT_EQ(sqs_.Depth(url_), 340u);
  // Nothing is left invisible: all 340 can be received at once.
  EXPECT_EQ(ReceiveAllVisible(), 340u);
}

TEST_F(DrainerTest, ChecksumMismatchReleasesOnlyTheBadMessageAndArchivesItLater) {
  auto sent = Send(50);
  sqs_.CorruptReceivesOf(sent[7], 1);  // corrupted once in transit
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.drained);
  EXPECT_EQ(r.stats.corrupt, 1u);
  EXPECT_EQ(r.stats.archived, 50u);
  auto archived = Archived();
  ASSERT_EQ(archived.size(), 50u);
  // Nothing corrupted reached the archive.
  for (const Message& m : sqs_.Messages(url_)) ADD_FAILURE() << "left in queue: " << m.message_id;
  EXPECT_EQ(archived[sent[7]].substr(0, 8), "poison #");
}

TEST_F(DrainerTest, MessageCorruptOnEveryReceiveIsReportedAndNeverBlocksTheRest) {
  auto sent = Send(40);
  sqs_.CorruptReceivesOf(sent[3], -1);
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_FALSE(r.drained);
  EXPECT_TRUE(r.incomplete);
  ASSERT_EQ(r.corrupt_ids.size(), 1u);
  EXPECT_EQ(r.corrupt_ids[0], sent[3]);
  EXPECT_NE(r.incomplete_reason.find(sent[3]), std::string::npos) << r.incomplete_reason;
  EXPECT_EQ(r.stats.archived, 39u);
  EXPECT_EQ(sqs_.Depth(url_), 1u);
  EXPECT_FALSE(Archived().count(sent[3]));
}

TEST_F(DrainerTest, LostReceiveReplyIsWaitedForThenArchived) {
  auto sent = Send(30);
  // The first receive takes 10 messages but its reply never arrives.
  sqs_.FailNext(Op::kReceiveMessages, Unavailable("connection reset"), 1, /*after_applying=*/true);
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.drained) << r.incomplete_reason;
  EXPECT_EQ(Archived().size(), 30u);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
}

TEST_F(DrainerTest, MessagesHeldByAnotherConsumerMakeTheRunIncompleteWithAHint) {
  Send(25);
  // Another consumer holds 5 messages for an hour.
  ReceiveOptions other;
  other.max_messages = 5;
  other.visibility_timeout = 3600;
  ASSERT_EQ(sqs_.ReceiveMessages(url_, other)->size(), 5u);
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_FALSE(r.drained);
  EXPECT_TRUE(r.incomplete);
  EXPECT_NE(r.incomplete_reason.find("another consumer"), std::string::npos) << r.incomplete_reason;
  EXPECT_EQ(r.stats.archived, 20u);
  EXPECT_EQ(sqs_.Depth(url_), 5u);
}

TEST_F(DrainerTest, MalformedBatchReplyIsAnErrorNotACrash) {
  // A reply naming an entry that was not sent: the fake answers through
  // ValidateBatchReply exactly as SqsClient does.
  BatchResult reply;
  reply.successful_ids = {"0", "7"};
  EXPECT_EQ(ValidateBatchReply(reply, {"0", "1"}).code(), ErrorCode::kInternal);
  reply.successful_ids = {"x"};
  EXPECT_NE(ValidateBatchReply(reply, {"0"}).message().find("'x'"), std::string::npos);
  reply.successful_ids = {"0", "0"};
  EXPECT_FALSE(ValidateBatchReply(reply, {"0"}).ok());
  reply.successful_ids = {"0"};
  reply.failed = {{"1", "InternalError", "", false}};
  EXPECT_TRUE(ValidateBatchReply(reply, {"0", "1"}).ok());
}

TEST_F(DrainerTest, FifoQueueWithOneGroupSealsWhenReceivesComeBackEmpty) {
  auto url = sqs_.CreateQueue("orders-dlq.fifo", {{"FifoQueue", "true"}, {"MessageRetentionPeriod", "345600"}});
  ASSERT_TRUE(url.ok());
  url_ = *url;
  std::vector<std::string> ids;
  for (int i = 0; i < 45; ++i) {
    SendEntry e;
    e.body = "fifo " + std::to_string(i);
    e.message_group_id = "g1";
    e.message_deduplication_id = "d" + std::to_string(i);
    ids.push_back(*sqs_.InjectMessage(url_, e, clock_.Now()));
  }
  options_.batch.max_messages = 10000;
  options_.batch.max_age = std::chrono::hours(1);  // only empty receives can seal
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.drained) << r.incomplete_reason;
  // Every message archived (a copy archived twice, when a loaded machine lets
  // a visibility timeout of the fake clock run out, is allowed: at-least-once).
  auto archived = Archived();
  EXPECT_EQ(archived.size(), 45u);
  for (const std::string& id : ids) EXPECT_EQ(archived.count(id), 1u) << id;
  EXPECT_GE(r.stats.archived, 45u);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
}

TEST_F(DrainerTest, FifoWithOneGroupReceivesOneAtATimeWithFewEmptyReceives) {
  // SQS hands out nothing more of a group while any of its messages is in
  // flight: concurrent receivers would only poll a locked group.
  SendFifo(1, 100);
  options_.receivers = 4;
  options_.batch.max_messages = 10000;
  options_.batch.max_age = std::chrono::hours(1);  // only empty receives can seal
  options_.wait_time_seconds = 2;                  // (the fake answers at once)
  ReceiveObserver observer(sqs_, UseVirtualTime(), std::chrono::milliseconds(1));
  client_ = &observer;
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.drained) << r.incomplete_reason;
  EXPECT_EQ(sqs_.Depth(url_), 0u);
  EXPECT_EQ(Archived().size(), 100u);
  // Ten rounds of: a receive that brings the group's next 10 messages, one
  // empty receive that seals them, upload, delete; then the end of the queue
  // (a few empty receives and a depth check).
  EXPECT_EQ(r.stats.objects, 10u);
  EXPECT_LE(observer.empty(), 10 + 6) << "receives: " << observer.calls();
  EXPECT_LE(observer.calls(), 20 + 6);
  // SQS (and moto, expensively) keeps such a poll waiting for its whole time.
  EXPECT_EQ(observer.blocked_long_polls(), 0);
}

// SQS applies the first DeleteMessageBatch at once, but its reply comes only
// after a receive has brought messages (plus 200 ms): the window in which the
// group is free at SQS while the run still counts its batch as held.
class FirstDeleteReplyOvertaken final : public ReceiveObserver {
 public:
  FirstDeleteReplyOvertaken(QueueClient& target, VirtualClock& clock)
      : ReceiveObserver(target, clock, std::chrono::milliseconds(20)), clock_(clock) {}

  Result<std::vector<Message>> ReceiveMessages(const std::string& queue_url, const ReceiveOptions& options) override {
    auto got = ReceiveObserver::ReceiveMessages(queue_url, options);
    if (got.ok() && !got->empty()) {
      std::lock_guard lock(mu_);
      ++brought_;
      cv_.notify_all();
    }
    return got;
  }

  Result<BatchResult> DeleteMessageBatch(const std::string& queue_url,
                                         const std::vector<DeleteEntry>& entries) override {
    auto r = ReceiveObserver::DeleteMessageBatch(queue_url, entries);
    if (!held_one_.exchange(true)) {
      std::unique_lock lock(mu_);
      const int before = brought_;
      // Virtual time runs on while this thread blocks: after a second
      // without news a receiver waiting for its turn probes. (5 s of real
      // time bound a run in which none does.)
      overtaken_ = cv_.wait_for(lock, seconds(5), [&] { return brought_ > before; });
      lock.unlock();
      clock_.SleepFor(std::chrono::milliseconds(200));  // the receiver handles its reply first
    }
    return r;
  }

  bool overtaken() const {
    std::lock_guard lock(mu_);
    return overtaken_;
  }

 private:
  std::atomic<bool> held_one_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int brought_ = 0;
  bool overtaken_ = false;
  VirtualClock& clock_;
};

TEST_F(DrainerTest, FifoOneGroupKeepsTakingTurnsWhenAReceiveOvertakesADeleteReply) {
  // While the first batch's delete reply is held, a waiting receiver probes
  // (after a second without news) and gets the group's next messages, freed
  // by that delete. That is our group again, not a second one: the receivers
  // keep taking turns, one receive at a time.
  auto ids = SendFifo(1, 30);
  options_.receivers = 4;
  FirstDeleteReplyOvertaken observer(sqs_, UseVirtualTime());
  client_ = &observer;
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.drained) << r.incomplete_reason;
  EXPECT_TRUE(observer.overtaken()) << "no receive brought messages while the delete reply was held";
  EXPECT_EQ(observer.max_running(), 1) << "receives: " << observer.calls();
  std::vector<std::string> order;
  for (const ArchiveRecord& rec : RecordsInOrder(r.keys)) order.push_back(rec.message_id);
  EXPECT_EQ(order, ids);
}

TEST_F(DrainerTest, FifoOrderWithinEachGroupIsKeptInTheArchive) {
  auto ids = SendFifo(5, 40);
  options_.receivers = 4;
  options_.batch.max_messages = 25;
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.drained) << r.incomplete_reason;
  EXPECT_EQ(sqs_.Depth(url_), 0u);
  std::map<std::string, std::vector<std::string>> sequence_by_group;  // in archive order
  std::set<std::string> archived;
  for (const ArchiveRecord& rec : RecordsInOrder(r.keys)) {
    archived.insert(rec.message_id);
    sequence_by_group[rec.attributes.at("MessageGroupId")].push_back(rec.attributes.at("SequenceNumber"));
  }
  EXPECT_EQ(archived, std::set<std::string>(ids.begin(), ids.end()));
  ASSERT_EQ(sequence_by_group.size(), 5u);
  for (const auto& [group, seqs] : sequence_by_group) {
    EXPECT_EQ(seqs.size(), 40u) << group;
    // Same-width decimal strings: strictly increasing means in send order, once each.
    EXPECT_EQ(std::adjacent_find(seqs.begin(), seqs.end(), std::greater_equal<>()), seqs.end()) << group;
  }
}

TEST_F(DrainerTest, FifoWithManyGroupsKeepsEveryReceiverBusy) {
  auto ids = SendFifo(100, 5);
  options_.receivers = 4;
  options_.batch.max_messages = 10000;
  options_.batch.max_age = std::chrono::hours(1);
  ReceiveObserver observer(sqs_, UseVirtualTime(), std::chrono::milliseconds(5));
  client_ = &observer;
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.drained) << r.incomplete_reason;
  EXPECT_EQ(sqs_.Depth(url_), 0u);
  EXPECT_EQ(Archived().size(), 500u);
  EXPECT_EQ(observer.max_running(), 4);
  // 100 groups give 100 messages per round: most receives bring 10.
  EXPECT_LE(r.stats.objects, 10u);
  EXPECT_LE(observer.calls(), 50 + 30) << "empty: " << observer.empty();
}

TEST_F(DrainerTest, FifoLostReceiveReplyIsWaitedForThenArchivedInOrder) {
  // The lost receive leaves the group's first 10 messages in flight, which
  // blocks the group for a visibility timeout that this run does not hold.
  auto ids = SendFifo(1, 30);
  sqs_.FailNext(Op::kReceiveMessages, Unavailable("connection reset"), 1, /*after_applying=*/true);
  // One receiver: each waiting receiver advances the fake clock by its own
  // pause, so several would run it past the wait's limit.
  options_.receivers = 1;
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.drained) << r.incomplete_reason;
  EXPECT_EQ(sqs_.Depth(url_), 0u);
  std::vector<std::string> order;
  for (const ArchiveRecord& rec : RecordsInOrder(r.keys)) order.push_back(rec.message_id);
  EXPECT_EQ(order, ids);
}

TEST_F(DrainerTest, FifoStopWhileReceiversWaitForTheGroupLosesNothing) {
  auto ids = SendFifo(1, 60);
  options_.receivers = 4;
  QueueDrainer* drainer = nullptr;
  std::atomic<int> puts{0};
  store_.SetPutHook([&](const std::string&, std::string_view) {
    // The other receivers wait for this batch's group meanwhile.
    if (++puts == 2) drainer->RequestStop();
    return Status::Ok();
  });
  DrainResult r = Drain(&drainer);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.stopped);
  EXPECT_FALSE(r.drained);
  size_t archived = Archived().size();
  EXPECT_GE(archived, 10u);
  EXPECT_EQ(archived + sqs_.Depth(url_), 60u);  // each message archived (and deleted) or still in the queue
}

TEST_F(DrainerTest, OneMebibyteBodiesArchiveEndToEnd) {
  SendEntry e;
  e.body = std::string(1 << 20, 'x');
  e.body[5] = '"';  // escaped in JSON
  std::vector<std::string> ids;
  for (int i = 0; i < 12; ++i) ids.push_back(*sqs_.InjectMessage(url_, e, clock_.Now()));
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.drained);
  auto archived = Archived();
  ASSERT_EQ(archived.size(), 12u);
  for (const auto& id : ids) EXPECT_EQ(archived[id], e.body);
  EXPECT_GE(r.stats.objects, 2u);  // 8 MiB batches
}

TEST_F(DrainerTest, SelectionPassKeepsExaminedMessagesInvisibleWithAHeartbeat) {
  // A slow upload keeps the pass going past the visibility timeout: messages
  // not selected must not come back (and be taken for "already seen").
  Send(30, clock_.Now() - std::chrono::hours(30));
  Send(30, clock_.Now() - std::chrono::minutes(5));
  options_.selection = {SelectionKind::kOlderThan, std::chrono::hours(24)};
  options_.batch.max_messages = 10;
  options_.max_batches_in_flight = 3;
  options_.visibility_timeout = seconds(20);
  // Each upload takes 8 s of the drainer's time, one upload at a time (two
  // uploads side by side moved the time 16 s at once), and the heartbeat
  // looks at every new time before the upload ends (it lost that race to a
  // real-time sleep under ASan with 4 test processes on 2 cores).
  RoundCountingClock drain_clock(clock_, options_.heartbeat_interval);
  drain_clock_ = &drain_clock;
  std::mutex one_upload;
  bool first = true;  // under one_upload
  QueueDrainer* drainer = nullptr;
  auto placed = [&] {
    DrainStats s = drainer->Snapshot();
    return s.selected + s.skipped;
  };
  store_.SetPutHook([&](const std::string&, std::string_view) {
    std::lock_guard lock(one_upload);
    // The receivers take every message at t=0 and place it (in a batch or
    // among the examined) before time moves: between SQS's reply and that,
    // a receiver holds them where no heartbeat sees them (in a real run for
    // microseconds; here time could jump 16 s meanwhile). All three batches
    // fit in flight: no receiver waits for room (MessagesWaitingForRoom...
    // tests that wait).
    for (const auto give_up = std::chrono::steady_clock::now() + seconds(10);
         first && placed() < 60 && std::chrono::steady_clock::now() < give_up;) {
      std::this_thread::yield();
    }
    EXPECT_EQ(placed(), 60u);
    first = false;
    EXPECT_TRUE(drain_clock.AdvanceAndAwaitRound(seconds(8)));
    return Status::Ok();
  });
  DrainResult r = Drain(&drainer);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.drained) << r.incomplete_reason;
  EXPECT_EQ(r.stats.archived, 30u);
  EXPECT_EQ(r.stats.skipped, 30u);
  EXPECT_GT(r.stats.visibility_extensions, 0u);
  EXPECT_EQ(sqs_.Depth(url_), 30u);
}

TEST_F(DrainerTest, MessagesWaitingForRoomInABatchStayInvisibleWithAHeartbeat) {
  // One batch in flight and its upload slow: a receiver whose messages do
  // not fit the full batch being built waits with them in hand. The
  // heartbeat keeps them invisible too (they expired, came back and were
  // archived twice).
  Send(60);
  options_.batch.max_messages = 15;
  options_.max_batches_in_flight = 1;
  options_.visibility_timeout = seconds(20);
  RoundCountingClock drain_clock(clock_, options_.heartbeat_interval);
  drain_clock_ = &drain_clock;
  ThreadWatch watch;  // the drainer's threads, started below
  std::atomic<bool> first{true};
  store_.SetPutHook([&](const std::string&, std::string_view) {
    if (first.exchange(false)) {
      // Every receiver now waits for room: the building batch is full.
      EXPECT_TRUE(watch.AwaitQuiescent());
      EXPECT_GT(sqs_.Depth(url_), 0u);  // still to receive: the receivers wait
      // Past half the timeout (extended), then past the timeout.
      EXPECT_TRUE(drain_clock.AdvanceAndAwaitRound(seconds(15)));
      EXPECT_TRUE(drain_clock.AdvanceAndAwaitRound(seconds(15)));
    }
    return Status::Ok();
  });
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.drained) << r.incomplete_reason;
  EXPECT_EQ(r.stats.duplicates, 0u);
  EXPECT_EQ(r.stats.archived, 60u);
  EXPECT_EQ(r.stats.deleted, 60u);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
  EXPECT_EQ(Archived().size(), 60u);
}

TEST_F(DrainerTest, SelectionPassThatCannotHoldWhatItExaminedSaysItIsIncomplete) {
  Send(60, clock_.Now() - std::chrono::minutes(5));  // none selected
  options_.selection = {SelectionKind::kOlderThan, std::chrono::hours(24)};
  options_.max_examined_held = 20;
  options_.depth_checks_before_incomplete = 3;
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_FALSE(r.drained);
  EXPECT_TRUE(r.incomplete);
  EXPECT_FALSE(r.incomplete_reason.empty());
  EXPECT_EQ(sqs_.Depth(url_), 60u);
}

TEST_F(DrainerTest, KeepReleasesTheOriginalsAtTheEndOfThePass) {
  Send(30);
  options_.keep = true;
  DrainResult r = Drain();
  ASSERT_TRUE(r.status.ok());
  EXPECT_TRUE(r.drained) << r.incomplete_reason;
  ReceiveOptions ro;
  ro.visibility_timeout = 3600;
  size_t visible = 0;
  for (int i = 0; i < 10; ++i) visible += sqs_.ReceiveMessages(url_, ro)->size();
  EXPECT_EQ(visible, 30u);
}

TEST(DrainOptionsTest, ValidateRejectsBadCombinations) {
  DrainOptions o;
  EXPECT_TRUE(o.Validate().ok());
  o.put.sse_kms_key_id = "alias/x";
  EXPECT_FALSE(o.Validate().ok());
  o.put.sse = "aws:kms";
  EXPECT_TRUE(o.Validate().ok());
  o.visibility_timeout = seconds(5);
  EXPECT_FALSE(o.Validate().ok());
}

TEST_F(DrainerTest, MakeArchiveContextCarriesTheQueueHostAndThisBuild) {
  auto q = ResolveQueue(sqs_, url_, "us-east-1");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  ArchiveContext ctx = MakeArchiveContext(*q, "host-1");
  EXPECT_EQ(ctx.queue, "orders-dlq");
  EXPECT_EQ(ctx.queue_url, url_);
  EXPECT_EQ(ctx.region, "us-east-1");
  EXPECT_EQ(ctx.account_id, "123456789012");
  EXPECT_EQ(ctx.archiver_version, DLQ_VERSION);
  EXPECT_EQ(ctx.host, "host-1");
  EXPECT_FALSE(ctx.fifo);
  EXPECT_EQ(ctx.retention, std::chrono::seconds(345600));

  auto fifo_url = sqs_.CreateQueue("jobs-dlq.fifo", {{"FifoQueue", "true"}, {"MessageRetentionPeriod", "7200"}});
  ASSERT_TRUE(fifo_url.ok());
  auto fifo = ResolveQueue(sqs_, *fifo_url, "us-east-1");
  ASSERT_TRUE(fifo.ok()) << fifo.status().ToString();
  ArchiveContext fctx = MakeArchiveContext(*fifo, "host-2");
  EXPECT_EQ(fctx.queue, "jobs-dlq.fifo");
  EXPECT_TRUE(fctx.fifo);
  EXPECT_EQ(fctx.retention, std::chrono::seconds(7200));
}

}  // namespace
}  // namespace dlq
