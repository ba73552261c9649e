#include "monitor/notifier.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <rapidjson/document.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <mutex>

#include "aws/curl_transport.h"
#include "common/log.h"
#include "common/time_util.h"
#include "loopback_http_server.h"
#include "monitor/alarm.h"
#include "monitor/daemon.h"
#include "monitor/daemon_metrics.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "testing/fake_clock.h"
#include "testing/fake_http.h"
#include "testing/fake_notifier.h"
#include "testing/fake_object_store.h"
#include "testing/fake_queue.h"
#include "testing/scoped_capturing_logger.h"
#include "unit/daemon_fixture.h"

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

TEST(AlarmNotificationTest, TopGroupsCarryTheirCausesAndLinks) {
  AlarmNotification n = SampleNotification();
  n.messages = 37;
  n.dashboard_url = "https://dlq.example.com/#/queue/orders-dlq";
  n.top_groups.push_back({"a1b2c3d4e5f6", "sku shape", 30, "ValueError: bad sku", "", 3, 3,
                          "https://dlq.example.com/#/queue/orders-dlq/message/m-1"});
  n.top_groups.push_back({"0123456789ab", "ping shape", 7, "", "not_mentioned", 3, 0, ""});
  rapidjson::Document doc;
  std::string json = n.ToJson();
  doc.Parse(json.c_str());
  ASSERT_FALSE(doc.HasParseError()) << json;
  const rapidjson::Document& d = doc;
  EXPECT_EQ(d["Messages"].GetInt64(), 37);
  EXPECT_STREQ(d["DashboardUrl"].GetString(), "https://dlq.example.com/#/queue/orders-dlq");
  ASSERT_EQ(d["TopGroups"].Size(), 2u);
  EXPECT_STREQ(d["TopGroups"][0]["Id"].GetString(), "a1b2c3d4e5f6");
  EXPECT_EQ(d["TopGroups"][0]["Messages"].GetUint64(), 30u);
  EXPECT_STREQ(d["TopGroups"][0]["Cause"].GetString(), "ValueError: bad sku");
  EXPECT_TRUE(d["TopGroups"][0]["NoCause"].IsNull());
  EXPECT_EQ(d["TopGroups"][0]["Found"].GetUint64(), 3u);
  EXPECT_STREQ(d["TopGroups"][0]["Url"].GetString(), "https://dlq.example.com/#/queue/orders-dlq/message/m-1");
  EXPECT_TRUE(d["TopGroups"][1]["Cause"].IsNull());
  EXPECT_STREQ(d["TopGroups"][1]["NoCause"].GetString(), "not_mentioned");
  EXPECT_TRUE(d["TopGroups"][1]["Url"].IsNull());
  EXPECT_EQ(std::string(d["Summary"].GetString()),
            "orders-dlq: ALARM (37 messages): 30 x ValueError: bad sku (found for 3 of 3 looked up), 7 x group "
            "0123456789ab, no cause found (not_mentioned) https://dlq.example.com/#/queue/orders-dlq");
}

TEST(AlarmNotificationTest, WithoutGroupsTheSummaryIsTheReasonAndTheOptionalFieldsAreAbsent) {
  AlarmNotification n = SampleNotification();
  rapidjson::Document doc;
  std::string json = n.ToJson();
  doc.Parse(json.c_str());
  ASSERT_FALSE(doc.HasParseError()) << json;
  EXPECT_EQ(std::string(doc["Summary"].GetString()), "orders-dlq: ALARM: " + n.reason);
  EXPECT_FALSE(doc.HasMember("Messages"));
  EXPECT_FALSE(doc.HasMember("TopGroups"));
  EXPECT_FALSE(doc.HasMember("DashboardUrl"));
}

