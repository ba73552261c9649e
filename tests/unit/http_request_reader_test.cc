#include "server/http_request_reader.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace dlq {
namespace {

using Kind = HttpRequestReader::Step::Kind;

class HttpRequestReaderTest : public ::testing::Test {
 protected:
  HttpRequestReaderTest() {
    router_.Handle("GET", "/a", [](const HttpServerRequest&) { return HttpServerResponse{}; });
    router_.Handle("POST", "/post", [](const HttpServerRequest&) { return HttpServerResponse{}; });
    router_.HandleProbe("/healthz", [](const HttpServerRequest&) { return HttpServerResponse{}; });
    options_.max_requests_per_connection = 2;
    options_.host_refused_hint = "add it to allowed_hosts";
  }

  HttpRequestReader::Step Receive(HttpConnection& c, const std::string& bytes) {
    c.in += bytes;
    return reader_.Next(c);
  }

  HttpRouter router_;
  HttpServerOptions options_;
  HttpRequestReader reader_{router_, options_};
};

TEST_F(HttpRequestReaderTest, WaitsForTheWholeHeadAndBodyThenTakesTheRequestOut) {
  HttpConnection c;
  c.remote_addr = "10.0.0.1";
  EXPECT_EQ(Receive(c, "POST /post?x=1 HTTP/1.1\r\nHost: localhost\r\n").kind, Kind::kWait);
  EXPECT_EQ(Receive(c, "Content-Length: 5\r\n\r\nab").kind, Kind::kWait);
  ASSERT_TRUE(c.head.has_value());  // parsed and admitted; the body is on its way
  HttpRequestReader::Step step = Receive(c, "cdeGET /a HTTP/1.1\r\n");
  ASSERT_EQ(step.kind, Kind::kRequest);
  EXPECT_EQ(step.request.method, "POST");
  EXPECT_EQ(step.request.path, "/post");
  EXPECT_EQ(step.request.query, "x=1");
  EXPECT_EQ(step.request.body, "abcde");
  EXPECT_EQ(step.request.remote_addr, "10.0.0.1");
  EXPECT_EQ(step.request.cancelled, c.cancelled.get());
  EXPECT_TRUE(step.keep_alive);            // the first of max_requests_per_connection = 2
  EXPECT_EQ(c.in, "GET /a HTTP/1.1\r\n");  // what follows stays for the next request
  EXPECT_FALSE(c.head.has_value());
}

TEST_F(HttpRequestReaderTest, TheLastRequestAllowedOnAConnectionIsNotKeptAlive) {
  HttpConnection c;
  c.served = 1;
  HttpRequestReader::Step step = Receive(c, "GET /a HTTP/1.1\r\nHost: localhost\r\n\r\n");
  ASSERT_EQ(step.kind, Kind::kRequest);
  EXPECT_FALSE(step.keep_alive);
}

TEST_F(HttpRequestReaderTest, WaitsWhileTheConnectionIsNotReading) {
  HttpConnection c;
  c.phase = HttpConnectionPhase::kWorking;
  EXPECT_EQ(Receive(c, "GET /a HTTP/1.1\r\nHost: localhost\r\n\r\n").kind, Kind::kWait);
  EXPECT_FALSE(c.head.has_value());
}

TEST_F(HttpRequestReaderTest, RefusesAMalformedHead) {
  HttpConnection c;
  HttpRequestReader::Step step = Receive(c, "GET /a HTTP/1.1\r\nHost: a\rb\r\n\r\n");
  ASSERT_EQ(step.kind, Kind::kRefused);
  EXPECT_EQ(step.refusal.status, 400);
  EXPECT_FALSE(step.head_only);
}

TEST_F(HttpRequestReaderTest, RefusesAHostItDoesNotServeAndDropsTheBodyUnread) {
  HttpConnection c;
  HttpRequestReader::Step step =
      Receive(c, "POST /post HTTP/1.1\r\nHost: attacker.example\r\nContent-Length: 100\r\n\r\nfirst bytes");
  ASSERT_EQ(step.kind, Kind::kRefused);
  EXPECT_EQ(step.refusal.status, 421);
  EXPECT_NE(step.refusal.body.find("add it to allowed_hosts"), std::string::npos) << step.refusal.body;
  EXPECT_TRUE(c.in.empty());
  EXPECT_FALSE(c.head.has_value());
}

TEST_F(HttpRequestReaderTest, AProbeSkipsTheHostCheck) {
  HttpConnection c;
  HttpRequestReader::Step step = Receive(c, "HEAD /healthz HTTP/1.1\r\nHost: attacker.example\r\n\r\n");
  ASSERT_EQ(step.kind, Kind::kRequest);
  EXPECT_EQ(step.request.method, "HEAD");
  HttpConnection other;
  step = Receive(other, "HEAD /a HTTP/1.1\r\nHost: attacker.example\r\n\r\n");
  ASSERT_EQ(step.kind, Kind::kRefused);
  EXPECT_EQ(step.refusal.status, 421);
  EXPECT_TRUE(step.head_only);
}

TEST_F(HttpRequestReaderTest, RefusesABodyOnGetAndABodyForNoRoute) {
  HttpConnection get;
  HttpRequestReader::Step step = Receive(get, "GET /a HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\n\r\n");
  ASSERT_EQ(step.kind, Kind::kRefused);
  EXPECT_EQ(step.refusal.status, 400);
  HttpConnection nowhere;
  step = Receive(nowhere, "POST /nowhere HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\n\r\n");
  ASSERT_EQ(step.kind, Kind::kRefused);
  EXPECT_EQ(step.refusal.status, 404);
}

TEST_F(HttpRequestReaderTest, RefusesWhatTheHeadCheckRefusesBeforeTheBody) {
  router_.CheckHeads([](const HttpServerRequest& head) -> std::optional<HttpServerResponse> {
    if (head.path == "/post" && head.body.empty()) return JsonError(401, "no token");
    return std::nullopt;
  });
  HttpConnection c;
  HttpRequestReader::Step step = Receive(c, "POST /post HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\n\r\n");
  ASSERT_EQ(step.kind, Kind::kRefused);
  EXPECT_EQ(step.refusal.status, 401);
}

TEST_F(HttpRequestReaderTest, SendsContinueOnlyWhileTheBodyIsPending) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
  HttpConnection c;
  c.fd = fds[0];
  EXPECT_EQ(
      Receive(c, "POST /post HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n").kind,
      Kind::kWait);
  char buf[64] = {0};
  ASSERT_GT(::recv(fds[1], buf, sizeof(buf) - 1, 0), 0);
  EXPECT_STREQ(buf, "HTTP/1.1 100 Continue\r\n\r\n");
  EXPECT_EQ(Receive(c, "ok").kind, Kind::kRequest);

  HttpConnection whole;  // the body came with the head: no 100 Continue
  whole.fd = fds[0];
  EXPECT_EQ(
      Receive(whole, "POST /post HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok")
          .kind,
      Kind::kRequest);
  EXPECT_TRUE(whole.out.empty());

  HttpConnection failed;  // sending 100 Continue fails
  failed.fd = fds[0];
  ::close(fds[1]);
  EXPECT_EQ(
      Receive(failed, "POST /post HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
          .kind,
      Kind::kFailed);
  ::close(fds[0]);
}

}  // namespace
}  // namespace dlq
