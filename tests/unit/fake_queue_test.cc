#include "testing/fake_queue.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "sqs/md5.h"
#include "testing/fake_clock.h"

namespace dlq {
namespace {

using std::chrono::hours;
using std::chrono::seconds;
using Op = FakeQueueClient::Operation;

class FakeQueueTest : public ::testing::Test {
 protected:
  FakeQueueTest() : sqs_(clock_) {
    auto url = sqs_.CreateQueue("orders-dlq", {{"VisibilityTimeout", "30"}});
    EXPECT_TRUE(url.ok()) << url.status().ToString();
    url_ = *url;
  }

  std::string Send(std::string body, MessageAttributes attrs = {}) {
    auto sent = sqs_.SendMessage(url_, SendEntry{.id = "", .body = std::move(body), .message_attributes = attrs});
    EXPECT_TRUE(sent.ok()) << sent.status().ToString();
    return sent.ok() ? sent->message_id : "";
  }

  std::vector<Message> Receive(int max = 10, std::optional<int> visibility = std::nullopt) {
    ReceiveOptions options;
    options.max_messages = max;
    options.visibility_timeout = visibility;
    auto messages = sqs_.ReceiveMessages(url_, options);
    EXPECT_TRUE(messages.ok()) << messages.status().ToString();
    return messages.ok() ? *messages : std::vector<Message>{};
  }

  std::map<std::string, std::string> Attrs() {
    auto attrs = sqs_.GetQueueAttributes(url_, {"All"});
    EXPECT_TRUE(attrs.ok()) << attrs.status().ToString();
    return attrs.ok() ? *attrs : std::map<std::string, std::string>{};
  }

  FakeClock clock_;
  FakeQueueClient sqs_;
  std::string url_;
};

TEST_F(FakeQueueTest, ReceivedMessagesCarryValidDigestsAndSystemAttributes) {
  MessageAttributes attrs = {
      {"blob", {.data_type = "Binary", .string_value = {}, .binary_value = std::string("\0\1", 2)}},
      {"kind", {.data_type = "String", .string_value = "order"}}};
  const std::string id = Send("caf\xc3\xa9", attrs);
  clock_.Advance(seconds(3));
  auto messages = Receive();
  ASSERT_EQ(messages.size(), 1u);
  const Message& m = messages[0];
  EXPECT_EQ(m.message_id, id);
  EXPECT_FALSE(m.receipt_handle.empty());
  EXPECT_TRUE(VerifyMessage(m).ok());
  EXPECT_EQ(m.message_attributes, attrs);
  EXPECT_EQ(m.attributes.at("ApproximateReceiveCount"), "1");
  EXPECT_EQ(m.attributes.at("SentTimestamp"), "1700000000000");
  EXPECT_EQ(m.attributes.at("ApproximateFirstReceiveTimestamp"), "1700000003000");
  EXPECT_TRUE(m.attributes.contains("SenderId"));
}

TEST_F(FakeQueueTest, ReceiveFiltersAttributesByName) {
  Send("x", {{"keep.a", {.data_type = "String", .string_value = "1"}},
             {"drop", {.data_type = "String", .string_value = "2"}}});
  ReceiveOptions options;
  options.attribute_names = {"SentTimestamp"};
  options.message_attribute_names = {"keep.*"};
  auto messages = sqs_.ReceiveMessages(url_, options);
  ASSERT_TRUE(messages.ok());
  ASSERT_EQ(messages->size(), 1u);
  const Message& m = (*messages)[0];
  EXPECT_EQ(m.attributes.size(), 1u);
  EXPECT_TRUE(m.attributes.contains("SentTimestamp"));
  ASSERT_EQ(m.message_attributes.size(), 1u);
  EXPECT_TRUE(m.message_attributes.contains("keep.a"));
  EXPECT_TRUE(VerifyMessage(m).ok());  // the digest covers only what was returned, as in SQS
}

TEST_F(FakeQueueTest, ReceivedMessageStaysInvisibleUntilTimeoutThenReturnsWithNewHandle) {
  Send("a");
  auto first = Receive();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(Receive().empty());
  clock_.Advance(seconds(29));
  EXPECT_TRUE(Receive().empty());
  clock_.Advance(seconds(1));
  auto second = Receive();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_NE(second[0].receipt_handle, first[0].receipt_handle);
  EXPECT_EQ(second[0].attributes.at("ApproximateReceiveCount"), "2");
  EXPECT_EQ(second[0].attributes.at("ApproximateFirstReceiveTimestamp"),
            first[0].attributes.at("ApproximateFirstReceiveTimestamp"));
}

TEST_F(FakeQueueTest, PerReceiveVisibilityTimeoutOverridesQueueDefault) {
  Send("a");
  ASSERT_EQ(Receive(10, 5).size(), 1u);
  clock_.Advance(seconds(5));
  EXPECT_EQ(Receive().size(), 1u);
}

TEST_F(FakeQueueTest, DeleteWithCurrentHandleRemovesMessage) {
  Send("a");
  Send("b");
  auto messages = Receive();
  ASSERT_EQ(messages.size(), 2u);
  auto result = sqs_.DeleteMessageBatch(url_, {{"0", messages[0].receipt_handle}, {"1", messages[1].receipt_handle}});
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->successful_ids.size(), 2u);
  EXPECT_TRUE(result->failed.empty());
  EXPECT_EQ(sqs_.Depth(url_), 0u);
  EXPECT_EQ(sqs_.deleted_count(), 2);
  // Deleting again with the same handle succeeds and changes nothing.
  auto again = sqs_.DeleteMessageBatch(url_, {{"0", messages[0].receipt_handle}});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->successful_ids.size(), 1u);
  EXPECT_EQ(sqs_.deleted_count(), 2);
}