TEST(AlarmNotificationTest, OwnMetricsUseOurNamespaceNotAwsSqs) {
  AlarmNotification n = SampleNotification();
  n.metric_name = "AgeOnExpiryClock";
  rapidjson::Document doc;
  std::string json = n.ToJson();
  doc.Parse(json.c_str());
  ASSERT_FALSE(doc.HasParseError()) << json;
  EXPECT_STREQ(doc["Trigger"]["Namespace"].GetString(), "DLQArchive");
  EXPECT_STREQ(doc["Trigger"]["MetricName"].GetString(), "AgeOnExpiryClock");
  EXPECT_EQ(MetricNamespace("ApproximateNumberOfMessagesVisible"), "AWS/SQS");
  EXPECT_EQ(MetricNamespace("DestinationWritable"), "DLQArchive");
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
  EXPECT_NE(status.message().rfind("https://bad.example.com/..."),
            status.message().find("https://bad.example.com/..."));
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

// ---------------------------------------------------------------------------
// Redaction, asynchronous delivery, per-webhook settings, reload, startup.

using std::chrono::milliseconds;
using std::chrono::seconds;

// A loopback port nothing listens on.
int ClosedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) std::abort();
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

WebhookConfig Hook(std::string url, seconds timeout = seconds(5), bool notify_on_startup = false) {
  WebhookConfig w;
  w.url = std::move(url);
  w.headers["Authorization"] = kToken;
  w.timeout = timeout;
  w.notify_on_startup = notify_on_startup;
  return w;
}

WebhookSetOptions FastRetries() {
  WebhookSetOptions o;
  o.retry.max_attempts = 2;
  o.retry.base_delay = milliseconds(1);
  o.retry.max_delay = milliseconds(1);
  return o;
}

AlarmNotification StartupOk() {
  AlarmNotification n = SampleNotification();
  n.old_state = "INSUFFICIENT_DATA";
  n.new_state = "OK";
  n.initial = true;
  return n;
}

TEST(ScrubUrlTest, RemovesPathQueryAndUserinfoFromTransportMessages) {
  const std::string url = "https://bot:pw@hooks.slack.com/services/T000/B000/XXXXSECRET?token=querysecret";
  std::string scrubbed = ScrubUrl(
      "POST https://hooks.slack.com/services/T000/B000/XXXXSECRET?token=querysecret: timed out; "
      "POST https://hooks.slack.com/services/T000/B000/XXXXSECRET: refused (user bot:pw)",
      url);
  EXPECT_EQ(scrubbed.find("XXXXSECRET"), std::string::npos) << scrubbed;
  EXPECT_EQ(scrubbed.find("querysecret"), std::string::npos) << scrubbed;
  EXPECT_EQ(scrubbed.find("bot:pw"), std::string::npos) << scrubbed;
  EXPECT_NE(scrubbed.find("POST https://hooks.slack.com/...: timed out"), std::string::npos) << scrubbed;
  EXPECT_EQ(ScrubUrl("no url here", url), "no url here");
}

