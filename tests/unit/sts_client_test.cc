#include "sts/sts_client.h"

#include <gtest/gtest.h>

#include <map>

#include "common/strings.h"
#include "common/time_util.h"
#include "testing/fake_clock.h"
#include "testing/fake_http.h"

namespace dlq {
namespace {

std::map<std::string, std::string> ParseForm(std::string_view body) {
  std::map<std::string, std::string> out;
  for (std::string_view pair : Split(body, '&')) {
    size_t eq = pair.find('=');
    out[UriDecode(pair.substr(0, eq))] = eq == std::string_view::npos ? "" : UriDecode(pair.substr(eq + 1));
  }
  return out;
}

ServiceEndpoint StsEndpoint() {
  return {"sts", "us-east-1", "https://sts.us-east-1.amazonaws.com", false};
}

Credentials CallerCreds() {
  Credentials c;
  c.access_key_id = "AKIDCALLEREXAMPLE";
  c.secret_access_key = "callerSecretValue";
  return c;
}

RetryOptions FastRetry() {
  RetryOptions r;
  r.max_attempts = 3;
  r.base_delay = std::chrono::milliseconds(1);
  r.max_delay = std::chrono::milliseconds(2);
  return r;
}

constexpr char kAssumeRoleXml[] = R"(<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleResult>
    <AssumedRoleUser>
      <Arn>arn:aws:sts::123456789012:assumed-role/demo/sess</Arn>
      <AssumedRoleId>AROA3XFRBF535PLBIFPI4:sess</AssumedRoleId>
    </AssumedRoleUser>
    <Credentials>
      <AccessKeyId>ASIAASSUMEDEXAMPLE</AccessKeyId>
      <SecretAccessKey>assumedSecretValue</SecretAccessKey>
      <SessionToken>assumedSessionToken</SessionToken>
      <Expiration>2023-11-14T23:13:20Z</Expiration>
    </Credentials>
  </AssumeRoleResult>
  <ResponseMetadata><RequestId>c6104cbe-af31-11e0-8154-cbc7ccf896c7</RequestId></ResponseMetadata>
</AssumeRoleResponse>)";

constexpr char kWebIdentityXml[] =
    R"(<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <Credentials>
      <AccessKeyId>ASIAWEBIDEXAMPLE</AccessKeyId>
      <SecretAccessKey>webSecretValue</SecretAccessKey>
      <SessionToken>webSessionToken</SessionToken>
      <Expiration>2023-11-15T00:13:20Z</Expiration>
    </Credentials>
  </AssumeRoleWithWebIdentityResult>
</AssumeRoleWithWebIdentityResponse>)";

TEST(StsClient, GetCallerIdentitySignsAFormPostAndParsesIdentity) {
  FakeHttpTransport http([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(200, R"(<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <GetCallerIdentityResult>
    <Arn>arn:aws:iam::123456789012:user/alice</Arn>
    <UserId>AIDAEXAMPLE</UserId>
    <Account>123456789012</Account>
  </GetCallerIdentityResult>
</GetCallerIdentityResponse>)");
  });
  StaticCredentialsProvider creds(CallerCreds());
  FakeClock clock;
  StsClient sts(StsEndpoint(), http, creds, clock, FastRetry());
  auto id = sts.GetCallerIdentity();
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(id->account, "123456789012");
  EXPECT_EQ(id->arn, "arn:aws:iam::123456789012:user/alice");
  EXPECT_EQ(id->user_id, "AIDAEXAMPLE");
  ASSERT_EQ(http.calls(), 1);
  HttpRequest req = http.requests()[0];
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.url, "https://sts.us-east-1.amazonaws.com/");
  EXPECT_EQ(req.body, "Action=GetCallerIdentity&Version=2011-06-15");
  ASSERT_NE(FindHeader(req.headers, "Content-Type"), nullptr);
  EXPECT_EQ(*FindHeader(req.headers, "Content-Type"), "application/x-www-form-urlencoded; charset=utf-8");
  ASSERT_NE(FindHeader(req.headers, "Authorization"), nullptr);
  EXPECT_NE(FindHeader(req.headers, "Authorization")->find("Credential=AKIDCALLEREXAMPLE/"), std::string::npos);
  EXPECT_NE(FindHeader(req.headers, "Authorization")->find("/us-east-1/sts/aws4_request"), std::string::npos);
}

