// The guarded redrive's engine (replay/redrive_guard.h) in the live form
// over SqsClient on the stand-ins: a consumer that still fails gets the
// canary only and the re-failures are found in the DLQ by the ids
// SendMessageBatch gave; a fixed consumer gets everything through the ramp.
// The consumer is played by the backlog probe (it runs while the guard
// samples), on the real clock with a short window.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>

#include "harness.h"
#include "replay/live_source.h"
#include "replay/redrive_guard.h"
#include "replay/replayer.h"
#include "replay/targets.h"
#include "sqs/queue_info.h"

namespace dlq {
namespace {

using std::chrono::milliseconds;

// Receives from the destination like a consumer: `fix` deletes what it
// receives, otherwise it gives each message back (visibility 0), so its next
// receive moves it to the DLQ (maxReceiveCount 1).
class Consumer final : public BacklogProbe {
 public:
  Consumer(QueueClient& sqs, std::string url, bool fixed) : sqs_(sqs), url_(std::move(url)), fixed_(fixed) {}
  Result<BacklogSample> Sample() override {
    ReceiveOptions ro;
    ro.max_messages = 10;
    ro.wait_time_seconds = 0;
    ro.visibility_timeout = fixed_ ? 30 : 0;
    DLQ_ASSIGN_OR_RETURN(std::vector<Message> got, sqs_.ReceiveMessages(url_, ro));
    std::vector<DeleteEntry> done;
    for (const Message& m : got) done.push_back({fmt::format("d{}", done.size()), m.receipt_handle});
    if (fixed_ && !done.empty()) DLQ_RETURN_IF_ERROR(sqs_.DeleteMessageBatch(url_, done).status());
    DLQ_ASSIGN_OR_RETURN(auto attrs, sqs_.GetQueueAttributes(url_, {"ApproximateNumberOfMessages"}));
    return BacklogSample{std::stoll(attrs.at("ApproximateNumberOfMessages")), std::nullopt};
  }

 private:
  QueueClient& sqs_;
  std::string url_;
  bool fixed_;
};

class RedriveGuardStandInTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    services_ = it::StandInServices(GetParam());
    if (services_ == nullptr) GTEST_SKIP() << "stand-in " << GetParam() << " not running";
    QueueClient& sqs = services_->sqs();
    dlq_url_ = *sqs.CreateQueue(it::UniqueName("guard-dlq"), {});
    auto arn = sqs.GetQueueAttributes(dlq_url_, {"QueueArn"});
    ASSERT_TRUE(arn.ok()) << arn.status().ToString();
    source_name_ = it::UniqueName("guard-src");
    const std::string policy =
        fmt::format(R"({{"deadLetterTargetArn":"{}","maxReceiveCount":"1"}})", arn->at("QueueArn"));
    source_url_ = *sqs.CreateQueue(source_name_, {{"RedrivePolicy", policy}});
    for (int i = 0; i < 30; ++i) {
      auto sent = sqs.SendMessage(dlq_url_, SendEntry{.body = fmt::format("order {}", i)});
      ASSERT_TRUE(sent.ok()) << sent.status().ToString();
      original_ids_.insert(sent->message_id);
    }
    options_.canary = 5;
    options_.window = milliseconds(4000);
    options_.check = milliseconds(1000);
    options_.poll = milliseconds(250);
    options_.ramp = {0.5, 1.0};
  }
  void TearDown() override {
    if (services_ == nullptr) return;
    (void)services_->sqs().DeleteQueue(source_url_);
    (void)services_->sqs().DeleteQueue(dlq_url_);
  }

