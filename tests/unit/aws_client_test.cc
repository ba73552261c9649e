#include "aws/aws_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ctime>
#include <string>
#include <vector>

#include "common/time_util.h"
#include "testing/fake_clock.h"
#include "testing/fake_http.h"

namespace dlq {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kSecret[] = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
constexpr char kToken[] = "FwoGZXIvYXdzEXAMPLESESSIONTOKEN0123456789";

std::string HttpDate(SystemTime t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

std::string HeaderOf(const HttpRequest& r, std::string_view name) {
  const std::string* v = FindHeader(r.headers, name);
  return v ? *v : std::string();
}

// Hands out "token-1", then "token-2" after Invalidate, and so on.
class RotatingCredentials final : public CredentialsProvider {
 public:
  Result<Credentials> GetCredentials() override {
    std::lock_guard lock(mu_);
    if (fail_) return Unavailable("IMDS unreachable");
    Credentials c;
    c.access_key_id = "AKIDEXAMPLE";
    c.secret_access_key = kSecret;
    c.session_token = generation_ == 1 ? std::string(kToken) : "token-" + std::to_string(generation_);
    return c;
  }
  void Invalidate() override {
    std::lock_guard lock(mu_);
    ++generation_;
    ++invalidations_;
  }
  std::string Name() const override { return "rotating"; }
  int invalidations() const {
    std::lock_guard lock(mu_);
    return invalidations_;
  }
  void set_fail(bool fail) {
    std::lock_guard lock(mu_);
    fail_ = fail;
  }

 private:
  mutable std::mutex mu_;
  int generation_ = 1;
  int invalidations_ = 0;
  bool fail_ = false;
};

ServiceEndpoint SqsEndpoint() {
  return {"sqs", "us-east-1", "https://sqs.us-east-1.amazonaws.com"};
}

AwsRequest ReceiveRequest() {
  AwsRequest r;
  r.operation = "ReceiveMessage";
  r.resource = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq";
  r.headers = {{"Content-Type", "application/x-amz-json-1.0"}, {"X-Amz-Target", "AmazonSQS.ReceiveMessage"}};
  r.body = R"({"QueueUrl":"https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq"})";
  return r;
}

HttpResponse JsonError(int status, std::string type, std::string message) {
  return MakeResponse(status, R"({"__type":")" + type + R"(","message":")" + message + R"("})",
                      {{"x-amzn-RequestId", "req-json-1"}});
}

class AwsClientTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  RotatingCredentials creds_;
  FakeHttpTransport transport_{[](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, "{}"); }};
};

TEST_F(AwsClientTest, RetriesThrottlingWithBackoffThenSucceeds) {
  RetryOptions retry{
      .max_attempts = 5, .base_delay = std::chrono::milliseconds(100), .max_delay = std::chrono::milliseconds(1000)};
  AwsClient client(SqsEndpoint(), transport_, creds_, clock_, retry);
  transport_.FailCall(1, JsonError(400, "com.amazon.coral.availability#ThrottlingException", "Rate exceeded"));
  transport_.FailCall(2, MakeResponse(503, "<Error><Code>SlowDown</Code><Message>Reduce your rate</Message></Error>"));
  const SystemTime start = clock_.Now();

  auto result = client.Call(ReceiveRequest());

  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->status, 200);
  EXPECT_EQ(transport_.calls(), 3);
  auto slept = clock_.Now() - start;
  EXPECT_GT(slept, Duration(0));                           // P(two zero-length jitters) ~ 1e-4
  EXPECT_LE(slept, std::chrono::milliseconds(100 + 200));  // caps for attempts 0 and 1
}

