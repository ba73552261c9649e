// `replay --to-origin` end to end: the dlq-archive binary against moto (SQS,
// SNS, EventBridge, IAM) and the fake Lambda (Invoke; scripts/stand-ins
// fake-lambda), reached as the AWS CLI reaches them: AWS_ENDPOINT_URL for
// moto, AWS_ENDPOINT_URL_LAMBDA for the fake (no --endpoint-url, which
// would send Lambda's calls to moto too).
//
// Lambda asynchronous-invocation DLQ, per scenario: the bug still there (the
// synchronous canary stops it, nothing else reaches the function), the bug
// fixed (every message delivered once; a rerun sends nothing), throttled
// (the run pauses and completes), kill -9 and resume (each message invoked
// at most once more than the batch in flight). EventBridge targets: a queue
// and a function get the event directly. A message whose origin cannot be
// told is not sent, counted and named. EventBridge and SNS origins in front
// of a function, bug fixed, throttled and killed: replay_origin_scenarios_test.cc.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fake_lambda.h"
#include "harness.h"
#include "lambda_api/lambda_api.h"
#include "moto_fixtures.h"
#include "replay_origin_fixture.h"
#include "sns_fixtures.h"

namespace dlq::it {
namespace {

namespace fs = std::filesystem;

class ReplayOriginTest : public ReplayOriginFixture {
 protected:
  ReplayOriginTest() : ReplayOriginFixture("rp-origin") {}

  // A function with `dlq_arn` as its DeadLetterConfig, and `n` of its events
  // failed into that DLQ by the fake (with Lambda's attributes), then archived.
  void FailIntoDlqAndArchive(int n, bool archive = true) {
    auto [url, arn] = Queue(base_ + "-dlq");
    dlq_url_ = url;
    fn_ = base_ + "-fn";
    fn_arn_ = CreateFakeLambdaFunction(*lambda_aws_, fn_, role_arn_, arn);
    ASSERT_FALSE(fn_arn_.empty());
    SetLambdaRules(R"({"rules":[{"fail_if_contains":"bug","error_message":"bug still there"}]})", fn_);
    for (int i = 0; i < n; ++i) {
      InvokeRequest rq;
      rq.function_name = fn_;
      rq.payload = fmt::format(R"({{"order": {}, "note": "bug \u00e9 {}"}})", i, i);
      ASSERT_TRUE(lambda_->Invoke(rq).ok());
      payloads_.insert(rq.payload);
    }
    ClearLambdaInvocations(fn_);
    if (!archive) return;
    ArchiveQueue("-dlq");
  }