  // The live form, guarded; returns the pass's result.
  Result<LiveReplayStats> Redrive(Consumer& consumer) {
    QueueClient& sqs = services_->sqs();
    DLQ_ASSIGN_OR_RETURN(QueueInfo dlq, ResolveQueue(sqs, dlq_url_, "us-east-1"));
    targets_ = TargetResolver::Fixed(sqs, source_name_, "us-east-1");
    guard_ = std::make_unique<RedriveGuard>(options_, 30, DefaultClock(), consumer, nullptr);
    DLQ_RETURN_IF_ERROR(guard_->Start());
    ReplayOptions ro;
    ro.concurrency = 1;
    ro.gate = guard_.get();
    replayer_ = std::make_unique<Replayer>(sqs, *targets_, DefaultClock(), ro, nullptr);
    DLQ_RETURN_IF_ERROR(replayer_->Start());
    LiveReplayOptions live;
    live.wait_time_seconds = 0;
    live.visibility_timeout_seconds = 30;
    live.guard = guard_.get();
    return ReplayFromQueue(
        sqs, dlq, *replayer_, [](const ArchiveRecord&) { return true; }, DefaultClock(), live);
  }

  // Distinct ids receivable from `url` now (each held 30 s once received).
  std::set<std::string> Receivable(const std::string& url) {
    std::set<std::string> ids;
    ReceiveOptions ro;
    ro.max_messages = 10;
    ro.wait_time_seconds = 0;
    ro.visibility_timeout = 30;
    for (int round = 0; round < 10; ++round) {
      auto got = services_->sqs().ReceiveMessages(url, ro);
      EXPECT_TRUE(got.ok()) << got.status().ToString();
      if (!got.ok()) break;
      for (const Message& m : *got) ids.insert(m.message_id);
    }
    return ids;
  }

  std::shared_ptr<AwsServices> services_;
  std::string dlq_url_, source_name_, source_url_;
  std::set<std::string> original_ids_;
  RedriveOptions options_;
  std::unique_ptr<TargetResolver> targets_;
  std::unique_ptr<RedriveGuard> guard_;
  std::unique_ptr<Replayer> replayer_;
};

TEST_P(RedriveGuardStandInTest, StillBrokenConsumerGetsOnlyTheCanaryAndTheDlqKeepsEverything) {
  Consumer consumer(services_->sqs(), source_url_, /*fixed=*/false);
  const SteadyTime start = DefaultClock().SteadyNow();
  auto r = Redrive(consumer);
  const double seconds = std::chrono::duration<double>(DefaultClock().SteadyNow() - start).count();
  RecordProperty("seconds_to_stop", fmt::format("{:.2f}", seconds));
  ASSERT_EQ(r.status().code(), ErrorCode::kAborted) << r.status().ToString();
  EXPECT_NE(r.status().message().find("5 of 5 messages sent failed again in the canary"), std::string::npos)
      << r.status().message();
  EXPECT_LT(seconds, 4.0);  // found during the canary's window
  EXPECT_EQ(replayer_->stats().sent, 5u);
  std::set<std::string> sent_new_ids;
  for (const ReplayedMessage& m : replayer_->sent()) sent_new_ids.insert(m.new_message_id);
  ASSERT_EQ(guard_->status().refailures.size(), 5u);
  for (const RefailedMessage& f : guard_->status().refailures) {
    EXPECT_TRUE(original_ids_.contains(f.message_id)) << f.message_id;
    EXPECT_TRUE(sent_new_ids.contains(f.new_message_id)) << f.new_message_id;
  }
  // 25 never sent and the 5 back: all visible in the DLQ, nothing left in the source.
  EXPECT_EQ(Receivable(dlq_url_).size(), 30u);
  EXPECT_TRUE(Receivable(source_url_).empty());
}

TEST_P(RedriveGuardStandInTest, FixedConsumerGetsEverythingThroughTheRamp) {
  options_.window = milliseconds(1500);
  options_.check = milliseconds(500);
  Consumer consumer(services_->sqs(), source_url_, /*fixed=*/true);
  auto r = Redrive(consumer);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(replayer_->Finish().ok());
  Status done = guard_->Finish(*replayer_);
  ASSERT_TRUE(done.ok()) << done.ToString();
  EXPECT_EQ(guard_->status().phase, RedrivePhase::kDone);
  EXPECT_EQ(replayer_->stats().sent, 30u);
  EXPECT_EQ(r->deleted, 30u);
  EXPECT_EQ(r->refailed, 0u);
  EXPECT_TRUE(Receivable(dlq_url_).empty());
}

INSTANTIATE_TEST_SUITE_P(StandIns, RedriveGuardStandInTest, ::testing::Values("moto", "fauxqs"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace dlq
