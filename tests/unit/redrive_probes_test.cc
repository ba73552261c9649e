// The SQS side of a guarded redrive, on the fake SQS: the processing window
// from a destination's attributes, the backlog, and re-failures found in the
// DLQ with few receives, every received message released at once.
#include "replay/redrive_probes.h"

#include <gtest/gtest.h>

#include "testing/fake_clock.h"
#include "testing/fake_queue.h"

namespace dlq {
namespace {

using Op = FakeQueueClient::Operation;
using std::chrono::seconds;

class RedriveProbesTest : public ::testing::Test {
 protected:
  RedriveProbesTest() : sqs_(clock_) {
    dlq_ = *sqs_.CreateQueue("orders-dlq", {});
    dest_ = *sqs_.CreateQueue(
        "orders", {{"RedrivePolicy", R"({"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:orders-dlq",)"
                                     R"("maxReceiveCount":3})"},
                   {"VisibilityTimeout", "30"}});
  }

  std::string Send(const std::string& url, const std::string& body) {
    SendEntry e;
    e.id = "e";
    e.body = body;
    return sqs_.SendMessage(url, e)->message_id;
  }
  // A consumer that fails the message every time: it lands in the DLQ after maxReceiveCount receives.
  void FailUntilInDlq() {
    ReceiveOptions ro;
    ro.visibility_timeout = 0;
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(sqs_.ReceiveMessages(dest_, ro).ok());
  }
  // Receives from the DLQ as a bystander would: what is visible there now.
  size_t VisibleInDlq() {
    ReceiveOptions ro;
    ro.visibility_timeout = 0;
    return sqs_.ReceiveMessages(dlq_, ro)->size();
  }
  std::unique_ptr<SqsRefailureProbe> StartProbe(RefailureProbeOptions options = {}) {
    auto probe = SqsRefailureProbe::Start(sqs_, clock_, {dlq_}, std::move(options));
    EXPECT_TRUE(probe.ok()) << probe.status().ToString();
    return std::move(*probe);
  }

  FakeClock clock_;
  FakeQueueClient sqs_;
  std::string dlq_, dest_;
};

TEST_F(RedriveProbesTest, WindowIsMaxReceiveCountTimesVisibilityPlusDelayAndMarginAndNamesTheDlq) {
  ASSERT_TRUE(sqs_.SetQueueAttributes(dest_, {{"DelaySeconds", "5"}}).ok());
  auto w = ReadProcessingWindow(sqs_, dest_, "us-east-1");
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->max_receive_count, 3);
  EXPECT_EQ(w->visibility_timeout, seconds(30));
  EXPECT_EQ(w->delay, seconds(5));
  EXPECT_EQ(w->window, ProcessingWindow(3, seconds(30), seconds(5)));  // the guard's formula: 95 s + 10 s
  EXPECT_EQ(w->dlq_url, dlq_);
  EXPECT_EQ(w->dlq_arn, "arn:aws:sqs:us-east-1:123456789012:orders-dlq");
}

TEST_F(RedriveProbesTest, ADestinationWithoutRedrivePolicyIsAnErrorNamingIt) {
  auto w = ReadProcessingWindow(sqs_, dlq_, "us-east-1");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(w.status().message().find(dlq_), std::string::npos) << w.status().message();
  EXPECT_NE(w.status().message().find("no RedrivePolicy"), std::string::npos) << w.status().message();
}

TEST_F(RedriveProbesTest, AWindowReadThatFailsNamesTheQueue) {
  sqs_.FailNext(Op::kGetQueueAttributes, Unavailable("throttled"));
  auto w = ReadProcessingWindow(sqs_, dest_, "us-east-1");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(w.status().message().find(dest_), std::string::npos) << w.status().message();
}

TEST_F(RedriveProbesTest, BacklogIsTheVisibleMessagesOfTheDestinations) {
  for (int i = 0; i < 3; ++i) Send(dest_, "b");
  Send(dlq_, "other");
  SqsBacklogProbe probe(sqs_, {dest_, dlq_});
  auto s = probe.Sample();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->visible, 4);
  EXPECT_FALSE(s->oldest_age.has_value());
  sqs_.FailNext(Op::kGetQueueAttributes, Unavailable("throttled"));
  auto failed = probe.Sample();
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find(dest_), std::string::npos) << failed.status().message();
}

TEST_F(RedriveProbesTest, NothingIsReceivedWhileTheDlqCountsDoNotGrow) {
  for (int i = 0; i < 5; ++i) Send(dlq_, "already there");
  auto probe = StartProbe();
  std::map<std::string, ReplayedMessage> watched = {{Send(dest_, "replayed"), {"orig-1", "", dest_}}};
  for (int i = 0; i < 3; ++i) {
    auto found = probe->Find(watched);
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    EXPECT_TRUE(found->empty());
  }
  EXPECT_EQ(sqs_.calls(Op::kReceiveMessages), 0);
  EXPECT_EQ(probe->receives(), 0u);
  EXPECT_EQ(probe->count_reads(), 4u);  // the baseline and one per look
}

