#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/strings.h"
#include "common/time_util.h"
#include "credentials/caching_provider.h"
#include "credentials/chain_provider.h"
#include "credentials/container_provider.h"
#include "credentials/credential_process.h"
#include "credentials/environment_provider.h"
#include "credentials/imds_provider.h"
#include "credentials/profile_provider.h"
#include "credentials/sso_provider.h"
#include "credentials/web_identity_provider.h"
#include "testing/fake_clock.h"
#include "testing/fake_http.h"
#include "testing/scoped_capturing_logger.h"

namespace dlq {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

// Secrets used across the tests: none may ever appear in an error message.
const std::vector<std::string> kSecrets = {
    "envSecretValue",          "profileSecretValue",    "baseSecretValue",    "assumedSecretValue",
    "procSecretValue",         "leakedProcessSecret",   "webSecretValue",     "oidc-token-secret",
    "containerSecretValue",    "container-auth-secret", "imdsSecretValue",    "assumedSessionToken",
    "sso-access-token-secret", "ssoSecretValue",        "sso-refresh-secret", "sso-client-secret"};

void ExpectNoSecret(const Status& s) {
  std::string text = s.ToString();
  for (const auto& secret : kSecrets) EXPECT_EQ(text.find(secret), std::string::npos) << "leaked " << secret;
}

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string AssumeRoleXml(const std::string& key_id, const std::string& expiration = "2023-11-14T23:13:20Z") {
  return "<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><AssumeRoleResult><Credentials>"
         "<AccessKeyId>" +
         key_id +
         "</AccessKeyId><SecretAccessKey>assumedSecretValue</SecretAccessKey>"
         "<SessionToken>assumedSessionToken</SessionToken><Expiration>" +
         expiration + "</Expiration></Credentials></AssumeRoleResult></AssumeRoleResponse>";
}

std::string FormValue(std::string_view body, std::string_view name) {
  for (std::string_view pair : Split(body, '&')) {
    size_t eq = pair.find('=');
    if (pair.substr(0, eq) == name) return UriDecode(pair.substr(eq + 1));
  }
  return "";
}

// Temp dir with config/credentials files, and an environment pointing at them
// with IMDS disabled (so no test ever reaches for 169.254.169.254).
class ProvidersTest : public ::testing::Test {
 protected:
  ProvidersTest() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "dlq-creds-XXXXXX").string();
    dir_ = mkdtemp(tmpl.data());
    env_.Set("AWS_CONFIG_FILE", dir_ + "/config");
    env_.Set("AWS_SHARED_CREDENTIALS_FILE", dir_ + "/credentials");
    env_.Set("AWS_REGION", "us-west-2");
    env_.Set("AWS_EC2_METADATA_DISABLED", "true");
  }
  ~ProvidersTest() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string Write(const std::string& name, const std::string& text) {
    std::string p = dir_ + "/" + name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  AwsSettings Settings(ClientOptions options = {}) {
    auto s = ResolveSettings(options, env_);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? *s : AwsSettings{};
  }
  Result<Credentials> FromProfile(const std::string& profile) {
    ClientOptions o;
    o.profile = profile;
    ProfileProvider p(Settings(o), env_, http_, clock_);
    return p.GetCredentials();
  }

  std::string dir_;
  MapEnvironment env_;
  FakeHttpTransport http_;
  FakeClock clock_;
};

// ------------------------------------------------------------------ environment

TEST_F(ProvidersTest, EnvironmentProviderReadsKeysAndToken) {
  env_.Set("AWS_ACCESS_KEY_ID", "AKIDENV");
  env_.Set("AWS_SECRET_ACCESS_KEY", "envSecretValue");
  env_.Set("AWS_SESSION_TOKEN", "envToken");
  auto c = EnvironmentProvider(env_).GetCredentials();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->access_key_id, "AKIDENV");
  EXPECT_EQ(c->secret_access_key, "envSecretValue");
  EXPECT_EQ(c->session_token, "envToken");
  EXPECT_EQ(c->source, "environment");
  EXPECT_FALSE(c->expiration.has_value());
}

TEST_F(ProvidersTest, EnvironmentProviderAcceptsLegacyNamesAndReportsPartialKeys) {
  env_.Set("AWS_ACCESS_KEY", "AKIDLEGACY");
  env_.Set("AWS_SECRET_KEY", "envSecretValue");
  auto legacy = EnvironmentProvider(env_).GetCredentials();
  ASSERT_TRUE(legacy.ok());
  EXPECT_EQ(legacy->access_key_id, "AKIDLEGACY");

  MapEnvironment partial{{"AWS_ACCESS_KEY_ID", "AKIDONLY"}};
  auto p = EnvironmentProvider(partial).GetCredentials();
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(p.status().message(), "AWS_SECRET_ACCESS_KEY"));

  MapEnvironment none;
  EXPECT_EQ(EnvironmentProvider(none).GetCredentials().status().code(), ErrorCode::kNotFound);
}

// ------------------------------------------------------------------ profile: static

TEST_F(ProvidersTest, ProfileStaticKeysFromCredentialsFile) {
  Write("credentials",
        "[dev]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = profileSecretValue\n"
        "aws_session_token = tok\n");
  Write("config", "[profile dev]\nregion = eu-west-1\n");
  auto c = FromProfile("dev");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "AKIDPROFILE");
  EXPECT_EQ(c->secret_access_key, "profileSecretValue");
  EXPECT_EQ(c->session_token, "tok");
  EXPECT_EQ(c->source, "shared-credentials-file (profile dev)");
}

TEST_F(ProvidersTest, ProfileStaticKeysFromConfigFileAndPartialKeysError) {
  Write("config",
        "[profile cfg]\naws_access_key_id = AKIDCFG\naws_secret_access_key = profileSecretValue\n"
        "[profile half]\naws_access_key_id = AKIDHALF\n");
  auto c = FromProfile("cfg");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->source, "shared-config-file (profile cfg)");
  auto half = FromProfile("half");
  ASSERT_FALSE(half.ok());
  EXPECT_EQ(half.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(half.status().message(), "no aws_secret_access_key"));
}

TEST_F(ProvidersTest, MissingDefaultProfileIsNotFound) {
  ProfileProvider p(Settings(), env_, http_, clock_);
  EXPECT_EQ(p.GetCredentials().status().code(), ErrorCode::kNotFound);
}

// ------------------------------------------------------------------ profile: assume role

