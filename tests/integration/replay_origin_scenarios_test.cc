// `replay --to-origin` of the origins that are not a Lambda function's own
// DLQ, per scenario, with a function as the place the messages go back to:
// an EventBridge rule whose target is the function (its DLQ messages carry
// TARGET_ARN), and an SNS subscription whose endpoint is the function (the
// subscription's RedrivePolicy names the DLQ). For each: the bug fixed (every
// message delivered once, a rerun sends nothing), throttled (the run pauses
// and completes, each message delivered once), kill -9 mid-run and resume
// with --checkpoint (the rest delivered, at most one batch twice). The bug
// still there (the canary stops it) is in replay_origin_test.cc. Against moto
// and the fake Lambda (scripts/stand-ins start moto fake-lambda).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <ostream>
#include <set>
#include <string>

#include "fake_lambda.h"
#include "harness.h"
#include "replay_origin_fixture.h"
#include "sns_fixtures.h"

namespace dlq::it {
namespace {

enum class Origin { kEventBridgeRule, kSnsSubscription };

std::string OriginName(Origin origin) {
  return origin == Origin::kEventBridgeRule ? "EventBridgeRule" : "SnsSubscription";
}
std::string TestNameOf(const ::testing::TestParamInfo<Origin>& info) {
  return OriginName(info.param);
}
void PrintTo(Origin origin, std::ostream* os) {
  *os << OriginName(origin);
}

class ReplayOriginScenariosTest : public ReplayOriginFixture, public ::testing::WithParamInterface<Origin> {
 protected:
  ReplayOriginScenariosTest() : ReplayOriginFixture("rp-scen") {}

  // fn_ (with a DeadLetterConfig of its own, which a guarded run watches)
  // behind the origin under test, and `n` messages that origin could not
  // deliver to it, in the origin's DLQ, archived into dir_. Returns what fn_
  // must be invoked with for them, byte for byte.
  std::set<std::string> ArchiveUndelivered(int n) {
    auto [fn_dlq_url, fn_dlq_arn] = Queue(base_ + "-fn-dlq");
    fn_ = base_ + "-fn";
    fn_arn_ = CreateFakeLambdaFunction(*lambda_aws_, fn_, role_arn_, fn_dlq_arn);
    EXPECT_FALSE(fn_arn_.empty());
    auto [dlq_url, dlq_arn] = Queue(base_ + "-dlq");
    std::set<std::string> want;
    if (GetParam() == Origin::kEventBridgeRule) {
      for (int i = 0; i < n; ++i) {
        SendEntry e;
        e.body = fmt::format(R"({{"version":"0","id":"ev-{}","detail-type":"OrderPlaced","source":"shop",)"
                             R"("detail":{{"order": {}, "note": "caf\u00e9"}}}})",
                             i, i);
        e.message_attributes = EventBridgeDeadLetter(fn_arn_);
        EXPECT_TRUE(svc_->sqs().SendMessage(dlq_url, e).ok());
        want.insert(e.body);  // the event itself, without EventBridge's attributes
      }
    } else {
      AwsClient sns_aws(svc_->settings().Endpoint("sns"), svc_->transport(), svc_->credentials(), DefaultClock());
      const std::string topic = XmlText(SnsCall(sns_aws, "CreateTopic", {{"Name", base_}}), "TopicArn");
      EXPECT_FALSE(topic.empty());
      const std::string sub = SubscribeWithDlq(sns_aws, topic, "lambda", fn_arn_, dlq_arn, /*raw=*/false);
      for (int i = 0; i < n; ++i) {
        SendEntry e;
        e.body = fmt::format(R"({{"Type":"Notification","MessageId":"n-{}","TopicArn":"{}",)"
                             R"("Message":"{{\"order\": {}}}","Timestamp":"2026-11-29T10:00:00.000Z"}})",
                             i, topic, i);
        EXPECT_TRUE(svc_->sqs().SendMessage(dlq_url, e).ok());
        want.insert(SnsEventFor(sub, e.body));
      }
    }
    ArchiveQueue("-dlq");
    return want;
  }

