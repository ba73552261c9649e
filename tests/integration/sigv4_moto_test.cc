// SigV4 against moto with signature enforcement on (the moto-auth stand-in):
// the right secret is accepted and a wrong one rejected, for SQS, S3,
// CloudWatch and STS, over both HTTP clients (the default builtin one and
// libcurl, which is used when a proxy is configured).
#include <gtest/gtest.h>

#include "aws/socket_transport.h"
#include "harness.h"
#include "s3/s3_client.h"
#include "sqs/sqs_client.h"

namespace dlq::it {
namespace {

class SigV4MotoClients : public ::testing::TestWithParam<std::string> {};

TEST_P(SigV4MotoClients, RightSecretIsAcceptedByEveryService) {
  DLQ_REQUIRE_STAND_IN("moto-auth", moto);
  auto svc = Services(moto, "", GetParam());
  ASSERT_TRUE(svc);

  auto id = svc->sts().GetCallerIdentity();
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_NE(id->arn.find("dlq-archive-test"), std::string::npos) << id->arn;

  std::string qname = UniqueName("sigv4-q");
  auto url = svc->sqs().CreateQueue(qname, {});
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  SendEntry e;
  e.body = "signed ✓";
  e.message_attributes["n"] = {"Number", "7", ""};
  auto sent = svc->sqs().SendMessage(*url, e);
  ASSERT_TRUE(sent.ok()) << sent.status().ToString();
  ReceiveOptions ro;
  auto got = svc->sqs().ReceiveMessages(*url, ro);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].body, "signed ✓");

  std::string bucket = UniqueName("sigv4-bucket");
  S3Client& s3 = svc->s3_for(bucket);
  ASSERT_TRUE(s3.CreateBucket(bucket).ok());
  PutOptions po;
  auto etag = s3.PutObject(bucket, "dlq-archive/q/20260101/q-000000-0011223344556677.json.gz", "hello", po);
  ASSERT_TRUE(etag.ok()) << etag.status().ToString();
  auto body = s3.GetObject(bucket, "dlq-archive/q/20260101/q-000000-0011223344556677.json.gz", std::nullopt);
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(*body, "hello");
  // Create-only: a second put of other bytes must not overwrite.
  auto again = s3.PutObject(bucket, "dlq-archive/q/20260101/q-000000-0011223344556677.json.gz", "other", po);
  EXPECT_EQ(again.status().code(), ErrorCode::kAlreadyExists) << again.status().ToString();

  MetricDatum d;
  d.metric_name = "ArchivedMessages";
  d.dimensions = {{"QueueName", qname}};
  d.value = 3;
  d.unit = "Count";
  d.timestamp = DefaultClock().Now();
  ASSERT_TRUE(svc->cloudwatch().PutMetricData("DlqArchive/Test", {d}).ok());
  MetricDataQuery q;
  q.id = "m1";
  q.metric_namespace = "DlqArchive/Test";
  q.metric_name = "ArchivedMessages";
  q.dimensions = {{"QueueName", qname}};
  q.period = std::chrono::seconds(60);
  q.stat = "Sum";
  auto now = DefaultClock().Now();
  auto series = svc->cloudwatch().GetMetricData({q}, now - std::chrono::minutes(10), now + std::chrono::minutes(1));
  ASSERT_TRUE(series.ok()) << series.status().ToString();
  ASSERT_EQ(series->count("m1"), 1u);
  ASSERT_FALSE(series->at("m1").values.empty());
  EXPECT_DOUBLE_EQ(series->at("m1").values.back(), 3.0);
}

TEST_P(SigV4MotoClients, WrongSecretIsRejectedByEveryService) {
  DLQ_REQUIRE_STAND_IN("moto-auth", moto);
  const std::string wrong = "wrongSecretwrongSecretwrongSecretwrong123";
  auto svc = Services(moto, wrong, GetParam());
  ASSERT_TRUE(svc);
  auto expect_rejected = [&](const Status& st, const char* what) {
    EXPECT_EQ(st.code(), ErrorCode::kUnauthenticated) << what << ": " << st.ToString();
    EXPECT_EQ(st.ToString().find(wrong), std::string::npos) << "secret leaked in " << what;
  };
  expect_rejected(svc->sts().GetCallerIdentity().status(), "sts");
  expect_rejected(svc->sqs().ListQueues("").status(), "sqs");
  ListObjectsV2Request req;
  expect_rejected(svc->s3_for("any-bucket").ListObjectsV2("any-bucket", req).status(), "s3");
  MetricDatum d;
  d.metric_name = "X";
  d.value = 1;
  expect_rejected(svc->cloudwatch().PutMetricData("DlqArchive/Test", {d}), "cloudwatch");
}