TEST_F(ProvidersTest, AssumeRoleViaSourceProfileSignsWithSourceKeys) {
  Write("credentials", "[base]\naws_access_key_id = AKIDBASE\naws_secret_access_key = baseSecretValue\n");
  Write("config",
        "[profile dev]\nrole_arn = arn:aws:iam::123456789012:role/dev\nsource_profile = base\n"
        "role_session_name = my-session\nexternal_id = ext-1\nduration_seconds = 1800\n");
  http_.SetHandler(
      [](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, AssumeRoleXml("ASIADEV")); });
  auto c = FromProfile("dev");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "ASIADEV");
  EXPECT_EQ(c->session_token, "assumedSessionToken");
  ASSERT_TRUE(c->expiration.has_value());
  EXPECT_EQ(c->source, "assume-role (profile dev, role arn:aws:iam::123456789012:role/dev)");
  ASSERT_EQ(http_.calls(), 1);
  HttpRequest req = http_.requests()[0];
  EXPECT_EQ(req.url, "https://sts.us-west-2.amazonaws.com/");
  EXPECT_EQ(FormValue(req.body, "Action"), "AssumeRole");
  EXPECT_EQ(FormValue(req.body, "RoleArn"), "arn:aws:iam::123456789012:role/dev");
  EXPECT_EQ(FormValue(req.body, "RoleSessionName"), "my-session");
  EXPECT_EQ(FormValue(req.body, "ExternalId"), "ext-1");
  EXPECT_EQ(FormValue(req.body, "DurationSeconds"), "1800");
  ASSERT_NE(FindHeader(req.headers, "Authorization"), nullptr);
  EXPECT_TRUE(Contains(*FindHeader(req.headers, "Authorization"), "Credential=AKIDBASE/"));
}

TEST_F(ProvidersTest, ChainedRolesAssumeEachRoleWithThePreviousCredentials) {
  Write("credentials", "[base]\naws_access_key_id = AKIDBASE\naws_secret_access_key = baseSecretValue\n");
  Write("config",
        "[profile mid]\nrole_arn = arn:aws:iam::111111111111:role/mid\nsource_profile = base\n"
        "[profile top]\nrole_arn = arn:aws:iam::222222222222:role/top\nsource_profile = mid\n");
  http_.SetHandler([](const HttpRequest& r) -> Result<HttpResponse> {
    bool mid = FormValue(r.body, "RoleArn") == "arn:aws:iam::111111111111:role/mid";
    return MakeResponse(200, AssumeRoleXml(mid ? "ASIAMID" : "ASIATOP"));
  });
  auto c = FromProfile("top");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "ASIATOP");
  ASSERT_EQ(http_.calls(), 2);
  auto reqs = http_.requests();
  EXPECT_TRUE(Contains(*FindHeader(reqs[0].headers, "Authorization"), "Credential=AKIDBASE/"));
  EXPECT_TRUE(Contains(*FindHeader(reqs[1].headers, "Authorization"), "Credential=ASIAMID/"));
  ASSERT_NE(FindHeader(reqs[1].headers, "X-Amz-Security-Token"), nullptr);
}

TEST_F(ProvidersTest, SourceProfileCycleIsAClearError) {
  Write("config",
        "[profile a]\nrole_arn = arn:aws:iam::1:role/a\nsource_profile = b\n"
        "[profile b]\nrole_arn = arn:aws:iam::1:role/b\nsource_profile = a\n");
  auto c = FromProfile("a");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(c.status().message(), "source_profile cycle: a -> b -> a")) << c.status().message();
  EXPECT_EQ(http_.calls(), 0);
}

TEST_F(ProvidersTest, SelfReferencingSourceProfileUsesItsOwnStaticKeys) {
  Write("config",
        "[profile self]\nrole_arn = arn:aws:iam::1:role/self\nsource_profile = self\n"
        "aws_access_key_id = AKIDSELF\naws_secret_access_key = profileSecretValue\n");
  http_.SetHandler(
      [](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, AssumeRoleXml("ASIASELF")); });
  auto c = FromProfile("self");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "ASIASELF");
  EXPECT_TRUE(Contains(*FindHeader(http_.requests()[0].headers, "Authorization"), "Credential=AKIDSELF/"));
}

TEST_F(ProvidersTest, CredentialSourceEnvironmentFeedsAssumeRole) {
  Write("config", "[profile ci]\nrole_arn = arn:aws:iam::1:role/ci\ncredential_source = Environment\n");
  env_.Set("AWS_ACCESS_KEY_ID", "AKIDENV");
  env_.Set("AWS_SECRET_ACCESS_KEY", "envSecretValue");
  http_.SetHandler(
      [](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, AssumeRoleXml("ASIACI")); });
  auto c = FromProfile("ci");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "ASIACI");
  EXPECT_TRUE(Contains(*FindHeader(http_.requests()[0].headers, "Authorization"), "Credential=AKIDENV/"));

  Write("config", "[profile ci]\nrole_arn = arn:aws:iam::1:role/ci\ncredential_source = Nowhere\n");
  auto bad = FromProfile("ci");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Contains(bad.status().message(), "Nowhere"));
}

TEST_F(ProvidersTest, AssumeRoleDenialNamesRoleAndProfileWithoutSecrets) {
  Write("credentials", "[base]\naws_access_key_id = AKIDBASE\naws_secret_access_key = baseSecretValue\n");
  Write("config", "[profile dev]\nrole_arn = arn:aws:iam::1:role/dev\nsource_profile = base\n");
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(403,
                        "<ErrorResponse><Error><Code>AccessDenied</Code><Message>nope</Message></Error>"
                        "<RequestId>r1</RequestId></ErrorResponse>");
  });
  auto c = FromProfile("dev");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kPermissionDenied);
  EXPECT_TRUE(Contains(c.status().message(), "arn:aws:iam::1:role/dev"));
  EXPECT_TRUE(Contains(c.status().message(), "profile dev"));
  ExpectNoSecret(c.status());
}

// ------------------------------------------------------------------ credential_process

TEST_F(ProvidersTest, CredentialProcessRunsTheCommandAndParsesJson) {
  std::string script =
      Write("creds.sh",
            "#!/bin/sh\n"
            "cat <<'JSON'\n"
            "{\"Version\": 1, \"AccessKeyId\": \"AKIDPROC\", \"SecretAccessKey\": \"procSecretValue\",\n"
            " \"SessionToken\": \"procToken\", \"Expiration\": \"2030-01-01T00:00:00Z\"}\n"
            "JSON\n");
  Write("config", "[profile p]\ncredential_process = /bin/sh " + script + "\n");
  auto c = FromProfile("p");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "AKIDPROC");
  EXPECT_EQ(c->secret_access_key, "procSecretValue");
  EXPECT_EQ(c->session_token, "procToken");
  ASSERT_TRUE(c->expiration.has_value());
  EXPECT_EQ(FormatIso8601(*c->expiration), "2030-01-01T00:00:00.000Z");
  EXPECT_EQ(c->source, "credential-process (profile p)");
}

