#include "server/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>

#include "aws/curl_transport.h"
#include "monitor/daemon_metrics.h"
#include "server/health.h"
#include "server/metrics.h"
#include "testing/fake_clock.h"
#include "unit/raw_http_client.h"

namespace dlq {
namespace {

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto transport = CurlTransport::Create();
    ASSERT_TRUE(transport.ok()) << transport.status().ToString();
    transport_ = std::move(transport).value();
  }

  HttpResponse Send(const std::string& method, const std::string& url, std::string body = "") {
    HttpRequest request;
    request.method = method;
    request.url = url;
    request.body = std::move(body);
    request.timeout = std::chrono::milliseconds(5000);
    Result<HttpResponse> response = transport_->Send(request);
    EXPECT_TRUE(response.ok()) << response.status().ToString();
    return response.ok() ? std::move(response).value() : HttpResponse{};
  }
  HttpResponse Get(const HttpServer& server, const std::string& path) { return Send("GET", server.base_url() + path); }

  static HttpServerOptions Ephemeral() {
    HttpServerOptions options;
    options.port = 0;
    options.threads = 2;
    options.keep_alive_timeout = std::chrono::seconds(1);
    return options;
  }

  std::unique_ptr<CurlTransport> transport_;
};

TEST_F(HttpServerTest, ServesDaemonRoutesOverLoopback) {
  FakeClock clock;
  metrics::Registry registry;
  DaemonMetrics daemon_metrics(registry, "9.9.9");
  HealthState health(clock, std::chrono::seconds(60));
  HttpServer server(Ephemeral());
  server.Handle("/metrics", MakeMetricsHandler(registry));
  server.Handle("/healthz", MakeHealthzHandler(health));
  server.Handle("/readyz", MakeReadyzHandler(health));
  server.Handle("/api/queues", MakeJsonHandler([] { return std::string(R"({"queues":[]})"); }));
  ASSERT_TRUE(server.Start().ok());
  ASSERT_GT(server.port(), 0);
  EXPECT_EQ(server.base_url(), "http://127.0.0.1:" + std::to_string(server.port()));

  HttpResponse metrics_response = Get(server, "/metrics");
  EXPECT_EQ(metrics_response.status, 200);
  ASSERT_NE(metrics_response.Header("Content-Type"), nullptr);
  EXPECT_EQ(*metrics_response.Header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(metrics_response.body, registry.Render());
  EXPECT_NE(metrics_response.body.find("dlq_archive_build_info{version=\"9.9.9\"} 1"), std::string::npos);

  HttpResponse healthz = Get(server, "/healthz");
  EXPECT_EQ(healthz.status, 200);
  EXPECT_EQ(healthz.body, "ok\n");

  HttpResponse queues = Get(server, "/api/queues?verbose=1");
  EXPECT_EQ(queues.status, 200);
  ASSERT_NE(queues.Header("Content-Type"), nullptr);
  EXPECT_EQ(*queues.Header("Content-Type"), "application/json");
  EXPECT_EQ(queues.body, R"({"queues":[]})");
  server.Stop();
  EXPECT_FALSE(server.running());
}

TEST_F(HttpServerTest, ReadyzIs503UntilReadyThen200) {
  FakeClock clock;
  HealthState health(clock, std::chrono::seconds(60));
  HttpServer server(Ephemeral());
  server.Handle("/readyz", MakeReadyzHandler(health));
  ASSERT_TRUE(server.Start().ok());

  HttpResponse before = Get(server, "/readyz");
  EXPECT_EQ(before.status, 503);
  EXPECT_EQ(before.body, "not ready: first collection has not completed\n");

  health.SetReady();
  HttpResponse after = Get(server, "/readyz");
  EXPECT_EQ(after.status, 200);
  EXPECT_EQ(after.body, "ready\n");

  health.SetNotReady("config invalid: no queues");
  HttpResponse again = Get(server, "/readyz");
  EXPECT_EQ(again.status, 503);
  EXPECT_NE(again.body.find("config invalid: no queues"), std::string::npos);
}

TEST_F(HttpServerTest, HealthzFailsWhenHeartbeatIsStale) {
  FakeClock clock;
  HealthState health(clock, std::chrono::seconds(30));
  HttpServer server(Ephemeral());
  server.Handle("/healthz", MakeHealthzHandler(health));
  ASSERT_TRUE(server.Start().ok());

  clock.Advance(std::chrono::seconds(29));
  EXPECT_EQ(Get(server, "/healthz").status, 200);
  clock.Advance(std::chrono::seconds(2));
  HttpResponse stale = Get(server, "/healthz");
  EXPECT_EQ(stale.status, 503);
  EXPECT_NE(stale.body.find("last heartbeat 31s ago (limit 30s)"), std::string::npos) << stale.body;
  health.Heartbeat();
  EXPECT_EQ(Get(server, "/healthz").status, 200);
}

TEST_F(HttpServerTest, UnknownPathIs404AndOtherMethodsAre405) {
  HttpServer server(Ephemeral());
  server.Handle("/healthz", [](const HttpServerRequest&) { return HttpServerResponse{.body = "ok\n"}; });
  ASSERT_TRUE(server.Start().ok());

  EXPECT_EQ(Get(server, "/nope").status, 404);
  EXPECT_EQ(Get(server, "/").status, 404);
  HttpResponse post = Send("POST", server.base_url() + "/healthz", "x");
  EXPECT_EQ(post.status, 405);
  ASSERT_NE(post.Header("Allow"), nullptr);
  EXPECT_EQ(*post.Header("Allow"), "GET, HEAD");
  EXPECT_EQ(Send("DELETE", server.base_url() + "/healthz").status, 405);
}

TEST_F(HttpServerTest, PrefixRoutesTakeTheLongestMatchAndExactRoutesWin) {
  HttpServer server(Ephemeral());
  server.Handle("/api/queues", [](const HttpServerRequest&) { return HttpServerResponse{.body = "exact"}; });
  server.HandlePrefix("GET", "/api/",
                      [](const HttpServerRequest& r) { return HttpServerResponse{.body = "api " + r.path}; });
  server.HandlePrefix("GET", "/api/queues/",
                      [](const HttpServerRequest& r) { return HttpServerResponse{.body = "queue " + r.path}; });
  server.HandlePrefix("POST", "/api/queues/",
                      [](const HttpServerRequest&) { return HttpServerResponse{.status = 202, .body = "posted"}; });
  ASSERT_TRUE(server.Start().ok());
  EXPECT_EQ(Get(server, "/api/queues").body, "exact");
  EXPECT_EQ(Get(server, "/api/queues/orders-dlq/history?x=1").body, "queue /api/queues/orders-dlq/history");
  EXPECT_EQ(Get(server, "/api/search").body, "api /api/search");
  EXPECT_EQ(Send("POST", server.base_url() + "/api/queues/q/archive").status, 202);
  HttpResponse wrong = Send("DELETE", server.base_url() + "/api/queues/q");
  EXPECT_EQ(wrong.status, 405);
  ASSERT_NE(wrong.Header("Allow"), nullptr);
  EXPECT_EQ(*wrong.Header("Allow"), "GET, HEAD, POST");
  EXPECT_EQ(Get(server, "/apx").status, 404);
}

TEST_F(HttpServerTest, HeadReturnsHeadersWithoutBody) {
  HttpServer server(Ephemeral());
  server.Handle("/metrics", [](const HttpServerRequest&) {
    return HttpServerResponse{.content_type = std::string(metrics::kContentType), .body = "dlq_archive_up 1\n"};
  });
  ASSERT_TRUE(server.Start().ok());
  HttpResponse head = Send("HEAD", server.base_url() + "/metrics");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, "");
  ASSERT_NE(head.Header("Content-Length"), nullptr);
  EXPECT_EQ(*head.Header("Content-Length"), "17");
  ASSERT_NE(head.Header("Content-Type"), nullptr);
  EXPECT_EQ(*head.Header("Content-Type"), metrics::kContentType);
}

