#include "sqs/queue_client_wrapper.h"

#include <gtest/gtest.h>

#include <atomic>

#include "testing/fake_clock.h"
#include "testing/fake_queue.h"

namespace dlq {
namespace {

using Op = FakeQueueClient::Operation;

class QueueClientWrapperTest : public ::testing::Test {
 protected:
  QueueClientWrapperTest() : target_(clock_) {}

  FakeClock clock_;
  FakeQueueClient target_;
};

TEST_F(QueueClientWrapperTest, ForwardsEveryCallToTheTarget) {
  QueueClientWrapper wrapper(target_);
  auto url = wrapper.CreateQueue("orders-dlq", {{"VisibilityTimeout", "30"}});
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  auto src = wrapper.CreateQueue("orders", {});
  ASSERT_TRUE(src.ok());
  ASSERT_TRUE(wrapper
                  .SetQueueAttributes(*src, {{"RedrivePolicy",
                                              "{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:"
                                              "123456789012:orders-dlq\",\"maxReceiveCount\":\"3\"}"}})
                  .ok());
  auto found = wrapper.GetQueueUrl("orders-dlq", "");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(*found, *url);
  auto listed = wrapper.ListQueues("orders");
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 2u);
  auto attrs = wrapper.GetQueueAttributes(*url, {"VisibilityTimeout"});
  ASSERT_TRUE(attrs.ok());
  EXPECT_EQ(attrs->at("VisibilityTimeout"), "30");
  auto sources = wrapper.ListDeadLetterSourceQueues(*url);
  ASSERT_TRUE(sources.ok());
  EXPECT_EQ(*sources, std::vector<std::string>{*src});

  ASSERT_TRUE(wrapper.SendMessage(*url, SendEntry{.id = "", .body = "one"}).ok());
  auto sent = wrapper.SendMessageBatch(*url, {SendEntry{.id = "a", .body = "two"}});
  ASSERT_TRUE(sent.ok());
  EXPECT_EQ(sent->successful_ids, std::vector<std::string>{"a"});
  auto got = wrapper.ReceiveMessages(*url, ReceiveOptions{});
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 2u);
  auto vis = wrapper.ChangeMessageVisibilityBatch(*url, {{"v", (*got)[0].receipt_handle, 0}});
  ASSERT_TRUE(vis.ok());
  EXPECT_EQ(vis->successful_ids, std::vector<std::string>{"v"});
  auto del = wrapper.DeleteMessageBatch(*url, {{"d", (*got)[1].receipt_handle}});
  ASSERT_TRUE(del.ok());
  EXPECT_EQ(target_.deleted_count(), 1);
  EXPECT_TRUE(wrapper.DeleteQueue(*src).ok());

  // Each operation reached the target exactly as often as it was called.
  EXPECT_EQ(target_.calls(Op::kCreateQueue), 2);
  for (Op op : {Op::kGetQueueUrl, Op::kListQueues, Op::kGetQueueAttributes, Op::kListDeadLetterSourceQueues,
                Op::kReceiveMessages, Op::kDeleteMessageBatch, Op::kChangeMessageVisibilityBatch, Op::kSendMessageBatch,
                Op::kSendMessage, Op::kDeleteQueue, Op::kSetQueueAttributes}) {
    EXPECT_EQ(target_.calls(op), 1) << static_cast<int>(op);
  }
}

TEST_F(QueueClientWrapperTest, PassesTargetErrorsThroughUnchanged) {
  QueueClientWrapper wrapper(target_);
  auto url = target_.CreateQueue("jobs-dlq", {});
  ASSERT_TRUE(url.ok());
  target_.FailNext(Op::kReceiveMessages, Throttled("slow down"));
  auto r = wrapper.ReceiveMessages(*url, ReceiveOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kThrottled);
  EXPECT_EQ(r.status().message(), "slow down");
  EXPECT_EQ(wrapper.GetQueueUrl("no-such-queue", "").status().code(),
            target_.GetQueueUrl("no-such-queue", "").status().code());
}

// A derived wrapper overrides only what it observes; the rest still reaches the target.
class CountingReceives final : public QueueClientWrapper {
 public:
  using QueueClientWrapper::QueueClientWrapper;
  Result<std::vector<Message>> ReceiveMessages(const std::string& url, const ReceiveOptions& options) override {
    ++receives;
    return QueueClientWrapper::ReceiveMessages(url, options);
  }
  std::atomic<int> receives{0};
};

TEST_F(QueueClientWrapperTest, DerivedWrapperOverridesOnlyWhatItObserves) {
  CountingReceives counting(target_);
  QueueClient& client = counting;
  auto url = client.CreateQueue("pay-dlq", {});
  ASSERT_TRUE(url.ok());
  ASSERT_TRUE(client.SendMessage(*url, SendEntry{.id = "", .body = "x"}).ok());
  auto got = client.ReceiveMessages(*url, ReceiveOptions{});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->size(), 1u);
  EXPECT_EQ(counting.receives.load(), 1);
  EXPECT_EQ(target_.calls(Op::kReceiveMessages), 1);
  EXPECT_EQ(target_.calls(Op::kSendMessage), 1);
  EXPECT_EQ(&counting.target(), &target_);
}

}  // namespace
}  // namespace dlq
