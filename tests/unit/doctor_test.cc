// doctor on broken setups: every check is reported, failures say what to fix,
// and checks that cannot run are skipped with the reason.
#include "app/doctor.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "aws/http_client_choice.h"
#include "testing/fake_clock.h"
#include "testing/fake_lambda_api.h"
#include "testing/fake_queue.h"

namespace dlq {
namespace {

class DoctorTest : public ::testing::Test {
 protected:
  DoctorTest() : sqs_(clock_) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "dlq-doctor-XXXXXX").string();
    dir_ = mkdtemp(tmpl.data());
    env_.Set("AWS_CONFIG_FILE", dir_ + "/config");
    env_.Set("AWS_SHARED_CREDENTIALS_FILE", dir_ + "/credentials");
  }
  ~DoctorTest() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  void WriteConfig(const std::string& text) { std::ofstream(dir_ + "/config") << text; }

  DoctorReport Run(const ClientOptions& options, const DoctorOptions& doctor = {}) {
    DoctorDeps deps;
    deps.setup = DiagnoseSettings(options, env_);
    deps.credentials = &creds_;
    deps.caller_identity = [] {
      return Result<CallerIdentity>(CallerIdentity{"123456789012", "arn:aws:iam::123456789012:user/t", "AIDA"});
    };
    deps.sqs = &sqs_;
    deps.head_bucket = [](const std::string&) { return Status::Ok(); };
    deps.http_client = DescribeHttpClient(env_).value();  // as the CLI does
    deps.lambda = &lambda_;
    return RunDoctor(deps, doctor);
  }

  static const DoctorCheck& Find(const DoctorReport& r, const std::string& name) {
    for (const auto& c : r.checks)
      if (c.name == name) return c;
    static DoctorCheck missing{"missing"};
    ADD_FAILURE() << "no check " << name;
    return missing;
  }

  static std::vector<std::string> Names(const DoctorReport& r) {
    std::vector<std::string> out;
    for (const auto& c : r.checks) out.push_back(c.name);
    return out;
  }

  std::string dir_;
  MapEnvironment env_;
  FakeClock clock_;
  FakeQueueClient sqs_;
  FakeLambdaApi lambda_;
  StaticCredentialsProvider creds_{
      Credentials{"AKIAEXAMPLEEXAMPLE12", "secret-never-printed", "", std::nullopt, "environment"}};
};

const std::vector<std::string> kAllChecks = {"config",   "profile", "region", "endpoints", "http",  "credentials",
                                             "identity", "sqs",     "queue",  "consumers", "bucket"};

TEST_F(DoctorTest, WithAQueueSaysWhichConsumersLogsAnswerForItsCauses) {
  env_.Set("AWS_REGION", "us-east-1");
  const std::string dlq = *sqs_.CreateQueue("orders-dlq", {});
  const std::string dlq_arn = sqs_.GetQueueAttributes(dlq, {"QueueArn"})->at("QueueArn");
  const std::string src = *sqs_.CreateQueue(
      "orders", {{"RedrivePolicy", R"({"deadLetterTargetArn":")" + dlq_arn + R"(","maxReceiveCount":3})"}});
  FunctionConfiguration f;
  f.function_name = "orders-worker";
  lambda_.AddFunction(f);
  lambda_.AddEventSourceMapping({"esm-1",
                                 "arn:aws:lambda:us-east-1:123456789012:function:orders-worker",
                                 sqs_.GetQueueAttributes(src, {"QueueArn"})->at("QueueArn"),
                                 "Enabled",
                                 {},
                                 10});
  DoctorReport r = Run({}, {.queue = "orders-dlq"});
  EXPECT_TRUE(r.ok()) << r.ToText();
  const DoctorCheck& c = Find(r, "consumers");
  EXPECT_EQ(c.state, CheckState::kOk) << c.detail;
  EXPECT_NE(c.detail.find("orders-dlq: source orders"), std::string::npos) << c.detail;
  EXPECT_NE(c.detail.find("logs /aws/lambda/orders-worker: function orders-worker"), std::string::npos) << c.detail;

  // A DLQ nobody feeds: said and skipped, never a failure (causes are optional).
  ASSERT_TRUE(sqs_.CreateQueue("lonely-dlq", {}).ok());
  r = Run({}, {.queue = "lonely-dlq"});
  EXPECT_TRUE(r.ok()) << r.ToText();
  EXPECT_EQ(Find(r, "consumers").state, CheckState::kSkip);
  EXPECT_NE(Find(r, "consumers").detail.find(R"(consumer_logs: ["lonely-dlq=GROUP"])"), std::string::npos)
      << Find(r, "consumers").detail;
}

TEST_F(DoctorTest, HealthySetupPassesEveryCheck) {
  env_.Set("AWS_REGION", "eu-west-1");
  DoctorReport r = Run({});
  EXPECT_TRUE(r.ok()) << r.ToText();
  EXPECT_EQ(Names(r), kAllChecks);
  EXPECT_EQ(r.ToText().find("secret-never-printed"), std::string::npos);
}

TEST_F(DoctorTest, SaysWhichHttpClientAndWhetherAProxyIsUsed) {
  env_.Set("AWS_REGION", "eu-west-1");
  EXPECT_EQ(Find(Run({}), "http").detail, "built-in HTTP/1.1 client (no proxy variable set)");
  env_.Set("HTTPS_PROXY", "http://proxy.internal:3128");
  DoctorReport proxied = Run({});
  EXPECT_EQ(Find(proxied, "http").state, CheckState::kOk);
  EXPECT_EQ(Find(proxied, "http").detail, "libcurl, for the proxy in HTTPS_PROXY (NO_PROXY applies)");
  EXPECT_NE(proxied.ToText().find("libcurl, for the proxy in HTTPS_PROXY"), std::string::npos) << proxied.ToText();
}

