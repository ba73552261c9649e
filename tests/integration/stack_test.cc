// `dlq-archive stack` end to end: the built binary generates the template
// for several configs (one account with discovery on moto; cross-account with
// role_arn; VPC; KMS with a created bucket; hive layout), cfn-lint must pass
// it, and moto's CloudFormation must create it. The resources moto creates
// (role, function, bucket, endpoints) are checked there; the ones it skips
// (alarms, Glue, bucket policy, public access block, lifecycle) in the
// template itself.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <future>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/crypto.h"
#include "common/strings.h"
#include "harness.h"

namespace dlq::it {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAreArray;

constexpr const char* kAccount = "123456789012";  // moto's
constexpr const char* kRegion = "us-east-1";

class StackMotoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!LoadStandIn("moto", moto_)) {
      if (std::getenv("DLQ_REQUIRE_STAND_INS")) FAIL() << "stand-in moto is not running";
      GTEST_SKIP() << "stand-in moto not running (scripts/stand-ins start moto)";
    }
    if (RunShell("command -v cfn-lint").exit_code != 0) GTEST_SKIP() << "cfn-lint is not installed";
    char tmpl[] = "/tmp/dlq-stack-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    sfx_ = RandomHex(4);
    code_bucket_ = "dlq-stack-code-" + sfx_;
    // The setup goes through the library's clients: each `aws` call costs
    // ~1.5 CPU-s of Python start-up, and what is checked is the stack.
    svc_ = Services(moto_);
    ASSERT_TRUE(svc_);
    // A stand-in for the package-lambda zip: moto only stores it.
    ASSERT_TRUE(svc_->s3_for(code_bucket_).CreateBucket(code_bucket_).ok());
    auto zip = RunShell("cd " + dir_ +
                        " && printf '#!/bin/sh\\n' > bootstrap && python3 -c \"import zipfile; "
                        "zipfile.ZipFile('code.zip','w').write('bootstrap')\"");
    ASSERT_EQ(zip.exit_code, 0) << zip.out;
    std::ifstream in(dir_ + "/code.zip", std::ios::binary);
    std::string code((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(code.empty());
    PutOptions po;
    po.content_type = "application/zip";
    auto put = svc_->s3_for(code_bucket_).PutObject(code_bucket_, "dlq-archive-lambda-x86_64.zip", code, po);
    ASSERT_TRUE(put.ok()) << put.status().ToString();
  }
  void TearDown() override {
    if (!dir_.empty()) RunShell("rm -rf " + dir_);
  }

  // The AWS CLI here (v1) ignores AWS_ENDPOINT_URL for some services: name it.
  CommandResult Aws(const std::string& args) {
    return RunShell(moto_.ShellEnv() + "aws --endpoint-url " + moto_.endpoint() + " " + args);
  }

  std::string CreateQueue(const std::string& name, const std::string& retention) {
    auto r = svc_->sqs().CreateQueue(name, {{"MessageRetentionPeriod", retention}});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : "";
  }

  struct Deployed {
    YAML::Node tmpl;   // the generated template
    YAML::Node stack;  // stack_inspect.py's view of what moto created
    std::string stderr_text;
  };

  // Generates (binary), lints (cfn-lint), creates (moto) and inspects.
  // `parameters`: only for what moto gets wrong (see the VPC test); every
  // other stack is created with the template's defaults.
  void Deploy(const std::string& config, const std::string& flags, const std::string& bucket, Deployed& d,
              const std::string& parameters = "") {
    { std::ofstream(dir_ + "/dlq-archive.yaml") << config; }
    std::string stack_name = "dlq-stack-" + sfx_;
    auto gen =
        RunShell(moto_.ShellEnv() + DLQ_BINARY + " stack --config " + dir_ + "/dlq-archive.yaml --lambda-code s3://" +
                     code_bucket_ + "/dlq-archive-lambda-x86_64.zip --function-name dlq-archive-" + sfx_ + " " + flags +
                     " > " + dir_ + "/template.yaml 2> " + dir_ + "/stderr.txt",
                 false);
    d.stderr_text = RunShell("cat " + dir_ + "/stderr.txt").out;
    ASSERT_EQ(gen.exit_code, 0) << d.stderr_text;
    d.tmpl = YAML::LoadFile(dir_ + "/template.yaml");
    // cfn-lint takes seconds to start: it runs while moto creates the stack.
    auto lint = std::async(std::launch::async, [&] { return RunShell("cfn-lint " + dir_ + "/template.yaml"); });
    auto create = Aws("cloudformation create-stack --stack-name " + stack_name + " --template-body file://" + dir_ +
                      "/template.yaml --capabilities CAPABILITY_IAM" + parameters);
    CommandResult lint_result = lint.get();
    EXPECT_EQ(lint_result.exit_code, 0) << "cfn-lint:\n" << lint_result.out;
    ASSERT_EQ(create.exit_code, 0) << create.out;
    auto wait = Aws("cloudformation wait stack-create-complete --stack-name " + stack_name);
    ASSERT_EQ(wait.exit_code, 0) << wait.out;
    auto inspect = RunShell(
        moto_.ShellEnv() + "python3 " + RepoRoot() + "/tests/integration/stack_inspect.py " + stack_name + " " + bucket,
        false);
    ASSERT_EQ(inspect.exit_code, 0) << inspect.out;
    d.stack = YAML::Load(inspect.out);
    ASSERT_EQ(d.stack["status"].as<std::string>(), "CREATE_COMPLETE");
  }

  // The inline policy's statements by Sid.
  static std::map<std::string, YAML::Node> Statements(const Deployed& d) {
    std::map<std::string, YAML::Node> out;
    for (const auto& kv : d.stack["role_policies"]) {
      for (const YAML::Node& st : kv.second["Statement"]) out[st["Sid"].as<std::string>()] = st;
    }
    return out;
  }
  static std::vector<std::string> List(const YAML::Node& n) {
    std::vector<std::string> out;
    if (n.IsScalar()) return {n.as<std::string>()};
    for (const auto& x : n) out.push_back(x.as<std::string>());
    return out;
  }
  // The queues' alarm resources (on AWS/SQS; not the function's own), by AlarmName.
  static std::map<std::string, YAML::Node> Alarms(const Deployed& d) {
    std::map<std::string, YAML::Node> out;
    for (const auto& kv : d.tmpl["Resources"]) {
      if (kv.second["Type"].as<std::string>() == "AWS::CloudWatch::Alarm" &&
          kv.second["Properties"]["Namespace"].as<std::string>() == "AWS/SQS") {
        out[kv.second["Properties"]["AlarmName"].as<std::string>()] = kv.second["Properties"];
      }
    }
    return out;
  }

  StandIn moto_;
  std::unique_ptr<AwsServices> svc_;
  std::string dir_, sfx_, code_bucket_;
};

