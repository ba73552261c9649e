#include "aws/aws_config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace dlq {
namespace {

// A temp dir holding a config file; the environment points AWS_CONFIG_FILE and
// AWS_SHARED_CREDENTIALS_FILE at it.
class SettingsTest : public ::testing::Test {
 protected:
  SettingsTest() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "dlq-settings-XXXXXX").string();
    dir_ = mkdtemp(tmpl.data());
    env_.Set("AWS_CONFIG_FILE", dir_ + "/config");
    env_.Set("AWS_SHARED_CREDENTIALS_FILE", dir_ + "/credentials");
  }
  ~SettingsTest() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  void WriteConfig(const std::string& text) { std::ofstream(dir_ + "/config") << text; }

  Result<AwsSettings> Resolve(ClientOptions options = {}) { return ResolveSettings(options, env_); }

  std::string dir_;
  MapEnvironment env_;
};

TEST_F(SettingsTest, RegionPrecedenceFollowsTheCli) {
  WriteConfig("[default]\nregion = from-profile-1\n");
  struct Case {
    std::optional<std::string> flag, aws_region, aws_default_region;
    std::string want, want_source;
  };
  std::vector<Case> cases = {
      {"flag-1", "env-1", "envdef-1", "flag-1", "--region"},
      {std::nullopt, "env-1", "envdef-1", "env-1", "AWS_REGION"},
      {std::nullopt, std::nullopt, "envdef-1", "envdef-1", "AWS_DEFAULT_REGION"},
      {std::nullopt, std::nullopt, std::nullopt, "from-profile-1", "profile default"},
  };
  for (const Case& c : cases) {
    env_.Unset("AWS_REGION");
    env_.Unset("AWS_DEFAULT_REGION");
    if (c.aws_region) env_.Set("AWS_REGION", *c.aws_region);
    if (c.aws_default_region) env_.Set("AWS_DEFAULT_REGION", *c.aws_default_region);
    ClientOptions o;
    o.region = c.flag;
    auto s = Resolve(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->region, c.want);
    EXPECT_EQ(s->region_source, c.want_source);
  }
}

TEST_F(SettingsTest, MissingRegionNamesTheProfile) {
  WriteConfig("[profile dev]\noutput = json\n");
  ClientOptions o;
  o.profile = "dev";
  auto s = Resolve(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.status().message(), "no region: pass --region, set AWS_REGION or add region to profile dev");
}

TEST_F(SettingsTest, ProfileComesFromFlagThenAwsProfile) {
  WriteConfig("[profile a]\nregion = r-a\n[profile b]\nregion = r-b\n");
  env_.Set("AWS_PROFILE", "b");
  auto from_env = Resolve();
  ASSERT_TRUE(from_env.ok());
  EXPECT_EQ(from_env->profile, "b");
  EXPECT_EQ(from_env->region, "r-b");
  EXPECT_FALSE(from_env->profile_from_option);
  ClientOptions o;
  o.profile = "a";
  auto from_flag = Resolve(o);
  ASSERT_TRUE(from_flag.ok());
  EXPECT_EQ(from_flag->profile, "a");
  EXPECT_EQ(from_flag->region, "r-a");
  EXPECT_TRUE(from_flag->profile_from_option);
}

TEST_F(SettingsTest, NamedProfileThatDoesNotExistIsNotFound) {
  WriteConfig("[default]\nregion = us-east-1\n");
  ClientOptions o;
  o.profile = "ghost";
  auto s = Resolve(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(s.status().message().find("profile 'ghost' not found"), std::string::npos);
}

TEST_F(SettingsTest, RejectsRegionThatIsNotAHostLabel) {
  env_.Set("AWS_REGION", "us-east-1.evil.com/");
  auto s = Resolve();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("AWS_REGION"), std::string::npos);
}

