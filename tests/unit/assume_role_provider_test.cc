#include "credentials/assume_role_provider.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>

#include "common/strings.h"
#include "credentials/caching_provider.h"
#include "testing/fake_clock.h"
#include "testing/fake_http.h"

namespace dlq {
namespace {

constexpr char kRole[] = "arn:aws:iam::123456789012:role/archiver";

ServiceEndpoint Sts() {
  return {"sts", "eu-west-1", "https://sts.eu-west-1.amazonaws.com", false};
}

std::string AssumeRoleXml(const std::string& key_id) {
  return "<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>" + key_id +
         "</AccessKeyId><SecretAccessKey>assumedSecretValue</SecretAccessKey><SessionToken>assumedSessionToken"
         "</SessionToken><Expiration>2023-11-14T23:13:20Z</Expiration></Credentials></AssumeRoleResult>"
         "</AssumeRoleResponse>";
}

std::string FormValue(std::string_view body, std::string_view name) {
  for (std::string_view pair : Split(body, '&')) {
    size_t eq = pair.find('=');
    if (pair.substr(0, eq) == name) return UriDecode(pair.substr(eq + 1));
  }
  return "";
}

std::unique_ptr<CredentialsProvider> SourceKeys() {
  Credentials c;
  c.access_key_id = "AKIDSOURCE";
  c.secret_access_key = "sourceSecretValue";
  c.source = "environment";
  return std::make_unique<StaticCredentialsProvider>(c);
}

// A source that fails, counting its calls.
class FailingSource final : public CredentialsProvider {
 public:
  explicit FailingSource(std::atomic<int>& calls) : calls_(calls) {}
  Result<Credentials> GetCredentials() override {
    ++calls_;
    return Unauthenticated("no AWS credentials found: checked environment");
  }
  std::string Name() const override { return "failing"; }

 private:
  std::atomic<int>& calls_;
};

AssumeRoleProvider::Options RoleOptions(std::string profile = "") {
  AssumeRoleProvider::Options o;
  o.request.role_arn = kRole;
  o.request.session_name = "dlq-archive";
  o.request.external_id = "ext-7";
  o.profile = std::move(profile);
  o.retry.max_attempts = 2;
  o.retry.base_delay = std::chrono::milliseconds(1);
  o.retry.max_delay = std::chrono::milliseconds(1);
  return o;
}

Result<HttpResponse> Denied(const HttpRequest&) {
  return MakeResponse(403,
                      "<ErrorResponse><Error><Code>AccessDenied</Code><Message>not allowed</Message></Error>"
                      "<RequestId>r-1</RequestId></ErrorResponse>");
}

TEST(AssumeRoleProviderTest, SignsWithTheSourceAndNamesTheRoleAsSource) {
  FakeClock clock;
  FakeHttpTransport http(
      [](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, AssumeRoleXml("ASIAROLE")); });
  AssumeRoleProvider provider(SourceKeys(), Sts(), http, clock, RoleOptions());
  auto c = provider.GetCredentials();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "ASIAROLE");
  EXPECT_EQ(c->session_token, "assumedSessionToken");
  ASSERT_TRUE(c->expiration.has_value());
  EXPECT_EQ(c->source, std::string("assume-role (") + kRole + ")");
  EXPECT_EQ(provider.Name(), "assume-role");

  ASSERT_EQ(http.calls(), 1);
  const HttpRequest req = http.requests()[0];
  EXPECT_EQ(req.url, "https://sts.eu-west-1.amazonaws.com/");
  EXPECT_EQ(FormValue(req.body, "Action"), "AssumeRole");
  EXPECT_EQ(FormValue(req.body, "RoleArn"), kRole);
  EXPECT_EQ(FormValue(req.body, "RoleSessionName"), "dlq-archive");
  EXPECT_EQ(FormValue(req.body, "ExternalId"), "ext-7");
  EXPECT_EQ(FormValue(req.body, "DurationSeconds"), "");
  ASSERT_NE(FindHeader(req.headers, "Authorization"), nullptr);
  EXPECT_NE(FindHeader(req.headers, "Authorization")->find("Credential=AKIDSOURCE/"), std::string::npos);
  EXPECT_NE(FindHeader(req.headers, "Authorization")->find("/eu-west-1/sts/aws4_request"), std::string::npos);
}

