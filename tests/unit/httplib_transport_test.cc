// HttplibTransport (the Lambda program's transport, no libcurl) against a
// loopback server: what is its own (methods with percent-decoded response
// headers, settings, https with verification on: a self-signed server is
// refused until its certificate is the CA bundle). The contract it shares
// with CurlTransport is in transport_contract_test.cc.
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

std::unique_ptr<HttplibTransport> MakeTransport(TransportSettings settings = {}) {
  auto t = HttplibTransport::Create(settings);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
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

// (Malformed requests: transport_contract_test.cc.)
TEST(HttplibTransportTest, RejectsBadSettings) {
  EXPECT_FALSE(HttplibTransport::Create({.request_timeout = std::chrono::milliseconds(0)}).ok());
  EXPECT_FALSE(HttplibTransport::Create({.ca_bundle = "/nonexistent/ca.pem"}).ok());
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