TEST_F(ProvidersTest, FailingCredentialProcessDoesNotLeakItsOutput) {
  std::string script = Write("fail.sh",
                             "#!/bin/sh\n"
                             "echo '{\"Version\": 1, \"AccessKeyId\": \"AKIDX\", \"SecretAccessKey\": "
                             "\"leakedProcessSecret\"}'\n"
                             "exit 3\n");
  Write("config", "[profile p]\ncredential_process = /bin/sh " + script + "\n");
  auto c = FromProfile("p");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kUnauthenticated);
  EXPECT_TRUE(Contains(c.status().message(), "credential_process of profile p exited with status 3"))
      << c.status().message();
  ExpectNoSecret(c.status());
}

TEST_F(ProvidersTest, CredentialProcessWithBadOutputIsRejectedWithoutEchoingIt) {
  auto garbage = RunCredentialProcess("echo 'leakedProcessSecret is not json'", "p");
  ASSERT_FALSE(garbage.ok());
  EXPECT_TRUE(Contains(garbage.status().message(), "not a JSON object"));
  ExpectNoSecret(garbage.status());

  auto wrong_version = RunCredentialProcess(
      "echo '{\"Version\": 2, \"AccessKeyId\": \"A\", \"SecretAccessKey\": \"leakedProcessSecret\"}'", "p");
  ASSERT_FALSE(wrong_version.ok());
  EXPECT_TRUE(Contains(wrong_version.status().message(), "Version"));
  ExpectNoSecret(wrong_version.status());

  auto missing = RunCredentialProcess("/nonexistent/dlq-credential-helper", "p");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(Contains(missing.status().message(), "command not found"));
}

// ------------------------------------------------------------------ web identity

constexpr char kWebIdentityXml[] =
    "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>"
    "<AccessKeyId>ASIAWEB</AccessKeyId><SecretAccessKey>webSecretValue</SecretAccessKey>"
    "<SessionToken>webToken</SessionToken><Expiration>2023-11-14T23:13:20Z</Expiration>"
    "</Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>";

TEST_F(ProvidersTest, WebIdentityFromEnvironmentIsUnsigned) {
  std::string token = Write("token", "oidc-token-secret\n");
  env_.Set("AWS_WEB_IDENTITY_TOKEN_FILE", token);
  env_.Set("AWS_ROLE_ARN", "arn:aws:iam::1:role/pod");
  env_.Set("AWS_ROLE_SESSION_NAME", "pod-session");
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, kWebIdentityXml); });
  WebIdentityProvider p(env_, Settings().Endpoint("sts"), http_, clock_);
  auto c = p.GetCredentials();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "ASIAWEB");
  EXPECT_EQ(c->source, "web-identity");
  HttpRequest req = http_.requests()[0];
  EXPECT_EQ(req.url, "https://sts.us-west-2.amazonaws.com/");
  EXPECT_EQ(FindHeader(req.headers, "Authorization"), nullptr);
  EXPECT_EQ(FormValue(req.body, "WebIdentityToken"), "oidc-token-secret");
  EXPECT_EQ(FormValue(req.body, "RoleSessionName"), "pod-session");
  EXPECT_EQ(FormValue(req.body, "RoleArn"), "arn:aws:iam::1:role/pod");
}

TEST_F(ProvidersTest, WebIdentityNeedsTokenFileAndRole) {
  WebIdentityProvider unset(env_, Settings().Endpoint("sts"), http_, clock_);
  EXPECT_EQ(unset.GetCredentials().status().code(), ErrorCode::kNotFound);
  env_.Set("AWS_WEB_IDENTITY_TOKEN_FILE", dir_ + "/token");
  auto no_role = unset.GetCredentials();
  EXPECT_EQ(no_role.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(no_role.status().message(), "AWS_ROLE_ARN"));
  env_.Set("AWS_ROLE_ARN", "arn:aws:iam::1:role/pod");
  auto no_file = unset.GetCredentials();
  EXPECT_EQ(no_file.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(no_file.status().message(), dir_ + "/token"));
  EXPECT_EQ(http_.calls(), 0);
}

TEST_F(ProvidersTest, WebIdentityFromProfile) {
  std::string token = Write("token", "oidc-token-secret");
  Write("config", "[profile k8s]\nrole_arn = arn:aws:iam::1:role/k8s\nweb_identity_token_file = " + token + "\n");
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, kWebIdentityXml); });
  auto c = FromProfile("k8s");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "ASIAWEB");
  EXPECT_EQ(c->source, "web-identity (profile k8s)");
  EXPECT_EQ(FindHeader(http_.requests()[0].headers, "Authorization"), nullptr);
}

// ------------------------------------------------------------------ container

constexpr char kContainerJson[] =
    R"({"AccessKeyId": "ASIACONTAINER", "SecretAccessKey": "containerSecretValue", "Token": "ctoken",
        "Expiration": "2023-11-14T23:13:20Z", "RoleArn": "arn:aws:iam::1:role/task"})";

TEST_F(ProvidersTest, ContainerRelativeUriUsesTheEcsAgentAddress) {
  env_.Set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/credentials/abc-123");
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, kContainerJson); });
  auto c = ContainerProvider(env_, http_).GetCredentials();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "ASIACONTAINER");
  EXPECT_EQ(c->session_token, "ctoken");
  EXPECT_EQ(c->source, "container");
  ASSERT_TRUE(c->expiration.has_value());
  HttpRequest req = http_.requests()[0];
  EXPECT_EQ(req.method, "GET");
  EXPECT_EQ(req.url, "http://169.254.170.2/v2/credentials/abc-123");
  EXPECT_EQ(FindHeader(req.headers, "Authorization"), nullptr);
}

TEST_F(ProvidersTest, ContainerFullUriSendsTokenFromFile) {
  std::string token = Write("eks-token", "container-auth-secret\n");
  env_.Set("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://169.254.170.23/v1/credentials");
  env_.Set("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", token);
  env_.Set("AWS_CONTAINER_AUTHORIZATION_TOKEN", "ignored-when-file-set");
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, kContainerJson); });
  auto c = ContainerProvider(env_, http_).GetCredentials();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  HttpRequest req = http_.requests()[0];
  EXPECT_EQ(req.url, "http://169.254.170.23/v1/credentials");
  ASSERT_NE(FindHeader(req.headers, "Authorization"), nullptr);
  EXPECT_EQ(*FindHeader(req.headers, "Authorization"), "container-auth-secret");
}

