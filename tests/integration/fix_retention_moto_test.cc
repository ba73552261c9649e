// `dlq-archive check --fix-retention` against moto (issue 31 §4): a source and
// its DLQ both at AWS's default 4 days with a redrive policy. The plan changes
// nothing; --yes raises the DLQ's retention and leaves the source alone.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "daemon_process.h"
#include "harness.h"

namespace dlq::it {
namespace {

constexpr int kFourDays = 345600;

int64_t RetentionOf(AwsServices& svc, const std::string& url) {
  auto a = svc.sqs().GetQueueAttributes(url, {"MessageRetentionPeriod"});
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  if (!a.ok()) return -1;
  return std::stoll(a->at("MessageRetentionPeriod"));
}

TEST(FixRetentionMotoTest, PlanChangesNothingAndYesRaisesTheDlqOnly) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  const std::string base = UniqueName("fixret");
  const std::string bucket = base + "-archive";
  ASSERT_TRUE(svc->s3_for(bucket).CreateBucket(bucket).ok());
  auto dlq = svc->sqs().CreateQueue(base + "-dlq", {{"MessageRetentionPeriod", std::to_string(kFourDays)}});
  ASSERT_TRUE(dlq.ok()) << dlq.status().ToString();
  auto arn = svc->sqs().GetQueueAttributes(*dlq, {"QueueArn"});
  ASSERT_TRUE(arn.ok()) << arn.status().ToString();
  auto src = svc->sqs().CreateQueue(
      base, {{"MessageRetentionPeriod", std::to_string(kFourDays)},
             {"RedrivePolicy", "{\"deadLetterTargetArn\":\"" + arn->at("QueueArn") + "\",\"maxReceiveCount\":\"3\"}"}});
  ASSERT_TRUE(src.ok()) << src.status().ToString();

  const std::string dir = "/tmp/" + base;
  ASSERT_EQ(RunShell("mkdir -p " + dir).exit_code, 0);
  const std::string config = dir + "/dlq-archive.yaml";
  WriteFile(config, fmt::format(R"(defaults:
  destination: s3://{}/dlq-archive
groups:
  - name: it
    endpoint_url: {}
    queues: [{}-dlq]
)",
                                bucket, moto.endpoint(), base));
  const std::string cmd = moto.ShellEnv() + DLQ_BINARY + " check --config " + config;

  auto check = RunShell(cmd);
  EXPECT_EQ(check.exit_code, 1) << check.out;
  EXPECT_TRUE(Has(check.out,
                  "the DLQ keeps messages no longer than its source, so a message can arrive with no time left; "
                  "raise the DLQ's retention to 4d 2h (352800 s) (at most 14 days)"))
      << check.out;

  auto plan = RunShell(cmd + " --fix-retention");
  EXPECT_EQ(plan.exit_code, 1) << plan.out;
  EXPECT_TRUE(Has(plan.out, base + "-dlq")) << plan.out;
  EXPECT_TRUE(Has(plan.out, "nothing changed: run again with --yes")) << plan.out;
  EXPECT_EQ(RetentionOf(*svc, *dlq), kFourDays);

  auto apply = RunShell(cmd + " --fix-retention --yes");
  EXPECT_EQ(apply.exit_code, 0) << apply.out;
  EXPECT_TRUE(Has(apply.out, base + "-dlq: MessageRetentionPeriod 345600 -> 352800")) << apply.out;
  EXPECT_TRUE(Has(apply.out, "every DLQ keeps messages long enough after they arrive")) << apply.out;
  EXPECT_EQ(RetentionOf(*svc, *dlq), 352800);
  EXPECT_EQ(RetentionOf(*svc, *src), kFourDays);

  auto again = RunShell(cmd);
  EXPECT_FALSE(Has(again.out, "the DLQ keeps messages no longer than its source")) << again.out;
  EXPECT_EQ(RunShell("rm -rf " + dir).exit_code, 0);
}

// The permission --fix-retention --yes needs is named, and only in its own
// optional statement (the daemon's statements never grant it).
TEST(FixRetentionPolicyTest, SetQueueAttributesIsOnlyInTheOptionalStatement) {
  const std::string policy = RepoRoot() + "/doc/iam-policy.json";
  auto r = RunShell("jq -c '[.Statement[] | select([.Action] | flatten | index(\"sqs:SetQueueAttributes\")) | .Sid]' " +
                    policy);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "[\"OptionalFixRetention\"]\n");
}

}  // namespace
}  // namespace dlq::it
