#include "archiver/receivers.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "archiver/drain_run.h"
#include "testing/fake_clock.h"
#include "testing/fake_queue.h"

namespace dlq {
namespace {

using Op = FakeQueueClient::Operation;
using std::chrono::seconds;

// Archives what it is handed at once: deletes it from the queue (a run's
// batches, stored and deleted). Counts what it saw.
class DeletingHandoff final : public ReceiverHandoff {
 public:
  DeletingHandoff(QueueClient& sqs, std::string url) : sqs_(sqs), url_(std::move(url)) {}

  bool Place(std::vector<Message>&& msgs, const std::vector<CorruptMessage>& corrupt, SteadyTime) override {
    MutexLock lock(mu_);
    corrupt_ += corrupt.size();
    std::vector<DeleteEntry> entries;
    bool fresh = false;
    for (const Message& m : msgs) {
      fresh |= ids_.insert(m.message_id).second;
      entries.push_back({std::to_string(entries.size()), m.receipt_handle});
    }
    if (!entries.empty()) {
      EXPECT_TRUE(sqs_.DeleteMessageBatch(url_, entries).ok());
    }
    if (on_place_) on_place_();
    return fresh;
  }
  void Seal(bool) override {
    MutexLock lock(mu_);
    ++seals_;
  }

  std::set<std::string> ids() const {
    MutexLock lock(mu_);
    return ids_;
  }
  void OnPlace(std::function<void()> f) {
    MutexLock lock(mu_);
    on_place_ = std::move(f);
  }

 private:
  QueueClient& sqs_;
  const std::string url_;
  mutable Mutex mu_;
  std::set<std::string> ids_ DLQ_GUARDED_BY(mu_);
  size_t corrupt_ DLQ_GUARDED_BY(mu_) = 0;
  int seals_ DLQ_GUARDED_BY(mu_) = 0;
  std::function<void()> on_place_ DLQ_GUARDED_BY(mu_);
};

class ReceiversTest : public ::testing::Test {
 protected:
  ReceiversTest() : sqs_(clock_) {
    url_ = sqs_.CreateQueue("orders-dlq", {{"VisibilityTimeout", "30"}}).value();
    queue_ = ResolveQueue(sqs_, url_, "us-east-1").value();
    options_.receivers = 3;
    options_.adaptive_receivers = false;
    options_.wait_time_seconds = 0;
    options_.visibility_timeout = seconds(60);
  }

  void Send(int n) {
    for (int i = 0; i < n; ++i) {
      SendEntry e;
      e.body = "m" + std::to_string(i);
      ids_.insert(sqs_.InjectMessage(url_, e, clock_.Now()).value());
    }
  }

  std::unique_ptr<DrainRun> MakeRun() {
    return std::make_unique<DrainRun>(sqs_, queue_, options_, [this] {
      return std::make_unique<BatchBuilder>(context_, KeyTemplate::Default(), "", options_.batch, clock_);
    });
  }

