// The HTTP credential providers (EC2 IMDSv2, ECS/EKS container) against a
// fake metadata server on loopback, through the real curl transport.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <fstream>

#include "aws/curl_transport.h"
#include "credentials/container_provider.h"
#include "credentials/imds_provider.h"
#include "unit/loopback_http_server.h"

namespace dlq {
namespace {

using Reply = LoopbackHttpServer::Reply;
using ServerRequest = LoopbackHttpServer::Request;

constexpr char kCredsJson[] =
    R"({"Code":"Success","Type":"AWS-HMAC","AccessKeyId":"ASIALOOPBACKKEY00001","SecretAccessKey":"loopbackSecret",)"
    R"("Token":"loopbackToken","Expiration":"2030-01-01T00:00:00Z"})";

std::unique_ptr<CurlTransport> Transport() {
  auto t = CurlTransport::Create();
  EXPECT_TRUE(t.ok());
  return std::move(*t);
}

TEST(CredentialProvidersLoopback, ImdsV2FetchesTokenThenRoleThenCredentials) {
  std::atomic<int> token_puts{0};
  LoopbackHttpServer server([&](const ServerRequest& r) -> Reply {
    if (r.method == "PUT" && r.target == "/latest/api/token") {
      const std::string* ttl = FindHeader(r.headers, "X-aws-ec2-metadata-token-ttl-seconds");
      if (ttl == nullptr) return {400, {}, "missing ttl"};
      ++token_puts;
      return {200, {}, "imds-token-1"};
    }
    const std::string* token = FindHeader(r.headers, "X-aws-ec2-metadata-token");
    if (token == nullptr || *token != "imds-token-1") return {401, {}, ""};
    if (r.target == "/latest/meta-data/iam/security-credentials/") return {200, {}, "dlq-archive-role"};
    if (r.target == "/latest/meta-data/iam/security-credentials/dlq-archive-role") return {200, {}, kCredsJson};
    return {404, {}, ""};
  });
  MapEnvironment env{{"AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:" + std::to_string(server.port())}};
  auto transport = Transport();
  ImdsProvider imds(env, *transport);
  auto creds = imds.GetCredentials();
  ASSERT_TRUE(creds.ok()) << creds.status().ToString();
  EXPECT_EQ(creds->access_key_id, "ASIALOOPBACKKEY00001");
  EXPECT_EQ(creds->secret_access_key, "loopbackSecret");
  EXPECT_EQ(creds->session_token, "loopbackToken");
  EXPECT_EQ(creds->source, "imds");
  ASSERT_TRUE(creds->expiration.has_value());
  EXPECT_EQ(token_puts.load(), 1);
}

TEST(CredentialProvidersLoopback, ImdsUnreachableMeansNotFoundQuickly) {
  int port;
  {
    LoopbackHttpServer closed([](const ServerRequest&) { return Reply{}; });
    port = closed.port();
  }  // nothing listens there any more
  MapEnvironment env{{"AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:" + std::to_string(port)}};
  auto transport = Transport();
  ImdsProvider imds(env, *transport);
  EXPECT_EQ(imds.GetCredentials().status().code(), ErrorCode::kNotFound);
}

TEST(CredentialProvidersLoopback, ContainerFullUriSendsTheTokenFileAuthorization) {
  std::string seen_auth;
  LoopbackHttpServer server([&](const ServerRequest& r) -> Reply {
    if (const std::string* a = FindHeader(r.headers, "Authorization")) seen_auth = *a;
    if (r.target != "/v2/credentials/abc") return {404, {}, ""};
    if (seen_auth != "Bearer eks-pod-identity-token") return {403, {}, ""};
    return {200, {}, kCredsJson};
  });
  std::string token_file = ::testing::TempDir() + "/container-token";
  std::ofstream(token_file) << "Bearer eks-pod-identity-token";
  MapEnvironment env{{"AWS_CONTAINER_CREDENTIALS_FULL_URI",
                      "http://127.0.0.1:" + std::to_string(server.port()) + "/v2/credentials/abc"},
                     {"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", token_file}};
  auto transport = Transport();
  ContainerProvider container(env, *transport);
  auto creds = container.GetCredentials();
  ASSERT_TRUE(creds.ok()) << creds.status().ToString();
  EXPECT_EQ(creds->access_key_id, "ASIALOOPBACKKEY00001");
  EXPECT_EQ(creds->source, "container");
  EXPECT_EQ(seen_auth, "Bearer eks-pod-identity-token");
  std::remove(token_file.c_str());
}

TEST(CredentialProvidersLoopback, ContainerErrorNeverEchoesTheCredentialsBody) {
  LoopbackHttpServer server([&](const ServerRequest&) -> Reply { return {500, {}, kCredsJson}; });
  MapEnvironment env{
      {"AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:" + std::to_string(server.port()) + "/creds"}};
  auto transport = Transport();
  ContainerProvider container(env, *transport);
  auto creds = container.GetCredentials();
  ASSERT_FALSE(creds.ok());
  EXPECT_EQ(creds.status().ToString().find("loopbackSecret"), std::string::npos) << creds.status().ToString();
}

}  // namespace
}  // namespace dlq