TEST_F(FakeQueueTest, StaleReceiptHandleIsRejectedAfterMessageWasReceivedAgain) {
  Send("a");
  auto first = Receive();
  clock_.Advance(seconds(31));
  auto second = Receive();
  ASSERT_EQ(second.size(), 1u);
  auto stale = sqs_.DeleteMessageBatch(url_, {{"old", first[0].receipt_handle}});
  ASSERT_TRUE(stale.ok());
  ASSERT_EQ(stale->failed.size(), 1u);
  EXPECT_EQ(stale->failed[0].code, "ReceiptHandleIsInvalid");
  EXPECT_EQ(sqs_.Depth(url_), 1u);
  auto stale_visibility = sqs_.ChangeMessageVisibilityBatch(url_, {{"old", first[0].receipt_handle, 60}});
  ASSERT_TRUE(stale_visibility.ok());
  ASSERT_EQ(stale_visibility->failed.size(), 1u);
  EXPECT_EQ(stale_visibility->failed[0].code, "ReceiptHandleIsInvalid");
  auto current = sqs_.DeleteMessageBatch(url_, {{"new", second[0].receipt_handle}});
  ASSERT_TRUE(current.ok());
  EXPECT_EQ(current->successful_ids, (std::vector<std::string>{"new"}));
  EXPECT_EQ(sqs_.Depth(url_), 0u);
}

TEST_F(FakeQueueTest, ADeleteBatchNamingOneHandleTwiceFailsWholeAndDeletesNothing) {
  Send("a");
  Send("b");
  auto got = Receive();
  ASSERT_EQ(got.size(), 2u);
  auto twice = sqs_.DeleteMessageBatch(
      url_, {{"0", got[0].receipt_handle}, {"1", got[1].receipt_handle}, {"2", got[0].receipt_handle}});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(twice.status().message().find("BatchEntryIdsNotDistinct: Id 2 repeated"), std::string::npos)
      << twice.status().ToString();
  EXPECT_EQ(sqs_.Depth(url_), 2u);
}