TEST_F(ProvidersTest, ContainerFullUriAcceptsLoopbackAndHttpsButRejectsOtherHosts) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, kContainerJson); });
  for (std::string ok : {"http://127.0.0.1:51679/creds", "http://localhost/creds", "https://creds.example.com/x"}) {
    env_.Set("AWS_CONTAINER_CREDENTIALS_FULL_URI", ok);
    EXPECT_TRUE(ContainerProvider(env_, http_).GetCredentials().ok()) << ok;
  }
  int before = http_.calls();
  env_.Set("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://evil.example.com/creds");
  auto c = ContainerProvider(env_, http_).GetCredentials();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(c.status().message(), "evil.example.com"));
  EXPECT_EQ(http_.calls(), before);
}

TEST_F(ProvidersTest, ContainerErrorsAreReportedWithoutTheToken) {
  env_.Set("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1/creds");
  env_.Set("AWS_CONTAINER_AUTHORIZATION_TOKEN", "container-auth-secret");
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(403, "denied"); });
  auto c = ContainerProvider(env_, http_).GetCredentials();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kUnauthenticated);
  EXPECT_TRUE(Contains(c.status().message(), "HTTP 403"));
  ExpectNoSecret(c.status());
  EXPECT_EQ(ContainerProvider(MapEnvironment(), http_).GetCredentials().status().code(), ErrorCode::kNotFound);
}

// ------------------------------------------------------------------ IMDS

Result<HttpResponse> ImdsHandler(const HttpRequest& r) {
  if (r.method == "PUT" && EndsWith(r.url, "/latest/api/token")) return MakeResponse(200, "imds-session-token");
  const std::string* token = FindHeader(r.headers, "X-aws-ec2-metadata-token");
  if (token == nullptr || *token != "imds-session-token") return MakeResponse(401, "");
  if (EndsWith(r.url, "/latest/meta-data/iam/security-credentials/")) return MakeResponse(200, "my-role\n");
  if (EndsWith(r.url, "/latest/meta-data/iam/security-credentials/my-role")) {
    return MakeResponse(200, R"({"Code": "Success", "Type": "AWS-HMAC", "AccessKeyId": "ASIAIMDS",
      "SecretAccessKey": "imdsSecretValue", "Token": "itoken", "Expiration": "2023-11-14T23:13:20Z"})");
  }
  return MakeResponse(404, "");
}

TEST_F(ProvidersTest, ImdsGetsTokenThenRoleThenCredentials) {
  env_.Unset("AWS_EC2_METADATA_DISABLED");
  http_.SetHandler(ImdsHandler);
  auto c = ImdsProvider(env_, http_).GetCredentials();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "ASIAIMDS");
  EXPECT_EQ(c->session_token, "itoken");
  EXPECT_EQ(c->source, "imds");
  auto reqs = http_.requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].method, "PUT");
  EXPECT_EQ(reqs[0].url, "http://169.254.169.254/latest/api/token");
  ASSERT_NE(FindHeader(reqs[0].headers, "X-aws-ec2-metadata-token-ttl-seconds"), nullptr);
  EXPECT_EQ(reqs[0].timeout, std::chrono::milliseconds(1000));
  EXPECT_EQ(reqs[1].url, "http://169.254.169.254/latest/meta-data/iam/security-credentials/");
  EXPECT_EQ(reqs[2].url, "http://169.254.169.254/latest/meta-data/iam/security-credentials/my-role");
  EXPECT_EQ(reqs[2].method, "GET");
}

TEST_F(ProvidersTest, ImdsHonoursEndpointOverride) {
  env_.Unset("AWS_EC2_METADATA_DISABLED");
  env_.Set("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:1338/");
  http_.SetHandler(ImdsHandler);
  ASSERT_TRUE(ImdsProvider(env_, http_).GetCredentials().ok());
  EXPECT_EQ(http_.requests()[0].url, "http://127.0.0.1:1338/latest/api/token");
}

TEST_F(ProvidersTest, ImdsDisabledFlagMakesNoRequest) {
  http_.SetHandler(ImdsHandler);
  auto c = ImdsProvider(env_, http_).GetCredentials();
  EXPECT_EQ(c.status().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(Contains(c.status().message(), "AWS_EC2_METADATA_DISABLED"));
  EXPECT_EQ(http_.calls(), 0);
}

TEST_F(ProvidersTest, ImdsUnreachableFailsFastAsNotFound) {
  env_.Unset("AWS_EC2_METADATA_DISABLED");
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return Unavailable("connect timed out"); });
  auto c = ImdsProvider(env_, http_).GetCredentials();
  EXPECT_EQ(c.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(http_.calls(), 1);
}

TEST_F(ProvidersTest, ImdsWithoutRoleIsNotFound) {
  env_.Unset("AWS_EC2_METADATA_DISABLED");
  http_.SetHandler([](const HttpRequest& r) -> Result<HttpResponse> {
    if (r.method == "PUT") return MakeResponse(200, "t");
    return MakeResponse(404, "");
  });
  auto c = ImdsProvider(env_, http_).GetCredentials();
  EXPECT_EQ(c.status().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(Contains(c.status().message(), "no IAM role"));
}

// ------------------------------------------------------------------ caching

class CountingProvider final : public CredentialsProvider {
 public:
  CountingProvider(Clock& clock, std::optional<Duration> lifetime) : clock_(clock), lifetime_(lifetime) {}
  Result<Credentials> GetCredentials() override {
    int n = ++calls_;
    if (fail_) return Unavailable("endpoint down");
    Credentials c;
    c.access_key_id = "ASIA" + std::to_string(n);
    c.secret_access_key = "s";
    if (lifetime_) c.expiration = clock_.Now() + std::chrono::duration_cast<SystemTime::duration>(*lifetime_);
    return c;
  }
  std::string Name() const override { return "counting"; }
  std::atomic<int> calls_{0};
  std::atomic<bool> fail_{false};

 private:
  Clock& clock_;
  std::optional<Duration> lifetime_;
};

TEST(CachingProvider, RefreshesOnlyInsideTheWindowBeforeExpiry) {
  FakeClock clock;
  auto inner = std::make_unique<CountingProvider>(clock, minutes(10));
  CountingProvider* counter = inner.get();
  CachingProvider p(std::move(inner), clock, minutes(5));
  ASSERT_EQ(p.GetCredentials()->access_key_id, "ASIA1");
  clock.Advance(minutes(4));  // 6 minutes left: outside the window, cached
  EXPECT_EQ(p.GetCredentials()->access_key_id, "ASIA1");
  EXPECT_EQ(counter->calls_, 1);
  clock.Advance(minutes(2));  // 4 minutes left: inside the window, refetched
  EXPECT_EQ(p.GetCredentials()->access_key_id, "ASIA2");
  EXPECT_EQ(counter->calls_, 2);
  EXPECT_EQ(p.GetCredentials()->access_key_id, "ASIA2");
  EXPECT_EQ(counter->calls_, 2);
}

TEST(CachingProvider, WindowIsConfigurable) {
  FakeClock clock;
  auto inner = std::make_unique<CountingProvider>(clock, minutes(30));
  CountingProvider* counter = inner.get();
  CachingProvider p(std::move(inner), clock, minutes(20));
  ASSERT_TRUE(p.GetCredentials().ok());
  clock.Advance(minutes(11));  // 19 minutes left < 20
  ASSERT_TRUE(p.GetCredentials().ok());
  EXPECT_EQ(counter->calls_, 2);
}

TEST(CachingProvider, KeepsUnexpiredCredentialsWhenRefreshFailsAndErrorsOnceExpired) {
  FakeClock clock;
  auto inner = std::make_unique<CountingProvider>(clock, minutes(10));
  CountingProvider* counter = inner.get();
  CachingProvider p(std::move(inner), clock, minutes(5));
  ASSERT_TRUE(p.GetCredentials().ok());
  counter->fail_ = true;
  clock.Advance(minutes(7));
  auto still = p.GetCredentials();
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still->access_key_id, "ASIA1");
  clock.Advance(minutes(4));  // now past expiry
  auto expired = p.GetCredentials();
  ASSERT_FALSE(expired.ok());
  EXPECT_EQ(expired.status().code(), ErrorCode::kUnavailable);
}

