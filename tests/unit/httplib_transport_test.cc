// HttplibTransport (the Lambda program's transport, no libcurl) against a
// loopback server: the same contract as CurlTransport (methods, bodies,
// timeouts, cancellation, errors without the query string), connection
// reuse, bodies passed through undecoded, and https with verification on
// (a self-signed server is refused until its certificate is the CA bundle).
#include "aws/httplib_transport.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/crypto.h"
#include "unit/loopback_http_server.h"

namespace dlq {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Reply = LoopbackHttpServer::Reply;
using ServerRequest = LoopbackHttpServer::Request;

std::string HeaderOf(const HttpHeaders& headers, std::string_view name) {
  const std::string* v = FindHeader(headers, name);
  return v ? *v : std::string();
}

Reply Echo(const ServerRequest& r) {
  Reply reply;
  reply.headers = {{"X-Method", r.method}, {"X-Target", r.target}, {"X-Echo", HeaderOf(r.headers, "X-Echo")}};
  reply.body = r.body;
  return reply;
}

std::unique_ptr<HttplibTransport> MakeTransport(TransportSettings settings = {}) {
  auto t = HttplibTransport::Create(settings);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
}

HttpRequest MakeRequest(std::string method, std::string url, std::string body = "") {
  HttpRequest r;
  r.method = std::move(method);
  r.url = std::move(url);
  r.body = std::move(body);
  return r;
}

TEST(HttplibTransportTest, SendsEveryMethodWithBodyQueryAndHeaders) {
  LoopbackHttpServer server(Echo);
  auto transport = MakeTransport();
  for (const char* method : {"GET", "PUT", "POST", "DELETE"}) {
    HttpRequest r = MakeRequest(method, server.base_url() + "/a%20b/c?x=1&y=%2F", std::string(method) + " body");
    r.headers = {{"X-Echo", "hello"}, {"Content-Type", "application/x-amz-json-1.0"}};
    auto got = transport->Send(r);
    ASSERT_TRUE(got.ok()) << method << ": " << got.status().ToString();
    EXPECT_EQ(got->status, 200);
    EXPECT_EQ(HeaderOf(got->headers, "X-Method"), method);
    // (cpp-httplib percent-decodes response header values: X-Target comes back decoded.)
    EXPECT_EQ(HeaderOf(got->headers, "X-Target"), "/a b/c?x=1&y=/");
    EXPECT_EQ(HeaderOf(got->headers, "X-Echo"), "hello");
    EXPECT_EQ(got->body, std::string(method) + " body");
  }
  const auto seen = server.requests();
  ASSERT_EQ(seen.size(), 4u);
  for (const auto& r : seen) EXPECT_EQ(r.target, "/a%20b/c?x=1&y=%2F") << "sent as given, not re-encoded";
  EXPECT_EQ(HeaderOf(seen[1].headers, "Content-Type"), "application/x-amz-json-1.0");
  EXPECT_EQ(HeaderOf(seen[1].headers, "Content-Length"), "8");
  EXPECT_EQ(HeaderOf(seen[1].headers, "Host"), fmt::format("127.0.0.1:{}", server.port()));
}

TEST(HttplibTransportTest, HeadReturnsHeadersWithoutBody) {
  LoopbackHttpServer server([](const ServerRequest&) {
    Reply r;
    r.headers = {{"Content-Length", "1234"}, {"ETag", "\"abc\""}};
    return r;
  });
  auto transport = MakeTransport();
  auto got = transport->Send(MakeRequest("HEAD", server.base_url() + "/k"));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(HeaderOf(got->headers, "ETag"), "\"abc\"");
  EXPECT_TRUE(got->body.empty());
}

TEST(HttplibTransportTest, RoundTripsOneMebibyteBodiesAndLeavesGzipEncoded) {
  std::string body(1 << 20, '\0');
  for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>((i * 2654435761u) >> 13);
  LoopbackHttpServer server([](const ServerRequest& r) {
    Reply reply = Echo(r);
    reply.headers.emplace_back("Content-Encoding", "gzip");  // as S3 serves a stored .json.gz
    return reply;
  });
  auto transport = MakeTransport();
  auto got = transport->Send(MakeRequest("PUT", server.base_url() + "/big", body));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(Sha256Hex(server.requests().at(0).body), Sha256Hex(body));
  EXPECT_EQ(Sha256Hex(got->body), Sha256Hex(body));  // not "decompressed"
}

TEST(HttplibTransportTest, ReusesConnectionsAcrossThreads) {
  LoopbackHttpServer server(Echo);
  auto transport = MakeTransport();
  constexpr int kThreads = 8;
  constexpr int kPerThread = 40;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::string body = fmt::format("t{}-{}", t, i);
        auto r = transport->Send(MakeRequest("POST", server.base_url() + "/q", body));
        if (!r.ok() || r->status != 200 || r->body != body) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  auto seen = server.requests();
  ASSERT_EQ(seen.size(), static_cast<size_t>(kThreads * kPerThread));
  std::set<int> ports;
  for (const auto& r : seen) ports.insert(r.remote_port);
  EXPECT_LE(ports.size(), static_cast<size_t>(kThreads));
  EXPECT_LT(ports.size() * 20, seen.size());
}

TEST(HttplibTransportTest, ServerSlowerThanTimeoutIsUnavailableWithoutTheQuery) {
  LoopbackHttpServer server([](const ServerRequest& r) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    return Echo(r);
  });
  auto transport = MakeTransport(
      {.connect_timeout = std::chrono::milliseconds(100), .request_timeout = std::chrono::milliseconds(300)});
  auto start = std::chrono::steady_clock::now();
  auto response = transport->Send(MakeRequest("GET", server.base_url() + "/slow?X-Amz-Signature=deadbeef"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1200));
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), ErrorCode::kUnavailable);
  EXPECT_TRUE(response.status().retryable());
  EXPECT_THAT(response.status().message(), HasSubstr("GET http://127.0.0.1:"));
  EXPECT_THAT(response.status().message(), HasSubstr("/slow"));
  EXPECT_THAT(response.status().message(), Not(HasSubstr("deadbeef")));

  HttpRequest patient = MakeRequest("GET", server.base_url() + "/slow");
  patient.timeout = std::chrono::milliseconds(5000);
  auto ok = transport->Send(patient);
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
}