TEST_F(FakeQueueTest, ChangeVisibilityExtendsAndReleases) {
  Send("a");
  Send("b");
  auto messages = Receive();
  ASSERT_EQ(messages.size(), 2u);
  clock_.Advance(seconds(20));
  auto result = sqs_.ChangeMessageVisibilityBatch(
      url_, {{"extend", messages[0].receipt_handle, 120}, {"release", messages[1].receipt_handle, 0}});
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->successful_ids.size(), 2u);
  auto now = Receive(10, 1000);
  ASSERT_EQ(now.size(), 1u);
  EXPECT_EQ(now[0].body, "b");
  clock_.Advance(seconds(119));
  EXPECT_TRUE(Receive().empty());
  clock_.Advance(seconds(1));
  auto extended = Receive();
  ASSERT_EQ(extended.size(), 1u);
  EXPECT_EQ(extended[0].body, "a");
}

TEST_F(FakeQueueTest, ChangeVisibilityOfMessageNotInFlightFails) {
  Send("a");
  auto messages = Receive();
  clock_.Advance(seconds(30));
  auto result = sqs_.ChangeMessageVisibilityBatch(url_, {{"x", messages[0].receipt_handle, 60}});
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->failed.size(), 1u);
  EXPECT_EQ(result->failed[0].code, "MessageNotInflight");
}

TEST_F(FakeQueueTest, QueueCountsTrackVisibleInFlightAndDelayed) {
  Send("a");
  Send("b");
  ASSERT_TRUE(sqs_.SendMessage(url_, SendEntry{.id = "", .body = "later", .delay_seconds = 60}).ok());
  ASSERT_EQ(Receive(1).size(), 1u);
  auto attrs = Attrs();
  EXPECT_EQ(attrs["ApproximateNumberOfMessages"], "1");
  EXPECT_EQ(attrs["ApproximateNumberOfMessagesNotVisible"], "1");
  EXPECT_EQ(attrs["ApproximateNumberOfMessagesDelayed"], "1");
  EXPECT_EQ(attrs["QueueArn"], "arn:aws:sqs:us-east-1:123456789012:orders-dlq");
  EXPECT_EQ(attrs["VisibilityTimeout"], "30");
  auto some = sqs_.GetQueueAttributes(url_, {"ApproximateNumberOfMessages"});
  ASSERT_TRUE(some.ok());
  EXPECT_EQ(some->size(), 1u);
}

TEST_F(FakeQueueTest, MessagesExpireAfterRetentionCountedFromSentTimestamp) {
  ASSERT_TRUE(sqs_.SetQueueAttributes(url_, {{"MessageRetentionPeriod", "345600"}}).ok());
  auto old_id = sqs_.InjectMessage(url_, SendEntry{.id = "", .body = "old"}, clock_.Now() - hours(95));
  ASSERT_TRUE(old_id.ok());
  Send("new");
  EXPECT_EQ(sqs_.Depth(url_), 2u);
  auto messages = sqs_.Messages(url_);
  EXPECT_EQ(messages[0].attributes.at("SentTimestamp"), std::to_string((1700000000 - 95 * 3600) * int64_t{1000}));
  clock_.Advance(hours(1));
  EXPECT_EQ(sqs_.Depth(url_), 1u);
  auto received = Receive();
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].body, "new");
}