TEST_F(DoctorTest, NoRegionStillReportsEveryCheck) {
  DoctorReport r = Run({});
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(Names(r), kAllChecks);
  EXPECT_EQ(Find(r, "region").state, CheckState::kFail);
  EXPECT_NE(Find(r, "region").detail.find("no region"), std::string::npos) << Find(r, "region").detail;
  // Credentials do not need a region; the AWS calls do.
  EXPECT_EQ(Find(r, "credentials").state, CheckState::kOk) << r.ToText();
  EXPECT_EQ(Find(r, "sqs").state, CheckState::kSkip);
  EXPECT_NE(Find(r, "sqs").detail.find("needs a region"), std::string::npos);
  EXPECT_EQ(sqs_.calls(FakeQueueClient::Operation::kListQueues), 0);
}

TEST_F(DoctorTest, MisspeltProfileSuggestsTheClosestOne) {
  WriteConfig("[default]\nregion = us-east-1\n[profile prod-eu]\nregion = eu-west-1\n[profile staging]\n");
  ClientOptions o;
  o.profile = "prod-ue";
  DoctorReport r = Run(o);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(Names(r), kAllChecks);
  const DoctorCheck& p = Find(r, "profile");
  EXPECT_EQ(p.state, CheckState::kFail);
  EXPECT_EQ(p.code, ErrorCode::kNotFound);
  EXPECT_NE(p.detail.find("profile 'prod-ue' not found"), std::string::npos) << p.detail;
  EXPECT_NE(p.detail.find("did you mean 'prod-eu'?"), std::string::npos) << p.detail;
  // The rest still resolves without the profile (region from [default]).
  EXPECT_EQ(Find(r, "region").state, CheckState::kOk) << r.ToText();
  EXPECT_EQ(Find(r, "credentials").state, CheckState::kSkip);
}

TEST_F(DoctorTest, MisspeltProfileFromTheEnvironmentIsReportedToo) {
  WriteConfig("[profile dev]\nregion = us-east-2\n");
  env_.Set("AWS_PROFILE", "deb");
  DoctorReport r = Run({});
  EXPECT_EQ(Find(r, "profile").state, CheckState::kFail);
  EXPECT_NE(Find(r, "profile").detail.find("did you mean 'dev'?"), std::string::npos);
  EXPECT_EQ(Find(r, "region").state, CheckState::kFail) << r.ToText();  // only the missing profile had one
}

TEST_F(DoctorTest, UnknownRegionSuggestsTheClosest) {
  ClientOptions o;
  o.region = "us-est-1";
  DoctorReport r = Run(o);
  const DoctorCheck& c = Find(r, "region");
  EXPECT_EQ(c.state, CheckState::kFail);
  EXPECT_NE(c.detail.find("did you mean 'us-east-1'?"), std::string::npos) << c.detail;
  EXPECT_EQ(Find(r, "endpoints").state, CheckState::kSkip);
}

TEST_F(DoctorTest, UnknownRegionIsAllowedWithACustomEndpointForEveryService) {
  ClientOptions o;
  o.region = "local-1";
  o.endpoint_url = "http://127.0.0.1:9";
  EXPECT_TRUE(DiagnoseSettings(o, env_).region.ok());
  o.endpoint_url.reset();
  EXPECT_FALSE(DiagnoseSettings(o, env_).region.ok());
  env_.Set("DLQ_ARCHIVE_ALLOW_UNKNOWN_REGION", "1");
  EXPECT_TRUE(DiagnoseSettings(o, env_).region.ok());
}

TEST_F(DoctorTest, MalformedConfigFileFailsTheConfigCheckAndSkipsTheRest) {
  WriteConfig("[default\nregion = us-east-1\n");
  DoctorReport r = Run({});
  EXPECT_EQ(Names(r), kAllChecks);
  EXPECT_EQ(Find(r, "config").state, CheckState::kFail) << r.ToText();
  EXPECT_EQ(Find(r, "bucket").state, CheckState::kSkip);
}

TEST_F(DoctorTest, JsonHasAStatusPerCheckAndTheError) {
  DoctorReport r = Run({});
  std::string json = r.ToJson();
  EXPECT_EQ(json.rfind("{\"ok\":false,\"checks\":[", 0), 0u) << json;
  EXPECT_NE(json.find("{\"name\":\"region\",\"status\":\"fail\",\"detail\":\"no region"), std::string::npos) << json;
  EXPECT_NE(json.find("\"code\":\"InvalidArgument\""), std::string::npos) << json;
  EXPECT_NE(json.find("{\"name\":\"sqs\",\"status\":\"skip\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"error\":{\"code\":\"InvalidArgument\",\"exit_code\":1,\"message\":\"doctor: failed checks: "
                      "region\"}"),
            std::string::npos)
      << json;
}

TEST(DoctorErrorJsonTest, CarriesCodeExitCodeAndMessage) {
  EXPECT_EQ(
      DoctorErrorJson(InvalidArgument("doctor: unknown option --bogus"), 2),
      "{\"ok\":false,\"error\":{\"code\":\"InvalidArgument\",\"exit_code\":2,\"message\":\"doctor: unknown option "
      "--bogus\"}}");
}

}  // namespace
}  // namespace dlq