TEST_F(HttpServerTest, HandlersSeeMethodPathQueryAndBody) {
  HttpServer server(Ephemeral());
  HttpServerRequest seen;
  std::mutex mu;
  server.Handle("POST", "/hook", [&](const HttpServerRequest& request) {
    std::lock_guard lock(mu);
    seen = request;
    return HttpServerResponse{.status = 202, .body = "accepted"};
  });
  ASSERT_TRUE(server.Start().ok());
  HttpResponse response = Send("POST", server.base_url() + "/hook?x=1&y=2", R"({"a":1})");
  EXPECT_EQ(response.status, 202);
  std::lock_guard lock(mu);
  EXPECT_EQ(seen.method, "POST");
  EXPECT_EQ(seen.path, "/hook");
  EXPECT_EQ(seen.query, "x=1&y=2");
  EXPECT_EQ(seen.body, R"({"a":1})");
  EXPECT_EQ(seen.remote_addr, "127.0.0.1");
}

TEST_F(HttpServerTest, StopsAndRestartsOnTheSamePort) {
  HttpServer first(Ephemeral());
  first.Handle("/healthz", [](const HttpServerRequest&) { return HttpServerResponse{.body = "first\n"}; });
  ASSERT_TRUE(first.Start().ok());
  const int port = first.port();
  EXPECT_EQ(Get(first, "/healthz").body, "first\n");
  EXPECT_EQ(first.Start().code(), ErrorCode::kFailedPrecondition);
  first.Stop();
  first.Stop();  // idempotent
  EXPECT_EQ(first.port(), 0);

  // Nothing listens any more.
  HttpRequest request;
  request.url = "http://127.0.0.1:" + std::to_string(port) + "/healthz";
  request.timeout = std::chrono::milliseconds(2000);
  EXPECT_FALSE(transport_->Send(request).ok());

  // The same object restarts, and a new server binds the same fixed port.
  HttpServerOptions fixed = Ephemeral();
  fixed.port = port;
  HttpServer second(fixed);
  second.Handle("/healthz", [](const HttpServerRequest&) { return HttpServerResponse{.body = "second\n"}; });
  ASSERT_TRUE(second.Start().ok());
  EXPECT_EQ(second.port(), port);
  EXPECT_EQ(Get(second, "/healthz").body, "second\n");
  second.Stop();
  ASSERT_TRUE(second.Start().ok());
  EXPECT_EQ(Get(second, "/healthz").body, "second\n");
}