TEST_F(AwsClientTest, ThrottleIsReturnedAtOnceWhenTheCallerPacesItselfButA5xxIsStillRetried) {
  AwsClient client(SqsEndpoint(), transport_, creds_, clock_, RetryOptions{.max_attempts = 5});
  transport_.FailCall(1, JsonError(429, "TooManyRequestsException", "Rate Exceeded."));
  AwsRequest paced = ReceiveRequest();
  paced.retry_throttled = false;

  auto throttled = client.Call(paced);

  ASSERT_FALSE(throttled.ok());
  EXPECT_EQ(throttled.status().code(), ErrorCode::kThrottled);
  EXPECT_EQ(throttled.status().aws()->error_code, "TooManyRequestsException");
  EXPECT_EQ(transport_.calls(), 1);

  transport_.FailCall(2, MakeResponse(503, "<Error><Code>ServiceUnavailable</Code></Error>"));
  auto after_5xx = client.Call(paced);
  ASSERT_TRUE(after_5xx.ok()) << after_5xx.status().ToString();
  EXPECT_EQ(transport_.calls(), 3);
}

TEST_F(AwsClientTest, Retries5xxUpToMaxAttemptsThenReturnsUnavailable) {
  RetryOptions retry{
      .max_attempts = 4, .base_delay = std::chrono::milliseconds(50), .max_delay = std::chrono::milliseconds(10000)};
  AwsClient client(SqsEndpoint(), transport_, creds_, clock_, retry);
  transport_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(503, "<Error><Code>ServiceUnavailable</Code><Message>Please retry</Message></Error>",
                        {{"x-amz-request-id", "RID503"}});
  });
  const SystemTime start = clock_.Now();

  auto result = client.Call(ReceiveRequest());

  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(transport_.calls(), 4);
  ASSERT_TRUE(result.status().aws().has_value());
  EXPECT_EQ(result.status().aws()->error_code, "ServiceUnavailable");
  EXPECT_EQ(result.status().aws()->http_status, 503);
  EXPECT_EQ(result.status().aws()->request_id, "RID503");
  EXPECT_THAT(result.status().message(), HasSubstr("after 4 attempts"));
  EXPECT_LE(clock_.Now() - start, std::chrono::milliseconds(50 + 100 + 200));
}

TEST_F(AwsClientTest, AccessDeniedIsNotRetried) {
  AwsClient client(SqsEndpoint(), transport_, creds_, clock_);
  transport_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(403, "<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>");
  });
  const SystemTime start = clock_.Now();

  auto result = client.Call(ReceiveRequest());

  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kPermissionDenied);
  EXPECT_EQ(transport_.calls(), 1);
  EXPECT_EQ(clock_.Now(), start);
}

// What moto serves when a request names a region it does not know (a typo in
// a group's `region:` with AWS_ENDPOINT_URL set).
constexpr char kMotoHtml500[] =
    "<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 3.2 Final//EN\">\n<html>\n<head>\n"
    "  <title>500 Internal Server Error</title>\n</head>\n<body><h1>Internal Server Error</h1>\n"
    "<p>The server encountered an internal error and was unable to complete your request.</p></body>\n</html>\n";

TEST_F(AwsClientTest, HtmlErrorPageIsOneLineAndA500IsNotRetried) {
  AwsClient client(SqsEndpoint(), transport_, creds_, clock_);
  transport_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(500, kMotoHtml500, {{"Content-Type", "text/html; charset=utf-8"}});
  });

  auto result = client.Call(ReceiveRequest());

  ASSERT_FALSE(result.ok());
  EXPECT_EQ(transport_.calls(), 1);
  EXPECT_FALSE(result.status().retryable());
  const std::string& m = result.status().message();
  EXPECT_THAT(m, HasSubstr("the endpoint answered HTTP 500 with an HTML page (\"500 Internal Server Error\"); is "
                           "AWS_ENDPOINT_URL right?"));
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_EQ(m.find("<html"), std::string::npos) << m;
  EXPECT_EQ(m.find("attempts"), std::string::npos) << m;
  ASSERT_TRUE(result.status().aws().has_value());
  EXPECT_EQ(result.status().aws()->http_status, 500);
}