TEST(WebhookRedactionTest, NetworkErrorToClosedPortNeverLogsTheSecretPath) {
  ScopedCapturingLogger log;
  auto transport = CurlTransport::Create();
  ASSERT_TRUE(transport.ok());
  const std::string base = "http://127.0.0.1:" + std::to_string(ClosedPort());
  const std::string url = base + "/services/T000/B000/XXXXSECRET?token=querysecret";

  // Control: the transport's own message names the path.
  HttpRequest probe;
  probe.method = "POST";
  probe.url = url;
  probe.timeout = seconds(2);
  Result<HttpResponse> raw = (*transport)->Send(probe);
  ASSERT_FALSE(raw.ok());
  ASSERT_NE(raw.status().message().find("XXXXSECRET"), std::string::npos) << raw.status().message();

  // The synchronous notifier's error.
  FakeClock clock;
  WebhookNotifier sync(OneTarget(url), **transport, clock, 5);
  Status status = sync.Notify(SampleNotification());
  EXPECT_EQ(status.code(), ErrorCode::kUnavailable);
  EXPECT_NE(status.message().find(base + "/..."), std::string::npos) << status.message();
  EXPECT_EQ(status.message().find("XXXXSECRET"), std::string::npos) << status.message();
  EXPECT_EQ(status.message().find("querysecret"), std::string::npos) << status.message();

  // The daemon's path: the worker logs the failure.
  metrics::Registry registry;
  DaemonMetrics metrics(registry, "test");
  {
    WebhookSet set(**transport, clock, &metrics, FastRetries());
    ASSERT_TRUE(set.Apply({Hook(url)}).ok());
    EXPECT_TRUE(set.Notify(SampleNotification()).ok());
    EXPECT_TRUE(set.Flush(seconds(10)));
  }
  ASSERT_TRUE(log->Contains("notify_failed"));
  EXPECT_TRUE(log->Contains(base + "/..."));
  for (const auto& entry : log->entries()) {
    EXPECT_EQ(entry.line.find("XXXXSECRET"), std::string::npos) << entry.line;
    EXPECT_EQ(entry.line.find("querysecret"), std::string::npos) << entry.line;
    EXPECT_EQ(entry.line.find("s3cr3t"), std::string::npos) << entry.line;
  }
  std::string text = registry.Render();
  EXPECT_NE(text.find("dlq_archive_webhook_deliveries_total{webhook=\"" + base + "/...\",result=\"error\"} 1"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("XXXXSECRET"), std::string::npos);
}

QueuedNotifierOptions QueueOptions(size_t capacity, milliseconds drain, metrics::Registry& registry) {
  QueuedNotifierOptions o;
  o.name = "https://hooks.example.com/...";
  o.capacity = capacity;
  o.drain_timeout = drain;
  auto& family = registry.AddCounter("test_webhook_total", "test", {"what"});
  o.delivered = &family.WithLabels({"delivered"});
  o.failed = &family.WithLabels({"failed"});
  o.dropped = &family.WithLabels({"dropped"});
  return o;
}

TEST(QueuedNotifierTest, NotifyNeverWaitsForAHungNotifierAndCountsOverflow) {
  metrics::Registry registry;
  auto inner = std::make_unique<FakeNotifier>();
  FakeNotifier* fake = inner.get();
  fake->Block(true);
  QueuedNotifierOptions options = QueueOptions(2, milliseconds(5000), registry);
  metrics::Counter* dropped = options.dropped;
  QueuedNotifier queued(std::move(inner), options);

  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(queued.Notify(SampleNotification()).ok());
  ASSERT_TRUE(fake->WaitForCalls(1, milliseconds(5000)));  // in flight, hanging
  EXPECT_TRUE(queued.Notify(SampleNotification()).ok());   // queued: 1
  EXPECT_TRUE(queued.Notify(SampleNotification()).ok());   // queued: 2 (full)
  Status overflow = queued.Notify(SampleNotification());
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(500));
  EXPECT_EQ(overflow.code(), ErrorCode::kUnavailable);
  EXPECT_NE(overflow.message().find("queue full"), std::string::npos) << overflow.message();
  EXPECT_EQ(queued.dropped(), 1u);
  EXPECT_EQ(dropped->Value(), 1);

  fake->Block(false);
  EXPECT_TRUE(queued.Flush(milliseconds(5000)));
  EXPECT_EQ(fake->calls(), 3);
  EXPECT_EQ(queued.delivered(), 3u);
  EXPECT_EQ(queued.failed(), 0u);
}

TEST(QueuedNotifierTest, FailedDeliveriesAreCountedAndLogged) {
  ScopedCapturingLogger log;
  metrics::Registry registry;
  auto inner = std::make_unique<FakeNotifier>();
  inner->FailCall(2, Unavailable("webhook POST https://hooks.example.com/...: HTTP 503"));
  QueuedNotifierOptions options = QueueOptions(10, milliseconds(5000), registry);
  QueuedNotifier queued(std::move(inner), options);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(queued.Notify(SampleNotification()).ok());
  EXPECT_TRUE(queued.Flush(milliseconds(5000)));
  EXPECT_EQ(queued.delivered(), 2u);
  EXPECT_EQ(queued.failed(), 1u);
  EXPECT_EQ(options.failed->Value(), 1);
  EXPECT_TRUE(log->Contains("\"webhook\":\"https://hooks.example.com/...\""));
  EXPECT_TRUE(log->Contains("HTTP 503"));
}

