// SocketTransport (the Lambda program's transport, no libcurl or cpp-httplib)
// against a loopback server: what is its own (methods, response framings:
// length, chunked, until close; a peer that closes idle connections; the
// headers it adds; https with verification on: a self-signed server is
// refused until its certificate is the CA bundle; cpp-httplib's SSLServer
// serves it). The contract it shares with CurlTransport is in
// transport_contract_test.cc.
#include "aws/socket_transport.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <optional>
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

std::unique_ptr<SocketTransport> MakeTransport(TransportSettings settings = {}) {
  auto t = SocketTransport::Create(settings);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
}

TEST(SocketTransportTest, SendsEveryMethodWithBodyQueryAndHeaders) {
  LoopbackHttpServer server(Echo);
  auto transport = MakeTransport();
  for (const char* method : {"GET", "PUT", "POST", "DELETE"}) {
    HttpRequest r = MakeRequest(method, server.base_url() + "/a%20b/c?x=1&y=%2F", std::string(method) + " body");
    r.headers = {{"X-Echo", "hello"}, {"Content-Type", "application/x-amz-json-1.0"}};
    auto got = transport->Send(r);
    ASSERT_TRUE(got.ok()) << method << ": " << got.status().ToString();
    EXPECT_EQ(got->status, 200);
    EXPECT_EQ(HeaderOf(got->headers, "X-Method"), method);
    EXPECT_EQ(HeaderOf(got->headers, "X-Target"), "/a%20b/c?x=1&y=%2F");  // header values as received
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
TEST(SocketTransportTest, RejectsBadSettings) {
  EXPECT_FALSE(SocketTransport::Create({.request_timeout = std::chrono::milliseconds(0)}).ok());
  EXPECT_FALSE(SocketTransport::Create({.ca_bundle = "/nonexistent/ca.pem"}).ok());
}

// A server that answers each request with raw bytes from a script: for the
// framings and failures LoopbackHttpServer does not produce. The script gets
// the connection's number (from 0, in accept order) and the request's number
// on that connection, and returns the bytes to send (and whether to close the
// connection after them), or nullopt to close it without answering.
class RawServer {
 public:
  struct Answer {
    std::string bytes;
    bool close_after = false;
  };
  using Script = std::function<std::optional<Answer>(int conn, int request)>;
  explicit RawServer(Script script) : script_(std::move(script)) {
    listen_fd_ = ListenOnLoopback(&port_);
    thread_ = std::thread([this] { Run(); });
  }
  ~RawServer() {
    ::shutdown(listen_fd_, SHUT_RDWR);
    thread_.join();
    ::close(listen_fd_);
  }
  RawServer(const RawServer&) = delete;
  RawServer& operator=(const RawServer&) = delete;

  std::string url(std::string_view path) const { return fmt::format("http://127.0.0.1:{}{}", port_, path); }
  int connections() const { return connections_; }
  int requests() const { return requests_; }

 private:
  // One connection at a time: the transport under test sends one request at a time.
  void Run() {
    for (int conn = 0;; ++conn) {
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      ++connections_;
      std::string buf;
      for (int request = 0;; ++request) {
        size_t end;
        while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
          char chunk[4096];
          const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
          if (n <= 0) break;
          buf.append(chunk, static_cast<size_t>(n));
        }
        if (end == std::string::npos) break;
        buf.erase(0, end + 4);  // the tests' requests have no body
        ++requests_;
        const std::optional<Answer> answer = script_(conn, request);
        if (!answer) break;
        if (::send(fd, answer->bytes.data(), answer->bytes.size(), MSG_NOSIGNAL) < 0 || answer->close_after) break;
      }
      ::close(fd);
    }
  }

  Script script_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<int> connections_{0};
  std::atomic<int> requests_{0};
  std::thread thread_;
};

TEST(SocketTransportTest, ReadsChunkedBodiesAndReusesTheConnection) {
  RawServer server([](int, int request) -> std::optional<RawServer::Answer> {
    if (request == 0) {
      return RawServer::Answer{
          "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n"
          "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: t\r\n\r\n"};
    }
    return RawServer::Answer{"HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\ngone"};
  });
  auto transport = MakeTransport();
  auto first = transport->Send(MakeRequest("GET", server.url("/c")));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->status, 200) << "the interim 100 is skipped";
  EXPECT_EQ(first->body, "hello world");
  EXPECT_EQ(HeaderOf(first->headers, "X-A"), "1");
  auto second = transport->Send(MakeRequest("GET", server.url("/c")));
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->status, 404);
  EXPECT_EQ(second->body, "gone");
  EXPECT_EQ(server.connections(), 1);
}