TEST_F(AwsClientTest, HtmlGatewayPageIsSummarisedAndStillRetried) {
  RetryOptions retry{
      .max_attempts = 3, .base_delay = std::chrono::milliseconds(10), .max_delay = std::chrono::milliseconds(100)};
  AwsClient client(SqsEndpoint(), transport_, creds_, clock_, retry);
  transport_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(502, "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>");
  });

  auto result = client.Call(ReceiveRequest());

  ASSERT_FALSE(result.ok());
  EXPECT_EQ(transport_.calls(), 3);
  EXPECT_EQ(result.status().code(), ErrorCode::kUnavailable);
  EXPECT_THAT(result.status().message(), HasSubstr("HTTP 502 with an HTML page (\"502 Bad Gateway\")"));
}

TEST_F(AwsClientTest, TransportFailureIsRetried) {
  AwsClient client(SqsEndpoint(), transport_, creds_, clock_);
  transport_.FailCall(1, Unavailable("POST https://sqs.us-east-1.amazonaws.com/: Connection refused"));

  auto result = client.Call(ReceiveRequest());

  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(transport_.calls(), 2);
}

TEST_F(AwsClientTest, CorrectsClockSkewFromDateHeaderAndResigns) {
  AwsClient client(SqsEndpoint(), transport_, creds_, clock_);
  const SystemTime server_time = clock_.Now() + std::chrono::minutes(15);
  transport_.FailCall(1, MakeResponse(403,
                                      "<Error><Code>RequestTimeTooSkewed</Code><Message>The difference between the "
                                      "request time and the current time is too large.</Message></Error>",
                                      {{"Date", HttpDate(server_time)}}));

  auto result = client.Call(ReceiveRequest());

  ASSERT_TRUE(result.ok()) << result.status().ToString();
  auto requests = transport_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(HeaderOf(requests[0], "X-Amz-Date"), FormatAmzDate(clock_.Now()));
  EXPECT_EQ(HeaderOf(requests[1], "X-Amz-Date"), FormatAmzDate(server_time));
  EXPECT_NE(HeaderOf(requests[0], "Authorization"), HeaderOf(requests[1], "Authorization"));
  EXPECT_EQ(client.clock_skew(), std::chrono::minutes(15));

  // Later calls keep the correction.
  ASSERT_TRUE(client.Call(ReceiveRequest()).ok());
  EXPECT_EQ(HeaderOf(transport_.requests()[2], "X-Amz-Date"), FormatAmzDate(server_time));
}

TEST_F(AwsClientTest, CorrectsSkewOnJsonSignatureExpired) {
  AwsClient client(SqsEndpoint(), transport_, creds_, clock_);
  const SystemTime server_time = clock_.Now() - std::chrono::minutes(20);
  HttpResponse expired = JsonError(400, "com.amazon.coral.service#InvalidSignatureException",
                                   "Signature expired: 20231114T221320Z is now earlier than 20231114T215820Z");
  expired.headers.emplace_back("Date", HttpDate(server_time));
  transport_.FailCall(1, expired);

  ASSERT_TRUE(client.Call(ReceiveRequest()).ok());
  EXPECT_EQ(HeaderOf(transport_.requests()[1], "X-Amz-Date"), FormatAmzDate(server_time));
}

TEST_F(AwsClientTest, SkewErrorWithoutServerTimeIsReturned) {
  AwsClient client(SqsEndpoint(), transport_, creds_, clock_);
  transport_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(403, "<Error><Code>RequestTimeTooSkewed</Code><Message>too large</Message></Error>");
  });

  auto result = client.Call(ReceiveRequest());

  EXPECT_EQ(result.status().code(), ErrorCode::kUnauthenticated);
  EXPECT_EQ(transport_.calls(), 1);
}

