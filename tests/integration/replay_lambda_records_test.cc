// `replay --from-lambda-records s3://BUCKET/aws/lambda/async/FN --to-origin`
// end to end: a function (made through the fake Lambda, kept by moto) whose
// OnFailure destination is a moto S3 bucket; the fake writes a record there
// for each failed asynchronous invocation, under Lambda's key layout. The
// binary reads the records, invokes each requestPayload, and its guard
// watches the bucket for re-failures: the bug still there (the canary stops
// it), fixed (every record once; a rerun sends nothing), a re-failure found
// only asynchronously (a new record in the bucket), throttled (pauses,
// completes), and kill -9 then resume.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "replay_origin_fixture.h"

namespace dlq::it {
namespace {

class ReplayLambdaRecordsTest : public ReplayOriginFixture {
 protected:
  ReplayLambdaRecordsTest() : ReplayOriginFixture("rp-records") {}
  void SetUp() override {
    ReplayOriginFixture::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    bucket_ = base_ + "-fails";
    ASSERT_TRUE(svc_->s3_for(bucket_).CreateBucket(bucket_).ok());
    fn_ = base_ + "-fn";
    fn_arn_ = CreateFakeLambdaFunction(*lambda_aws_, fn_, role_arn_);
    ASSERT_FALSE(fn_arn_.empty());
    LambdaCall(*lambda_aws_, "PUT", "/2019-09-25/functions/" + fn_ + "/event-invoke-config",
               fmt::format(R"({{"MaximumRetryAttempts":0,"DestinationConfig":{{"OnFailure":{{"Destination":)"
                           R"("arn:aws:s3:::{}"}}}}}})",
                           bucket_));
    SetLambdaRules(R"({"rules":[{"fail_if_contains":"bug","error_message":"bug still there"}]})", fn_);
  }
  std::string From() const override { return "--from-lambda-records " + Prefix() + " --all --audit-to file://" + dir_; }
  std::string Prefix() const { return "s3://" + bucket_ + "/aws/lambda/async/" + fn_; }

  // `n` events of the function failed asynchronously: a record of each in the
  // bucket. Their payloads.
  std::set<std::string> FailIntoBucket(int n) {
    std::set<std::string> payloads;
    for (int i = 0; i < n; ++i) {
      InvokeRequest rq;
      rq.function_name = fn_;
      rq.payload = fmt::format(R"({{"order": {}, "note": "bug \u00e9 {}"}})", i, i);
      EXPECT_TRUE(lambda_->Invoke(rq).ok());
      payloads.insert(rq.payload);
    }
    for (const LambdaInvocation& i : LambdaInvocations(fn_)) {
      EXPECT_EQ(i.sent_as, "destination-record") << i.sent_to;
      EXPECT_EQ(i.sent_to.rfind(Prefix() + "/", 0), 0u) << i.sent_to;
    }
    ClearLambdaInvocations(fn_);
    return payloads;
  }

  std::string bucket_;
};

TEST_F(ReplayLambdaRecordsTest, BugStillThereTheCanaryStopsItThenFixedEveryRecordOnceAndARerunSendsNothing) {
  const std::set<std::string> payloads = FailIntoBucket(8);
  int code = 0;
  std::string out = Replay("--dry-run", &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("to function " + fn_arn_), std::string::npos) << out;
  EXPECT_NE(out.find("re-failures looked for in " + Prefix() + "/"), std::string::npos) << out;
  EXPECT_TRUE(LambdaInvocations(fn_).empty());

  out = Replay("--canary 2 --window 2s --check 1s", &code);
  EXPECT_EQ(code, 5) << out;
  EXPECT_EQ(CountByType(), (std::map<std::string, int>{{"RequestResponse/failed", 2}}))
      << "only the canary reached the function, synchronously";

  ClearLambdaRules(fn_);
  ClearLambdaInvocations(fn_);
  ReplayJsonResult fixed = ReplayJson("--canary 2 --window 2s --check 1s");
  EXPECT_EQ(fixed.exit_code, 0) << fixed.text;
  EXPECT_EQ(fixed.buckets, (std::map<std::string, uint64_t>{{"selected", 8}, {"sent", 8}})) << fixed.text;
  EXPECT_EQ(CountByType(), (std::map<std::string, int>{{"RequestResponse/ok", 2}, {"Event/ok", 6}}));
  ExpectEachPayloadOnceAtMostABatchTwice(payloads, 0);

  ClearLambdaInvocations(fn_);
  ReplayJsonResult rerun = ReplayJson("--no-canary");
  EXPECT_EQ(rerun.exit_code, 0) << rerun.text;
  EXPECT_EQ(rerun.buckets, (std::map<std::string, uint64_t>{{"selected", 8}, {"already_replayed", 8}})) << rerun.text;
  EXPECT_TRUE(LambdaInvocations(fn_).empty());
}

TEST_F(ReplayLambdaRecordsTest, AReFailureSeenOnlyAsANewRecordInTheBucketStopsTheRamp) {
  FailIntoBucket(12);
  // The canary's synchronous invocations pass; the same payloads fail asynchronously.
  SetLambdaRules(R"({"rules":[{"fail_if_contains":"bug","invocation_type":"Event","error_message":"still"}]})", fn_);
  ReplayJsonResult r = ReplayJson("--canary 2 --ramp 25,100 --window 3s --check 1s --max-refailures 0");
  EXPECT_EQ(r.exit_code, 5) << r.text;
  EXPECT_NE(r.text.find(Prefix() + "/"), std::string::npos) << "the re-failure is named where it was found: " << r.text;
  EXPECT_LT(LambdaInvocations(fn_).size(), 12u) << "the ramp stopped before the end";
  EXPECT_GT(r.buckets["failed_again"], 0u) << r.text;
}

TEST_F(ReplayLambdaRecordsTest, AThrottledFunctionPausesTheRunWhichCompletes) {
  const std::set<std::string> payloads = FailIntoBucket(5);
  SetLambdaRules(R"({"rules":[{"throttle_first":3}]})", fn_);
  ReplayJsonResult r = ReplayJson("--no-canary");
  EXPECT_EQ(r.exit_code, 0) << r.text;
  EXPECT_EQ(r.throttled, 3u) << r.text;
  EXPECT_EQ(CountByType(), (std::map<std::string, int>{{"Event/throttled", 3}, {"Event/ok", 5}}));
  EXPECT_EQ(TimesByPayload("ok").size(), payloads.size()) << "each record delivered once";
}

TEST_F(ReplayLambdaRecordsTest, KilledMidRunTheResumeInvokesTheRestAtMostOneBatchTwice) {
  const std::set<std::string> payloads = FailIntoBucket(16);
  ClearLambdaRules(fn_);
  const std::string checkpoint = dir_ + "/progress.ckpt";
  const size_t before = ReplayKilledAfter("--no-canary --rate 4/s --checkpoint " + checkpoint, 6);
  ASSERT_GE(before, 6u);
  ASSERT_LT(before, 16u) << "killed before the end";
  ReplayJsonResult r = ReplayJson("--no-canary --checkpoint " + checkpoint);
  EXPECT_EQ(r.exit_code, 0) << r.text;
  EXPECT_EQ(r.buckets["selected"], 16u);
  EXPECT_EQ(r.buckets["resumed"] + r.buckets["sent"], 16u) << r.text;
  ExpectEachPayloadOnceAtMostABatchTwice(payloads, 10);
}

}  // namespace
}  // namespace dlq::it