TEST(SocketTransportTest, ReadsABodyUntilCloseAndDoesNotReuseThatConnection) {
  RawServer server([](int, int) -> std::optional<RawServer::Answer> {
    return RawServer::Answer{"HTTP/1.0 200 OK\r\nX-B: 2\r\n\r\nall of it, until the close", true};
  });
  auto transport = MakeTransport();
  for (int i = 0; i < 2; ++i) {
    auto got = transport->Send(MakeRequest("GET", server.url("/u")));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->body, "all of it, until the close");
  }
  EXPECT_EQ(server.connections(), 2);
}

TEST(SocketTransportTest, ResendsOnceOnANewConnectionWhenAKeptOneWasClosed) {
  // The first connection answers once, then closes on the next request
  // without answering: what a server's idle timeout looks like from here.
  RawServer server([](int conn, int request) -> std::optional<RawServer::Answer> {
    if (conn == 0 && request == 1) return std::nullopt;
    return RawServer::Answer{fmt::format("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nc{}", conn)};
  });
  auto transport = MakeTransport();
  auto first = transport->Send(MakeRequest("POST", server.url("/p")));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->body, "c0");
  auto second = transport->Send(MakeRequest("POST", server.url("/p")));
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->body, "c1");
  EXPECT_EQ(server.connections(), 2);
  EXPECT_EQ(server.requests(), 3) << "sent on the closed connection, then once more on a new one";
}

TEST(SocketTransportTest, AFreshConnectionClosedWithoutAnAnswerIsUnavailableAndNotResent) {
  RawServer server([](int, int) -> std::optional<RawServer::Answer> { return std::nullopt; });
  auto transport = MakeTransport();
  auto got = transport->Send(MakeRequest("POST", server.url("/p?Signature=s3cr3t")));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), ErrorCode::kUnavailable);
  EXPECT_THAT(got.status().message(), HasSubstr("connection closed before a response"));
  EXPECT_THAT(got.status().message(), Not(HasSubstr("s3cr3t")));
  EXPECT_EQ(server.requests(), 1);
}

TEST(SocketTransportTest, MalformedOrTruncatedResponsesAreUnavailable) {
  const std::pair<std::string, std::string> cases[] = {
      {"HTTP/1.1 2x0 OK\r\n\r\n", "malformed HTTP response"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "connection closed after 5 of 10 body bytes"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", "connection closed inside a chunked body"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "bad chunk size"},
      {"HTTP/1.1 200 OK\r\nContent-Le", "connection closed inside the response head"},
      {"HTTP/1.1 101 Switching Protocols\r\n\r\n", "protocol switch"},
      {"HTTP/1.1 200 OK\r\nX: " + std::string(70 * 1024, 'x'), "head longer than 64 KiB"},
  };
  for (const auto& [reply_bytes, why] : cases) {
    const std::string reply = reply_bytes;  // a copy the server's lambda can capture (clang 14)
    RawServer server([&](int, int) -> std::optional<RawServer::Answer> { return RawServer::Answer{reply, true}; });
    auto got = MakeTransport()->Send(MakeRequest("GET", server.url("/m")));
    ASSERT_FALSE(got.ok()) << "accepted: " << reply.substr(0, 80);
    EXPECT_EQ(got.status().code(), ErrorCode::kUnavailable);
    EXPECT_THAT(got.status().message(), HasSubstr(why));
    EXPECT_THAT(got.status().message(), HasSubstr("GET http://127.0.0.1:"));
  }
}

TEST(SocketTransportTest, AddsOnlyHostAndContentLength) {
  LoopbackHttpServer server(Echo);
  auto transport = MakeTransport();
  HttpRequest get = MakeRequest("GET", server.base_url() + "/g");
  get.headers = {{"X-Amz-Date", "20260101T000000Z"}};
  ASSERT_TRUE(transport->Send(get).ok());
  HttpRequest put = MakeRequest("PUT", server.base_url() + "/p");  // empty body: Content-Length: 0
  put.headers = {{"Host", "example.com"}};
  ASSERT_TRUE(transport->Send(put).ok());
  const auto seen = server.requests();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].headers,
            (HttpHeaders{{"X-Amz-Date", "20260101T000000Z"}, {"Host", fmt::format("127.0.0.1:{}", server.port())}}));
  EXPECT_EQ(seen[1].headers, (HttpHeaders{{"Host", "example.com"}, {"Content-Length", "0"}}));
}