TEST_F(AwsClientTest, ExpiredTokenInvalidatesCredentialsAndRetriesWithNewOnes) {
  AwsClient client(SqsEndpoint(), transport_, creds_, clock_);
  transport_.FailCall(1, MakeResponse(400,
                                      "<ErrorResponse><Error><Type>Sender</Type><Code>ExpiredToken</Code>"
                                      "<Message>The security token included in the request is expired</Message>"
                                      "</Error><RequestId>r1</RequestId></ErrorResponse>"));

  auto result = client.Call(ReceiveRequest());

  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(creds_.invalidations(), 1);
  auto requests = transport_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(HeaderOf(requests[0], "X-Amz-Security-Token"), kToken);
  EXPECT_EQ(HeaderOf(requests[1], "X-Amz-Security-Token"), "token-2");
}

TEST_F(AwsClientTest, ExpiredTokenRetriesOnlyOnce) {
  AwsClient client(SqsEndpoint(), transport_, creds_, clock_);
  transport_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return JsonError(400, "com.amazon.coral.service#ExpiredTokenException", "The security token is expired");
  });

  auto result = client.Call(ReceiveRequest());

  EXPECT_EQ(result.status().code(), ErrorCode::kUnauthenticated);
  EXPECT_EQ(transport_.calls(), 2);
  EXPECT_EQ(creds_.invalidations(), 1);
}

TEST_F(AwsClientTest, CredentialsErrorIsReturnedWithContextAndNothingIsSent) {
  AwsClient client(SqsEndpoint(), transport_, creds_, clock_);
  creds_.set_fail(true);

  auto result = client.Call(ReceiveRequest());

  EXPECT_EQ(result.status().code(), ErrorCode::kUnavailable);
  EXPECT_THAT(result.status().message(), HasSubstr("ReceiveMessage"));
  EXPECT_THAT(result.status().message(), HasSubstr("get credentials: IMDS unreachable"));
  EXPECT_EQ(transport_.calls(), 0);
}

TEST_F(AwsClientTest, SecretsNeverAppearInErrors) {
  AwsClient client(SqsEndpoint(), transport_, creds_, clock_, RetryOptions{.max_attempts = 2});
  // A broken proxy that echoes the whole signed request back in the error.
  transport_.SetHandler([](const HttpRequest& r) -> Result<HttpResponse> {
    std::string echo;
    for (const auto& [k, v] : r.headers) echo += k + "=" + v + " ";
    return MakeResponse(400, R"({"__type":"ValidationException","message":")" + echo + " secret " + kSecret + R"("})",
                        {{"x-amzn-RequestId", std::string("id-") + kToken}});
  });
  auto from_response = client.Call(ReceiveRequest());
  transport_.SetHandler([](const HttpRequest& r) -> Result<HttpResponse> {
    return Unavailable("proxy said: " + HeaderOf(r, "X-Amz-Security-Token") + " " + HeaderOf(r, "Authorization"));
  });
  auto from_transport = client.Call(ReceiveRequest());

  for (const Status& s : {from_response.status(), from_transport.status()}) {
    ASSERT_FALSE(s.ok());
    std::string text = s.ToString();
    EXPECT_THAT(text, Not(HasSubstr(kSecret)));
    EXPECT_THAT(text, Not(HasSubstr(kToken)));
    EXPECT_THAT(text, Not(HasSubstr("Signature=")));
    EXPECT_THAT(text, HasSubstr("<redacted>"));
  }
}