TEST_F(HttpServerTest, BindFailureNamesTheAddress) {
  // Occupy a port with a plain listening socket.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);

  HttpServerOptions options = Ephemeral();
  options.port = port;
  HttpServer server(options);
  Status status = server.Start();
  ::close(fd);
  EXPECT_EQ(status.code(), ErrorCode::kUnavailable);
  EXPECT_NE(status.message().find("127.0.0.1:" + std::to_string(port)), std::string::npos) << status.ToString();
  EXPECT_FALSE(server.running());
}

// Sends `requests` keep-alive GETs of `path` on one connection to `port`, one
// after the other; returns everything the server sent until it closed the
// connection or 3 s passed.
std::string RawKeepAliveGets(int port, const std::string& path, int requests) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return "(connect failed)";
  timeval tv{.tv_sec = 3, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n";
  std::string got;
  for (int i = 0; i < requests; ++i) {
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) < 0) break;
    char buf[4096];
    const size_t before = got.size();
    // One answer: until its (small) body is in.
    while (got.find("\r\n\r\nok", before) == std::string::npos) {
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
  }
  char buf[256];
  const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);  // 0: the server closed
  got += n == 0 ? "(closed)" : n < 0 ? "(still open)" : std::string(buf, static_cast<size_t>(n));
  ::close(fd);
  return got;
}