TEST(StsClient, AssumeRoleSendsAllParametersAndParsesCredentials) {
  FakeHttpTransport http([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, kAssumeRoleXml); });
  StaticCredentialsProvider creds(CallerCreds());
  FakeClock clock;
  StsClient sts(StsEndpoint(), http, creds, clock, FastRetry());
  AssumeRoleRequest req;
  req.role_arn = "arn:aws:iam::123456789012:role/demo";
  req.session_name = "sess";
  req.external_id = "ext id/1";
  req.duration = std::chrono::seconds(1800);
  auto c = sts.AssumeRole(req);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "ASIAASSUMEDEXAMPLE");
  EXPECT_EQ(c->secret_access_key, "assumedSecretValue");
  EXPECT_EQ(c->session_token, "assumedSessionToken");
  ASSERT_TRUE(c->expiration.has_value());
  EXPECT_EQ(ToUnixSeconds(*c->expiration), 1700000000 + 3600);

  auto form = ParseForm(http.requests()[0].body);
  EXPECT_EQ(form["Action"], "AssumeRole");
  EXPECT_EQ(form["Version"], "2011-06-15");
  EXPECT_EQ(form["RoleArn"], "arn:aws:iam::123456789012:role/demo");
  EXPECT_EQ(form["RoleSessionName"], "sess");
  EXPECT_EQ(form["ExternalId"], "ext id/1");
  EXPECT_EQ(form["DurationSeconds"], "1800");
  EXPECT_NE(http.requests()[0].body.find("ExternalId=ext%20id%2F1"), std::string::npos);
}

TEST(StsClient, AssumeRoleErrorCarriesStsCodeAndRequestId) {
  FakeHttpTransport http([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(403, R"(<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <Error><Type>Sender</Type><Code>AccessDenied</Code><Message>not authorized to perform sts:AssumeRole</Message></Error>
  <RequestId>req-123</RequestId>
</ErrorResponse>)",
                        {{"x-amzn-RequestId", "req-123"}});
  });
  StaticCredentialsProvider creds(CallerCreds());
  FakeClock clock;
  StsClient sts(StsEndpoint(), http, creds, clock, FastRetry());
  auto c = sts.AssumeRole({"arn:aws:iam::123456789012:role/demo", "sess", std::nullopt, std::nullopt});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kPermissionDenied);
  ASSERT_TRUE(c.status().aws().has_value());
  EXPECT_EQ(c.status().aws()->error_code, "AccessDenied");
  EXPECT_EQ(c.status().aws()->request_id, "req-123");
  EXPECT_EQ(c.status().ToString().find("callerSecretValue"), std::string::npos);
}

TEST(StsClient, MalformedAssumeRoleResponseIsAnInternalError) {
  FakeHttpTransport http([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(200, "<AssumeRoleResponse><AssumeRoleResult/></AssumeRoleResponse>");
  });
  StaticCredentialsProvider creds(CallerCreds());
  FakeClock clock;
  StsClient sts(StsEndpoint(), http, creds, clock, FastRetry());
  auto c = sts.AssumeRole({"arn:aws:iam::1:role/r", "s", std::nullopt, std::nullopt});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kInternal);
  EXPECT_FALSE(ParseStsCredentials("not xml <", "AssumeRole").ok());
}

TEST(StsClient, AssumeRoleWithWebIdentityIsUnsigned) {
  FakeHttpTransport http([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, kWebIdentityXml); });
  StaticCredentialsProvider creds(CallerCreds());
  FakeClock clock;
  StsClient sts(StsEndpoint(), http, creds, clock, FastRetry());
  auto c = sts.AssumeRoleWithWebIdentity({"arn:aws:iam::123456789012:role/web", "pod", "eyJ.token+/=", std::nullopt});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "ASIAWEBIDEXAMPLE");
  EXPECT_EQ(c->session_token, "webSessionToken");
  ASSERT_EQ(http.calls(), 1);
  HttpRequest req = http.requests()[0];
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.url, "https://sts.us-east-1.amazonaws.com/");
  EXPECT_EQ(FindHeader(req.headers, "Authorization"), nullptr);
  EXPECT_EQ(FindHeader(req.headers, "X-Amz-Date"), nullptr);
  auto form = ParseForm(req.body);
  EXPECT_EQ(form["Action"], "AssumeRoleWithWebIdentity");
  EXPECT_EQ(form["WebIdentityToken"], "eyJ.token+/=");
  EXPECT_EQ(form["RoleSessionName"], "pod");
}

TEST(StsClient, WebIdentityRetriesServerErrorsAndKeepsTokenOutOfErrors) {
  FakeHttpTransport http([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, kWebIdentityXml); });
  http.FailCall(1, MakeResponse(503, "<ErrorResponse><Error><Code>ServiceUnavailable</Code></Error></ErrorResponse>"));
  FakeClock clock;
  auto ok = AssumeRoleWithWebIdentity(StsEndpoint(), http, clock, {"arn:aws:iam::1:role/r", "s", "tok", std::nullopt},
                                      FastRetry());
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(http.calls(), 2);

  FakeHttpTransport denied([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(400, R"(<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>
      <Message>Incorrect token audience</Message></Error><RequestId>r-9</RequestId></ErrorResponse>)");
  });
  auto bad = AssumeRoleWithWebIdentity(StsEndpoint(), denied, clock,
                                       {"arn:aws:iam::1:role/r", "s", "secret-oidc-token", std::nullopt}, FastRetry());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(denied.calls(), 1);
  ASSERT_TRUE(bad.status().aws().has_value());
  EXPECT_EQ(bad.status().aws()->error_code, "InvalidIdentityToken");
  EXPECT_EQ(bad.status().ToString().find("secret-oidc-token"), std::string::npos);
}

}  // namespace
}  // namespace dlq