TEST(QueuedNotifierTest, ShutdownDeliversWhatIsQueued) {
  metrics::Registry registry;
  auto inner = std::make_unique<FakeNotifier>();
  FakeNotifier* fake = inner.get();
  QueuedNotifier queued(std::move(inner), QueueOptions(10, milliseconds(5000), registry));
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(queued.Notify(SampleNotification()).ok());
  queued.Shutdown();
  EXPECT_EQ(fake->calls(), 5);
  EXPECT_EQ(queued.delivered(), 5u);
  EXPECT_EQ(queued.dropped(), 0u);
  EXPECT_EQ(queued.Notify(SampleNotification()).code(), ErrorCode::kUnavailable);  // closed
  EXPECT_EQ(queued.dropped(), 1u);
}

TEST(QueuedNotifierTest, ShutdownGivesUpOnAHungEndpointWithinTheDrainTimeout) {
  ScopedCapturingLogger log;
  metrics::Registry registry;
  auto inner = std::make_unique<FakeNotifier>();
  FakeNotifier* fake = inner.get();
  fake->Block(true);
  QueuedNotifier queued(std::move(inner), QueueOptions(10, milliseconds(200), registry));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(queued.Notify(SampleNotification()).ok());
  ASSERT_TRUE(fake->WaitForCalls(1, milliseconds(5000)));
  auto start = std::chrono::steady_clock::now();
  queued.Shutdown();
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, milliseconds(150));
  EXPECT_LT(took, milliseconds(2000));
  EXPECT_EQ(fake->cancels(), 1);
  EXPECT_EQ(fake->calls(), 1);
  EXPECT_EQ(queued.dropped(), 3u);  // two queued, one cancelled in flight
  EXPECT_EQ(queued.delivered(), 0u);
  EXPECT_TRUE(log->Contains("webhook_drain_timeout"));
}

TEST(WebhookNotifierTest, CancelStopsRetrying) {
  FakeClock clock;
  FakeHttpTransport transport([](const HttpRequest&) { return Result<HttpResponse>(MakeResponse(503, "")); });
  WebhookNotifier notifier(OneTarget(), transport, clock, 9);
  notifier.Cancel();
  EXPECT_EQ(notifier.Notify(SampleNotification()).code(), ErrorCode::kCancelled);
  EXPECT_EQ(transport.calls(), 0);
}

TEST(WebhookSetTest, NotifyReturnsAtOnceWhileTheLoopbackEndpointHangs) {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  LoopbackHttpServer server([&](const LoopbackHttpServer::Request&) {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return release; });
    return LoopbackHttpServer::Reply{.status = 200};
  });
  auto transport = CurlTransport::Create();
  ASSERT_TRUE(transport.ok());
  FakeClock clock;
  metrics::Registry registry;
  DaemonMetrics metrics(registry, "test");
  WebhookSetOptions options = FastRetries();
  options.capacity = 1;
  const std::string label = server.base_url() + "/...";
  {
    WebhookSet set(**transport, clock, &metrics, options);
    ASSERT_TRUE(set.Apply({Hook(server.base_url() + "/hook/secret", seconds(30))}).ok());
    auto start = std::chrono::steady_clock::now();
    EXPECT_TRUE(set.Notify(SampleNotification()).ok());
    // Wait until the first POST hangs in the server, then fill the queue.
    for (int i = 0; i < 500 && server.requests().empty(); ++i) std::this_thread::sleep_for(milliseconds(10));
    ASSERT_EQ(server.requests().size(), 1u);
    EXPECT_TRUE(set.Notify(SampleNotification()).ok());
    Status dropped = set.Notify(SampleNotification());
    EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(5));
    EXPECT_EQ(dropped.code(), ErrorCode::kUnavailable);
    EXPECT_EQ(dropped.message().find("secret"), std::string::npos) << dropped.message();
    std::string text = registry.Render();
    EXPECT_NE(text.find("dlq_archive_webhook_dropped_total{webhook=\"" + label + "\"} 1"), std::string::npos) << text;
    {
      std::lock_guard lock(mu);
      release = true;
    }
    cv.notify_all();
    EXPECT_TRUE(set.Flush(seconds(10)));
  }
  EXPECT_EQ(server.requests().size(), 2u);
  std::string text = registry.Render();
  EXPECT_NE(text.find("dlq_archive_webhook_deliveries_total{webhook=\"" + label + "\",result=\"ok\"} 2"),
            std::string::npos)
      << text;
  server.Stop();
}

