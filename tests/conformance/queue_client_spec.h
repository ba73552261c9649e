// One specification of QueueClient (sqs/sqs_client.h), run against every
// implementation: the fake (src/testing/fake_queue.h) in the unit suite,
// SqsClient on fauxqs and on moto in the integration suite. When the fake
// and a stand-in disagree, the fake is wrong. A documented stand-in quirk
// (doc/stand-ins.md) skips the one test it breaks, for that target only.
//
// Include this header in exactly one test file per binary and instantiate:
//   INSTANTIATE_TEST_SUITE_P(Unit, QueueClientSpec, ::testing::Values(target), QueueTargetName);
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <set>
#include <string>

#include "common/crypto.h"
#include "common/strings.h"
#include "sqs/sqs_client.h"

namespace dlq::conformance {

struct QueueClientTarget {
  std::string name;
  // A client; nullptr to skip (the reason in skip_reason).
  std::function<std::shared_ptr<QueueClient>()> make;
  std::string skip_reason;
  // Documented quirks: non-empty = the reason a test is skipped here.
  std::string no_dead_letter_source_listing;  // ListDeadLetterSourceQueues unsupported
  std::string accepts_bogus_delete_handles;   // DeleteMessageBatch succeeds for any handle
  std::string accepts_invalid_characters;     // bodies with U+0001 are not rejected
};

inline void PrintTo(const QueueClientTarget& t, std::ostream* os) {
  *os << t.name;
}

inline std::string QueueTargetName(const ::testing::TestParamInfo<QueueClientTarget>& info) {
  return info.param.name;
}

class QueueClientSpec : public ::testing::TestWithParam<QueueClientTarget> {
 protected:
  void SetUp() override {
    sqs_ = GetParam().make();
    if (sqs_ == nullptr) GTEST_SKIP() << GetParam().skip_reason;
  }
  void TearDown() override {
    if (sqs_ == nullptr) return;
    for (const std::string& url : created_) (void)sqs_->DeleteQueue(url);
  }

  std::string NewQueue(const std::string& base, std::map<std::string, std::string> attributes = {}) {
    std::string name = base + "-" + RandomHex(4);
    if (attributes.count("FifoQueue")) name += ".fifo";
    auto url = sqs_->CreateQueue(name, attributes);
    EXPECT_TRUE(url.ok()) << name << ": " << url.status().ToString();
    if (!url.ok()) return "";
    created_.push_back(*url);
    return *url;
  }

  std::vector<Message> ReceiveAll(const std::string& url, int visibility = 60, int rounds = 5) {
    std::vector<Message> out;
    ReceiveOptions ro;
    ro.max_messages = 10;
    ro.visibility_timeout = visibility;
    for (int i = 0; i < rounds; ++i) {
      auto got = sqs_->ReceiveMessages(url, ro);
      EXPECT_TRUE(got.ok()) << got.status().ToString();
      if (!got.ok() || got->empty()) break;
      out.insert(out.end(), got->begin(), got->end());
    }
    return out;
  }

  int64_t Count(const std::string& url, const std::string& attribute) {
    auto attrs = sqs_->GetQueueAttributes(url, {attribute});
    EXPECT_TRUE(attrs.ok()) << attrs.status().ToString();
    if (!attrs.ok() || !attrs->count(attribute)) return -1;
    return ParseInt64(attrs->at(attribute)).value_or(-1);
  }

