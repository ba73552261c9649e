// IAM Identity Center (SSO) profiles the way the AWS tools use them, checked
// against boto3: one config with an sso-session profile and one token cache
// file, as `aws sso login` leaves them, and a fake SSO portal on loopback
// (AWS_ENDPOINT_URL_SSO). dlq-archive and the image's boto3 (>= 1.31, which
// honours service-specific endpoints) must both find the same cache file,
// send the portal the same request, and sign real calls to moto with the
// role credentials it returns.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <vector>

#include "common/time_util.h"
#include "harness.h"
#include "unit/loopback_http_server.h"

namespace dlq::it {
namespace {

using Reply = LoopbackHttpServer::Reply;
using PortalRequest = LoopbackHttpServer::Request;

// SHA-1 of "corp" (the sso-session name), from Python's hashlib: the name the
// AWS CLI gives the token cache file.
constexpr char kCacheFile[] = "ee0bfd2552fbd840c02cc48b6e823320543c450f.json";
constexpr char kToken[] = "sso-interop-access-token";

class SsoInteropTest : public ::testing::Test {
 protected:
  SsoInteropTest() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "dlq-sso-XXXXXX").string();
    home_ = mkdtemp(tmpl.data());
    std::filesystem::create_directories(home_ + "/.aws/sso/cache");
    std::ofstream(home_ + "/.aws/config")
        << "[profile sso-dev]\nsso_session = corp\nsso_account_id = 123456789012\n"
           "sso_role_name = DlqOperator\nregion = us-east-1\n\n"
           "[sso-session corp]\nsso_start_url = https://d-1234567890.awsapps.com/start\n"
           "sso_region = eu-central-1\nsso_registration_scopes = sso:account:access\n";
    std::ofstream(home_ + "/.aws/sso/cache/" + kCacheFile)
        << R"({"startUrl": "https://d-1234567890.awsapps.com/start", "region": "eu-central-1", "accessToken": ")"
        << kToken << R"(", "expiresAt": "2099-01-01T00:00:00Z"})";
  }
  ~SsoInteropTest() override {
    std::error_code ec;
    std::filesystem::remove_all(home_, ec);
  }

  // Only HOME, PATH and the portal's endpoint: no credentials in the environment.
  std::string Env(int portal_port) const {
    return "env -i PATH=\"$PATH\" HOME=" + home_ +
           " AWS_EC2_METADATA_DISABLED=true AWS_ENDPOINT_URL_SSO=http://127.0.0.1:" + std::to_string(portal_port) + " ";
  }

  std::string home_;
};

// The query parameters of a request target, as a set (their order differs between clients).
std::set<std::string> QueryParams(const std::string& target) {
  std::set<std::string> out;
  size_t q = target.find('?');
  if (q == std::string::npos) return out;
  for (std::string_view p : Split(std::string_view(target).substr(q + 1), '&')) out.emplace(p);
  return out;
}