// RFC 9112 6.3: no Content-Length and no Transfer-Encoding means no body, so
// a bare POST (curl -X POST) reaches its route at once, not after the read
// timeout as an empty 400.
TEST_F(HttpServerTest, APostWithoutContentLengthHasNoBodyAndIsAnsweredAtOnce) {
  HttpServerOptions options = Ephemeral();
  options.request_timeout = std::chrono::seconds(3);
  HttpServer server(options);
  server.Handle("POST", "/act", [](const HttpServerRequest& request) {
    return HttpServerResponse{.status = 202, .body = "body of " + std::to_string(request.body.size()) + " bytes"};
  });
  ASSERT_TRUE(server.Start().ok());
  const auto start = std::chrono::steady_clock::now();
  std::string got =
      RawHttpExchange(server.port(), "POST /act HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2)) << got;
  EXPECT_EQ(got.find("HTTP/1.1 202"), 0u) << got;
  EXPECT_TRUE(got.ends_with("body of 0 bytes")) << got;
}

TEST_F(HttpServerTest, ErrorsBeforeAnyRouteAreJsonErrors) {
  HttpServer server(Ephemeral());
  server.Handle("POST", "/act", [](const HttpServerRequest&) { return HttpServerResponse{.body = "ran"}; });
  ASSERT_TRUE(server.Start().ok());
  std::string too_big =
      RawHttpExchange(server.port(), "POST /act HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2000000\r\n\r\n");
  EXPECT_EQ(too_big.find("HTTP/1.1 413"), 0u) << too_big;
  EXPECT_NE(too_big.find("Content-Type: application/json"), std::string::npos) << too_big;
  EXPECT_NE(too_big.find(R"js({"error":"request body of 2000000 bytes is over the limit of 1048576"})js"),
            std::string::npos)
      << too_big;
  std::string bad = RawHttpExchange(server.port(), "BR(EW /act HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(bad.find("HTTP/1.1 400"), 0u) << bad;
  EXPECT_NE(bad.find(R"js({"error":"malformed request method"})js"), std::string::npos) << bad;
  std::string unknown = RawHttpExchange(server.port(), "GET /nope HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(unknown.find("HTTP/1.1 404"), 0u) << unknown;
  EXPECT_NE(unknown.find(R"js({"error":"not found"})js"), std::string::npos) << unknown;
  std::string brew = RawHttpExchange(server.port(), "BREW /act HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(brew.find("HTTP/1.1 405"), 0u) << brew;
  EXPECT_NE(brew.find("Allow: POST"), std::string::npos) << brew;
}

// An idle kept-alive connection costs the daemon CPU (httplib polls it), so by
// default every answer closes its connection; keeping it alive is an option.
TEST_F(HttpServerTest, ClosesEachConnectionAfterItsAnswerUnlessToldToKeepIt) {
  HttpServer closing(Ephemeral());
  closing.Handle("/x", [](const HttpServerRequest&) { return HttpServerResponse{.body = "ok"}; });
  ASSERT_TRUE(closing.Start().ok());
  std::string got = RawKeepAliveGets(closing.port(), "/x", 2);
  EXPECT_EQ(got.find("HTTP/1.1 200"), 0u) << got;
  EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
  EXPECT_TRUE(got.ends_with("ok(closed)")) << got;  // one answer, then the end: the second request went unanswered

  HttpServerOptions options = Ephemeral();
  options.max_requests_per_connection = 5;
  HttpServer keeping(options);
  keeping.Handle("/x", [](const HttpServerRequest&) { return HttpServerResponse{.body = "ok"}; });
  ASSERT_TRUE(keeping.Start().ok());
  got = RawKeepAliveGets(keeping.port(), "/x", 2);
  EXPECT_NE(got.find("HTTP/1.1 200", got.find("HTTP/1.1 200") + 1), std::string::npos) << got;  // both answered
  EXPECT_EQ(got.find("Connection: close"), std::string::npos) << got;

  options.max_requests_per_connection = 0;
  EXPECT_EQ(options.Validate().code(), ErrorCode::kInvalidArgument);
}

// A browser offers "br"; httplib would answer with brotli at quality 11
// (about 150 ms of CPU for a 375 KB document). The server answers gzip, or
// nothing compressed when gzip is not offered.
TEST_F(HttpServerTest, CompressesWithGzipEvenWhenTheClientOffersBrotli) {
  HttpServer server(Ephemeral());
  std::string big = "[";
  for (int i = 0; i < 4000; ++i) big += R"({"queue":"orders-dlq-)" + std::to_string(i) + R"(","visible":0},)";
  big += "0]";
  server.Handle("/api/big", MakeJsonHandler([&big] { return big; }));
  ASSERT_TRUE(server.Start().ok());
  auto get = [&](const std::string& accept) {
    HttpRequest request;
    request.url = server.base_url() + "/api/big";
    request.headers.emplace_back("Accept-Encoding", accept);
    request.timeout = std::chrono::milliseconds(5000);
    Result<HttpResponse> response = transport_->Send(request);
    EXPECT_TRUE(response.ok()) << response.status().ToString();
    return response.ok() ? std::move(response).value() : HttpResponse{};
  };
  for (const char* accept : {"gzip, deflate, br", "br, gzip", "gzip, deflate, br, zstd"}) {
    HttpResponse r = get(accept);
    EXPECT_EQ(r.status, 200);
    ASSERT_NE(r.Header("Content-Encoding"), nullptr) << accept;
    EXPECT_EQ(*r.Header("Content-Encoding"), "gzip") << accept;
    EXPECT_LT(r.body.size(), big.size() / 4) << accept;
  }
  HttpResponse plain = get("br");
  EXPECT_EQ(plain.Header("Content-Encoding"), nullptr);
  EXPECT_EQ(plain.body, big);
}

TEST(HttpServerOptionsTest, RejectsBadOptions) {
  HttpServerOptions options;
  EXPECT_TRUE(options.Validate().ok());
  EXPECT_EQ(options.host, "127.0.0.1");
  EXPECT_EQ(options.port, 9464);
  options.port = 70000;
  EXPECT_EQ(options.Validate().code(), ErrorCode::kInvalidArgument);
  options.port = 0;
  options.threads = 0;
  EXPECT_EQ(options.Validate().code(), ErrorCode::kInvalidArgument);
  options.threads = 1;
  options.host = "";
  EXPECT_EQ(options.Validate().code(), ErrorCode::kInvalidArgument);
  HttpServer server(options);
  EXPECT_EQ(server.Start().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace dlq