TEST_F(AwsClientTest, ObserverGetsOneRecordPerCall) {
  AwsClient client(SqsEndpoint(), transport_, creds_, clock_);
  std::vector<CallRecord> records;
  client.SetObserver([&](const CallRecord& r) { records.push_back(r); });
  transport_.FailCall(1, MakeResponse(500, ""));
  transport_.FailCall(3, JsonError(400, "com.amazonaws.sqs#QueueDoesNotExist", "The specified queue does not exist."));

  ASSERT_TRUE(client.Call(ReceiveRequest()).ok());
  ASSERT_FALSE(client.Call(ReceiveRequest()).ok());

  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].service, "sqs");
  EXPECT_EQ(records[0].operation, "ReceiveMessage");
  EXPECT_EQ(records[0].attempts, 2);
  EXPECT_EQ(records[0].http_status, 200);
  EXPECT_EQ(records[0].code, ErrorCode::kOk);
  EXPECT_EQ(records[1].attempts, 1);
  EXPECT_EQ(records[1].http_status, 400);
  EXPECT_EQ(records[1].code, ErrorCode::kNotFound);
  EXPECT_EQ(records[1].aws_error_code, "QueueDoesNotExist");
}

TEST_F(AwsClientTest, JoinsEndpointPathAndQuery) {
  AwsClient client({"s3", "us-east-1", "http://localhost:4566/base/", true}, transport_, creds_, clock_);
  AwsRequest r;
  r.method = "POST";
  r.path = "/bucket/key%20one";
  r.query = "uploads=";
  ASSERT_TRUE(client.Call(r).ok());
  EXPECT_EQ(transport_.requests()[0].url, "http://localhost:4566/base/bucket/key%20one?uploads=");
  EXPECT_EQ(HeaderOf(transport_.requests()[0], "Host"), "localhost:4566");
}

TEST_F(AwsClientTest, HostOverrideKeepsSchemeAndPort) {
  AwsClient client({"s3", "eu-west-1", "https://s3.eu-west-1.amazonaws.com:8443", true}, transport_, creds_, clock_);
  AwsRequest r;
  r.method = "GET";
  r.path = "/archive/key.json.gz";
  r.host_override = "my-bucket.s3.eu-west-1.amazonaws.com";
  ASSERT_TRUE(client.Call(r).ok());
  EXPECT_EQ(transport_.requests()[0].url, "https://my-bucket.s3.eu-west-1.amazonaws.com:8443/archive/key.json.gz");
  EXPECT_EQ(HeaderOf(transport_.requests()[0], "Host"), "my-bucket.s3.eu-west-1.amazonaws.com:8443");
  EXPECT_FALSE(HeaderOf(transport_.requests()[0], "x-amz-content-sha256").empty());
}

// ---- ErrorFromResponse ----

TEST(ErrorFromResponseTest, ParsesJsonTypeAndStripsNamespace) {
  Status s =
      ErrorFromResponse(JsonError(400, "com.amazonaws.sqs#QueueDoesNotExist", "The specified queue does not exist."),
                        "ReceiveMessage", "https://sqs.us-east-1.amazonaws.com/123/q");
  EXPECT_EQ(s.code(), ErrorCode::kNotFound);
  EXPECT_EQ(s.message(),
            "ReceiveMessage https://sqs.us-east-1.amazonaws.com/123/q: QueueDoesNotExist: The specified queue does not "
            "exist.");
  ASSERT_TRUE(s.aws().has_value());
  EXPECT_EQ(s.aws()->error_code, "QueueDoesNotExist");
  EXPECT_EQ(s.aws()->http_status, 400);
  EXPECT_EQ(s.aws()->request_id, "req-json-1");
}

TEST(ErrorFromResponseTest, ParsesJsonCodeField) {
  Status s = ErrorFromResponse(MakeResponse(400, R"({"code":"AccessDeniedException","Message":"nope"})"), "Op", "");
  EXPECT_EQ(s.code(), ErrorCode::kPermissionDenied);
  EXPECT_EQ(s.aws()->error_code, "AccessDeniedException");
  EXPECT_EQ(s.message(), "Op: AccessDeniedException: nope");
}

TEST(ErrorFromResponseTest, UsesQueryErrorHeaderWhenBodyHasNoCode) {
  Status s = ErrorFromResponse(
      MakeResponse(400, "{}", {{"x-amzn-query-error", "AWS.SimpleQueueService.NonExistentQueue;Sender"}}),
      "GetQueueUrl", "orders-dlq");
  EXPECT_EQ(s.code(), ErrorCode::kNotFound);
  EXPECT_EQ(s.aws()->error_code, "AWS.SimpleQueueService.NonExistentQueue");
}