TEST_F(SettingsTest, DefaultEndpointsPerServiceAndPartition) {
  env_.Set("AWS_REGION", "eu-west-1");
  auto s = Resolve();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->Endpoint("sqs").endpoint, "https://sqs.eu-west-1.amazonaws.com");
  EXPECT_EQ(s->Endpoint("s3").endpoint, "https://s3.eu-west-1.amazonaws.com");
  EXPECT_TRUE(s->Endpoint("s3").s3);
  EXPECT_FALSE(s->Endpoint("sqs").s3);
  EXPECT_EQ(s->Endpoint("monitoring").endpoint, "https://monitoring.eu-west-1.amazonaws.com");
  EXPECT_EQ(s->Endpoint("sts").endpoint, "https://sts.eu-west-1.amazonaws.com");
  EXPECT_EQ(s->Endpoint("sts").region, "eu-west-1");
  EXPECT_EQ(s->Endpoint("sts").service, "sts");
  EXPECT_EQ(DefaultEndpoint("sqs", "cn-north-1"), "https://sqs.cn-north-1.amazonaws.com.cn");
  EXPECT_EQ(DefaultEndpoint("s3", "cn-northwest-1"), "https://s3.cn-northwest-1.amazonaws.com.cn");
}

TEST_F(SettingsTest, EndpointPrecedenceTable) {
  WriteConfig(
      "[default]\nregion = us-east-1\nendpoint_url = http://profile-global:1\nservices = local\n"
      "[services local]\nsqs =\n  endpoint_url = http://services-sqs:2\n"
      "cloudwatch =\n  endpoint_url = http://services-cw:3\n");
  struct Case {
    std::string name;
    std::optional<std::string> flag, env_service, env_global;
    std::string service;
    std::string want;
  };
  std::vector<Case> cases = {
      {"flag wins", "http://flag:9/", "http://env-sqs:8", "http://env-global:7", "sqs", "http://flag:9"},
      {"service env beats services section", std::nullopt, "http://env-sqs:8", "http://env-global:7", "sqs",
       "http://env-sqs:8"},
      {"services section beats global env", std::nullopt, std::nullopt, "http://env-global:7", "sqs",
       "http://services-sqs:2"},
      {"cloudwatch key maps to monitoring", std::nullopt, std::nullopt, "http://env-global:7", "monitoring",
       "http://services-cw:3"},
      {"global env beats profile endpoint_url", std::nullopt, std::nullopt, "http://env-global:7", "s3",
       "http://env-global:7"},
      {"profile endpoint_url last", std::nullopt, std::nullopt, std::nullopt, "sts", "http://profile-global:1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    env_.Unset("AWS_ENDPOINT_URL_SQS");
    env_.Unset("AWS_ENDPOINT_URL");
    if (c.env_service) env_.Set("AWS_ENDPOINT_URL_SQS", *c.env_service);
    if (c.env_global) env_.Set("AWS_ENDPOINT_URL", *c.env_global);
    ClientOptions o;
    o.endpoint_url = c.flag;
    auto s = Resolve(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->Endpoint(c.service).endpoint, c.want);
    EXPECT_TRUE(s->HasCustomEndpoint(c.service));
  }
}

TEST_F(SettingsTest, ServiceSpecificEnvSuffixes) {
  env_.Set("AWS_REGION", "us-east-1");
  env_.Set("AWS_ENDPOINT_URL_S3", "http://minio:9000");
  env_.Set("AWS_ENDPOINT_URL_CLOUDWATCH", "http://cw:1");
  env_.Set("AWS_ENDPOINT_URL_STS", "http://sts:2");
  auto s = Resolve();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->Endpoint("s3").endpoint, "http://minio:9000");
  EXPECT_EQ(s->Endpoint("monitoring").endpoint, "http://cw:1");
  EXPECT_EQ(s->Endpoint("sts").endpoint, "http://sts:2");
  EXPECT_EQ(s->Endpoint("sqs").endpoint, "https://sqs.us-east-1.amazonaws.com");
  EXPECT_FALSE(s->HasCustomEndpoint("sqs"));
}

