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
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fake_lambda.h"
#include "harness.h"
#include "lambda_api/lambda_api.h"
#include "moto_fixtures.h"

namespace dlq::it {
namespace {

namespace fs = std::filesystem;

class ReplayLambdaRecordsTest : public FakeLambdaFixture {
 protected:
  ReplayLambdaRecordsTest() : FakeLambdaFixture("rp-records") {}
  void SetUp() override {
    FakeLambdaFixture::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    dir_ = "/tmp/" + base_;
    fs::create_directories(dir_);
    bucket_ = base_ + "-fails";
    ASSERT_TRUE(svc_->s3_for(bucket_).CreateBucket(bucket_).ok());
    fn_ = base_ + "-fn";
    ASSERT_FALSE(CreateFakeLambdaFunction(*lambda_aws_, fn_, role_arn_).empty());
    LambdaCall(*lambda_aws_, "PUT", "/2019-09-25/functions/" + fn_ + "/event-invoke-config",
               fmt::format(R"({{"MaximumRetryAttempts":0,"DestinationConfig":{{"OnFailure":{{"Destination":)"
                           R"("arn:aws:s3:::{}"}}}}}})",
                           bucket_));
    SetLambdaRules(R"({"rules":[{"fail_if_contains":"bug","error_message":"bug still there"}]})", fn_);
  }
  void TearDown() override {
    if (!fn_.empty()) ClearLambdaRules(fn_);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // `n` events of the function failed asynchronously: a record of each in the bucket.
  void FailIntoBucket(int n) {
    for (int i = 0; i < n; ++i) {
      InvokeRequest rq;
      rq.function_name = fn_;
      rq.payload = fmt::format(R"({{"order": {}, "note": "bug \u00e9 {}"}})", i, i);
      ASSERT_TRUE(lambda_->Invoke(rq).ok());
    }
    for (const LambdaInvocation& i : LambdaInvocations(fn_)) {
      ASSERT_EQ(i.sent_as, "destination-record") << i.sent_to;
      ASSERT_EQ(i.sent_to.rfind("s3://" + bucket_ + "/aws/lambda/async/" + fn_ + "/", 0), 0u) << i.sent_to;
    }
    ClearLambdaInvocations(fn_);
  }
  std::string Args(const std::string& args) const {
    return "--from-lambda-records s3://" + bucket_ + "/aws/lambda/async/" + fn_ +
           " --all --to-origin --audit-to file://" + dir_ + " --progress never " + args;
  }
  std::string Replay(const std::string& args, int* exit_code) const {
    auto r = RunShell(fake_.ShellEnv() + DLQ_BINARY + " replay " + Args(args));
    *exit_code = r.exit_code;
    return r.out;
  }
  std::map<std::string, int> CountByType() const {
    std::map<std::string, int> n;
    for (const LambdaInvocation& i : LambdaInvocations(fn_)) ++n[i.type + "/" + i.outcome];
    return n;
  }

  std::string dir_, bucket_, fn_;
};

TEST_F(ReplayLambdaRecordsTest, BugStillThereTheCanaryStopsItThenFixedEveryRecordOnceAndARerunSendsNothing) {
  FailIntoBucket(8);
  int code = 0;
  std::string out = Replay("--dry-run", &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("on-failure destination record"), std::string::npos) << out;
  EXPECT_NE(out.find("re-failures looked for in s3://" + bucket_ + "/aws/lambda/async/" + fn_ + "/"), std::string::npos)
      << out;
  EXPECT_TRUE(LambdaInvocations(fn_).empty());

  out = Replay("--canary 2 --window 2s --check 1s", &code);
  EXPECT_EQ(code, 5) << out;
  EXPECT_EQ(CountByType(), (std::map<std::string, int>{{"RequestResponse/failed", 2}}))
      << "only the canary reached the function, synchronously";

  ClearLambdaRules(fn_);
  ClearLambdaInvocations(fn_);
  out = Replay("--canary 2 --window 2s --check 1s", &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("selected 8, sent 8, failed 0"), std::string::npos) << out;
  EXPECT_EQ(CountByType(), (std::map<std::string, int>{{"RequestResponse/ok", 2}, {"Event/ok", 6}}));
  std::set<std::string> payloads;
  for (const LambdaInvocation& i : LambdaInvocations(fn_)) payloads.insert(i.payload);
  EXPECT_EQ(payloads.size(), 8u) << "each record's requestPayload once";

  ClearLambdaInvocations(fn_);
  out = Replay("--no-canary", &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("skipped 8 already replayed"), std::string::npos) << out;
  EXPECT_TRUE(LambdaInvocations(fn_).empty());
}

TEST_F(ReplayLambdaRecordsTest, AReFailureSeenOnlyAsANewRecordInTheBucketStopsTheRamp) {
  FailIntoBucket(12);
  // The canary's synchronous invocations pass; the same payloads fail asynchronously.
  SetLambdaRules(R"({"rules":[{"fail_if_contains":"bug","invocation_type":"Event","error_message":"still"}]})", fn_);
  int code = 0;
  std::string out = Replay("--canary 2 --ramp 25,100 --window 3s --check 1s --max-refailures 0 --output json", &code);
  EXPECT_EQ(code, 5) << out;
  EXPECT_NE(out.find("s3://" + bucket_ + "/aws/lambda/async/" + fn_ + "/"), std::string::npos)
      << "the re-failure is named where it was found: " << out;
  EXPECT_LT(LambdaInvocations(fn_).size(), 12u) << "the ramp stopped before the end";
}

TEST_F(ReplayLambdaRecordsTest, AThrottledFunctionPausesTheRunWhichCompletes) {
  FailIntoBucket(5);
  SetLambdaRules(R"({"rules":[{"throttle_first":3}]})", fn_);
  int code = 0;
  std::string out = Replay("--no-canary --output json", &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(CountByType(), (std::map<std::string, int>{{"Event/throttled", 3}, {"Event/ok", 5}}));
  EXPECT_NE(out.find(R"("throttled":3)"), std::string::npos) << out;
}

TEST_F(ReplayLambdaRecordsTest, KilledMidRunTheResumeInvokesTheRestAtMostOneBatchTwice) {
  FailIntoBucket(30);
  ClearLambdaRules(fn_);
  const std::string checkpoint = dir_ + "/progress.ckpt";
  const std::string args = Args("--no-canary --rate 10/s --checkpoint " + checkpoint);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string child = fake_.ShellEnv() + "exec " + DLQ_BINARY + " replay " + args + " >/dev/null 2>&1";
    execl("/bin/sh", "sh", "-c", child.c_str(), nullptr);
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (LambdaInvocations(fn_).size() < 8 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  const size_t before = LambdaInvocations(fn_).size();
  ASSERT_GE(before, 8u);
  ASSERT_LT(before, 30u) << "killed before the end";

  int code = 0;
  std::string out = Replay("--no-canary --checkpoint " + checkpoint, &code);
  EXPECT_EQ(code, 0) << out;
  std::map<std::string, int> times;
  for (const LambdaInvocation& i : LambdaInvocations(fn_)) ++times[i.payload];
  EXPECT_EQ(times.size(), 30u) << "every record's payload was invoked";
  int twice = 0;
  for (const auto& [payload, n] : times) {
    EXPECT_LE(n, 2) << payload;
    twice += n - 1;
  }
  EXPECT_LE(twice, 1) << "at most the batch in flight (one message at --checkpoint's concurrency 1) twice";
}

}  // namespace
}  // namespace dlq::it