TEST(ErrorFromResponseTest, ParsesS3XmlError) {
  Status s =
      ErrorFromResponse(MakeResponse(404,
                                     "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchBucket</Code>"
                                     "<Message>The specified bucket does not exist</Message>"
                                     "<BucketName>archive</BucketName><RequestId>4442587FB7D0A2F9</RequestId>"
                                     "</Error>"),
                        "PutObject", "s3://archive/k");
  EXPECT_EQ(s.code(), ErrorCode::kNotFound);
  EXPECT_EQ(s.message(), "PutObject s3://archive/k: NoSuchBucket: The specified bucket does not exist");
  EXPECT_EQ(s.aws()->request_id, "4442587FB7D0A2F9");
}

TEST(ErrorFromResponseTest, ParsesQueryProtocolXmlError) {
  Status s = ErrorFromResponse(
      MakeResponse(400,
                   "<ErrorResponse xmlns=\"http://monitoring.amazonaws.com/doc/2010-08-01/\"><Error><Type>Sender</Type>"
                   "<Code>InvalidParameterValue</Code><Message>The parameter MetricName is invalid.</Message></Error>"
                   "<RequestId>b7f1c2d3</RequestId></ErrorResponse>"),
      "GetMetricData", "");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.aws()->error_code, "InvalidParameterValue");
  EXPECT_EQ(s.aws()->request_id, "b7f1c2d3");
}

TEST(ErrorFromResponseTest, ParsesErrorsWrappedErrorResponseAsSignatureRejection) {
  // moto with SigV4 enforcement answers JSON and query requests alike with this shape.
  Status s = ErrorFromResponse(
      MakeResponse(403,
                   "<?xml version=\"1.0\" encoding=\"utf-8\"?><ErrorResponse><Errors><Error><Code>SignatureDoesNotMatch"
                   "</Code><Message>The request signature we calculated does not match the signature you provided."
                   "</Message></Error></Errors><RequestId>r-1</RequestId></ErrorResponse>"),
      "ListQueues", "");
  EXPECT_EQ(s.code(), ErrorCode::kUnauthenticated) << s.ToString();
  EXPECT_EQ(s.aws()->error_code, "SignatureDoesNotMatch");
  EXPECT_EQ(s.aws()->request_id, "r-1");
}

TEST(ErrorFromResponseTest, EmptyBodiesMapByStatus) {
  struct Case {
    int status;
    ErrorCode code;
    std::string aws_code;
  };
  for (const Case& c :
       {Case{404, ErrorCode::kNotFound, "NotFound"}, Case{403, ErrorCode::kPermissionDenied, "Forbidden"},
        Case{412, ErrorCode::kAlreadyExists, "PreconditionFailed"},
        Case{503, ErrorCode::kUnavailable, "ServiceUnavailable"}, Case{500, ErrorCode::kUnavailable, "InternalError"},
        Case{429, ErrorCode::kThrottled, "TooManyRequests"}}) {
    Status s =
        ErrorFromResponse(MakeResponse(c.status, "", {{"x-amz-request-id", "HEADRID"}}), "HeadObject", "s3://b/k");
    EXPECT_EQ(s.code(), c.code) << c.status;
    EXPECT_EQ(s.aws()->error_code, c.aws_code) << c.status;
    EXPECT_EQ(s.aws()->request_id, "HEADRID");
    EXPECT_EQ(s.message(), "HeadObject s3://b/k: " + c.aws_code);
  }
}