TEST_F(SettingsTest, LogsAndLambdaHaveServiceSpecificEndpointsBeforeTheGlobalOne) {
  env_.Set("AWS_REGION", "eu-west-1");
  auto defaults = Resolve();
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_EQ(defaults->Endpoint("logs").endpoint, "https://logs.eu-west-1.amazonaws.com");
  EXPECT_EQ(defaults->Endpoint("lambda").endpoint, "https://lambda.eu-west-1.amazonaws.com");
  EXPECT_EQ(defaults->Endpoint("lambda").service, "lambda");

  env_.Set("AWS_ENDPOINT_URL", "http://moto:5000");
  env_.Set("AWS_ENDPOINT_URL_LAMBDA", "http://fake-lambda:7000/");
  env_.Set("AWS_ENDPOINT_URL_LOGS", "http://logs-alias:1");
  auto s = Resolve();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->Endpoint("lambda").endpoint, "http://fake-lambda:7000");
  EXPECT_EQ(s->Endpoint("logs").endpoint, "http://logs-alias:1");
  EXPECT_EQ(s->Endpoint("sqs").endpoint, "http://moto:5000");

  // The SDKs' own name for CloudWatch Logs comes before the alias.
  env_.Set("AWS_ENDPOINT_URL_CLOUDWATCH_LOGS", "http://cloudwatch-logs:2");
  auto sdk_name = Resolve();
  ASSERT_TRUE(sdk_name.ok());
  EXPECT_EQ(sdk_name->Endpoint("logs").endpoint, "http://cloudwatch-logs:2");

  // --endpoint-url still sets every service, as the AWS CLI's option does.
  ClientOptions o;
  o.endpoint_url = "http://flag:9";
  auto flag = Resolve(o);
  ASSERT_TRUE(flag.ok());
  EXPECT_EQ(flag->Endpoint("lambda").endpoint, "http://flag:9");
  EXPECT_EQ(flag->Endpoint("logs").endpoint, "http://flag:9");

  env_.Set("AWS_ENDPOINT_URL_LAMBDA", "fake-lambda:7000");
  auto bad = Resolve();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("AWS_ENDPOINT_URL_LAMBDA"), std::string::npos) << bad.status().message();
}

TEST_F(SettingsTest, ServicesSectionKeysForLogsAndLambda) {
  WriteConfig(
      "[default]\nregion = us-east-1\nservices = local\n"
      "[services local]\ncloudwatch_logs =\n  endpoint_url = http://services-logs:3\n"
      "lambda =\n  endpoint_url = http://services-lambda:4\n");
  auto s = Resolve();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->Endpoint("logs").endpoint, "http://services-logs:3");
  EXPECT_EQ(s->Endpoint("lambda").endpoint, "http://services-lambda:4");
  EXPECT_FALSE(s->HasCustomEndpoint("sqs"));
}

TEST_F(SettingsTest, SnsAndEventBridgeResolveLikeTheOtherServices) {
  env_.Set("AWS_REGION", "eu-west-1");
  auto defaults = Resolve();
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_EQ(defaults->Endpoint("sns").endpoint, "https://sns.eu-west-1.amazonaws.com");
  EXPECT_EQ(defaults->Endpoint("sns").service, "sns");
  EXPECT_EQ(defaults->Endpoint("events").endpoint, "https://events.eu-west-1.amazonaws.com");
  EXPECT_EQ(defaults->Endpoint("events").service, "events");

  env_.Set("AWS_ENDPOINT_URL", "http://moto:5000");
  env_.Set("AWS_ENDPOINT_URL_SNS", "http://fake-sns:1/");
  env_.Set("AWS_ENDPOINT_URL_EVENTBRIDGE", "http://fake-events:2");
  auto s = Resolve();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->Endpoint("sns").endpoint, "http://fake-sns:1");
  EXPECT_EQ(s->Endpoint("events").endpoint, "http://fake-events:2");
  EXPECT_TRUE(s->HasCustomEndpoint("events"));
  EXPECT_EQ(s->Endpoint("lambda").endpoint, "http://moto:5000");

  env_.Set("AWS_ENDPOINT_URL_EVENTBRIDGE", "fake-events:2");
  auto bad = Resolve();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("AWS_ENDPOINT_URL_EVENTBRIDGE"), std::string::npos) << bad.status().message();
}