INSTANTIATE_TEST_SUITE_P(HttpClients, SigV4MotoClients, ::testing::Values("builtin", "curl"));

TEST(SigV4Moto, DoctorPassesWithRightKeysAndExplainsAWrongSecret) {
  DLQ_REQUIRE_STAND_IN("moto-auth", moto);
  std::string bin = DLQ_BINARY;
  auto ok = RunShell(moto.ShellEnv() + bin + " doctor --output json");
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_NE(ok.out.find("\"ok\":true"), std::string::npos) << ok.out;

  auto bad = RunShell(moto.ShellEnv() + "export AWS_SECRET_ACCESS_KEY=notTheSecret0000000000000000000000000000; " +
                      bin + " doctor --bucket any-bucket");
  EXPECT_EQ(bad.exit_code, 1) << bad.out;
  EXPECT_NE(bad.out.find("rejected the request signature or credentials"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("SignatureDoesNotMatch"), std::string::npos) << bad.out;
  EXPECT_EQ(bad.out.find("notTheSecret"), std::string::npos) << "secret leaked: " << bad.out;
  EXPECT_EQ(bad.out.find(moto.env.at("AWS_SECRET_ACCESS_KEY")), std::string::npos);
}

}  // namespace
}  // namespace dlq::it

namespace dlq::it {
namespace {

// Cross-account groups: every call runs with credentials from STS AssumeRole.
TEST(AssumeRoleMoto, ServicesWithRoleArnCallAsTheAssumedRole) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto env = std::make_unique<MapEnvironment>();
  for (const auto& [k, v] : moto.env) env->Set(k, v);
  env->Set("AWS_CONFIG_FILE", "/nonexistent/config");
  env->Set("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials");
  ServicesOptions o;
  o.role_arn = "arn:aws:iam::123456789012:role/dlq-archive-reader";
  o.external_id = "ext-1";
  auto svc = AwsServices::Create(o, *env, DefaultClock());
  ASSERT_TRUE(svc.ok()) << svc.status().ToString();
  auto creds = (*svc)->credentials().GetCredentials();
  ASSERT_TRUE(creds.ok()) << creds.status().ToString();
  EXPECT_NE(creds->source.find("assume-role"), std::string::npos) << creds->source;
  EXPECT_FALSE(creds->session_token.empty());
  EXPECT_TRUE(creds->expiration.has_value());
  auto id = (*svc)->sts().GetCallerIdentity();
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_NE(id->arn.find("assumed-role/dlq-archive-reader"), std::string::npos) << id->arn;
  EXPECT_TRUE((*svc)->sqs().ListQueues("").ok());
}

}  // namespace
}  // namespace dlq::it

namespace dlq::it {
namespace {

std::unique_ptr<AwsServices> ServicesWithEnv(const StandIn& moto, std::map<std::string, std::string> vars,
                                             std::vector<std::unique_ptr<MapEnvironment>>& keep) {
  auto env = std::make_unique<MapEnvironment>();
  env->Set("AWS_ENDPOINT_URL", moto.endpoint());
  env->Set("AWS_REGION", "us-east-1");
  env->Set("AWS_EC2_METADATA_DISABLED", "true");
  for (const auto& [k, v] : vars) env->Set(k, v);
  auto svc = AwsServices::Create(ServicesOptions{}, *env, DefaultClock());
  EXPECT_TRUE(svc.ok()) << svc.status().ToString();
  keep.push_back(std::move(env));
  return svc.ok() ? std::move(*svc) : nullptr;
}

// The credential chain against moto's STS: web identity from the environment
// (as on EKS with IRSA) and a profile that assumes a role from another profile.
TEST(AssumeRoleMoto, WebIdentityAndProfileRoleChainsCallAsTheAssumedRole) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  std::vector<std::unique_ptr<MapEnvironment>> keep;
  std::string dir = ::testing::TempDir();
  std::string token = dir + "/web-identity-token";
  std::ofstream(token) << "eyJhbGciOiJSUzI1NiJ9.e30.c2ln";
  auto web = ServicesWithEnv(moto,
                             {{"AWS_WEB_IDENTITY_TOKEN_FILE", token},
                              {"AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/irsa-dlq-archive"},
                              {"AWS_CONFIG_FILE", "/nonexistent"},
                              {"AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"}},
                             keep);
  ASSERT_TRUE(web);
  auto creds = web->credentials().GetCredentials();
  ASSERT_TRUE(creds.ok()) << creds.status().ToString();
  EXPECT_EQ(creds->source.rfind("web-identity", 0), 0u) << creds->source;
  auto id = web->sts().GetCallerIdentity();
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_NE(id->arn.find("assumed-role/irsa-dlq-archive"), std::string::npos) << id->arn;