  std::shared_ptr<QueueClient> sqs_;
  std::vector<std::string> created_;
};

TEST_P(QueueClientSpec, SentMessageComesBackWithBodyAttributesAndDigests) {
  const std::string url = NewQueue("spec-roundtrip");
  SendEntry e;
  e.body = "poison {\"order\": 42} \xC3\xA9";
  e.message_attributes["kind"] = {"String", "order", ""};
  e.message_attributes["count"] = {"Number", "7", ""};
  e.message_attributes["blob"] = {"Binary", "", std::string("\x00\x01\xff", 3)};
  auto sent = sqs_->SendMessage(url, e);
  ASSERT_TRUE(sent.ok()) << sent.status().ToString();
  EXPECT_FALSE(sent->message_id.empty());
  EXPECT_EQ(sent->md5_of_body, Md5Hex(e.body));
  EXPECT_FALSE(sent->md5_of_message_attributes.empty());

  auto got = ReceiveAll(url);
  ASSERT_EQ(got.size(), 1u);
  const Message& m = got[0];
  EXPECT_EQ(m.message_id, sent->message_id);
  EXPECT_EQ(m.body, e.body);
  EXPECT_EQ(m.md5_of_body, Md5Hex(e.body));
  EXPECT_EQ(m.md5_of_message_attributes, sent->md5_of_message_attributes);
  EXPECT_EQ(m.message_attributes, e.message_attributes);
  EXPECT_FALSE(m.receipt_handle.empty());
  EXPECT_TRUE(m.attributes.count("SentTimestamp"));
  EXPECT_EQ(m.attributes.count("ApproximateReceiveCount") ? m.attributes.at("ApproximateReceiveCount") : "", "1");
}

TEST_P(QueueClientSpec, AttributesCountVisibleAndInFlightMessages) {
  const std::string url = NewQueue("spec-counts", {{"MessageRetentionPeriod", "345600"}});
  auto attrs = sqs_->GetQueueAttributes(url, {"All"});
  ASSERT_TRUE(attrs.ok()) << attrs.status().ToString();
  EXPECT_EQ(attrs->at("MessageRetentionPeriod"), "345600");
  EXPECT_TRUE(attrs->count("QueueArn"));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(sqs_->SendMessage(url, SendEntry{.body = "m" + std::to_string(i)}).ok());
  EXPECT_EQ(Count(url, "ApproximateNumberOfMessages"), 4);
  ReceiveOptions ro;
  ro.max_messages = 1;
  ro.visibility_timeout = 60;
  ASSERT_EQ(sqs_->ReceiveMessages(url, ro)->size(), 1u);
  EXPECT_EQ(Count(url, "ApproximateNumberOfMessages"), 3);
  EXPECT_EQ(Count(url, "ApproximateNumberOfMessagesNotVisible"), 1);
}

TEST_P(QueueClientSpec, InFlightMessagesAreNotReceivedAgainUntilReleased) {
  const std::string url = NewQueue("spec-visibility");
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(sqs_->SendMessage(url, SendEntry{.body = "v" + std::to_string(i)}).ok());
  auto first = ReceiveAll(url, 60);
  ASSERT_EQ(first.size(), 3u);
  EXPECT_TRUE(ReceiveAll(url, 60).empty()) << "in flight for 60 s";
  // Release two of them at once (visibility 0); the third stays in flight.
  std::vector<VisibilityEntry> release = {{"a", first[0].receipt_handle, 0}, {"b", first[1].receipt_handle, 0}};
  auto r = sqs_->ChangeMessageVisibilityBatch(url, release);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(r->successful_ids, ::testing::UnorderedElementsAre("a", "b"));
  EXPECT_TRUE(r->failed.empty());
  auto again = ReceiveAll(url, 60);
  std::set<std::string> ids;
  for (const Message& m : again) ids.insert(m.message_id);
  EXPECT_EQ(ids, (std::set<std::string>{first[0].message_id, first[1].message_id}));
  for (const Message& m : again) EXPECT_EQ(m.attributes.at("ApproximateReceiveCount"), "2");
}

TEST_P(QueueClientSpec, VisibilityBatchReportsABadHandlePerEntry) {
  const std::string url = NewQueue("spec-visibility-bad");
  ASSERT_TRUE(sqs_->SendMessage(url, SendEntry{.body = "x"}).ok());
  auto got = ReceiveAll(url, 60);
  ASSERT_EQ(got.size(), 1u);
  auto r = sqs_->ChangeMessageVisibilityBatch(url, {{"good", got[0].receipt_handle, 30}, {"bad", "garbage", 30}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(r->successful_ids, ::testing::ElementsAre("good"));
  ASSERT_EQ(r->failed.size(), 1u);
  EXPECT_EQ(r->failed[0].id, "bad");
  EXPECT_EQ(r->failed[0].code, "ReceiptHandleIsInvalid");
  EXPECT_TRUE(r->failed[0].sender_fault);
}

TEST_P(QueueClientSpec, DeleteBatchRemovesMessagesAndReportsABadHandlePerEntry) {
  const std::string url = NewQueue("spec-delete");
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(sqs_->SendMessage(url, SendEntry{.body = "d" + std::to_string(i)}).ok());
  auto got = ReceiveAll(url, 60);
  ASSERT_EQ(got.size(), 3u);
  std::vector<DeleteEntry> entries;
  for (size_t i = 0; i < got.size(); ++i) entries.push_back({"e" + std::to_string(i), got[i].receipt_handle});
  const bool bogus = GetParam().accepts_bogus_delete_handles.empty();
  if (bogus) entries.push_back({"bad", "garbage-handle"});
  auto r = sqs_->DeleteMessageBatch(url, entries);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(r->successful_ids, ::testing::UnorderedElementsAre("e0", "e1", "e2"));
  if (bogus) {
    ASSERT_EQ(r->failed.size(), 1u);
    EXPECT_EQ(r->failed[0].id, "bad");
    EXPECT_EQ(r->failed[0].code, "ReceiptHandleIsInvalid");
    EXPECT_TRUE(r->failed[0].sender_fault);
  } else {
    std::cout << "[ SKIPPED  ] the bad-handle entry: " << GetParam().accepts_bogus_delete_handles << "\n";
  }
  EXPECT_EQ(Count(url, "ApproximateNumberOfMessages"), 0);
  EXPECT_EQ(Count(url, "ApproximateNumberOfMessagesNotVisible"), 0);
}

TEST_P(QueueClientSpec, SendBatchReportsEachEntry) {
  const std::string url = NewQueue("spec-send-batch");
  std::vector<SendEntry> entries = {{.id = "one", .body = "first"}, {.id = "two", .body = "second"}};
  const bool invalid = GetParam().accepts_invalid_characters.empty();
  if (invalid) entries.push_back({.id = "bad", .body = std::string("a\x01") + "b"});
  auto r = sqs_->SendMessageBatch(url, entries);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(r->successful_ids, ::testing::UnorderedElementsAre("one", "two"));
  ASSERT_EQ(r->sent.size(), 2u);
  for (const SentMessage& s : r->sent) {
    EXPECT_EQ(s.md5_of_body, Md5Hex(s.id == "one" ? "first" : "second"));
  }
  if (invalid) {
    ASSERT_EQ(r->failed.size(), 1u);
    EXPECT_EQ(r->failed[0].id, "bad");
    EXPECT_EQ(r->failed[0].code, "InvalidMessageContents");
  }
  EXPECT_EQ(ReceiveAll(url).size(), 2u);
}

TEST_P(QueueClientSpec, FifoDeliversAGroupInOrderOneBatchAtATimeAndDeduplicates) {
  const std::string url = NewQueue(
      "spec-fifo", {{"FifoQueue", "true"}, {"ContentBasedDeduplication", "false"}, {"VisibilityTimeout", "60"}});
  for (int i = 0; i < 3; ++i) {
    SendEntry e{
        .body = "a" + std::to_string(i), .message_group_id = "A", .message_deduplication_id = "a" + std::to_string(i)};
    auto sent = sqs_->SendMessage(url, e);
    ASSERT_TRUE(sent.ok()) << sent.status().ToString();
    EXPECT_FALSE(sent->sequence_number.empty());
  }
  // The same deduplication id again within 5 minutes: accepted, not stored twice.
  auto dup = sqs_->SendMessage(url, SendEntry{.body = "a0", .message_group_id = "A", .message_deduplication_id = "a0"});
  ASSERT_TRUE(dup.ok()) << dup.status().ToString();

  ReceiveOptions ro;
  ro.max_messages = 1;
  ro.visibility_timeout = 60;
  auto first = sqs_->ReceiveMessages(url, ro);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ((*first)[0].body, "a0");
  EXPECT_EQ((*first)[0].attributes.at("MessageGroupId"), "A");
  // While a0 is in flight, nothing else of group A is delivered.
  EXPECT_TRUE(sqs_->ReceiveMessages(url, ro)->empty());
  ASSERT_TRUE(sqs_->DeleteMessageBatch(url, {{"x", (*first)[0].receipt_handle}}).ok());
  // Then the rest of the group, in order; the duplicate never appears. SQS
  // may hand out one message of a group a receive: delete each as it comes.
  std::vector<std::string> rest;
  ro.max_messages = 10;
  for (int round = 0; round < 5; ++round) {
    auto got = sqs_->ReceiveMessages(url, ro);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    if (got->empty()) break;
    for (const Message& m : *got) {
      rest.push_back(m.body);
      ASSERT_TRUE(sqs_->DeleteMessageBatch(url, {{"x", m.receipt_handle}}).ok());
    }
  }
  EXPECT_EQ(rest, (std::vector<std::string>{"a1", "a2"}));
}

TEST_P(QueueClientSpec, ListDeadLetterSourceQueuesNamesTheSources) {
  if (!GetParam().no_dead_letter_source_listing.empty()) GTEST_SKIP() << GetParam().no_dead_letter_source_listing;
  const std::string dlq = NewQueue("spec-dlq");
  auto arn = sqs_->GetQueueAttributes(dlq, {"QueueArn"});
  ASSERT_TRUE(arn.ok()) << arn.status().ToString();
  const std::string policy = "{\"deadLetterTargetArn\":\"" + arn->at("QueueArn") + "\",\"maxReceiveCount\":\"3\"}";
  const std::string src = NewQueue("spec-src", {{"RedrivePolicy", policy}});
  NewQueue("spec-unrelated");
  auto sources = sqs_->ListDeadLetterSourceQueues(dlq);
  ASSERT_TRUE(sources.ok()) << sources.status().ToString();
  ASSERT_EQ(sources->size(), 1u);
  EXPECT_EQ(sources->at(0).substr(sources->at(0).rfind('/')), src.substr(src.rfind('/')));
}

// A guarded redrive (replay/redrive_guard.h) recognises a replayed message
// that failed again by the id SendMessageBatch gave it: SQS keeps it when
// it moves the message to the DLQ.
TEST_P(QueueClientSpec, MessageMovedToItsDlqKeepsTheIdSendMessageBatchGaveIt) {
  const std::string dlq = NewQueue("spec-dlq");
  auto arn = sqs_->GetQueueAttributes(dlq, {"QueueArn"});
  ASSERT_TRUE(arn.ok()) << arn.status().ToString();
  const std::string policy = "{\"deadLetterTargetArn\":\"" + arn->at("QueueArn") + "\",\"maxReceiveCount\":\"1\"}";
  const std::string src = NewQueue("spec-src", {{"RedrivePolicy", policy}});
  auto sent = sqs_->SendMessageBatch(src, {SendEntry{.id = "e0", .body = "fails again"}});
  ASSERT_TRUE(sent.ok()) << sent.status().ToString();
  ASSERT_EQ(sent->sent.size(), 1u);
  // Received once and given back (a failed attempt), then received again:
  // over maxReceiveCount, SQS moves it instead of handing it out.
  EXPECT_EQ(ReceiveAll(src, /*visibility=*/0, /*rounds=*/1).size(), 1u);
  std::vector<Message> again = ReceiveAll(src, /*visibility=*/0, /*rounds=*/3);
  EXPECT_TRUE(again.empty());
  std::vector<Message> moved = ReceiveAll(dlq);
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(moved[0].message_id, sent->sent[0].message_id);
  EXPECT_EQ(moved[0].body, "fails again");
}

TEST_P(QueueClientSpec, MissingQueueIsNotFoundForEveryCall) {
  const std::string url = NewQueue("spec-gone");
  ASSERT_TRUE(sqs_->DeleteQueue(url).ok());
  created_.clear();
  const std::string name = url.substr(url.rfind('/') + 1);
  EXPECT_EQ(sqs_->GetQueueUrl(name, "").status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(sqs_->GetQueueAttributes(url, {"All"}).status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(sqs_->ReceiveMessages(url, ReceiveOptions{}).status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(sqs_->SendMessage(url, SendEntry{.body = "x"}).status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(sqs_->DeleteMessageBatch(url, {{"x", "h"}}).status().code(), ErrorCode::kNotFound);
}

}  // namespace dlq::conformance