// A self-signed certificate for 127.0.0.1 (openssl CLI), served by cpp-httplib's SSLServer on 127.0.0.1.
class HttpsTest : public ::testing::Test {
 protected:
  // The certificate's subjectAltName.
  virtual std::string Names() const { return "IP:127.0.0.1"; }

  void SetUp() override {
    dir_ = ::testing::TempDir() + "/socket-tls-" + std::to_string(::getpid());
    std::string cmd = "mkdir -p " + dir_ + " && openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=test " +
                      "-addext subjectAltName=" + Names() + " -keyout " + dir_ + "/key.pem -out " + dir_ +
                      "/cert.pem >/dev/null 2>&1";
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

TEST_F(HttpsTest, KeepsTlsConnectionsAndCarriesLargeBodies) {
  std::set<int> ports;
  std::mutex ports_mu;
  server_->Put("/echo", [&](const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard lock(ports_mu);
      ports.insert(req.remote_port);
    }
    res.set_content(req.body, "application/octet-stream");
  });
  auto transport = MakeTransport({.ca_bundle = dir_ + "/cert.pem"});
  std::string body(3 << 20, '\0');
  for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>((i * 2654435761u) >> 11);
  for (int i = 0; i < 3; ++i) {
    auto got = transport->Send(MakeRequest("PUT", fmt::format("https://127.0.0.1:{}/echo", port_), body));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->status, 200);
    EXPECT_EQ(Sha256Hex(got->body), Sha256Hex(body));
  }
  EXPECT_EQ(ports.size(), 1u) << "one TLS connection, kept alive";
}

TEST_F(HttpsTest, RefusesACertificateForAnotherName) {
  // The certificate names IP 127.0.0.1 only: trusted, but not for "localhost".
  auto got = MakeTransport({.ca_bundle = dir_ + "/cert.pem"})
                 ->Send(MakeRequest("GET", fmt::format("https://localhost:{}/tls", port_)));
  ASSERT_FALSE(got.ok()) << "a certificate for 127.0.0.1 was accepted for localhost";
  EXPECT_EQ(got.status().code(), ErrorCode::kUnavailable);
  EXPECT_THAT(got.status().message(), HasSubstr("not verified"));
}

// The same server with a certificate for the host name "localhost" only: the
// name is verified, and the bare address, not in the certificate, refused.
class HttpsByNameTest : public HttpsTest {
 protected:
  std::string Names() const override { return "DNS:localhost"; }
};

TEST_F(HttpsByNameTest, VerifiesAHostNameAndRefusesAnAddressNotInTheCertificate) {
  auto transport = MakeTransport({.ca_bundle = dir_ + "/cert.pem"});
  auto by_name = transport->Send(MakeRequest("GET", fmt::format("https://localhost:{}/tls", port_)));
  ASSERT_TRUE(by_name.ok()) << by_name.status().ToString();
  EXPECT_EQ(by_name->body, "secure");
  auto by_address = transport->Send(MakeRequest("GET", fmt::format("https://127.0.0.1:{}/tls", port_)));
  ASSERT_FALSE(by_address.ok()) << "a certificate for localhost was accepted for 127.0.0.1";
  EXPECT_THAT(by_address.status().message(), HasSubstr("not verified"));
}

}  // namespace
}  // namespace dlq
