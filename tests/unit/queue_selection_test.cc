// A queue pattern selects dead-letter queues only: work queues that share the
// prefix are skipped with the reason, and a failing ListDeadLetterSourceQueues
// skips rather than takes.
#include "app/queue_selection.h"

#include <gtest/gtest.h>

#include "testing/fake_clock.h"
#include "testing/fake_queue.h"

namespace dlq {
namespace {

using Op = FakeQueueClient::Operation;

class QueueSelectionTest : public ::testing::Test {
 protected:
  QueueSelectionTest() : sqs_(clock_) {
    dlq_ = *sqs_.CreateQueue("orders-dlq", {});
    const std::string policy =
        R"({"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:orders-dlq","maxReceiveCount":"3"})";
    orders_ = *sqs_.CreateQueue("orders", {{"RedrivePolicy", policy}});
    fixed_ = *sqs_.CreateQueue("orders-fixed", {});
  }

  FakeClock clock_;
  FakeQueueClient sqs_;
  std::string dlq_, orders_, fixed_;
};

TEST_F(QueueSelectionTest, PrefixTakesOnlyDeadLetterQueuesAndSaysWhyTheRestAreSkipped) {
  PatternSelection s = SelectDeadLetterQueues(sqs_, {orders_, dlq_, fixed_}, /*any_queue=*/false);
  EXPECT_EQ(s.taken, std::vector<std::string>{dlq_});
  ASSERT_EQ(s.skipped.size(), 2u);
  EXPECT_EQ(s.skipped[0].url, orders_);
  EXPECT_EQ(s.skipped[1].url, fixed_);
  EXPECT_NE(s.skipped[0].reason.find("not a dead-letter queue"), std::string::npos) << s.skipped[0].reason;
  EXPECT_NE(s.skipped[0].reason.find("--any-queue"), std::string::npos) << s.skipped[0].reason;
}

TEST_F(QueueSelectionTest, AnyQueueTakesEveryQueueWithoutAsking) {
  PatternSelection s = SelectDeadLetterQueues(sqs_, {orders_, dlq_, fixed_}, /*any_queue=*/true);
  EXPECT_EQ(s.taken, (std::vector<std::string>{orders_, dlq_, fixed_}));
  EXPECT_TRUE(s.skipped.empty());
  EXPECT_EQ(sqs_.calls(Op::kListDeadLetterSourceQueues), 0);
}

TEST_F(QueueSelectionTest, FailingRedriveLookupSkipsTheQueueNamingTheError) {
  sqs_.FailNext(Op::kListDeadLetterSourceQueues,
                PermissionDenied("not authorized").WithAws({"AccessDenied", 403, "req-1"}));
  PatternSelection s = SelectDeadLetterQueues(sqs_, {dlq_}, /*any_queue=*/false);
  EXPECT_TRUE(s.taken.empty());
  ASSERT_EQ(s.skipped.size(), 1u);
  EXPECT_NE(s.skipped[0].reason.find("cannot tell whether it is a dead-letter queue"), std::string::npos)
      << s.skipped[0].reason;
  EXPECT_NE(s.skipped[0].reason.find("not authorized"), std::string::npos) << s.skipped[0].reason;
}

TEST_F(QueueSelectionTest, EndpointWithoutRedriveLookupIsAnsweredFromEveryRedrivePolicy) {
  sqs_.FailNext(Op::kListDeadLetterSourceQueues,
                InvalidArgument("Unknown action").WithAws({"InvalidAction", 400, "req-2"}), 3);
  PatternSelection s = SelectDeadLetterQueues(sqs_, {orders_, dlq_, fixed_}, /*any_queue=*/false);
  EXPECT_EQ(s.taken, std::vector<std::string>{dlq_});
  ASSERT_EQ(s.skipped.size(), 2u);
  EXPECT_NE(s.skipped[0].reason.find("no queue's RedrivePolicy names it"), std::string::npos) << s.skipped[0].reason;
  EXPECT_EQ(sqs_.calls(Op::kListQueues), 1);  // the policies are read once
}

}  // namespace
}  // namespace dlq