TEST_F(FakeQueueTest, RedrivePolicyMovesMessageToDlqKeepingSentTimestamp) {
  auto source = sqs_.CreateQueue("orders", {});
  ASSERT_TRUE(source.ok());
  ASSERT_TRUE(sqs_.SetQueueAttributes(
                      *source, {{"RedrivePolicy", R"({"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:)"
                                                  R"(orders-dlq","maxReceiveCount":"2"})"}})
                  .ok());
  ASSERT_TRUE(sqs_.SendMessage(*source, SendEntry{.id = "", .body = "poison"}).ok());
  ReceiveOptions options;
  for (int i = 0; i < 2; ++i) {
    auto got = sqs_.ReceiveMessages(*source, options);
    ASSERT_TRUE(got.ok());
    ASSERT_EQ(got->size(), 1u);
    clock_.Advance(seconds(30));
  }
  auto third = sqs_.ReceiveMessages(*source, options);
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(third->empty());
  auto in_dlq = Receive();
  ASSERT_EQ(in_dlq.size(), 1u);
  EXPECT_EQ(in_dlq[0].body, "poison");
  EXPECT_EQ(in_dlq[0].attributes.at("SentTimestamp"), "1700000000000");
  EXPECT_EQ(in_dlq[0].attributes.at("DeadLetterQueueSourceArn"), "arn:aws:sqs:us-east-1:123456789012:orders");
  auto sources = sqs_.ListDeadLetterSourceQueues(url_);
  ASSERT_TRUE(sources.ok());
  EXPECT_EQ(*sources, (std::vector<std::string>{*source}));
}

TEST_F(FakeQueueTest, FailNextFailsExactlyCountCallsAndCountsThem) {
  Send("a");
  sqs_.FailNext(Op::kReceiveMessages, Unavailable("injected 503"), 2);
  ReceiveOptions options;
  EXPECT_EQ(sqs_.ReceiveMessages(url_, options).status().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(sqs_.ReceiveMessages(url_, options).status().code(), ErrorCode::kUnavailable);
  auto ok = sqs_.ReceiveMessages(url_, options);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->size(), 1u);  // the failed calls did not take the message
  EXPECT_EQ(sqs_.calls(Op::kReceiveMessages), 3);
  EXPECT_EQ(sqs_.calls(Op::kDeleteMessageBatch), 0);
}

TEST_F(FakeQueueTest, FailAfterApplyingDeletesButReportsFailure) {
  Send("a");
  auto messages = Receive();
  sqs_.FailNext(Op::kDeleteMessageBatch, Unavailable("connection reset"), 1, /*after_applying=*/true);
  auto result = sqs_.DeleteMessageBatch(url_, {{"0", messages[0].receipt_handle}});
  EXPECT_EQ(result.status().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
}

TEST_F(FakeQueueTest, FailDeleteEntriesFailsTheNextEntriesAndKeepsThoseMessages) {
  for (int i = 0; i < 3; ++i) Send("m" + std::to_string(i));
  auto messages = Receive();
  ASSERT_EQ(messages.size(), 3u);
  sqs_.FailDeleteEntries(2, "InternalError");
  std::vector<DeleteEntry> entries;
  for (size_t i = 0; i < messages.size(); ++i) entries.push_back({"e" + std::to_string(i), messages[i].receipt_handle});
  auto result = sqs_.DeleteMessageBatch(url_, entries);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->successful_ids, (std::vector<std::string>{"e2"}));
  ASSERT_EQ(result->failed.size(), 2u);
  EXPECT_EQ(result->failed[0].code, "InternalError");
  EXPECT_EQ(sqs_.Depth(url_), 2u);
  // The injection is used up.
  auto retry = sqs_.DeleteMessageBatch(url_, {entries[0], entries[1]});
  ASSERT_TRUE(retry.ok());
  EXPECT_EQ(retry->successful_ids.size(), 2u);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
}

TEST_F(FakeQueueTest, SendBatchReportsInjectedAndInvalidEntries) {
  sqs_.FailSendEntries(1);
  auto result = sqs_.SendMessageBatch(url_, {SendEntry{.id = "a", .body = "1"}, SendEntry{.id = "b", .body = "2"},
                                             SendEntry{.id = "c", .body = "3", .delay_seconds = 901}});
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->successful_ids, (std::vector<std::string>{"b"}));
  ASSERT_EQ(result->sent.size(), 1u);
  EXPECT_EQ(result->sent[0].md5_of_body, Md5OfBody("2"));
  ASSERT_EQ(result->failed.size(), 2u);
  EXPECT_EQ(result->failed[1].code, "InvalidParameterValue");
  EXPECT_EQ(sqs_.Depth(url_), 1u);
  EXPECT_EQ(sqs_.SendMessageBatch(url_, {}).status().code(), ErrorCode::kInvalidArgument);
}