  std::string credentials_file = dir + "/credentials", config_file = dir + "/config";
  std::ofstream(credentials_file) << "[base]\naws_access_key_id = AKIABASEEXAMPLE00001\n"
                                     "aws_secret_access_key = baseSecretExample\n";
  std::ofstream(config_file) << "[profile ops]\nrole_arn = arn:aws:iam::123456789012:role/ops-dlq\n"
                                "source_profile = base\nregion = us-east-1\n";
  auto prof = ServicesWithEnv(
      moto,
      {{"AWS_PROFILE", "ops"}, {"AWS_CONFIG_FILE", config_file}, {"AWS_SHARED_CREDENTIALS_FILE", credentials_file}},
      keep);
  ASSERT_TRUE(prof);
  auto pid = prof->sts().GetCallerIdentity();
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  EXPECT_NE(pid->arn.find("assumed-role/ops-dlq"), std::string::npos) << pid->arn;
  EXPECT_TRUE(prof->sqs().ListQueues("").ok());
}

}  // namespace
}  // namespace dlq::it

// The Lambda program's transport (aws/socket_transport.h, no libcurl or cpp-httplib) on the
// same signature-checking stand-in: SQS (MD5-checked receive) and S3
// (create-only put, get of the exact bytes) are accepted as signed.
namespace dlq::it {
namespace {

TEST(SigV4Moto, SocketTransportCallsAreAcceptedAsSigned) {
  DLQ_REQUIRE_STAND_IN("moto-auth", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  auto transport = SocketTransport::Create({});
  ASSERT_TRUE(transport.ok()) << transport.status().ToString();
  AwsClient sqs_aws(svc->settings().Endpoint("sqs"), **transport, svc->credentials(), DefaultClock(), RetryOptions{});
  SqsClient sqs(sqs_aws);
  auto url = sqs.CreateQueue(UniqueName("socket-q"), {});
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  SendEntry e;
  e.body = "signed over SocketTransport ✓ %41";
  e.message_attributes["n"] = {"Number", "7", ""};
  ASSERT_TRUE(sqs.SendMessage(*url, e).ok());
  auto got = sqs.ReceiveMessages(*url, ReceiveOptions{});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].body, e.body);

  AwsClient s3_aws(svc->settings().Endpoint("s3"), **transport, svc->credentials(), DefaultClock(), RetryOptions{});
  S3Client s3(s3_aws, S3ClientOptions{.path_style = true});
  std::string bucket = UniqueName("socket-bucket");
  ASSERT_TRUE(s3.CreateBucket(bucket).ok());
  const std::string key = "dlq-archive/q 1/20260101/q-000000-0011223344556677.json.gz";
  std::string bytes("\x1f\x8b\x08\x00 binary %20 \xff", 17);
  auto etag = s3.PutObject(bucket, key, bytes, PutOptions{});
  ASSERT_TRUE(etag.ok()) << etag.status().ToString();
  auto body = s3.GetObject(bucket, key, std::nullopt);
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(*body, bytes);
  EXPECT_EQ(s3.PutObject(bucket, key, "other", PutOptions{}).status().code(), ErrorCode::kAlreadyExists);

  // The wrong secret is rejected through this transport too.
  auto bad = Services(moto, "wrong-secret");
  ASSERT_TRUE(bad);
  AwsClient bad_aws(bad->settings().Endpoint("sqs"), **transport, bad->credentials(), DefaultClock(), RetryOptions{});
  SqsClient bad_sqs(bad_aws);
  EXPECT_FALSE(bad_sqs.GetQueueAttributes(*url, {"QueueArn"}).ok());
}

}  // namespace
}  // namespace dlq::it