TEST(HttplibTransportTest, ClosedPortIsUnavailable) {
  int port;
  {
    LoopbackHttpServer server(Echo);
    port = server.port();
  }
  auto transport = MakeTransport();
  auto response = transport->Send(MakeRequest("GET", fmt::format("http://127.0.0.1:{}/x?token=s3cr3t", port)));
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), ErrorCode::kUnavailable);
  EXPECT_THAT(response.status().message(), HasSubstr(fmt::format("127.0.0.1:{}", port)));
  EXPECT_THAT(response.status().message(), Not(HasSubstr("s3cr3t")));
}

TEST(HttplibTransportTest, RejectsBadRequestsAndSettings) {
  auto transport = MakeTransport();
  EXPECT_EQ(transport->Send(MakeRequest("PATCH", "http://127.0.0.1:1/")).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(transport->Send(MakeRequest("GET", "ftp://127.0.0.1/")).status().code(), ErrorCode::kInvalidArgument);
  HttpRequest injected = MakeRequest("GET", "http://127.0.0.1:1/");
  injected.headers = {{"X-A", "1\r\nX-B: 2"}};
  EXPECT_EQ(transport->Send(injected).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(HttplibTransport::Create({.request_timeout = std::chrono::milliseconds(0)}).ok());
  EXPECT_FALSE(HttplibTransport::Create({.ca_bundle = "/nonexistent/ca.pem"}).ok());
}

TEST(HttplibTransportTest, CancelAbandonsARequestInFlightAtOnce) {
  std::atomic<bool> release{false};
  LoopbackHttpServer server([&](const ServerRequest&) {
    for (int i = 0; i < 1000 && !release; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return Reply{};
  });
  auto transport = MakeTransport();
  std::atomic<bool> cancel{false};
  HttpRequest r = MakeRequest("POST", server.base_url() + "/", "{}");
  r.cancel = &cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel = true;
  });
  auto start = std::chrono::steady_clock::now();
  auto got = transport->Send(r);
  auto took = std::chrono::steady_clock::now() - start;
  canceller.join();
  release = true;
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), ErrorCode::kCancelled) << got.status().ToString();
  EXPECT_LT(took, std::chrono::seconds(3));
  // The transport still works afterwards.
  auto again = transport->Send(MakeRequest("POST", server.base_url() + "/", "{}"));
  EXPECT_TRUE(again.ok()) << again.status().ToString();
}

// A self-signed certificate for 127.0.0.1 (openssl CLI), served by httplib's SSLServer.
class HttpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/httplib-tls-" + std::to_string(::getpid());
    std::string cmd =
        "mkdir -p " + dir_ + " && openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 " +
        "-addext subjectAltName=IP:127.0.0.1 -keyout " + dir_ + "/key.pem -out " + dir_ + "/cert.pem >/dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "openssl could not make a test certificate";
    server_ = std::make_unique<httplib::SSLServer>((dir_ + "/cert.pem").c_str(), (dir_ + "/key.pem").c_str());
    server_->Get("/tls",
                 [](const httplib::Request&, httplib::Response& res) { res.set_content("secure", "text/plain"); });
    port_ = server_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    for (int i = 0; i < 200 && !server_->is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  void TearDown() override {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
    (void)std::system(("rm -rf " + dir_).c_str());
  }
  std::string dir_;
  std::unique_ptr<httplib::SSLServer> server_;
  std::thread thread_;
  int port_ = 0;
};

TEST_F(HttpsTest, VerifiesThePeerAgainstTheCaBundle) {
  const std::string url = fmt::format("https://127.0.0.1:{}/tls", port_);
  auto untrusted = MakeTransport()->Send(MakeRequest("GET", url));
  ASSERT_FALSE(untrusted.ok()) << "a self-signed server was accepted without its certificate";
  EXPECT_EQ(untrusted.status().code(), ErrorCode::kUnavailable);

  auto trusted = MakeTransport({.ca_bundle = dir_ + "/cert.pem"})->Send(MakeRequest("GET", url));
  ASSERT_TRUE(trusted.ok()) << trusted.status().ToString();
  EXPECT_EQ(trusted->status, 200);
  EXPECT_EQ(trusted->body, "secure");
}

}  // namespace
}  // namespace dlq