TEST_F(FakeQueueTest, UnknownQueueIsNotFoundWithAwsCode) {
  auto r = sqs_.ReceiveMessages("https://sqs.us-east-1.amazonaws.com/123456789012/nope", ReceiveOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound);
  ASSERT_TRUE(r.status().aws().has_value());
  EXPECT_EQ(r.status().aws()->error_code, "QueueDoesNotExist");
  EXPECT_EQ(sqs_.GetQueueUrl("nope", "").status().code(), ErrorCode::kNotFound);
  auto url = sqs_.GetQueueUrl("orders-dlq", "");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(*url, url_);
}

TEST_F(FakeQueueTest, ListQueuesFiltersByPrefixAndDeleteQueueRemoves) {
  ASSERT_TRUE(sqs_.CreateQueue("payments-dlq", {}).ok());
  ASSERT_TRUE(sqs_.CreateQueue("orders", {}).ok());
  auto urls = sqs_.ListQueues("orders");
  ASSERT_TRUE(urls.ok());
  EXPECT_EQ(urls->size(), 2u);
  ASSERT_TRUE(sqs_.DeleteQueue(url_).ok());
  EXPECT_EQ(sqs_.ListQueues("")->size(), 2u);
  EXPECT_EQ(sqs_.DeleteQueue(url_).code(), ErrorCode::kNotFound);
}

TEST_F(FakeQueueTest, FifoQueueKeepsGroupOrderAndDeduplicates) {
  auto fifo = sqs_.CreateQueue("orders-dlq.fifo", {{"FifoQueue", "true"}, {"ContentBasedDeduplication", "true"}});
  ASSERT_TRUE(fifo.ok()) << fifo.status().ToString();
  auto send = [&](std::string body, std::string group) {
    return sqs_.SendMessage(*fifo, SendEntry{.id = "", .body = std::move(body), .message_group_id = std::move(group)});
  };
  auto a1 = send("a1", "A");
  ASSERT_TRUE(a1.ok());
  EXPECT_FALSE(a1->sequence_number.empty());
  ASSERT_TRUE(send("a2", "A").ok());
  ASSERT_TRUE(send("b1", "B").ok());
  auto dup = send("a1", "A");
  ASSERT_TRUE(dup.ok());
  EXPECT_EQ(dup->message_id, a1->message_id);
  EXPECT_EQ(sqs_.Depth(*fifo), 3u);
  EXPECT_EQ(sqs_.SendMessage(*fifo, SendEntry{.id = "", .body = "x"}).status().code(), ErrorCode::kInvalidArgument);

  ReceiveOptions one;
  one.max_messages = 1;
  auto first = sqs_.ReceiveMessages(*fifo, one);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ((*first)[0].body, "a1");
  EXPECT_EQ((*first)[0].attributes.at("MessageGroupId"), "A");
  // Group A is blocked while a1 is in flight; B is served.
  auto next = sqs_.ReceiveMessages(*fifo, ReceiveOptions{});
  ASSERT_TRUE(next.ok());
  ASSERT_EQ(next->size(), 1u);
  EXPECT_EQ((*next)[0].body, "b1");
}

TEST_F(FakeQueueTest, ConcurrentReceiversNeverGetTheSameMessage) {
  for (int i = 0; i < 200; ++i) Send("m" + std::to_string(i));
  std::vector<std::vector<Message>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        auto r = sqs_.ReceiveMessages(url_, ReceiveOptions{});
        if (r.ok()) got[t].insert(got[t].end(), r->begin(), r->end());
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<std::string> ids;
  size_t total = 0;
  for (const auto& v : got) {
    total += v.size();
    for (const auto& m : v) ids.insert(m.message_id);
  }
  EXPECT_EQ(total, 200u);
  EXPECT_EQ(ids.size(), 200u);
}

}  // namespace
}  // namespace dlq