  static std::map<std::string, int> Once(const std::set<std::string>& payloads) {
    std::map<std::string, int> once;
    for (const std::string& p : payloads) once[p] = 1;
    return once;
  }
};

using Buckets = std::map<std::string, uint64_t>;

TEST_P(ReplayOriginScenariosTest, TheBugFixedEveryMessageIsInvokedOnceAndARerunSendsNothing) {
  const std::set<std::string> want = ArchiveUndelivered(8);
  ASSERT_FALSE(HasFailure());
  const std::string guarded = "--canary 2 --window 2s --check 1s";
  ReplayJsonResult run = ReplayJson(guarded);
  EXPECT_EQ(run.exit_code, 0) << run.text;
  EXPECT_EQ(run.buckets, (Buckets{{"selected", 8}, {"sent", 8}})) << run.text;
  EXPECT_EQ(CountByType(), (std::map<std::string, int>{{"RequestResponse/ok", 2}, {"Event/ok", 6}}))
      << "the canary synchronously, then the rest";
  EXPECT_EQ(TimesByPayload(), Once(want));

  ClearLambdaInvocations(fn_);
  run = ReplayJson(guarded);
  EXPECT_EQ(run.exit_code, 0) << run.text;
  EXPECT_EQ(run.buckets, (Buckets{{"selected", 8}, {"already_replayed", 8}})) << run.text;
  EXPECT_TRUE(LambdaInvocations(fn_).empty());
}

TEST_P(ReplayOriginScenariosTest, AThrottlingFunctionPausesTheRunWhichDeliversEveryMessageOnce) {
  const std::set<std::string> want = ArchiveUndelivered(6);
  ASSERT_FALSE(HasFailure());
  SetLambdaRules(R"({"rules":[{"throttle_first":3}]})", fn_);
  ReplayJsonResult run = ReplayJson("--no-canary");
  EXPECT_EQ(run.exit_code, 0) << run.text;
  EXPECT_EQ(run.buckets, (Buckets{{"selected", 6}, {"sent", 6}})) << run.text;
  EXPECT_EQ(run.throttled, 3u) << run.text;
  EXPECT_EQ(CountByType(), (std::map<std::string, int>{{"Event/throttled", 3}, {"Event/ok", 6}}));
  EXPECT_EQ(TimesByPayload("ok"), Once(want));
}

TEST_P(ReplayOriginScenariosTest, KilledMidRunTheResumeInvokesTheRestAtMostOneBatchTwice) {
  const std::set<std::string> want = ArchiveUndelivered(16);
  ASSERT_FALSE(HasFailure());
  // 4/s: about 4 s for the whole run, killed once the first batch (10) was
  // invoked and checkpointed, and the second had begun.
  const std::string args = "--no-canary --rate 4/s --checkpoint " + dir_ + "/progress.ckpt";
  const size_t before = ReplayKilledAfter(args, 11);
  EXPECT_GE(before, 11u);
  EXPECT_LT(before, 16u) << "killed before the end";
  ReplayJsonResult resume = ReplayJson(args);
  EXPECT_EQ(resume.exit_code, 0) << resume.text;
  const uint64_t resumed = resume.buckets.count("resumed") ? resume.buckets.at("resumed") : 0;
  EXPECT_GT(resumed, 0u) << "the checkpoint kept the killed run's confirmed batches: " << resume.text;
  EXPECT_LE(resumed, before) << "the checkpoint names only what was invoked";
  EXPECT_EQ(resume.buckets, (Buckets{{"selected", 16}, {"resumed", resumed}, {"sent", 16 - resumed}})) << resume.text;
  EXPECT_EQ(LambdaInvocations(fn_).size() - before, 16 - resumed) << "the resume invoked what it counts as sent";
  ExpectEachPayloadOnceAtMostABatchTwice(want, 10);
}

INSTANTIATE_TEST_SUITE_P(Origins, ReplayOriginScenariosTest,
                         ::testing::Values(Origin::kEventBridgeRule, Origin::kSnsSubscription), TestNameOf);

}  // namespace
}  // namespace dlq::it