TEST_F(RedriveProbesTest, UnrelatedDlqMessagesAreReleasedUntouched) {
  auto probe = StartProbe();
  std::map<std::string, ReplayedMessage> watched = {{Send(dest_, "replayed"), {"orig-1", "", dest_}}};
  for (int i = 0; i < 3; ++i) Send(dlq_, "someone else's failure");
  auto found = probe->Find(watched);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_TRUE(found->empty());
  EXPECT_EQ(probe->receives(), 3u);
  EXPECT_EQ(sqs_.Depth(dlq_), 3u);  // nothing deleted or moved
  EXPECT_EQ(VisibleInDlq(), 3u);    // and visible again at once
  EXPECT_EQ(sqs_.calls(Op::kDeleteMessageBatch), 0);
  // The growth is explained by a complete look: the next look receives nothing.
  const int receives = sqs_.calls(Op::kReceiveMessages);
  ASSERT_TRUE(probe->Find(watched).ok());
  EXPECT_EQ(sqs_.calls(Op::kReceiveMessages), receives);
}

TEST_F(RedriveProbesTest, FindsAReplayedMessageThatFailedAgainOnceAndLeavesItInTheDlq) {
  for (int i = 0; i < 2; ++i) Send(dlq_, "unrelated");
  auto probe = StartProbe();
  const std::string new_id = Send(dest_, "replayed");
  const std::string other_id = Send(dest_, "replayed and fine");
  std::map<std::string, ReplayedMessage> watched = {{new_id, {"orig-1", new_id, dest_}},
                                                    {other_id, {"orig-2", other_id, dest_}}};
  // The consumer takes "replayed and fine" for good and keeps failing "replayed".
  ReceiveOptions first;
  first.max_messages = 10;
  auto received = sqs_.ReceiveMessages(dest_, first);
  ASSERT_TRUE(received.ok());
  for (const Message& m : *received) {
    if (m.message_id == other_id) {
      ASSERT_TRUE(sqs_.DeleteMessageBatch(dest_, {{"d", m.receipt_handle}}).ok());
    }
  }
  clock_.Advance(seconds(31));
  FailUntilInDlq();
  ASSERT_EQ(sqs_.Depth(dlq_), 3u);
  clock_.Advance(seconds(7));
  auto found = probe->Find(watched);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].message_id, "orig-1");
  EXPECT_EQ((*found)[0].new_message_id, new_id);
  EXPECT_EQ((*found)[0].destination, dest_);
  EXPECT_EQ((*found)[0].dlq, dlq_);
  EXPECT_EQ((*found)[0].found_at, clock_.Now());
  EXPECT_EQ(sqs_.Depth(dlq_), 3u);  // the evidence stays
  EXPECT_EQ(VisibleInDlq(), 3u);
  auto again = probe->Find(watched);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty());  // reported once
}

TEST_F(RedriveProbesTest, WhatTheCallerDeletedFromTheDlqDoesNotHideARefailure) {
  for (int i = 0; i < 3; ++i) Send(dlq_, "to be replayed");
  uint64_t removed = 0;
  RefailureProbeOptions options;
  options.removed_by_caller = [&](const std::string& url) { return url == dlq_ ? removed : 0; };
  auto probe = StartProbe(options);
  // The live form sends two and deletes them from the DLQ; one of them fails again.
  ReceiveOptions ro;
  ro.max_messages = 2;
  ro.visibility_timeout = 0;
  auto taken = *sqs_.ReceiveMessages(dlq_, ro);
  ASSERT_EQ(taken.size(), 2u);
  ASSERT_TRUE(sqs_.DeleteMessageBatch(dlq_, {{"a", taken[0].receipt_handle}, {"b", taken[1].receipt_handle}}).ok());
  removed = 2;
  const std::string new_id = Send(dest_, "replayed");
  FailUntilInDlq();
  ASSERT_EQ(sqs_.Depth(dlq_), 2u);  // fewer than at the start
  auto found = probe->Find({{new_id, {taken[0].message_id, new_id, dest_}}});
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].message_id, taken[0].message_id);
}

TEST_F(RedriveProbesTest, ADlqWhoseReceivesFailIsAnErrorNamingItAndReleasesWhatItHeld) {
  auto probe = StartProbe(RefailureProbeOptions{.max_receives_per_look = 20});
  for (int i = 0; i < 15; ++i) Send(dlq_, "unrelated");
  sqs_.FailNext(Op::kReceiveMessages, Unavailable("connection reset"), 1);
  auto found = probe->Find({});
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(found.status().message().find("looking for re-failures in DLQ " + dlq_), std::string::npos)
      << found.status().message();
  EXPECT_EQ(VisibleInDlq(), 10u);  // nothing is held (a receive gets its 10 of the 15)
  // The failed look explained nothing: the next one looks again.
  auto retry = probe->Find({});
  ASSERT_TRUE(retry.ok()) << retry.status().ToString();
  EXPECT_EQ(probe->receives(), 15u);
}

TEST_F(RedriveProbesTest, ALookReceivesAtMostItsBudget) {
  auto probe = StartProbe(RefailureProbeOptions{.max_receives_per_look = 25});
  for (int i = 0; i < 60; ++i) Send(dlq_, "unrelated");
  ASSERT_TRUE(probe->Find({}).ok());
  EXPECT_EQ(probe->receives(), 25u);
  EXPECT_EQ(VisibleInDlq(), 10u);  // all released
  // The growth is not explained yet: the next look tries again.
  ASSERT_TRUE(probe->Find({}).ok());
  EXPECT_EQ(probe->receives(), 50u);
}

}  // namespace
}  // namespace dlq