TEST_F(SsoInteropTest, DlqArchiveAndBoto3GetTheSameRoleCredentialsFromTheSameLogin) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  std::mutex mu;
  std::vector<PortalRequest> seen;
  LoopbackHttpServer portal([&](const PortalRequest& r) -> Reply {
    {
      std::lock_guard<std::mutex> lock(mu);
      seen.push_back(r);
    }
    const std::string* token = FindHeader(r.headers, "x-amz-sso_bearer_token");
    if (r.method != "GET" || r.target.rfind("/federation/credentials?", 0) != 0) return {404, {}, "{}"};
    if (token == nullptr || *token != kToken) return {401, {}, R"({"message":"Session token not found or invalid"})"};
    return {200,
            {{"Content-Type", "application/json"}},
            R"({"roleCredentials":{"accessKeyId":"ASIASSOINTEROP00001","secretAccessKey":"ssoInteropSecret",)"
            R"("sessionToken":"ssoInteropSession","expiration":4102444800000}})"};
  });

  // dlq-archive: doctor resolves the credentials and signs STS and SQS calls to moto with them.
  CommandResult ours =
      RunShell(Env(portal.port()) + DLQ_BINARY + " --profile sso-dev --endpoint-url " + moto.endpoint() + " doctor");
  EXPECT_EQ(ours.exit_code, 0) << ours.out;
  EXPECT_NE(ours.out.find("ASIA***********0001 from sso (profile sso-dev)"), std::string::npos) << ours.out;
  EXPECT_NE(ours.out.find(", sso portal http://127.0.0.1:" + std::to_string(portal.port()) + " (custom)"),
            std::string::npos)
      << ours.out;
  EXPECT_NE(ours.out.find("[ OK ] identity"), std::string::npos) << ours.out;
  EXPECT_NE(ours.out.find("[ OK ] sqs"), std::string::npos) << ours.out;
  EXPECT_EQ(ours.out.find(kToken), std::string::npos) << "the SSO token was printed";

  // boto3 from the same files, calling moto's STS with what the portal gave it.
  CommandResult boto = RunShell(Env(portal.port()) +
                                "python3 -c \"import boto3; s = boto3.Session(profile_name='sso-dev'); "
                                "c = s.get_credentials().get_frozen_credentials(); "
                                "print(c.access_key, s.client('sts', endpoint_url='" +
                                moto.endpoint() + "').get_caller_identity()['Account'])\"");
  EXPECT_EQ(boto.exit_code, 0) << boto.out;
  EXPECT_NE(boto.out.find("ASIASSOINTEROP00001 123456789012"), std::string::npos) << boto.out;

  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(seen.size(), 2u);  // one fetch each: both found the login under the same cache file name
  for (const PortalRequest& r : seen) {
    EXPECT_EQ(r.method, "GET");
    EXPECT_EQ(r.target.substr(0, r.target.find('?')), "/federation/credentials");
    const std::string* token = FindHeader(r.headers, "x-amz-sso_bearer_token");
    ASSERT_NE(token, nullptr);
    EXPECT_EQ(*token, kToken);
    EXPECT_EQ(FindHeader(r.headers, "Authorization"), nullptr);
  }
  EXPECT_EQ(QueryParams(seen[0].target), QueryParams(seen[1].target)) << seen[0].target << " vs " << seen[1].target;
  EXPECT_EQ(QueryParams(seen[0].target), (std::set<std::string>{"account_id=123456789012", "role_name=DlqOperator"}));
}