TEST_F(StackMotoTest, OneAccountWithDiscoveryDeploysScopedToTheDiscoveredQueues) {
  // Two DLQs kept 14 days behind sources kept 4: discovery reads both.
  const std::string dlq_a = "orders-dlq-" + sfx_, dlq_b = "billing-dlq-" + sfx_;
  CreateQueue(dlq_a, "1209600");
  CreateQueue(dlq_b, "1209600");
  for (const std::string& dlq : {dlq_a, dlq_b}) {
    std::string src = CreateQueue(dlq + "-src", "345600");
    auto set = svc_->sqs().SetQueueAttributes(
        src, {{"RedrivePolicy", std::string(R"({"deadLetterTargetArn":"arn:aws:sqs:)") + kRegion + ":" + kAccount +
                                    ":" + dlq + R"(","maxReceiveCount":"3"})"}});
    ASSERT_TRUE(set.ok()) << set.ToString();
  }
  const std::string bucket = "dlq-stack-archive-" + sfx_;
  std::string config = "groups:\n  - name: main\n    region: us-east-1\n    endpoint_url: " + moto_.endpoint() +
                       "\n    destination: s3://" + bucket + "/dlq\n    prefixes: [orders-dlq-" + sfx_ +
                       ", billing-dlq-" + sfx_ + "]\n    exclude: [" + dlq_a + "-src, " + dlq_b + "-src]\n";
  Deployed d;
  ASSERT_NO_FATAL_FAILURE(Deploy(config, "--create-bucket --schedule 'rate(15 minutes)' --replay-policy", bucket, d));

  auto st = Statements(d);
  EXPECT_THAT(List(st["ArchiveDeadLetterQueues"]["Resource"]),
              UnorderedElementsAreArray({std::string("arn:aws:sqs:us-east-1:") + kAccount + ":" + dlq_a,
                                         std::string("arn:aws:sqs:us-east-1:") + kAccount + ":" + dlq_b}));
  EXPECT_THAT(List(st["WriteArchiveObjects"]["Resource"]), ElementsAre("arn:aws:s3:::" + bucket + "/dlq/*"));
  EXPECT_THAT(List(st["WriteArchiveObjects"]["Action"]), ElementsAre("s3:PutObject"));
  EXPECT_THAT(List(st["WriteOwnLogs"]["Resource"]), ElementsAre(std::string("arn:aws:logs:us-east-1:") + kAccount +
                                                                ":log-group:/aws/lambda/dlq-archive-" + sfx_ + ":*"));
  EXPECT_THAT(List(st["FollowUpInvoke"]["Resource"]),
              ElementsAre(std::string("arn:aws:lambda:us-east-1:") + kAccount + ":function:dlq-archive-" + sfx_));
  EXPECT_EQ(st.count("AssumeQueueAccountRoles"), 0u);
  EXPECT_EQ(st.count("EncryptArchiveObjects"), 0u);
  // The one "*" (causes: auto by default): ListEventSourceMappings, which IAM authorizes on nothing narrower.
  for (const auto& [sid, s] : st) {
    if (sid == "LookUpCausesListMappings") continue;
    for (const std::string& r : List(s["Resource"])) EXPECT_NE(r, "*") << sid;
  }
  EXPECT_THAT(List(st["LookUpCausesListMappings"]["Action"]), ElementsAre("lambda:ListEventSourceMappings"));
  EXPECT_THAT(List(st["LookUpCausesListMappings"]["Resource"]), ElementsAre("*"));
  EXPECT_THAT(List(st["LookUpCausesReadLogs"]["Resource"]),
              ElementsAre(std::string("arn:aws:logs:us-east-1:") + kAccount + ":log-group:/aws/lambda/*:*"));

  // --replay-policy: a managed policy for the operators, as IAM keeps it,
  // scoped to the stack's DLQs for the live form.
  EXPECT_THAT(d.stack["outputs"]["ReplayPolicyArn"].as<std::string>(), HasSubstr(":policy/"));
  ASSERT_TRUE(d.stack["replay_policy"].IsMap()) << "the policy was not created";
  std::map<std::string, YAML::Node> replay;
  for (const YAML::Node& x : d.stack["replay_policy"]["Statement"]) replay[x["Sid"].as<std::string>()] = x;
  EXPECT_THAT(List(replay["ReplayFromDeadLetterQueues"]["Resource"]),
              UnorderedElementsAreArray({std::string("arn:aws:sqs:us-east-1:") + kAccount + ":" + dlq_a,
                                         std::string("arn:aws:sqs:us-east-1:") + kAccount + ":" + dlq_b}));
  EXPECT_THAT(List(replay["ReplayToOriginFunctions"]["Resource"]),
              ElementsAre(std::string("arn:aws:lambda:us-east-1:") + kAccount + ":function:*"));
  EXPECT_THAT(List(replay["ReplayReadArchive"]["Resource"]), ElementsAre("arn:aws:s3:::" + bucket + "/dlq/*"));

  const YAML::Node& fn = d.stack["function"];
  EXPECT_EQ(fn["Runtime"].as<std::string>(), "provided.al2023");
  EXPECT_EQ(fn["Handler"].as<std::string>(), "bootstrap");
  EXPECT_EQ(fn["Timeout"].as<int>(), 900);
  EXPECT_EQ(fn["MemorySize"].as<int>(), 512);
  EXPECT_THAT(List(fn["Architectures"]), ElementsAre("x86_64"));
  EXPECT_EQ(fn["Environment"]["DLQ_ARCHIVE_DESTINATION"].as<std::string>(), "s3://" + bucket + "/dlq");
  std::vector<std::string> queues;
  const std::string queue_list = fn["Environment"]["DLQ_ARCHIVE_QUEUES"].as<std::string>();
  for (std::string_view q : Split(queue_list, ',')) {
    queues.emplace_back(q);
  }
  EXPECT_THAT(queues, UnorderedElementsAreArray({dlq_a, dlq_b}));
  EXPECT_EQ(d.stack["concurrency"].as<int>(), 5);
  EXPECT_EQ(d.stack["bucket"]["encryption"]["Rules"][0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"]
                .as<std::string>(),
            "AES256");

  // Alarms (moto skips them): thresholds from the discovered retentions,
  // (14d - 4d) - (detection 240 s + drain 2000 s + margin 3600 s), and the
  // function as the action.
  auto alarms = Alarms(d);
  ASSERT_EQ(alarms.size(), 4u);
  for (const std::string& dlq : {dlq_a, dlq_b}) {
    const YAML::Node& e = alarms["dlq-archive-" + sfx_ + "-" + dlq + "-expiry"];
    ASSERT_TRUE(e.IsDefined()) << dlq;
    EXPECT_EQ(e["Threshold"].as<double>(), 858160.0);
    EXPECT_EQ(e["MetricName"].as<std::string>(), "ApproximateAgeOfOldestMessage");
    EXPECT_EQ(e["AlarmActions"][0]["Fn::GetAtt"][0].as<std::string>(), "ArchiverFunction");
    EXPECT_THAT(e["AlarmDescription"].as<std::string>(),
                HasSubstr("The real safety net is the schedule: rate(15 minutes)"));
    EXPECT_THAT(e["AlarmDescription"].as<std::string>(), HasSubstr("read from SQS"));
    EXPECT_TRUE(alarms["dlq-archive-" + sfx_ + "-" + dlq + "-depth"].IsDefined());
  }
  // The bucket properties moto does not keep, as the template sets them.
  const YAML::Node& b = d.tmpl["Resources"]["ArchiveBucket"]["Properties"];
  EXPECT_TRUE(b["PublicAccessBlockConfiguration"]["RestrictPublicBuckets"].as<bool>());
  EXPECT_EQ(b["LifecycleConfiguration"]["Rules"][0]["Transitions"][0]["StorageClass"].as<std::string>(), "GLACIER_IR");
  EXPECT_EQ(b["LifecycleConfiguration"]["Rules"][0]["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"].as<int>(),
            7);
}

TEST_F(StackMotoTest, CrossAccountAssumesExactlyTheConfiguredRole) {
  const std::string role = "arn:aws:iam::210987654321:role/dlq-reader-" + sfx_;
  const std::string bucket = "dlq-stack-archive-" + sfx_;
  std::string config = "groups:\n  - name: partner\n    region: eu-west-1\n    role_arn: " + role +
                       "\n    destination: s3://" + bucket + "/partner\n    queues: [partner-dlq]\n";
  Deployed d;
  ASSERT_NO_FATAL_FAILURE(
      Deploy(config, "--no-discovery --assume-retention 14d --assume-source-retention 4d", bucket, d));
  auto st = Statements(d);
  EXPECT_THAT(List(st["AssumeQueueAccountRoles"]["Resource"]), ElementsAre(role));
  EXPECT_THAT(List(st["AssumeQueueAccountRoles"]["Action"]), ElementsAre("sts:AssumeRole"));
  EXPECT_EQ(st.count("ArchiveDeadLetterQueues"), 0u);  // read with the assumed role only
  const YAML::Node& env = d.stack["function"]["Environment"];
  EXPECT_EQ(env["DLQ_ARCHIVE_ROLE_ARNS"].as<std::string>(), "210987654321=" + role);
  EXPECT_EQ(env["DLQ_ARCHIVE_QUEUES"].as<std::string>(),
            "https://sqs.eu-west-1.amazonaws.com/210987654321/partner-dlq");
  EXPECT_TRUE(Alarms(d).empty());  // alarm actions cannot invoke across accounts: the schedule covers it
  EXPECT_THAT(d.stderr_text, HasSubstr("partner-dlq (account 210987654321): no alarms"));
}

TEST_F(StackMotoTest, VpcFunctionGetsItsSubnetsAndEndpoints) {
  auto vpc = Aws("ec2 describe-vpcs --filters Name=is-default,Values=true --query 'Vpcs[0].VpcId' --output text");
  ASSERT_EQ(vpc.exit_code, 0) << vpc.out;
  const std::string in_vpc = " --filters Name=vpc-id,Values=" + std::string(Trim(vpc.out));
  auto subnet = Aws("ec2 describe-subnets" + in_vpc + " --query 'Subnets[0].SubnetId' --output text");
  auto sg = Aws("ec2 describe-security-groups" + in_vpc + " --query 'SecurityGroups[0].GroupId' --output text");
  auto rtb = Aws("ec2 describe-route-tables" + in_vpc + " --query 'RouteTables[0].RouteTableId' --output text");
  ASSERT_EQ(subnet.exit_code + sg.exit_code + rtb.exit_code, 0) << subnet.out << sg.out << rtb.out;
  const std::string bucket = "dlq-stack-archive-" + sfx_;
  std::string config =
      "groups:\n  - name: main\n    destination: s3://" + bucket + "/dlq\n    queues: [vpc-dlq-" + sfx_ + "]\n";
  Deployed d;
  ASSERT_NO_FATAL_FAILURE(Deploy(
      config,
      "--no-discovery --vpc-id " + std::string(Trim(vpc.out)) + " --vpc-subnets " + std::string(Trim(subnet.out)) +
          " --vpc-security-groups " + std::string(Trim(sg.out)) + " --vpc-route-tables " + std::string(Trim(rtb.out)),
      bucket, d,
      // moto 5.2 splits list parameters only when they are passed, not their
      // defaults (CloudFormation splits both): pass the defaults again.
      " --parameters ParameterKey=SubnetIds,ParameterValue=" + std::string(Trim(subnet.out)) +
          " ParameterKey=SecurityGroupIds,ParameterValue=" + std::string(Trim(sg.out)) +
          " ParameterKey=RouteTableIds,ParameterValue=" + std::string(Trim(rtb.out))));
  EXPECT_EQ(d.tmpl["Parameters"]["SubnetIds"]["Default"].as<std::string>(), std::string(Trim(subnet.out)));
  EXPECT_EQ(d.tmpl["Parameters"]["RouteTableIds"]["Default"].as<std::string>(), std::string(Trim(rtb.out)));
  EXPECT_THAT(List(d.stack["function"]["VpcConfig"]["SubnetIds"]), ElementsAre(std::string(Trim(subnet.out))));
  for (const char* id : {"S3GatewayEndpoint", "SqsEndpoint", "LambdaEndpoint"}) {
    const YAML::Node& r = d.stack["resources"][id];
    ASSERT_TRUE(r.IsDefined()) << id;
    EXPECT_EQ(r["type"].as<std::string>(), "AWS::EC2::VPCEndpoint") << id;
    EXPECT_TRUE(StartsWith(r["id"].as<std::string>(), "vpce-")) << id << ": " << r["id"].as<std::string>();
  }
  EXPECT_FALSE(d.stack["resources"]["StsEndpoint"].IsDefined());  // no role to assume
  // The statements on "*": the ENI actions Lambda needs for a VPC and (causes: auto) ListEventSourceMappings.
  auto st = Statements(d);
  std::set<std::string> wildcards;
  for (const auto& [sid, s] : st) {
    for (const std::string& r : List(s["Resource"])) {
      if (r == "*") wildcards.insert(sid);
    }
  }
  EXPECT_THAT(wildcards, ElementsAre("LookUpCausesListMappings", "VpcNetworkInterfaces"));
  EXPECT_THAT(List(st["VpcNetworkInterfaces"]["Resource"]), ElementsAre("*"));
}

TEST_F(StackMotoTest, KmsBucketAndRoleUseTheKey) {
  auto key = Aws("kms create-key --query KeyMetadata.Arn --output text");
  ASSERT_EQ(key.exit_code, 0) << key.out;
  const std::string key_arn(Trim(key.out));
  const std::string bucket = "dlq-stack-archive-" + sfx_;
  std::string config = "groups:\n  - name: main\n    destination: s3://" + bucket +
                       "/kms\n    sse: aws:kms\n    sse_kms_key_id: " + key_arn + "\n    queues: [kms-dlq-" + sfx_ +
                       ".fifo]\n";
  Deployed d;
  ASSERT_NO_FATAL_FAILURE(Deploy(config,
                                 "--no-discovery --create-bucket --transition-storage-class DEEP_ARCHIVE "
                                 "--transition-days 90 --expiration-days 3650",
                                 bucket, d));
  auto st = Statements(d);
  EXPECT_THAT(List(st["EncryptArchiveObjects"]["Resource"]), ElementsAre(key_arn));
  EXPECT_THAT(List(st["EncryptArchiveObjects"]["Action"]), ElementsAre("kms:GenerateDataKey"));
  const YAML::Node& rule = d.stack["bucket"]["encryption"]["Rules"][0];
  EXPECT_EQ(rule["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"].as<std::string>(), "aws:kms");
  EXPECT_EQ(rule["ApplyServerSideEncryptionByDefault"]["KMSMasterKeyID"].as<std::string>(), key_arn);
  const YAML::Node& env = d.stack["function"]["Environment"];
  EXPECT_EQ(env["DLQ_ARCHIVE_SSE"].as<std::string>(), "aws:kms");
  EXPECT_EQ(env["DLQ_ARCHIVE_SSE_KMS_KEY_ID"].as<std::string>(), key_arn);
  const YAML::Node& tb = d.tmpl["Resources"]["ArchiveBucket"]["Properties"];
  EXPECT_TRUE(tb["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["BucketKeyEnabled"].as<bool>());
  EXPECT_EQ(tb["LifecycleConfiguration"]["Rules"][0]["Transitions"][0]["StorageClass"].as<std::string>(),
            "DEEP_ARCHIVE");
  EXPECT_EQ(tb["LifecycleConfiguration"]["Rules"][0]["ExpirationInDays"].as<int>(), 3650);
  const YAML::Node& deny = d.tmpl["Resources"]["ArchiveBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"][0];
  EXPECT_EQ(deny["Effect"].as<std::string>(), "Deny");
  EXPECT_EQ(deny["Condition"]["Bool"]["aws:SecureTransport"].as<std::string>(), "false");
  // A FIFO DLQ: the CloudWatch age restarts at the move, as its expiry does:
  // threshold = the assumed 4d - (240 + 2000 + 3600).
  auto alarms = Alarms(d);
  EXPECT_EQ(alarms["dlq-archive-" + sfx_ + "-kms-dlq-" + sfx_ + ".fifo-expiry"]["Threshold"].as<double>(),
            345600.0 - 5840);
}

TEST_F(StackMotoTest, HiveLayoutReachesTheFunctionAndTheGlueTable) {
  const std::string bucket = "dlq-stack-archive-" + sfx_;
  std::string config = "groups:\n  - name: main\n    destination: s3://" + bucket +
                       "/hive\n    key_template: hive\n    queues: [hive-dlq-" + sfx_ + "]\n";
  Deployed d;
  ASSERT_NO_FATAL_FAILURE(Deploy(config, "--no-discovery", bucket, d));
  EXPECT_EQ(d.stack["function"]["Environment"]["DLQ_ARCHIVE_HIVE"].as<std::string>(), "1");
  const YAML::Node& input = d.tmpl["Resources"]["GlueTable"]["Properties"]["TableInput"];
  EXPECT_EQ(input["Parameters"]["projection.dt.format"].as<std::string>(), "yyyy-MM-dd");
  EXPECT_EQ(input["Parameters"]["storage.location.template"]["Fn::Sub"].as<std::string>(),
            "s3://${ArchiveBucket}/hive/queue=${!dlq}/dt=${!dt}/");
  EXPECT_EQ(input["Parameters"]["projection.dlq.values"].as<std::string>(), "hive-dlq-" + sfx_);
  // The same table as `dlq-archive ddl` prints for the archive.
  auto ddl = RunShell(std::string(DLQ_BINARY) + " ddl --from s3://" + bucket +
                      "/hive --layout hive --queues hive-dlq-" + sfx_ + " --database dlq_archive");
  ASSERT_EQ(ddl.exit_code, 0) << ddl.out;
  for (const auto& c : input["StorageDescriptor"]["Columns"]) {
    EXPECT_THAT(ddl.out, HasSubstr("`" + c["Name"].as<std::string>() + "` " + c["Type"].as<std::string>()));
  }
  EXPECT_THAT(ddl.out, HasSubstr("'storage.location.template' = 's3://" + bucket + "/hive/queue=${dlq}/dt=${dt}/'"));
}

TEST(StackCliTest, BadInputExitsTwoWithTheReason) {
  char tmpl[] = "/tmp/dlq-stack-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  std::ofstream(dir + "/c.yaml") << "groups:\n  - name: a\n    destination: s3://b-a/x\n    queues: [qa]\n"
                                    "  - name: b\n    destination: s3://b-b/x\n    queues: [qb]\n";
  auto mixed = RunShell(std::string(DLQ_BINARY) + " stack --config " + dir +
                        "/c.yaml --no-discovery --lambda-code s3://c/k.zip");
  EXPECT_EQ(mixed.exit_code, 2);
  EXPECT_THAT(mixed.out, HasSubstr("groups a and b differ in destination"));
  auto no_code = RunShell(std::string(DLQ_BINARY) + " stack --config " + dir + "/c.yaml --no-discovery");
  EXPECT_EQ(no_code.exit_code, 2);
  EXPECT_THAT(no_code.out, HasSubstr("--lambda-code is required"));
  auto one = RunShell(std::string(DLQ_BINARY) + " stack --config " + dir +
                      "/c.yaml --no-discovery --group a --lambda-code s3://c/k.zip --output json");
  EXPECT_EQ(one.exit_code, 0) << one.out;
  EXPECT_THAT(one.out, HasSubstr("\"AWSTemplateFormatVersion\":\"2010-09-09\""));
  RunShell("rm -rf " + dir);
}

}  // namespace
}  // namespace dlq::it