TEST(ErrorFromResponseTest, AProxyAsking407ForCredentialsSaysWhatToSetAndIsNotRetried) {
  Status s = ErrorFromResponse(MakeResponse(407, "", {{"Proxy-Authenticate", "Basic realm=\"corp\""}}), "GetQueueUrl",
                               "orders-dlq");
  EXPECT_EQ(s.code(), ErrorCode::kUnauthenticated);
  EXPECT_FALSE(s.retryable());
  EXPECT_EQ(s.aws()->http_status, 407);
  EXPECT_EQ(s.aws()->error_code, "ProxyAuthenticationRequired");
  EXPECT_EQ(s.message().rfind("GetQueueUrl orders-dlq: the proxy answered HTTP 407 (Proxy Authentication Required)", 0),
            0u)
      << s.message();
  EXPECT_NE(s.message().find("http://USER:PASSWORD@HOST:PORT"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("NO_PROXY"), std::string::npos) << s.message();
}

TEST(ErrorFromResponseTest, AStatusWithNoKnownCodeIsNamedNotCalledError) {
  Status s = ErrorFromResponse(MakeResponse(418, ""), "GetQueueUrl", "orders-dlq");
  EXPECT_EQ(s.message(), "GetQueueUrl orders-dlq: HTTP 418");
  EXPECT_EQ(s.code(), ErrorCode::kFailedPrecondition);
}

TEST(ProxyRefusedTest, ATunnelRefusedForAnotherReasonNamesTheStatusAndTheWayOut) {
  Status s = ProxyRefused("POST https://sqs.us-east-1.amazonaws.com/", 403);
  EXPECT_EQ(s.code(), ErrorCode::kFailedPrecondition);
  EXPECT_FALSE(s.retryable());
  EXPECT_EQ(s.message(),
            "POST https://sqs.us-east-1.amazonaws.com/: the proxy refused the connection with HTTP 403: check that the "
            "proxy allows this host and port, or exempt the endpoint's host in NO_PROXY");
  EXPECT_EQ(ProxyRefused("t", 407).code(), ErrorCode::kUnauthenticated);
}

TEST(ErrorFromResponseTest, MapsCodesToRetryableAndFatalClasses) {
  struct Case {
    const char* aws_code;
    int status;
    ErrorCode code;
  };
  const Case cases[] = {
      {"ThrottlingException", 400, ErrorCode::kThrottled},
      {"Throttling", 400, ErrorCode::kThrottled},
      {"RequestThrottled", 403, ErrorCode::kThrottled},
      {"SlowDown", 503, ErrorCode::kThrottled},
      {"RequestLimitExceeded", 400, ErrorCode::kThrottled},
      {"TooManyRequestsException", 400, ErrorCode::kThrottled},
      {"ProvisionedThroughputExceededException", 400, ErrorCode::kThrottled},
      {"RequestThrottledException", 400, ErrorCode::kThrottled},
      {"KMS.ThrottlingException", 400, ErrorCode::kThrottled},
      {"AccessDenied", 403, ErrorCode::kPermissionDenied},
      {"AuthorizationError", 403, ErrorCode::kPermissionDenied},
      {"KMS.AccessDeniedException", 400, ErrorCode::kPermissionDenied},
      {"KMS.DisabledException", 400, ErrorCode::kPermissionDenied},
      {"KMS.NotFoundException", 400, ErrorCode::kPermissionDenied},
      {"KMSAccessDeniedException", 400, ErrorCode::kPermissionDenied},
      {"KMS.InvalidStateException", 400, ErrorCode::kPermissionDenied},
      {"InvalidClientTokenId", 403, ErrorCode::kUnauthenticated},
      {"SignatureDoesNotMatch", 403, ErrorCode::kUnauthenticated},
      {"IncompleteSignature", 400, ErrorCode::kUnauthenticated},
      {"InvalidAccessKeyId", 403, ErrorCode::kUnauthenticated},
      {"UnrecognizedClientException", 400, ErrorCode::kUnauthenticated},
      {"MissingAuthenticationToken", 403, ErrorCode::kUnauthenticated},
      {"InvalidSecurity", 403, ErrorCode::kUnauthenticated},
      {"ExpiredToken", 400, ErrorCode::kUnauthenticated},
      {"NoSuchKey", 404, ErrorCode::kNotFound},
      {"ResourceNotFoundException", 400, ErrorCode::kNotFound},
      {"NoSuchUpload", 404, ErrorCode::kNotFound},
      {"PreconditionFailed", 412, ErrorCode::kAlreadyExists},
      {"ConditionalRequestConflict", 409, ErrorCode::kAlreadyExists},
      {"ValidationError", 400, ErrorCode::kInvalidArgument},
      {"MissingParameter", 400, ErrorCode::kInvalidArgument},
      {"InvalidArgument", 400, ErrorCode::kInvalidArgument},
      {"BadDigest", 400, ErrorCode::kDataLoss},
      {"SomethingNew", 500, ErrorCode::kUnavailable},
      {"SomethingNew", 400, ErrorCode::kInvalidArgument},
      {"SomethingNew", 409, ErrorCode::kFailedPrecondition},
  };
  for (const Case& c : cases) {
    Status s = ErrorFromResponse(
        MakeResponse(c.status, std::string("<Error><Code>") + c.aws_code + "</Code><Message>m</Message></Error>"), "Op",
        "");
    EXPECT_EQ(s.code(), c.code) << c.aws_code << " " << c.status;
  }
}

TEST(ErrorFromResponseTest, NonAwsBodyIsSummarizedNotEchoed) {
  Status html = ErrorFromResponse(MakeResponse(502, "<html><body>502 Bad Gateway</body></html>"), "Op", "r");
  EXPECT_EQ(html.code(), ErrorCode::kUnavailable);
  EXPECT_EQ(html.aws()->error_code, "BadGateway");
  EXPECT_THAT(html.message(), HasSubstr("502 Bad Gateway"));

  Status echo = ErrorFromResponse(MakeResponse(400, "Authorization: AWS4-HMAC-SHA256 Credential=AKID/..."), "Op", "r");
  EXPECT_THAT(echo.message(), Not(HasSubstr("AKID")));
}

// ---- Backoff ----

TEST(BackoffDelayTest, StaysWithinCapAndCapGrowsExponentially) {
  RetryOptions options{
      .max_attempts = 10, .base_delay = std::chrono::milliseconds(50), .max_delay = std::chrono::milliseconds(2000)};
  std::mt19937_64 rng(42);
  int64_t previous_max = 0;
  for (int attempt = 0; attempt < 12; ++attempt) {
    const int64_t cap = std::min<int64_t>(2000, int64_t{50} << attempt);
    int64_t seen_max = 0;
    for (int i = 0; i < 2000; ++i) {
      int64_t d = BackoffDelay(options, attempt, rng).count();
      ASSERT_GE(d, 0);
      ASSERT_LE(d, cap) << "attempt " << attempt;
      seen_max = std::max(seen_max, d);
    }
    EXPECT_GE(seen_max, cap * 9 / 10) << "attempt " << attempt;  // full jitter reaches up to the cap
    EXPECT_GE(seen_max, previous_max * 9 / 10);
    previous_max = seen_max;
  }
  EXPECT_LE(BackoffDelay(options, 1000, rng).count(), 2000);  // no overflow for huge attempt numbers
}

TEST(RetryOptionsTest, ValidateRejectsBadCombinations) {
  EXPECT_TRUE(RetryOptions{}.Validate().ok());
  EXPECT_EQ(RetryOptions{.max_attempts = 0}.Validate().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ((RetryOptions{.max_attempts = 3,
                          .base_delay = std::chrono::milliseconds(500),
                          .max_delay = std::chrono::milliseconds(100)})
                .Validate()
                .code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ((RetryOptions{.max_attempts = 3, .base_delay = std::chrono::milliseconds(-1)}).Validate().code(),
            ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace dlq
