// The guarded redrive's SQS probes on the stand-ins (moto, fauxqs): the
// processing window and DLQ from a real RedrivePolicy, and a replayed
// message that fails again found in the DLQ and left there, visible.
#include "replay/redrive_probes.h"

#include <gtest/gtest.h>

#include <thread>

#include "harness.h"

namespace dlq {
namespace {

class RedriveProbesOnStandIn : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    services_ = it::StandInServices(GetParam());
    if (services_ == nullptr) GTEST_SKIP() << "stand-in " << GetParam() << " not running";
    sqs_ = &services_->sqs();
    dlq_ = *sqs_->CreateQueue(it::UniqueName("probe-dlq"), {});
    auto arn = sqs_->GetQueueAttributes(dlq_, {"QueueArn"});
    ASSERT_TRUE(arn.ok()) << arn.status().ToString();
    auto source = sqs_->CreateQueue(
        it::UniqueName("probe-src"),
        {{"RedrivePolicy", R"({"deadLetterTargetArn":")" + arn->at("QueueArn") + R"(","maxReceiveCount":"1"})"},
         {"VisibilityTimeout", "2"}});
    ASSERT_TRUE(source.ok()) << source.status().ToString();
    source_ = *source;
  }
  void TearDown() override {
    if (sqs_ == nullptr) return;
    (void)sqs_->DeleteQueue(source_);
    (void)sqs_->DeleteQueue(dlq_);
  }
  int64_t InDlq() {
    auto a = sqs_->GetQueueAttributes(dlq_, {"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"});
    EXPECT_TRUE(a.ok());
    return std::stoll(a->at("ApproximateNumberOfMessages")) +
           std::stoll(a->at("ApproximateNumberOfMessagesNotVisible"));
  }

  std::shared_ptr<AwsServices> services_;
  QueueClient* sqs_ = nullptr;
  std::string dlq_, source_;
};

TEST_P(RedriveProbesOnStandIn, WindowAndDlqFromTheRedrivePolicy) {
  auto w = ReadProcessingWindow(*sqs_, source_, services_->settings().region);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->max_receive_count, 1);
  EXPECT_EQ(w->visibility_timeout, std::chrono::seconds(2));
  EXPECT_EQ(w->dlq_url, dlq_);
  EXPECT_EQ(w->window, ProcessingWindow(1, std::chrono::seconds(2), std::chrono::seconds(0)));
  auto none = ReadProcessingWindow(*sqs_, dlq_, services_->settings().region);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), ErrorCode::kFailedPrecondition) << none.status().ToString();
}

TEST_P(RedriveProbesOnStandIn, FindsAMessageThatFailedAgainAndLeavesItVisibleInTheDlq) {
  SendEntry unrelated;
  unrelated.body = "someone else's failure";
  ASSERT_TRUE(sqs_->SendMessage(dlq_, unrelated).ok());
  auto probe = SqsRefailureProbe::Start(*sqs_, DefaultClock(), {dlq_});
  ASSERT_TRUE(probe.ok()) << probe.status().ToString();
  SendEntry replayed;
  replayed.body = "replayed";
  auto sent = sqs_->SendMessage(source_, replayed);
  ASSERT_TRUE(sent.ok()) << sent.status().ToString();
  // A consumer that fails it: received, given back, and moved to the DLQ by the next receive.
  ReceiveOptions ro;
  ro.visibility_timeout = 0;
  ro.wait_time_seconds = 1;
  for (int i = 0; i < 10 && InDlq() < 2; ++i) {
    ASSERT_TRUE(sqs_->ReceiveMessages(source_, ro).ok());
  }
  ASSERT_EQ(InDlq(), 2);
  std::map<std::string, ReplayedMessage> watched = {{sent->message_id, {"orig-1", sent->message_id, source_}}};
  auto found = (*probe)->Find(watched);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].message_id, "orig-1");
  EXPECT_EQ((*found)[0].dlq, dlq_);
  EXPECT_GE((*probe)->receives(), 1u);
  // Released at once: both are visible again, nothing was deleted.
  ReceiveOptions look;
  look.visibility_timeout = 0;
  look.wait_time_seconds = 1;
  std::set<std::string> visible;
  for (int i = 0; i < 10 && visible.size() < 2; ++i) {
    auto got = sqs_->ReceiveMessages(dlq_, look);
    ASSERT_TRUE(got.ok());
    for (const Message& m : *got) visible.insert(m.message_id);
  }
  EXPECT_EQ(visible.size(), 2u);
  EXPECT_TRUE(visible.contains(sent->message_id));
}

INSTANTIATE_TEST_SUITE_P(StandIns, RedriveProbesOnStandIn, ::testing::Values("moto", "fauxqs"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace dlq