TEST(AssumeRoleProviderTest, AProfileIsNamedInTheSourceAndInErrors) {
  FakeClock clock;
  FakeHttpTransport http(
      [](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, AssumeRoleXml("ASIAPROF")); });
  AssumeRoleProvider provider(SourceKeys(), Sts(), http, clock, RoleOptions("dev"));
  auto c = provider.GetCredentials();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->source, std::string("assume-role (profile dev, role ") + kRole + ")");

  http.SetHandler(Denied);
  auto denied = provider.GetCredentials();
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.status().code(), ErrorCode::kPermissionDenied);
  EXPECT_EQ(denied.status().message().rfind(std::string("assume role ") + kRole + " (profile dev): ", 0), 0u)
      << denied.status().message();
}

TEST(AssumeRoleProviderTest, DenialNamesTheRoleAndIsNotRetriedOrLeaked) {
  FakeClock clock;
  FakeHttpTransport http(Denied);
  AssumeRoleProvider provider(SourceKeys(), Sts(), http, clock, RoleOptions());
  auto c = provider.GetCredentials();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kPermissionDenied);
  const std::string text = c.status().ToString();
  EXPECT_NE(text.find(std::string("assume role ") + kRole), std::string::npos) << text;
  EXPECT_NE(text.find("AccessDenied"), std::string::npos) << text;
  EXPECT_EQ(text.find("(profile"), std::string::npos) << text;
  EXPECT_EQ(text.find("sourceSecretValue"), std::string::npos) << text;
  EXPECT_EQ(http.calls(), 1);
}

TEST(AssumeRoleProviderTest, RetriesUnavailableStsUpToItsRetryOptions) {
  FakeClock clock;
  FakeHttpTransport http([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(503, ""); });
  AssumeRoleProvider provider(SourceKeys(), Sts(), http, clock, RoleOptions());
  auto c = provider.GetCredentials();
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(c.status().retryable()) << c.status().ToString();
  EXPECT_EQ(http.calls(), 2);  // RoleOptions: max_attempts = 2

  http.FailCall(3, MakeResponse(503, ""));
  http.SetHandler(
      [](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, AssumeRoleXml("ASIALATER")); });
  auto later = provider.GetCredentials();
  ASSERT_TRUE(later.ok()) << later.status().ToString();
  EXPECT_EQ(later->access_key_id, "ASIALATER");
  EXPECT_EQ(http.calls(), 4);
}

TEST(AssumeRoleProviderTest, SourceFailureStopsBeforeAnyStsCall) {
  FakeClock clock;
  FakeHttpTransport http(
      [](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, AssumeRoleXml("ASIANEVER")); });
  std::atomic<int> source_calls{0};
  AssumeRoleProvider provider(std::make_unique<FailingSource>(source_calls), Sts(), http, clock, RoleOptions());
  auto c = provider.GetCredentials();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kUnauthenticated);
  EXPECT_NE(c.status().message().find(std::string("assume role ") + kRole), std::string::npos);
  EXPECT_NE(c.status().message().find("no AWS credentials found"), std::string::npos);
  EXPECT_GE(source_calls.load(), 1);
  EXPECT_EQ(http.calls(), 0);
}

TEST(AssumeRoleProviderTest, CachingProviderReusesTheRoleCredentialsUntilNearExpiry) {
  FakeClock clock(SystemTime(std::chrono::seconds(1700000000)));  // 2023-11-14T22:13:20Z: 1 h before expiry
  FakeHttpTransport http(
      [](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, AssumeRoleXml("ASIACACHED")); });
  CachingProvider cached(std::make_unique<AssumeRoleProvider>(SourceKeys(), Sts(), http, clock, RoleOptions()), clock);
  ASSERT_TRUE(cached.GetCredentials().ok());
  ASSERT_TRUE(cached.GetCredentials().ok());
  EXPECT_EQ(http.calls(), 1);
  clock.Advance(std::chrono::minutes(56));  // inside the 5-minute refresh window
  ASSERT_TRUE(cached.GetCredentials().ok());
  EXPECT_EQ(http.calls(), 2);
}

}  // namespace
}  // namespace dlq