TEST(WebhookSetTest, EachWebhookUsesItsOwnTimeout) {
  FakeClock clock;
  FakeHttpTransport transport([](const HttpRequest&) { return Result<HttpResponse>(MakeResponse(200, "")); });
  WebhookSet set(transport, clock, nullptr);
  ASSERT_TRUE(
      set.Apply({Hook("https://fast.example.com/a", seconds(1)), Hook("https://slow.example.com/b", seconds(7))}).ok());
  EXPECT_EQ(set.size(), 2u);
  EXPECT_TRUE(set.Notify(SampleNotification()).ok());
  EXPECT_TRUE(set.Flush(seconds(10)));
  std::map<std::string, milliseconds> timeouts;
  for (const HttpRequest& r : transport.requests()) timeouts[r.url] = r.timeout;
  ASSERT_EQ(timeouts.size(), 2u);
  EXPECT_EQ(timeouts["https://fast.example.com/a"], seconds(1));
  EXPECT_EQ(timeouts["https://slow.example.com/b"], seconds(7));
}

TEST(WebhookNotifierTest, EachTargetUsesItsOwnTimeout) {
  FakeClock clock;
  FakeHttpTransport transport([](const HttpRequest&) { return Result<HttpResponse>(MakeResponse(200, "")); });
  WebhookOptions options;
  options.timeout = milliseconds(5000);
  options.targets = {{"https://a.example.com/x", {}, milliseconds(1500)}, {"https://b.example.com/y", {}}};
  WebhookNotifier notifier(options, transport, clock, 1);
  ASSERT_TRUE(notifier.Notify(SampleNotification()).ok());
  ASSERT_EQ(transport.calls(), 2);
  EXPECT_EQ(transport.requests()[0].timeout, milliseconds(1500));
  EXPECT_EQ(transport.requests()[1].timeout, milliseconds(5000));
}

TEST(WebhookSetTest, StartupOkIsPostedOnlyToWebhooksThatAskForIt) {
  FakeClock clock;
  FakeHttpTransport transport([](const HttpRequest&) { return Result<HttpResponse>(MakeResponse(200, "")); });
  WebhookSet set(transport, clock, nullptr);
  ASSERT_TRUE(
      set.Apply({Hook("https://quiet.example.com/a"), Hook("https://chatty.example.com/b", seconds(5), true)}).ok());
  EXPECT_TRUE(set.Notify(StartupOk()).ok());
  EXPECT_TRUE(set.Flush(seconds(10)));
  ASSERT_EQ(transport.calls(), 1);
  EXPECT_EQ(transport.requests()[0].url, "https://chatty.example.com/b");

  // Not the first transition, or not to OK: every webhook.
  AlarmNotification later = StartupOk();
  later.initial = false;
  AlarmNotification first_alarm = StartupOk();
  first_alarm.new_state = "ALARM";
  EXPECT_TRUE(set.Notify(later).ok());
  EXPECT_TRUE(set.Notify(first_alarm).ok());
  EXPECT_TRUE(set.Flush(seconds(10)));
  EXPECT_EQ(transport.calls(), 5);
}