TEST(CachingProvider, LongTermCredentialsAreCachedUntilInvalidated) {
  FakeClock clock;
  auto inner = std::make_unique<CountingProvider>(clock, std::nullopt);
  CountingProvider* counter = inner.get();
  CachingProvider p(std::move(inner), clock);
  ASSERT_TRUE(p.GetCredentials().ok());
  clock.Advance(std::chrono::hours(24 * 365));
  ASSERT_TRUE(p.GetCredentials().ok());
  EXPECT_EQ(counter->calls_, 1);
  p.Invalidate();
  EXPECT_EQ(p.GetCredentials()->access_key_id, "ASIA2");
}

TEST(CachingProvider, ConcurrentCallersShareOneFetch) {
  FakeClock clock;
  auto inner = std::make_unique<CountingProvider>(clock, std::chrono::hours(1));
  CountingProvider* counter = inner.get();
  CachingProvider p(std::move(inner), clock);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < 100; ++j) ok += p.GetCredentials().ok() ? 1 : 0;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, 800);
  EXPECT_EQ(counter->calls_, 1);
}

// ------------------------------------------------------------------ chain

TEST_F(ProvidersTest, ChainPrefersEnvironmentOverProfile) {
  Write("credentials", "[default]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = profileSecretValue\n");
  env_.Set("AWS_ACCESS_KEY_ID", "AKIDENV");
  env_.Set("AWS_SECRET_ACCESS_KEY", "envSecretValue");
  auto chain = MakeDefaultCredentialsChain(Settings(), env_, http_, clock_);
  auto c = chain->GetCredentials();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->source, "environment");
  EXPECT_EQ(c->access_key_id, "AKIDENV");
}

TEST_F(ProvidersTest, ChainFallsBackToProfileAndExplicitKeysWinOverAll) {
  Write("credentials", "[default]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = profileSecretValue\n");
  auto chain = MakeDefaultCredentialsChain(Settings(), env_, http_, clock_);
  auto c = chain->GetCredentials();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->source, "shared-credentials-file (profile default)");

  env_.Set("AWS_ACCESS_KEY_ID", "AKIDENV");
  env_.Set("AWS_SECRET_ACCESS_KEY", "envSecretValue");
  CredentialsChainOptions options;
  options.explicit_credentials = Credentials{"AKIDEXPLICIT", "x", "", std::nullopt, ""};
  auto explicit_chain = MakeDefaultCredentialsChain(Settings(), env_, http_, clock_, options);
  auto e = explicit_chain->GetCredentials();
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->access_key_id, "AKIDEXPLICIT");
  EXPECT_EQ(e->source, "explicit");
}

TEST_F(ProvidersTest, ProfileFlagSkipsEnvironmentCredentialsLikeTheCli) {
  Write("credentials", "[dev]\naws_access_key_id = AKIDDEV\naws_secret_access_key = profileSecretValue\n");
  env_.Set("AWS_ACCESS_KEY_ID", "AKIDENV");
  env_.Set("AWS_SECRET_ACCESS_KEY", "envSecretValue");
  ClientOptions flag;
  flag.profile = "dev";
  auto c = MakeDefaultCredentialsChain(Settings(flag), env_, http_, clock_)->GetCredentials();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->access_key_id, "AKIDDEV");

  env_.Set("AWS_PROFILE", "dev");  // AWS_PROFILE does not skip the environment
  auto from_env = MakeDefaultCredentialsChain(Settings(), env_, http_, clock_)->GetCredentials();
  ASSERT_TRUE(from_env.ok());
  EXPECT_EQ(from_env->access_key_id, "AKIDENV");
}

TEST_F(ProvidersTest, ChainPrefersWebIdentityOverProfileAndProfileOverContainer) {
  Write("credentials", "[default]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = profileSecretValue\n");
  env_.Set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/credentials/x");
  http_.SetHandler([](const HttpRequest& r) -> Result<HttpResponse> {
    if (Contains(r.url, "169.254.170.2")) return MakeResponse(200, kContainerJson);
    return MakeResponse(200, kWebIdentityXml);
  });
  auto profile_first = MakeDefaultCredentialsChain(Settings(), env_, http_, clock_)->GetCredentials();
  ASSERT_TRUE(profile_first.ok());
  EXPECT_EQ(profile_first->access_key_id, "AKIDPROFILE");

  env_.Set("AWS_WEB_IDENTITY_TOKEN_FILE", Write("token", "oidc-token-secret"));
  env_.Set("AWS_ROLE_ARN", "arn:aws:iam::1:role/pod");
  auto web_first = MakeDefaultCredentialsChain(Settings(), env_, http_, clock_)->GetCredentials();
  ASSERT_TRUE(web_first.ok());
  EXPECT_EQ(web_first->source, "web-identity");

  Write("credentials", "");
  env_.Unset("AWS_WEB_IDENTITY_TOKEN_FILE");
  auto container = MakeDefaultCredentialsChain(Settings(), env_, http_, clock_)->GetCredentials();
  ASSERT_TRUE(container.ok());
  EXPECT_EQ(container->source, "container");
}

TEST_F(ProvidersTest, ChainStopsAtARealErrorInsteadOfFallingThrough) {
  Write("credentials", "[default]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = profileSecretValue\n");
  env_.Set("AWS_ACCESS_KEY_ID", "AKIDENV");  // secret missing
  auto c = MakeDefaultCredentialsChain(Settings(), env_, http_, clock_)->GetCredentials();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(c.status().message(), "environment"));
}

