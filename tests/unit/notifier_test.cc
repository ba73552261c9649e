#include "monitor/notifier.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <mutex>

#include "aws/curl_transport.h"
#include "common/time_util.h"
#include "server/http_server.h"
#include "testing/fake_http.h"
#include "testing/fake_notifier.h"

namespace dlq {
namespace {

constexpr char kToken[] = "Bearer s3cr3t-t0ken-value";

AlarmNotification SampleNotification() {
  AlarmNotification n;
  n.queue = "orders-dlq";
  n.queue_url = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq";
  n.region = "us-east-1";
  n.account_id = "123456789012";
  n.alarm_name = "orders-dlq-age";
  n.old_state = "OK";
  n.new_state = "ALARM";
  n.reason = "Threshold Crossed: 1 datapoint [90000.0] was >= the threshold (86400.0).";
  n.time = *ParseIso8601("2025-09-10T12:30:00.250Z");
  n.metric_name = "ApproximateAgeOfOldestMessage";
  n.metric_value = 90000;
  n.threshold = 86400;
  n.comparison = "GreaterThanOrEqualToThreshold";
  return n;
}

WebhookOptions OneTarget(std::string url = "https://hooks.example.com/dlq/alarm") {
  WebhookOptions options;
  options.targets.push_back({std::move(url), {{"Authorization", kToken}}});
  return options;
}

TEST(AlarmNotificationTest, ToJsonHasCloudWatchAndOwnFields) {
  rapidjson::Document doc;
  std::string json = SampleNotification().ToJson();
  doc.Parse(json.c_str());
  ASSERT_FALSE(doc.HasParseError()) << json;
  const rapidjson::Document& d = doc;
  EXPECT_STREQ(d["AlarmName"].GetString(), "orders-dlq-age");
  EXPECT_TRUE(d["AlarmDescription"].IsNull());
  EXPECT_STREQ(d["AWSAccountId"].GetString(), "123456789012");
  EXPECT_STREQ(d["NewStateValue"].GetString(), "ALARM");
  EXPECT_STREQ(d["OldStateValue"].GetString(), "OK");
  EXPECT_STREQ(d["NewStateReason"].GetString(), SampleNotification().reason.c_str());
  EXPECT_STREQ(d["StateChangeTime"].GetString(), "2025-09-10T12:30:00.250Z");
  EXPECT_STREQ(d["Region"].GetString(), "us-east-1");
  EXPECT_STREQ(d["Trigger"]["MetricName"].GetString(), "ApproximateAgeOfOldestMessage");
  EXPECT_STREQ(d["Trigger"]["Namespace"].GetString(), "AWS/SQS");
  EXPECT_STREQ(d["Trigger"]["ComparisonOperator"].GetString(), "GreaterThanOrEqualToThreshold");
  EXPECT_EQ(d["Trigger"]["Threshold"].GetDouble(), 86400);
  EXPECT_STREQ(d["Trigger"]["Dimensions"][0]["name"].GetString(), "QueueName");
  EXPECT_STREQ(d["Trigger"]["Dimensions"][0]["value"].GetString(), "orders-dlq");
  EXPECT_STREQ(d["Source"].GetString(), "dlq-archive");
  EXPECT_STREQ(d["Queue"].GetString(), "orders-dlq");
  EXPECT_STREQ(d["QueueUrl"].GetString(), SampleNotification().queue_url.c_str());
  EXPECT_EQ(d["MetricValue"].GetDouble(), 90000);
}

TEST(AlarmNotificationTest, MissingMetricValueIsNullAndStringsAreEscaped) {
  AlarmNotification n = SampleNotification();
  n.metric_value.reset();
  n.reason = "quote \" backslash \\ newline \n";
  rapidjson::Document doc;
  std::string json = n.ToJson();
  doc.Parse(json.c_str());
  ASSERT_FALSE(doc.HasParseError()) << json;
  const rapidjson::Document& d = doc;
  EXPECT_TRUE(d["MetricValue"].IsNull());
  EXPECT_STREQ(d["NewStateReason"].GetString(), n.reason.c_str());
}

TEST(WebhookNotifierTest, PostsJsonWithHeaders) {
  FakeClock clock;
  FakeHttpTransport transport([](const HttpRequest&) { return Result<HttpResponse>(MakeResponse(204, "")); });
  WebhookNotifier notifier(OneTarget(), transport, clock, 1);
  ASSERT_TRUE(notifier.Notify(SampleNotification()).ok());
  ASSERT_EQ(transport.calls(), 1);
  HttpRequest sent = transport.requests()[0];
  EXPECT_EQ(sent.method, "POST");
  EXPECT_EQ(sent.url, "https://hooks.example.com/dlq/alarm");
  EXPECT_EQ(sent.body, SampleNotification().ToJson());
  EXPECT_EQ(sent.timeout, std::chrono::milliseconds(5000));
  ASSERT_NE(FindHeader(sent.headers, "content-type"), nullptr);
  EXPECT_EQ(*FindHeader(sent.headers, "content-type"), "application/json");
  ASSERT_NE(FindHeader(sent.headers, "authorization"), nullptr);
  EXPECT_EQ(*FindHeader(sent.headers, "authorization"), kToken);
  ASSERT_NE(FindHeader(sent.headers, "user-agent"), nullptr);
  EXPECT_TRUE(FindHeader(sent.headers, "user-agent")->starts_with("dlq-archive/"));
}

TEST(WebhookNotifierTest, RetriesServerErrorsWithBackoffThenSucceeds) {
  FakeClock clock;
  const SystemTime start = clock.Now();
  FakeHttpTransport transport([](const HttpRequest&) { return Result<HttpResponse>(MakeResponse(200, "ok")); });
  transport.FailCall(1, MakeResponse(503, "busy"));
  transport.FailCall(2, Result<HttpResponse>(Unavailable("POST https://hooks.example.com/dlq/alarm: timed out")));
  transport.FailCall(3, MakeResponse(429, "slow down"));
  WebhookOptions options = OneTarget();
  options.retry.base_delay = std::chrono::milliseconds(1000);
  options.retry.max_delay = std::chrono::milliseconds(1000);  // every delay in [0, 1s]
  options.retry.max_attempts = 4;
  WebhookNotifier notifier(options, transport, clock, 42);
  Status status = notifier.Notify(SampleNotification());
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(transport.calls(), 4);
  EXPECT_LE(clock.Now() - start, std::chrono::seconds(3));  // three sleeps, each at most the cap
}

TEST(WebhookNotifierTest, FailureNamesUrlButNeverHeaderValues) {
  FakeClock clock;
  FakeHttpTransport transport([](const HttpRequest&) { return Result<HttpResponse>(MakeResponse(500, "oops")); });
  WebhookNotifier notifier(OneTarget("https://hooks.example.com/dlq/alarm?token=querysecret"), transport, clock, 7);
  Status status = notifier.Notify(SampleNotification());
  EXPECT_EQ(status.code(), ErrorCode::kUnavailable);
  EXPECT_EQ(transport.calls(), 4);  // default max_attempts
  const std::string text = status.ToString();
  EXPECT_NE(text.find("https://hooks.example.com/..."), std::string::npos) << text;
  EXPECT_NE(text.find("HTTP 500"), std::string::npos) << text;
  EXPECT_NE(text.find("attempt 4 of 4"), std::string::npos) << text;
  EXPECT_NE(text.find("orders-dlq-age"), std::string::npos) << text;
  EXPECT_EQ(text.find("s3cr3t"), std::string::npos) << text;
  EXPECT_EQ(text.find("querysecret"), std::string::npos) << text;
}

TEST(WebhookNotifierTest, ClientErrorsAreNotRetried) {
  FakeClock clock;
  const SystemTime start = clock.Now();
  FakeHttpTransport transport([](const HttpRequest&) { return Result<HttpResponse>(MakeResponse(401, "no")); });
  WebhookNotifier notifier(OneTarget(), transport, clock, 7);
  Status status = notifier.Notify(SampleNotification());
  EXPECT_EQ(status.code(), ErrorCode::kUnauthenticated);
  EXPECT_EQ(transport.calls(), 1);
  EXPECT_EQ(clock.Now(), start);
}

TEST(WebhookNotifierTest, TriesEveryTargetAndReportsEachFailure) {
  FakeClock clock;
  FakeHttpTransport transport([](const HttpRequest& r) {
    return Result<HttpResponse>(MakeResponse(r.url.find("bad") != std::string::npos ? 404 : 200, ""));
  });
  WebhookOptions options;
  options.targets = {
      {"https://bad.example.com/a", {}}, {"https://good.example.com/b", {}}, {"https://bad.example.com/c", {}}};
  WebhookNotifier notifier(options, transport, clock, 7);
  Status status = notifier.Notify(SampleNotification());
  EXPECT_EQ(status.code(), ErrorCode::kNotFound);
  EXPECT_EQ(transport.calls(), 3);
  EXPECT_NE(status.message().find("2 of 3 webhooks failed"), std::string::npos) << status.message();
  EXPECT_NE(status.message().rfind("https://bad.example.com/..."), status.message().find("https://bad.example.com/..."));
  EXPECT_EQ(status.message().find("/a"), std::string::npos) << "URL paths can hold secrets";
}

TEST(WebhookOptionsTest, ValidateRejectsBadConfiguration) {
  EXPECT_TRUE(OneTarget().Validate().ok());
  EXPECT_EQ(WebhookOptions{}.Validate().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(OneTarget("ftp://x/y").Validate().code(), ErrorCode::kInvalidArgument);
  WebhookOptions bad_header = OneTarget();
  bad_header.targets[0].headers.emplace_back("X-Bad", "a\r\nInjected: 1");
  Status status = bad_header.Validate();
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(status.message().find("Injected"), std::string::npos);
  WebhookOptions no_timeout = OneTarget();
  no_timeout.timeout = std::chrono::milliseconds(0);
  EXPECT_EQ(no_timeout.Validate().code(), ErrorCode::kInvalidArgument);
  FakeClock clock;
  FakeHttpTransport transport;
  EXPECT_FALSE(WebhookNotifier::Create(WebhookOptions{}, transport, clock).ok());
}

TEST(RedactUrlTest, KeepsOnlySchemeAndHostBecausePathsHoldSecrets) {
  EXPECT_EQ(RedactUrl("https://user:pw@hooks.example.com:8443/a/b?token=x#frag"), "https://hooks.example.com:8443/...");
  EXPECT_EQ(RedactUrl("https://hooks.slack.com/services/T000/B000/XXXXSECRET"), "https://hooks.slack.com/...");
  EXPECT_EQ(RedactUrl("http://127.0.0.1:9000"), "http://127.0.0.1:9000/...");
  EXPECT_EQ(RedactUrl("not a url"), "<invalid url>");
}

TEST(MultiNotifierTest, NotifiesAllAndCombinesFailures) {
  FakeNotifier a, b, c;
  b.FailAll(Unavailable("webhook down"));
  MultiNotifier multi({&a, &b, &c});
  Status status = multi.Notify(SampleNotification());
  EXPECT_EQ(status.code(), ErrorCode::kUnavailable);
  EXPECT_NE(status.message().find("webhook down"), std::string::npos);
  EXPECT_EQ(a.calls(), 1);
  EXPECT_EQ(b.calls(), 1);
  EXPECT_EQ(c.calls(), 1);
  EXPECT_EQ(c.notifications()[0].alarm_name, "orders-dlq-age");
  b.FailAll(std::nullopt);
  EXPECT_TRUE(multi.Notify(SampleNotification()).ok());
}

TEST(FakeNotifierTest, FailsTheChosenCall) {
  FakeNotifier fake;
  fake.FailCall(2, Internal("boom"));
  EXPECT_TRUE(fake.Notify(SampleNotification()).ok());
  EXPECT_EQ(fake.Notify(SampleNotification()).code(), ErrorCode::kInternal);
  EXPECT_TRUE(fake.Notify(SampleNotification()).ok());
  EXPECT_EQ(fake.calls(), 3);
}

TEST(WebhookNotifierTest, DeliversToLoopbackHttpServerEndToEnd) {
  std::mutex mu;
  std::vector<HttpServerRequest> received;
  int failures_left = 1;
  HttpServerOptions server_options;
  server_options.port = 0;
  server_options.threads = 2;
  server_options.keep_alive_timeout = std::chrono::seconds(1);
  HttpServer server(server_options);
  server.Handle("POST", "/hook", [&](const HttpServerRequest& request) {
    std::lock_guard lock(mu);
    received.push_back(request);
    if (failures_left > 0) {
      --failures_left;
      return HttpServerResponse{.status = 502, .body = "bad gateway"};
    }
    return HttpServerResponse{.status = 200, .body = "thanks"};
  });
  ASSERT_TRUE(server.Start().ok());

  auto transport = CurlTransport::Create();
  ASSERT_TRUE(transport.ok());
  FakeClock clock;
  WebhookNotifier notifier(OneTarget(server.base_url() + "/hook"), **transport, clock, 3);
  Status status = notifier.Notify(SampleNotification());
  EXPECT_TRUE(status.ok()) << status.ToString();

  std::lock_guard lock(mu);
  ASSERT_EQ(received.size(), 2u);
  EXPECT_EQ(received[1].body, SampleNotification().ToJson());
  EXPECT_EQ(*FindHeader(received[1].headers, "Content-Type"), "application/json");
  EXPECT_EQ(*FindHeader(received[1].headers, "Authorization"), kToken);

  // A missing route is a non-retryable 404 naming the URL.
  WebhookNotifier wrong(OneTarget(server.base_url() + "/nope"), **transport, clock, 3);
  Status missing = wrong.Notify(SampleNotification());
  EXPECT_EQ(missing.code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.message().find(server.base_url() + "/..."), std::string::npos);
  EXPECT_EQ(received.size(), 2u);
  server.Stop();
}

}  // namespace
}  // namespace dlq