TEST(WebhookSetTest, ApplySwapsTheSetAndKeepsItWhenUnchanged) {
  ScopedCapturingLogger log;
  FakeClock clock;
  FakeHttpTransport transport([](const HttpRequest&) { return Result<HttpResponse>(MakeResponse(200, "")); });
  metrics::Registry registry;
  DaemonMetrics metrics(registry, "test");
  WebhookSet set(transport, clock, &metrics);
  ASSERT_TRUE(set.Apply({Hook("https://old.example.com/a")}).ok());
  ASSERT_TRUE(set.Apply({Hook("https://old.example.com/a")}).ok());  // unchanged: no swap
  size_t applied = 0;
  for (const auto& e : log->entries()) applied += e.event == "webhooks_applied" ? 1 : 0;
  EXPECT_EQ(applied, 1u);
  EXPECT_TRUE(set.Notify(SampleNotification()).ok());
  ASSERT_TRUE(set.Apply({Hook("https://new.example.com/b", seconds(9))}).ok());
  EXPECT_TRUE(set.Notify(SampleNotification()).ok());
  EXPECT_TRUE(set.Flush(seconds(10)));
  ASSERT_EQ(set.size(), 1u);
  // Invalid webhooks change nothing.
  WebhookConfig bad = Hook("https://bad.example.com/c");
  bad.headers["X-Bad"] = "a\r\nb";
  EXPECT_EQ(set.Apply({bad}).code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(set.Notify(SampleNotification()).ok());
  EXPECT_TRUE(set.Flush(seconds(10)));
  std::vector<HttpRequest> sent = transport.requests();
  ASSERT_EQ(sent.size(), 3u);
  // The old set's queued notification was delivered (it drains in the background).
  int to_old = 0, to_new = 0;
  for (const HttpRequest& r : sent) {
    if (r.url == "https://old.example.com/a") ++to_old;
    if (r.url == "https://new.example.com/b") {
      ++to_new;
      EXPECT_EQ(r.timeout, seconds(9));
    }
  }
  EXPECT_EQ(to_old, 1);
  EXPECT_EQ(to_new, 2);
  std::string text = registry.Render();
  EXPECT_EQ(text.find("old.example.com"), std::string::npos) << "series of removed webhooks are dropped\n" << text;
  EXPECT_NE(text.find("webhook=\"https://new.example.com/...\",result=\"ok\"} 2"), std::string::npos) << text;
}

TEST(WebhookSetTest, LabelsNameHostOnlyAndTellDuplicatesApart) {
  std::vector<std::string> labels = WebhookLabels(
      {Hook("https://hooks.slack.com/services/A"), Hook("https://hooks.slack.com/services/B"), Hook("http://x:81/")});
  EXPECT_EQ(labels, (std::vector<std::string>{"https://hooks.slack.com/...", "https://hooks.slack.com/... #2",
                                              "http://x:81/..."}));
}

TEST(AlarmNotificationTest, TransitionValueIsTheNewestDatapointInTheReason) {
  AlarmSpec spec;
  spec.name = "a";
  spec.metric = "m";
  spec.period = seconds(60);
  spec.evaluation_periods = 2;
  spec.datapoints_to_alarm = 2;
  spec.threshold = 10;
  spec.missing = MissingData::kMissing;
  Alarm alarm(spec);
  SystemTime t0(seconds(1700000040));  // a period boundary
  alarm.AddSample(t0, 11);
  alarm.AddSample(t0 + seconds(30), 12);   // max of period 0: 12
  alarm.AddSample(t0 + seconds(60), 15);   // period 1: 15
  alarm.AddSample(t0 + seconds(125), 99);  // period 2, not complete yet
  auto t = alarm.Evaluate(t0 + seconds(125));
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->initial);
  EXPECT_EQ(t->to, AlarmState::kAlarm);
  ASSERT_TRUE(t->value);
  EXPECT_EQ(*t->value, 15);
  EXPECT_NE(t->reason.find("[15.0 ("), std::string::npos) << t->reason;

  // Back to INSUFFICIENT_DATA when no datapoint remains: no value.
  auto gone = alarm.Evaluate(t0 + seconds(60 * 10));
  ASSERT_TRUE(gone);
  EXPECT_FALSE(gone->initial);
  EXPECT_EQ(gone->to, AlarmState::kInsufficientData);
  EXPECT_FALSE(gone->value);
}

// The daemon with webhooks (a WebhookSet over a fake transport).
class DaemonWebhookTest : public DaemonFixture {
 protected:
  DaemonWebhookTest()
      : transport_([](const HttpRequest&) { return Result<HttpResponse>(MakeResponse(200, "")); }),
        webhooks_(transport_, clock_, &metrics_) {
    config_.webhooks = {Hook("https://hooks.example.com/services/T0/B0/SECRET")};
  }

  std::unique_ptr<Daemon> MakeDaemon(Notifier& notifier) {
    DaemonOptions o;
    o.apply_webhooks = [this](const std::vector<WebhookConfig>& w) { return webhooks_.Apply(w); };
    return NewDaemon(notifier, o);
  }