  FakeClock clock_;
  FakeQueueClient sqs_;
  std::string url_;
  QueueInfo queue_;
  DrainOptions options_;
  ArchiveContext context_;
  std::set<std::string> ids_;
};

TEST_F(ReceiversTest, ReceiveEveryMessageAndEndOnAnEmptyQueue) {
  Send(47);
  auto run = MakeRun();
  DeletingHandoff handoff(sqs_, url_);
  Receivers receivers(sqs_, clock_, *run, handoff);
  receivers.Run();
  EXPECT_EQ(handoff.ids(), ids_);
  EXPECT_EQ(run->counters.received, 47u);
  EXPECT_GE(run->counters.receive_calls, 5u);
  EXPECT_TRUE(run->queue_seen_empty);
  EXPECT_TRUE(run->stop);
  EXPECT_EQ(receivers.level(), 3);  // not governed: every receiver receives
  MutexLock lock(run->mu);
  EXPECT_TRUE(run->first_error.ok());
  EXPECT_TRUE(run->incomplete_reason.empty());
}

TEST_F(ReceiversTest, AReceiveErrorThatARetryCannotMendFailsTheRun) {
  Send(5);
  sqs_.FailNext(Op::kReceiveMessages, PermissionDenied("no sqs:ReceiveMessage"), 100);
  auto run = MakeRun();
  DeletingHandoff handoff(sqs_, url_);
  Receivers receivers(sqs_, clock_, *run, handoff);
  receivers.Run();
  EXPECT_TRUE(handoff.ids().empty());
  EXPECT_FALSE(run->queue_seen_empty);
  EXPECT_TRUE(run->abort_receives);
  MutexLock lock(run->mu);
  EXPECT_EQ(run->first_error.code(), ErrorCode::kPermissionDenied);
  EXPECT_NE(run->first_error.ToString().find("receive from orders-dlq"), std::string::npos)
      << run->first_error.ToString();
}

TEST_F(ReceiversTest, ARetryableReceiveErrorIsRetried) {
  Send(5);
  sqs_.FailNext(Op::kReceiveMessages, Unavailable("503"), 2);
  options_.receivers = 1;
  auto run = MakeRun();
  DeletingHandoff handoff(sqs_, url_);
  Receivers receivers(sqs_, clock_, *run, handoff);
  receivers.Run();
  EXPECT_EQ(handoff.ids(), ids_);
  EXPECT_TRUE(run->queue_seen_empty);
  MutexLock lock(run->mu);
  EXPECT_TRUE(run->first_error.ok());
}

TEST_F(ReceiversTest, AStopEndsEveryReceiver) {
  Send(200);
  auto run = MakeRun();
  DeletingHandoff handoff(sqs_, url_);
  DrainRun* r = run.get();
  handoff.OnPlace([r] { r->RequestStop(); });
  Receivers receivers(sqs_, clock_, *run, handoff);
  receivers.Run();
  EXPECT_TRUE(run->stop_requested);
  EXPECT_FALSE(run->queue_seen_empty);
  // Each receiver ends after the receive it had on the wire.
  EXPECT_LE(run->counters.receive_calls, static_cast<uint64_t>(options_.receivers));
  EXPECT_LT(handoff.ids().size(), ids_.size());
}

TEST(DrainRunTest, TheFirstErrorAndTheFirstIncompleteReasonStay) {
  FakeClock clock;
  FakeQueueClient sqs(clock);
  QueueInfo queue;
  DrainOptions options;
  ArchiveContext context;
  DrainRun run(sqs, queue, options, [&] {
    return std::make_unique<BatchBuilder>(context, KeyTemplate::Default(), "", options.batch, clock);
  });
  EXPECT_FALSE(run.Aborting());
  run.MarkIncomplete("first reason");
  run.MarkIncomplete("second reason");
  EXPECT_TRUE(run.stop);
  EXPECT_FALSE(run.Aborting());  // incomplete is not a failure
  run.Fail(Unavailable("first"));
  run.Fail(Unavailable("second"));
  EXPECT_TRUE(run.Aborting());
  EXPECT_TRUE(run.abort_receives);
  MutexLock lock(run.mu);
  EXPECT_EQ(run.incomplete_reason, "first reason");
  EXPECT_EQ(run.first_error.message(), "first");
}

TEST(DrainRunTest, AStopThatFinishesReceivesAbandonsNone) {
  FakeClock clock;
  FakeQueueClient sqs(clock);
  QueueInfo queue;
  DrainOptions options;
  options.finish_receives_on_stop = true;
  ArchiveContext context;
  DrainRun run(sqs, queue, options, [&] {
    return std::make_unique<BatchBuilder>(context, KeyTemplate::Default(), "", options.batch, clock);
  });
  run.RequestStop();
  EXPECT_TRUE(run.stop);
  EXPECT_TRUE(run.stop_requested);
  EXPECT_FALSE(run.abort_receives);
  EXPECT_TRUE(run.Aborting());
}

}  // namespace
}  // namespace dlq