TEST_F(ProvidersTest, NoCredentialsAnywhereNamesEverySourceAndProfile) {
  Write("config", "[profile empty]\nregion = us-east-1\n");
  ClientOptions o;
  o.profile = "empty";
  auto c = MakeDefaultCredentialsChain(Settings(o), env_, http_, clock_)->GetCredentials();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kUnauthenticated);
  const std::string& m = c.status().message();
  EXPECT_TRUE(StartsWith(m, "no AWS credentials found: checked ")) << m;
  EXPECT_TRUE(Contains(m, "web identity")) << m;
  EXPECT_TRUE(Contains(m, dir_ + "/credentials")) << m;
  EXPECT_TRUE(Contains(m, "container")) << m;
  EXPECT_TRUE(Contains(m, "EC2 instance metadata")) << m;
  EXPECT_TRUE(EndsWith(m, "(profile empty)")) << m;
  EXPECT_EQ(http_.calls(), 0);

  auto with_env = MakeDefaultCredentialsChain(Settings(), env_, http_, clock_)->GetCredentials();
  EXPECT_TRUE(Contains(with_env.status().message(), "checked environment, ")) << with_env.status().message();
}

TEST_F(ProvidersTest, ChainCachesAssumedRoleCredentialsUntilNearExpiry) {
  Write("credentials", "[base]\naws_access_key_id = AKIDBASE\naws_secret_access_key = baseSecretValue\n");
  Write("config", "[profile dev]\nrole_arn = arn:aws:iam::1:role/dev\nsource_profile = base\n");
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(200, AssumeRoleXml("ASIADEV"));  // expires 1 h after the FakeClock start
  });
  ClientOptions o;
  o.profile = "dev";
  auto chain = MakeDefaultCredentialsChain(Settings(o), env_, http_, clock_);
  ASSERT_TRUE(chain->GetCredentials().ok());
  clock_.Advance(minutes(50));
  ASSERT_TRUE(chain->GetCredentials().ok());
  EXPECT_EQ(http_.calls(), 1);
  clock_.Advance(minutes(6));  // 4 minutes left
  ASSERT_TRUE(chain->GetCredentials().ok());
  EXPECT_EQ(http_.calls(), 2);
}

// ------------------------------------------------------------------ IAM Identity Center (SSO)

// SHA-1 of the names below, from Python's hashlib: the AWS CLI's cache file names.
constexpr char kSsoSessionCacheKey[] = "0ad374308c5a4e22f723adf10145eafad7c4031c";   // "my-sso"
constexpr char kSsoStartUrlCacheKey[] = "9e104e67bc03709422c341f8e7b917448969b3a1";  // the start URL
constexpr char kSsoStartUrl[] = "https://d-9067642ac7.awsapps.com/start";
// expiration: 2023-11-15T00:00:00Z in milliseconds.
constexpr char kRoleCredentialsJson[] =
    R"({"roleCredentials":{"accessKeyId":"ASIASSO","secretAccessKey":"ssoSecretValue",)"
    R"("sessionToken":"ssoSessionToken","expiration":1700006400000}})";

class SsoTest : public ProvidersTest {
 protected:
  SsoTest() {
    env_.Set("HOME", dir_);
    std::filesystem::create_directories(dir_ + "/.aws/sso/cache");
  }
  // A token cache file as `aws sso login` writes it; the FakeClock starts at 2023-11-14T22:13:20Z.
  void WriteToken(const std::string& key, const std::string& expires_at = "2023-11-15T06:00:00Z") {
    Write(".aws/sso/cache/" + key + ".json",
          R"({"startUrl":")" + std::string(kSsoStartUrl) +
              R"(","region":"eu-west-1","accessToken":"sso-access-token-secret","expiresAt":")" + expires_at + "\"}");
  }
  void WriteSessionProfile(const std::string& extra = "") {
    Write("config",
          "[profile dev]\nsso_session = my-sso\nsso_account_id = 111122223333\nsso_role_name = ReadOnly\n"
          "region = us-west-2\n" +
              extra + "\n[sso-session my-sso]\nsso_start_url = " + std::string(kSsoStartUrl) +
              "\nsso_region = eu-west-1\nsso_registration_scopes = sso:account:access\n");
  }
};

TEST_F(SsoTest, SessionProfileExchangesTheCachedTokenForRoleCredentials) {
  WriteSessionProfile();
  WriteToken(kSsoSessionCacheKey);
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, kRoleCredentialsJson); });
  auto c = FromProfile("dev");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "ASIASSO");
  EXPECT_EQ(c->secret_access_key, "ssoSecretValue");
  EXPECT_EQ(c->session_token, "ssoSessionToken");
  EXPECT_EQ(c->source, "sso (profile dev)");
  ASSERT_TRUE(c->expiration.has_value());
  EXPECT_EQ(FormatIso8601(*c->expiration), "2023-11-15T00:00:00.000Z");
  ASSERT_EQ(http_.calls(), 1);
  HttpRequest req = http_.requests()[0];
  EXPECT_EQ(req.method, "GET");
  // The portal is in sso_region, not the profile's region.
  EXPECT_EQ(
      req.url,
      "https://portal.sso.eu-west-1.amazonaws.com/federation/credentials?account_id=111122223333&role_name=ReadOnly");
  ASSERT_NE(FindHeader(req.headers, "x-amz-sso_bearer_token"), nullptr);
  EXPECT_EQ(*FindHeader(req.headers, "x-amz-sso_bearer_token"), "sso-access-token-secret");
  EXPECT_EQ(FindHeader(req.headers, "Authorization"), nullptr);  // unsigned
}

TEST_F(SsoTest, LegacyProfileKeysTheCacheByStartUrlAndReadsTheOldUtcSuffix) {
  Write("config", "[profile old]\nsso_start_url = " + std::string(kSsoStartUrl) +
                      "\nsso_region = us-east-1\nsso_account_id = 444455556666\nsso_role_name = Admin Role\n");
  WriteToken(kSsoStartUrlCacheKey, "2023-11-15T06:00:00UTC");  // AWS CLI releases before 2.0.29
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, kRoleCredentialsJson); });
  auto c = FromProfile("old");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->source, "sso (profile old)");
  EXPECT_EQ(http_.requests()[0].url,
            "https://portal.sso.us-east-1.amazonaws.com/federation/"
            "credentials?account_id=444455556666&role_name=Admin%20Role");
}