  std::string dlq_url_;
  std::set<std::string> payloads_;  // of FailIntoDlqAndArchive
};

TEST_F(ReplayOriginTest, BugStillThereTheCanaryStopsItThenFixedEveryMessageOnceAndARerunSendsNothing) {
  FailIntoDlqAndArchive(12);
  int code = 0;
  std::string out = Replay("--canary 2 --window 2s --check 1s", &code);
  EXPECT_EQ(code, 5) << out;
  EXPECT_EQ(CountByType(), (std::map<std::string, int>{{"RequestResponse/failed", 2}}))
      << "only the canary reached the function, synchronously";

  ClearLambdaRules(fn_);
  ClearLambdaInvocations(fn_);
  out = Replay("--canary 2 --window 2s --check 1s", &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("selected 12, sent 12, failed 0"), std::string::npos) << out;
  EXPECT_EQ(CountByType(), (std::map<std::string, int>{{"RequestResponse/ok", 2}, {"Event/ok", 10}}));
  std::set<std::string> payloads;
  for (const LambdaInvocation& i : LambdaInvocations(fn_)) payloads.insert(i.payload);
  EXPECT_EQ(payloads.size(), 12u);
  EXPECT_EQ(payloads.count(R"({"order": 3, "note": "bug \u00e9 3"})"), 1u) << "byte for byte";

  ClearLambdaInvocations(fn_);
  out = Replay("--no-canary", &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("skipped 12 already replayed"), std::string::npos) << out;
  EXPECT_TRUE(LambdaInvocations(fn_).empty());
}

TEST_F(ReplayOriginTest, AThrottledFunctionPausesTheRunWhichCompletes) {
  FailIntoDlqAndArchive(6);
  SetLambdaRules(R"({"rules":[{"throttle_first":3}]})", fn_);
  int code = 0;
  std::string out = Replay("--no-canary --output json", &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(CountByType(), (std::map<std::string, int>{{"Event/throttled", 3}, {"Event/ok", 6}}));
  EXPECT_NE(out.find(R"("throttled":3)"), std::string::npos) << out;
}

TEST_F(ReplayOriginTest, TheDryRunSaysWhereEachMessageGoesAndTheUnknownOneIsRefusedNamed) {
  FailIntoDlqAndArchive(2);
  auto [mystery_url, mystery_arn] = Queue(base_ + "-mystery");
  SendEntry e;
  e.body = "who sent me";
  ASSERT_TRUE(svc_->sqs().SendMessage(mystery_url, e).ok());
  ArchiveQueue("-mystery");
  int code = 0;
  std::string out = Replay("--dry-run", &code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("to function " + fn_arn_), std::string::npos) << out;
  EXPECT_NE(out.find("DeadLetterConfig targets this DLQ"), std::string::npos) << out;
  EXPECT_NE(out.find("cannot be told"), std::string::npos) << out;
  EXPECT_NE(out.find("origin unknown 1"), std::string::npos) << out;

  out = Replay("--no-canary", &code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("selected 3, sent 2, failed 0, origin unknown 1"), std::string::npos) << out;
  EXPECT_EQ(LambdaInvocations(fn_).size(), 2u);
}

TEST_F(ReplayOriginTest, KilledMidRunTheResumeInvokesTheRestAtMostOneBatchTwice) {
  FailIntoDlqAndArchive(40);
  ClearLambdaRules(fn_);
  const std::string args = "--no-canary --rate 10/s --checkpoint " + dir_ + "/progress.ckpt";
  // Killed once some invocations went out, well before the end (10/s).
  const size_t before = ReplayKilledAfter(args, 5);
  EXPECT_GT(before, 0u);
  EXPECT_LT(before, 40u) << "killed before the end";
  int code = 0;
  std::string out = Replay(args, &code);
  EXPECT_EQ(code, 0) << out;
  ExpectEachPayloadOnceAtMostABatchTwice(payloads_, 10);
}

TEST_F(ReplayOriginTest, EventBridgeTargetsGetTheEventDirectlyWithoutEventBridgesAttributes) {
  fn_ = base_ + "-target-fn";
  fn_arn_ = CreateFakeLambdaFunction(*lambda_aws_, fn_, role_arn_);
  ASSERT_FALSE(fn_arn_.empty());
  auto [target_url, target_arn] = Queue(base_ + "-target");
  auto [dlq_url, dlq_arn] = Queue(base_ + "-eb-dlq");
  const std::string event =
      R"({"version":"0","id":"7e2a","detail-type":"OrderPlaced","source":"shop","account":"123456789012",)"
      R"("time":"2026-11-29T10:00:00Z","region":"us-east-1","resources":[],"detail":{"order": 9}})";
  for (const std::string& target : {fn_arn_, target_arn}) {
    SendEntry e;
    e.body = event;
    e.message_attributes = EventBridgeDeadLetter(target);
    ASSERT_TRUE(svc_->sqs().SendMessage(dlq_url, e).ok());
  }
  ArchiveQueue("-eb-dlq");
  int code = 0;
  std::string out = Replay("--no-canary", &code);
  EXPECT_EQ(code, 0) << out;
  auto invoked = LambdaInvocations(fn_);
  ASSERT_EQ(invoked.size(), 1u);
  EXPECT_EQ(invoked[0].payload, event);
  EXPECT_EQ(invoked[0].type, "Event");
  ReceiveOptions ro;
  ro.message_attribute_names = {"All"};
  auto got = svc_->sqs().ReceiveMessages(target_url, ro);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ(got->front().body, event);
  EXPECT_TRUE(got->front().message_attributes.empty()) << "EventBridge's RULE_ARN and the rest are not the event's";
}

// An SNS subscription's DLQ: the message goes to that subscription's queue,
// raw with its attributes as SNS delivers it, never to the topic (the other
// subscriber gets nothing).
TEST_F(ReplayOriginTest, AnSnsSubscriptionsDlqGoesToItsEndpointNeverToTheTopic) {
  AwsClient sns_aws(svc_->settings().Endpoint("sns"), svc_->transport(), svc_->credentials(), DefaultClock());
  auto [raw_url, raw_arn] = Queue(base_ + "-sub");
  auto [other_url, other_arn] = Queue(base_ + "-other");
  auto [dlq_url, dlq_arn] = Queue(base_ + "-sns-dlq");
  const std::string topic = XmlText(SnsCall(sns_aws, "CreateTopic", {{"Name", base_}}), "TopicArn");
  ASSERT_FALSE(topic.empty());
  const std::string sub = SubscribeWithDlq(sns_aws, topic, "sqs", raw_arn, dlq_arn, /*raw=*/true);
  ASSERT_FALSE(sub.empty());
  SnsCall(sns_aws, "Subscribe", {{"TopicArn", topic}, {"Protocol", "sqs"}, {"Endpoint", other_arn}});
  // What SNS puts in the DLQ of a raw subscription: the message and its attributes.
  SendEntry e;
  e.body = R"({"order": 12, "status": "undeliverable"})";
  e.message_attributes = {{"tenant", {"String", "acme", ""}}};
  ASSERT_TRUE(svc_->sqs().SendMessage(dlq_url, e).ok());
  ArchiveQueue("-sns-dlq");

  int code = 0;
  // Guarded by default: the subscription's queue has no RedrivePolicy, so a
  // canary could not see its consumer fail again.
  std::string out = Replay("--dry-run", &code);
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("has no RedrivePolicy"), std::string::npos) << out;
  out = Replay("--dry-run --no-canary", &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("SNS subscription " + sub), std::string::npos) << out;
  EXPECT_NE(out.find("RedrivePolicy targets this DLQ"), std::string::npos) << out;
  out = Replay("--no-canary", &code);
  EXPECT_EQ(code, 0) << out;
  ReceiveOptions ro;
  ro.message_attribute_names = {"All"};
  ro.wait_time_seconds = 1;
  auto got = svc_->sqs().ReceiveMessages(raw_url, ro);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ(got->front().body, e.body);
  ASSERT_EQ(got->front().message_attributes.count("tenant"), 1u);
  EXPECT_EQ(got->front().message_attributes.at("tenant").string_value, "acme");
  auto other = svc_->sqs().ReceiveMessages(other_url, ro);
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->empty()) << "the topic was not published to";
}

// The live form: read from the function's DLQ itself. The bug still there:
// the synchronous canary fails and both canary messages stay in the DLQ.
// Fixed: every message is invoked once and deleted from the DLQ.
TEST_F(ReplayOriginTest, TheLiveFormLeavesRefusedMessagesInTheDlqAndDeletesWhatWasDelivered) {
  FailIntoDlqAndArchive(8, /*archive=*/false);
  fs::create_directories(dir_ + "/audit");
  const std::string live = "--from-queue " + base_ + "-dlq --to-origin --audit-to file://" + dir_ +
                           "/audit --progress never --canary 2 --window 2s --check 1s";
  auto r = RunShell(Bin("replay", live));
  EXPECT_EQ(r.exit_code, 5) << r.out;
  EXPECT_EQ(CountByType(), (std::map<std::string, int>{{"RequestResponse/failed", 2}}));
  auto depth = [&] {
    auto a = svc_->sqs().GetQueueAttributes(dlq_url_,
                                            {"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"});
    EXPECT_TRUE(a.ok());
    return a.ok() ? std::stoll(a->at("ApproximateNumberOfMessages")) +
                        std::stoll(a->at("ApproximateNumberOfMessagesNotVisible"))
                  : -1;
  };
  EXPECT_EQ(depth(), 8) << "nothing lost: the refused canary and the rest are still in the DLQ";

  ClearLambdaRules(fn_);
  ClearLambdaInvocations(fn_);
  r = RunShell(Bin("replay", live));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(CountByType(), (std::map<std::string, int>{{"RequestResponse/ok", 2}, {"Event/ok", 6}}));
  EXPECT_EQ(depth(), 0);
}

// An EventBridge rule's function target, the bug still there: the canary's
// synchronous invocation fails and nothing else reaches the function; fixed,
// the rest follow (the direct invocations bypass EventBridge).
TEST_F(ReplayOriginTest, AnEventBridgeFunctionTargetStillFailingIsStoppedByTheCanary) {
  auto [fn_dlq_url, fn_dlq_arn] = Queue(base_ + "-fn-dlq");
  fn_ = base_ + "-eb-fn";
  fn_arn_ = CreateFakeLambdaFunction(*lambda_aws_, fn_, role_arn_, fn_dlq_arn);
  ASSERT_FALSE(fn_arn_.empty());
  SetLambdaRules(R"({"rules":[{"fail_if_contains":"OrderPlaced"}]})", fn_);
  auto [dlq_url, dlq_arn] = Queue(base_ + "-eb-dlq");
  for (int i = 0; i < 6; ++i) {
    SendEntry e;
    e.body = fmt::format(R"({{"detail-type":"OrderPlaced","source":"shop","detail":{{"order":{}}}}})", i);
    e.message_attributes = EventBridgeDeadLetter(fn_arn_);
    ASSERT_TRUE(svc_->sqs().SendMessage(dlq_url, e).ok());
  }
  ArchiveQueue("-eb-dlq");
  ExpectCanaryStopsThenFixedDelivers(6);
}

// An SNS subscription's function endpoint: the message goes to the function
// as the event SNS gives it (Records[0].Sns = the envelope). Still failing,
// the synchronous canary stops it; fixed, each one is invoked once.
TEST_F(ReplayOriginTest, AnSnsFunctionSubscriptionGetsTheSnsEventAndTheCanaryGuardsIt) {
  AwsClient sns_aws(svc_->settings().Endpoint("sns"), svc_->transport(), svc_->credentials(), DefaultClock());
  auto [fn_dlq_url, fn_dlq_arn] = Queue(base_ + "-fn-dlq");
  fn_ = base_ + "-sns-fn";
  fn_arn_ = CreateFakeLambdaFunction(*lambda_aws_, fn_, role_arn_, fn_dlq_arn);
  ASSERT_FALSE(fn_arn_.empty());
  auto [dlq_url, dlq_arn] = Queue(base_ + "-sub-dlq");
  const std::string topic = XmlText(SnsCall(sns_aws, "CreateTopic", {{"Name", base_}}), "TopicArn");
  ASSERT_FALSE(topic.empty());
  const std::string sub = SubscribeWithDlq(sns_aws, topic, "lambda", fn_arn_, dlq_arn, /*raw=*/false);
  ASSERT_FALSE(sub.empty());
  std::vector<std::string> envelopes;
  for (int i = 0; i < 4; ++i) {
    SendEntry e;
    e.body = fmt::format(R"({{"Type":"Notification","MessageId":"n{}","TopicArn":"{}","Message":"order {}",)"
                         R"("Timestamp":"2026-11-29T10:00:00.000Z"}})",
                         i, topic, i);
    envelopes.push_back(e.body);
    ASSERT_TRUE(svc_->sqs().SendMessage(dlq_url, e).ok());
  }
  ArchiveQueue("-sub-dlq");
  SetLambdaRules(R"({"rules":[{"fail_if_contains":"order"}]})", fn_);
  ExpectCanaryStopsThenFixedDelivers(4);
  std::set<std::string> payloads;
  for (const LambdaInvocation& i : LambdaInvocations(fn_)) payloads.insert(i.payload);
  EXPECT_EQ(payloads.count(SnsEventFor(sub, envelopes[2])), 1u) << *payloads.begin();
  EXPECT_EQ(payloads.size(), 4u);
}

}  // namespace
}  // namespace dlq::it