TEST_F(SsoInteropTest, AnExpiredLoginExitsOneWithTheCommandToRunAndNoPortalCall) {
  std::ofstream(home_ + "/.aws/sso/cache/" + kCacheFile)
      << R"({"accessToken": ")" << kToken << R"(", "expiresAt": "2020-01-01T00:00:00Z"})";
  int calls = 0;
  LoopbackHttpServer portal([&](const PortalRequest&) -> Reply {
    ++calls;
    return {500, {}, ""};
  });
  CommandResult r = RunShell(Env(portal.port()) + DLQ_BINARY +
                             " --profile sso-dev --endpoint-url http://127.0.0.1:9 archive --queue q --to "
                             "file:///tmp/dlq-sso-never");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("expired at 2020-01-01T00:00:00"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("aws sso login --profile sso-dev"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(kToken), std::string::npos) << r.out;
  EXPECT_EQ(calls, 0);
}

// Both directions of a refresh: boto3 refreshes an sso-session login close to
// expiry and rewrites the cache, and dlq-archive then uses that file without
// refreshing again; then dlq-archive refreshes, and boto3 uses its file. The
// two refresh requests to SSO-OIDC carry the same fields.
TEST_F(SsoInteropTest, ARefreshByEitherToolIsUsedByTheOtherWithoutAnotherRefresh) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  std::mutex mu;
  std::vector<PortalRequest> token_calls;
  std::vector<std::string> portal_tokens;
  int issued = 0;
  LoopbackHttpServer aws([&](const PortalRequest& r) -> Reply {
    std::lock_guard<std::mutex> lock(mu);
    if (r.method == "POST" && r.target == "/token") {
      token_calls.push_back(r);
      ++issued;
      return {200,
              {{"Content-Type", "application/json"}},
              R"({"accessToken":"refreshed-)" + std::to_string(issued) +
                  R"(","expiresIn":3600,"refreshToken":"refresh-)" + std::to_string(issued) +
                  R"(","tokenType":"Bearer"})"};
    }
    const std::string* token = FindHeader(r.headers, "x-amz-sso_bearer_token");
    portal_tokens.push_back(token != nullptr ? *token : "");
    return {200,
            {{"Content-Type", "application/json"}},
            R"({"roleCredentials":{"accessKeyId":"ASIASSOINTEROP00002","secretAccessKey":"s","sessionToken":"t",)"
            R"("expiration":4102444800000}})"};
  });
  const std::string cache_path = home_ + "/.aws/sso/cache/" + kCacheFile;
  auto near_expiry = [&] {
    std::ofstream(cache_path) << R"({"startUrl": "https://d-1234567890.awsapps.com/start", "region": "eu-central-1", )"
                              << R"("accessToken": "old-token", "expiresAt": ")"
                              << FormatIso8601(std::chrono::system_clock::now() + std::chrono::minutes(5))
                              << R"(", "clientId": "client-1", "clientSecret": "client-secret-1", )"
                              << R"("registrationExpiresAt": "2099-01-01T00:00:00Z", "refreshToken": "refresh-0"})";
  };
  const std::string env =
      Env(aws.port()) + "AWS_ENDPOINT_URL_SSO_OIDC=http://127.0.0.1:" + std::to_string(aws.port()) + " ";
  const std::string boto3 = env +
                            "python3 -c \"import boto3; print(boto3.Session(profile_name='sso-dev')"
                            ".get_credentials().get_frozen_credentials().access_key)\"";
  const std::string ours = env + DLQ_BINARY + " --profile sso-dev --endpoint-url " + moto.endpoint() + " doctor";

  near_expiry();
  CommandResult b1 = RunShell(boto3);
  ASSERT_EQ(b1.exit_code, 0) << b1.out;
  CommandResult o1 = RunShell(ours);
  EXPECT_EQ(o1.exit_code, 0) << o1.out;

  near_expiry();
  CommandResult o2 = RunShell(ours);
  EXPECT_EQ(o2.exit_code, 0) << o2.out;
  CommandResult b2 = RunShell(boto3);
  ASSERT_EQ(b2.exit_code, 0) << b2.out;

  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(token_calls.size(), 2u);  // one refresh per round: the second tool used the first one's file
  EXPECT_EQ(portal_tokens, (std::vector<std::string>{"refreshed-1", "refreshed-1", "refreshed-2", "refreshed-2"}))
      << o2.out;
  // boto3's refresh request and ours: the same JSON fields (order and spacing aside).
  simdjson::dom::parser p1, p2;
  simdjson::dom::object a, b;
  ASSERT_EQ(p1.parse(token_calls[0].body).get(a), simdjson::SUCCESS) << token_calls[0].body;
  ASSERT_EQ(p2.parse(token_calls[1].body).get(b), simdjson::SUCCESS) << token_calls[1].body;
  for (const char* field : {"clientId", "clientSecret", "grantType"}) {
    EXPECT_EQ(std::string_view(a[field]), std::string_view(b[field])) << field;
  }
  EXPECT_EQ(std::string_view(a["refreshToken"]), "refresh-0");
  EXPECT_EQ(std::string_view(b["refreshToken"]), "refresh-0");
  EXPECT_EQ(a.size(), b.size()) << token_calls[0].body << " vs " << token_calls[1].body;
}

}  // namespace
}  // namespace dlq::it