TEST_F(SsoTest, NoLoginOrAnExpiredOneSaysToLogInWithoutCallingThePortal) {
  WriteSessionProfile();
  auto none = FromProfile("dev");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), ErrorCode::kUnauthenticated);
  EXPECT_TRUE(Contains(none.status().message(), "run `aws sso login --profile dev`")) << none.status().message();
  EXPECT_TRUE(Contains(none.status().message(), kSsoSessionCacheKey)) << none.status().message();

  WriteToken(kSsoSessionCacheKey, "2023-11-14T21:00:00Z");
  auto expired = FromProfile("dev");
  ASSERT_FALSE(expired.ok());
  EXPECT_EQ(expired.status().code(), ErrorCode::kUnauthenticated);
  EXPECT_TRUE(Contains(expired.status().message(), "expired at 2023-11-14T21:00:00")) << expired.status().message();
  EXPECT_TRUE(Contains(expired.status().message(), "aws sso login --profile dev"));
  ExpectNoSecret(expired.status());

  Write(".aws/sso/cache/" + std::string(kSsoSessionCacheKey) + ".json", "{\"accessToken\": 12");
  auto garbled = FromProfile("dev");
  EXPECT_EQ(garbled.status().code(), ErrorCode::kUnauthenticated);
  EXPECT_TRUE(Contains(garbled.status().message(), "not a JSON object with accessToken and expiresAt"));
  EXPECT_EQ(http_.calls(), 0);
}

TEST_F(SsoTest, PortalRefusalsAreExplainedAndServerErrorsRetried) {
  WriteSessionProfile();
  WriteToken(kSsoSessionCacheKey);
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(401, R"({"message":"Session token not found or invalid"})");
  });
  auto unauthorized = FromProfile("dev");
  ASSERT_FALSE(unauthorized.ok());
  EXPECT_EQ(unauthorized.status().code(), ErrorCode::kUnauthenticated);
  EXPECT_TRUE(Contains(unauthorized.status().message(), "HTTP 401")) << unauthorized.status().message();
  EXPECT_TRUE(Contains(unauthorized.status().message(), "aws sso login --profile dev"));
  ExpectNoSecret(unauthorized.status());
  EXPECT_EQ(http_.calls(), 1);  // not retried

  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(403, "{}"); });
  auto forbidden = FromProfile("dev");
  EXPECT_TRUE(Contains(forbidden.status().message(), "role ReadOnly in account 111122223333"))
      << forbidden.status().message();

  int calls = 0;
  http_.SetHandler([&](const HttpRequest&) -> Result<HttpResponse> {
    return ++calls == 1 ? MakeResponse(503, "busy") : MakeResponse(200, kRoleCredentialsJson);
  });
  auto retried = FromProfile("dev");
  ASSERT_TRUE(retried.ok()) << retried.status().ToString();
  EXPECT_EQ(calls, 2);

  http_.SetHandler(
      [](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, R"({"roleCredentials":{}})"); });
  EXPECT_EQ(FromProfile("dev").status().code(), ErrorCode::kUnauthenticated);
}

TEST_F(SsoTest, IncompleteOrInconsistentSettingsNameTheKeys) {
  Write("config",
        "[profile half]\nsso_session = my-sso\nsso_account_id = 111122223333\n"
        "[profile nosession]\nsso_session = missing\nsso_account_id = 1\nsso_role_name = R\n"
        "[profile clash]\nsso_session = my-sso\nsso_region = us-east-1\nsso_account_id = 1\nsso_role_name = R\n"
        "[profile loginonly]\nsso_session = my-sso\n"
        "[sso-session my-sso]\nsso_start_url = " +
            std::string(kSsoStartUrl) + "\nsso_region = eu-west-1\n");
  auto half = FromProfile("half");
  EXPECT_EQ(half.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(half.status().message(), "lacks sso_role_name")) << half.status().message();
  auto nosession = FromProfile("nosession");
  EXPECT_EQ(nosession.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(nosession.status().message(), "[sso-session missing]")) << nosession.status().message();
  auto clash = FromProfile("clash");
  EXPECT_EQ(clash.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(clash.status().message(), "sso_region differs")) << clash.status().message();
  auto loginonly = FromProfile("loginonly");
  EXPECT_EQ(loginonly.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(loginonly.status().message(), "lacks sso_account_id, sso_role_name"))
      << loginonly.status().message();
  EXPECT_EQ(http_.calls(), 0);
}

TEST_F(SsoTest, PortalEndpointFollowsItsOwnOverridesButNotEndpointUrl) {
  WriteSessionProfile();
  WriteToken(kSsoSessionCacheKey);
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, kRoleCredentialsJson); });
  ClientOptions o;
  o.profile = "dev";
  o.endpoint_url = "http://127.0.0.1:4566";  // the command's services, not the SSO portal
  ASSERT_TRUE(ProfileProvider(Settings(o), env_, http_, clock_).GetCredentials().ok());
  EXPECT_TRUE(StartsWith(http_.requests().back().url, "https://portal.sso.eu-west-1.amazonaws.com/"));

  env_.Set("AWS_ENDPOINT_URL_SSO", "http://127.0.0.1:9911/");
  ASSERT_TRUE(ProfileProvider(Settings(o), env_, http_, clock_).GetCredentials().ok());
  EXPECT_EQ(http_.requests().back().url,
            "http://127.0.0.1:9911/federation/credentials?account_id=111122223333&role_name=ReadOnly");
}

TEST_F(SsoTest, AnSsoProfileCanBeTheSourceOfAnAssumedRole) {
  WriteSessionProfile("\n[profile deploy]\nrole_arn = arn:aws:iam::777788889999:role/deploy\nsource_profile = dev");
  WriteToken(kSsoSessionCacheKey);
  http_.SetHandler([](const HttpRequest& r) -> Result<HttpResponse> {
    if (Contains(r.url, "/federation/credentials")) return MakeResponse(200, kRoleCredentialsJson);
    return MakeResponse(200, AssumeRoleXml("ASIADEPLOY"));
  });
  auto c = FromProfile("deploy");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "ASIADEPLOY");
  ASSERT_EQ(http_.calls(), 2);
  const HttpRequest assume_role = http_.requests()[1];  // requests() returns a copy: keep it alive
  const std::string* auth = FindHeader(assume_role.headers, "Authorization");
  ASSERT_NE(auth, nullptr);
  EXPECT_TRUE(Contains(*auth, "Credential=ASIASSO/")) << *auth;  // signed with the SSO role's keys
}

// A token cache file with what a refresh needs, as an sso-session login leaves it.
std::string RefreshableToken(const std::string& expires_at, const std::string& registration = "2023-12-14T22:00:00Z") {
  return R"({"startUrl":")" + std::string(kSsoStartUrl) +
         R"(","region":"eu-west-1","accessToken":"sso-access-token-secret","expiresAt":")" + expires_at +
         R"(","clientId":"client-1","clientSecret":"sso-client-secret","registrationExpiresAt":")" + registration +
         R"(","refreshToken":"sso-refresh-secret"})";
}