TEST_F(SettingsTest, ServicesSectionKeysForSnsAndEventBridge) {
  WriteConfig(
      "[default]\nregion = us-east-1\nservices = local\n"
      "[services local]\nsns =\n  endpoint_url = http://services-sns:5\n"
      "eventbridge =\n  endpoint_url = http://services-events:6\n");
  auto s = Resolve();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->Endpoint("sns").endpoint, "http://services-sns:5");
  EXPECT_EQ(s->Endpoint("events").endpoint, "http://services-events:6");
  EXPECT_FALSE(s->HasCustomEndpoint("sqs"));
}

TEST_F(SettingsTest, IgnoreConfiguredEndpointUrlsKeepsOnlyTheFlag) {
  env_.Set("AWS_REGION", "us-east-1");
  env_.Set("AWS_ENDPOINT_URL", "http://env-global:7");
  env_.Set("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true");
  auto s = Resolve();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->Endpoint("sqs").endpoint, "https://sqs.us-east-1.amazonaws.com");
  ClientOptions o;
  o.endpoint_url = "http://flag:1";
  auto with_flag = Resolve(o);
  ASSERT_TRUE(with_flag.ok());
  EXPECT_EQ(with_flag->Endpoint("sqs").endpoint, "http://flag:1");
}

TEST_F(SettingsTest, InvalidEndpointNamesItsOrigin) {
  env_.Set("AWS_REGION", "us-east-1");
  env_.Set("AWS_ENDPOINT_URL_SQS", "localhost:4566");
  auto s = Resolve();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("AWS_ENDPOINT_URL_SQS"), std::string::npos) << s.status().message();
}

TEST_F(SettingsTest, S3AddressingStyle) {
  env_.Set("AWS_REGION", "us-east-1");
  auto plain = Resolve();
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->S3Style("my-bucket"), S3AddressingStyle::kVirtualHosted);
  EXPECT_EQ(plain->S3Style("my.dotted.bucket"), S3AddressingStyle::kPath);
  EXPECT_EQ(plain->S3Style("Upper_Case"), S3AddressingStyle::kPath);

  env_.Set("AWS_ENDPOINT_URL_S3", "http://localhost:9000");
  auto custom = Resolve();
  ASSERT_TRUE(custom.ok());
  EXPECT_EQ(custom->S3Style("my-bucket"), S3AddressingStyle::kPath);
  env_.Unset("AWS_ENDPOINT_URL_S3");

  env_.Set("AWS_S3_ADDRESSING_STYLE", "path");
  auto forced = Resolve();
  ASSERT_TRUE(forced.ok());
  EXPECT_EQ(forced->S3Style("my-bucket"), S3AddressingStyle::kPath);
  env_.Unset("AWS_S3_ADDRESSING_STYLE");

  WriteConfig("[default]\ns3 =\n  addressing_style = path\n");
  auto from_profile = Resolve();
  ASSERT_TRUE(from_profile.ok());
  EXPECT_EQ(from_profile->S3Style("my-bucket"), S3AddressingStyle::kPath);

  WriteConfig("[default]\ns3 =\n  addressing_style = sideways\n");
  EXPECT_FALSE(Resolve().ok());
}

TEST(DnsCompatibleBucket, FollowsS3NamingRules) {
  EXPECT_TRUE(IsDnsCompatibleBucket("abc"));
  EXPECT_TRUE(IsDnsCompatibleBucket("dlq-archive-123"));
  EXPECT_FALSE(IsDnsCompatibleBucket("ab"));
  EXPECT_FALSE(IsDnsCompatibleBucket("-abc"));
  EXPECT_FALSE(IsDnsCompatibleBucket("abc-"));
  EXPECT_FALSE(IsDnsCompatibleBucket("a.b.c"));
  EXPECT_FALSE(IsDnsCompatibleBucket(std::string(64, 'a')));
}

}  // namespace
}  // namespace dlq