  std::vector<rapidjson::Document> Posted() {
    EXPECT_TRUE(webhooks_.Flush(seconds(10)));
    std::vector<rapidjson::Document> out;
    for (const HttpRequest& r : transport_.requests()) {
      out.emplace_back();
      out.back().Parse(r.body.c_str());
    }
    return out;
  }

  FakeHttpTransport transport_;
  WebhookSet webhooks_;
};

TEST_F(DaemonWebhookTest, StartDoesNotPostInsufficientDataToOkByDefault) {
  auto d = MakeDaemon(webhooks_);
  d->RunOnce();
  Cycle(*d);
  Cycle(*d);
  ASSERT_EQ(d->views().Queues()[0].alarms[0].second, AlarmState::kOk);
  EXPECT_EQ(transport_.calls(), 0);
  EXPECT_TRUE(Posted().empty());
}

TEST_F(DaemonWebhookTest, NotifyOnStartupPostsInsufficientDataToOk) {
  config_.webhooks[0].notify_on_startup = true;
  auto d = MakeDaemon(webhooks_);
  d->RunOnce();
  Cycle(*d);
  Cycle(*d);
  auto posted = Posted();
  ASSERT_EQ(posted.size(), 1u);
  EXPECT_STREQ(posted[0]["OldStateValue"].GetString(), "INSUFFICIENT_DATA");
  EXPECT_STREQ(posted[0]["NewStateValue"].GetString(), "OK");
}

TEST_F(DaemonWebhookTest, MetricValueIsTheDatapointInTheReason) {
  FakeNotifier fake;
  Inject(3, clock_.Now() - std::chrono::hours(95));
  auto d = MakeDaemon(fake);
  d->RunOnce();
  for (int i = 0; i < 5; ++i) Cycle(*d);
  auto n = fake.notifications();
  ASSERT_EQ(n.size(), 2u);
  EXPECT_TRUE(n[0].initial);
  EXPECT_FALSE(n[1].initial);
  for (const AlarmNotification& x : n) {
    size_t open = x.reason.find('[');
    ASSERT_NE(open, std::string::npos) << x.reason;
    ASSERT_TRUE(x.metric_value) << x.reason;
    EXPECT_EQ(x.reason.substr(open + 1, x.reason.find(' ', open) - open - 1), fmt::format("{:.1f}", *x.metric_value))
        << x.reason;
    // And in the JSON payload.
    rapidjson::Document doc;
    doc.Parse(x.ToJson().c_str());
    EXPECT_EQ(doc["MetricValue"].GetDouble(), *x.metric_value);
  }
}

TEST_F(DaemonWebhookTest, ReloadSwapsWebhooks) {
  Inject(3, clock_.Now() - std::chrono::hours(95));
  auto d = MakeDaemon(webhooks_);
  d->RunOnce();
  d->WaitIdle();
  Cycle(*d);  // the learning pass has reported: the expiries are known
  Cycle(*d);  // INSUFFICIENT_DATA -> ALARM, archived
  ASSERT_EQ(d->views().Queues()[0].alarms[0].second, AlarmState::kAlarm);
  ASSERT_TRUE(webhooks_.Flush(seconds(10)));
  MonitorConfig next = config_;
  next.webhooks = {Hook("https://other.example.com/hook", seconds(9))};
  d->Reload(next);
  for (int i = 0; i < 4; ++i) Cycle(*d);  // ALARM -> OK
  ASSERT_EQ(d->views().Queues()[0].alarms[0].second, AlarmState::kOk);
  auto posted = Posted();
  std::vector<HttpRequest> sent = transport_.requests();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].url, "https://hooks.example.com/services/T0/B0/SECRET");
  EXPECT_STREQ(posted[0]["NewStateValue"].GetString(), "ALARM");
  EXPECT_EQ(sent[1].url, "https://other.example.com/hook");
  EXPECT_EQ(sent[1].timeout, seconds(9));
  EXPECT_STREQ(posted[1]["NewStateValue"].GetString(), "OK");
  std::string text = registry_.Render();
  EXPECT_NE(
      text.find("dlq_archive_webhook_deliveries_total{webhook=\"https://other.example.com/...\",result=\"ok\"} 1"),
      std::string::npos)
      << text;
}

}  // namespace
}  // namespace dlq