TEST_F(SsoTest, ASessionLoginNearExpiryIsRefreshedAndTheCacheRewrittenForTheNextReader) {
  WriteSessionProfile();
  const std::string cache = Write(".aws/sso/cache/" + std::string(kSsoSessionCacheKey) + ".json",
                                  RefreshableToken("2023-11-14T22:23:20Z"));  // 10 minutes left
  std::string oidc_body;
  http_.SetHandler([&](const HttpRequest& r) -> Result<HttpResponse> {
    if (r.method == "POST" && r.url == "https://oidc.eu-west-1.amazonaws.com/token") {
      oidc_body = std::string(r.Body());
      return MakeResponse(
          200,
          R"({"accessToken":"sso-new-token","expiresIn":3600,"refreshToken":"sso-new-refresh","tokenType":"Bearer"})");
    }
    const std::string* token = FindHeader(r.headers, "x-amz-sso_bearer_token");
    if (token == nullptr || *token != "sso-new-token") return MakeResponse(401, "{}");
    return MakeResponse(200, kRoleCredentialsJson);
  });
  auto c = FromProfile("dev");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "ASIASSO");
  ASSERT_EQ(http_.calls(), 2);
  EXPECT_EQ(FindHeader(http_.requests()[0].headers, "Authorization"), nullptr);  // unsigned
  EXPECT_EQ(oidc_body, R"({"clientId":"client-1","clientSecret":"sso-client-secret","grantType":"refresh_token",)"
                       R"("refreshToken":"sso-refresh-secret"})");

  std::ifstream in(cache);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(),
            R"({"startUrl":")" + std::string(kSsoStartUrl) +
                R"(","region":"eu-west-1","accessToken":"sso-new-token","expiresAt":"2023-11-14T23:13:20Z",)"
                R"("clientId":"client-1","clientSecret":"sso-client-secret",)"
                R"("registrationExpiresAt":"2023-12-14T22:00:00Z","refreshToken":"sso-new-refresh"})");
  EXPECT_EQ(std::filesystem::status(cache).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);

  // The next run reads the refreshed login and does not refresh again.
  auto again = FromProfile("dev");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(http_.calls(), 3);
}

TEST_F(SsoTest, AnExpiredLoginWhoseRefreshIsRefusedSaysWhyAndToLogIn) {
  WriteSessionProfile();
  Write(".aws/sso/cache/" + std::string(kSsoSessionCacheKey) + ".json", RefreshableToken("2023-11-14T21:00:00Z"));
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(400, R"({"error":"invalid_grant","error_description":"Invalid refresh token provided"})");
  });
  auto c = FromProfile("dev");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kUnauthenticated);
  EXPECT_TRUE(Contains(c.status().message(), "could not be refreshed")) << c.status().message();
  EXPECT_TRUE(Contains(c.status().message(), "HTTP 400 invalid_grant")) << c.status().message();
  EXPECT_TRUE(Contains(c.status().message(), "aws sso login --profile dev"));
  ExpectNoSecret(c.status());
  EXPECT_EQ(http_.calls(), 1);  // a 400 is not retried, and the portal is not asked

  Write(".aws/sso/cache/" + std::string(kSsoSessionCacheKey) + ".json",
        RefreshableToken("2023-11-14T21:00:00Z", "2023-11-01T00:00:00Z"));
  auto registration = FromProfile("dev");
  EXPECT_TRUE(Contains(registration.status().message(), "client registration expired (2023-11-01T00:00:00Z)"))
      << registration.status().message();
  EXPECT_EQ(http_.calls(), 1);
}

TEST_F(SsoTest, AFailedRefreshKeepsUsingALoginThatIsStillValid) {
  WriteSessionProfile();
  const std::string cache =
      Write(".aws/sso/cache/" + std::string(kSsoSessionCacheKey) + ".json", RefreshableToken("2023-11-14T22:23:20Z"));
  http_.SetHandler([](const HttpRequest& r) -> Result<HttpResponse> {
    if (r.method == "POST") return MakeResponse(503, "");
    return MakeResponse(200, kRoleCredentialsJson);
  });
  ScopedCapturingLogger log;
  auto c = FromProfile("dev");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(log->Contains("sso token refresh failed, using the current login until it expires"));
  EXPECT_TRUE(log->Contains("HTTP 503"));
  EXPECT_FALSE(log->Contains("sso-refresh-secret") || log->Contains("sso-client-secret") ||
               log->Contains("sso-access-token-secret"));
  ASSERT_EQ(http_.calls(), 4);  // three refresh attempts, then the portal with the old token
  EXPECT_EQ(*FindHeader(http_.requests()[3].headers, "x-amz-sso_bearer_token"), "sso-access-token-secret");
  std::ifstream in(cache);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), RefreshableToken("2023-11-14T22:23:20Z"));  // untouched
}

TEST(SsoParsers, ARefreshAnswerMustCarryAUsableTokenAndLifetime) {
  SsoProfile profile;
  profile.profile = "dev";
  SsoToken old;
  old.refresh_token = "r0";
  const SystemTime now = FromUnixMillis(1700000000000);
  auto ok = ParseSsoRefreshedToken(R"({"accessToken":"a1","expiresIn":3600})", old, now, profile);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->access_token, "a1");
  EXPECT_EQ(ok->refresh_token, "r0");  // kept when none is returned
  EXPECT_EQ(ok->expires_at, now + std::chrono::hours(1));
  for (const char* bad :
       {R"({"accessToken":"a1","expiresIn":9223372036854775807})",  // would overflow the clock
        R"({"accessToken":"a1","expiresIn":0})", R"({"accessToken":"a1"})", R"({"accessToken":"","expiresIn":60})",
        R"({"accessToken":"a\r\nX: y","expiresIn":60})", "[]"}) {
    auto r = ParseSsoRefreshedToken(bad, old, now, profile);
    EXPECT_EQ(r.status().code(), ErrorCode::kUnauthenticated) << bad;
  }
}

TEST_F(SsoTest, ALegacyLoginIsNeverRefreshed) {
  Write("config", "[profile old]\nsso_start_url = " + std::string(kSsoStartUrl) +
                      "\nsso_region = eu-west-1\nsso_account_id = 1\nsso_role_name = R\n");
  Write(".aws/sso/cache/" + std::string(kSsoStartUrlCacheKey) + ".json", RefreshableToken("2023-11-14T22:23:20Z"));
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, kRoleCredentialsJson); });
  ASSERT_TRUE(FromProfile("old").ok());
  ASSERT_EQ(http_.calls(), 1);
  EXPECT_EQ(http_.requests()[0].method, "GET");
}

}  // namespace
}  // namespace dlq
