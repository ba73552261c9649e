// The HttpTransport contract, held by both transports against a loopback
// server: CurlTransport (the CLI and the daemon) and SocketTransport (the
// Lambda program). HEAD, large bodies passed through undecoded, connection
// reuse across threads, timeouts and refused connections as retryable
// kUnavailable errors that never show the query string, malformed requests
// refused, and cancellation. What is particular to one transport stays in
// curl_transport_test.cc and socket_transport_test.cc.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "aws/curl_transport.h"
#include "aws/socket_transport.h"
#include "common/crypto.h"
#include "unit/loopback_http_server.h"

namespace dlq {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Reply = LoopbackHttpServer::Reply;
using ServerRequest = LoopbackHttpServer::Request;
using std::chrono::milliseconds;

struct Timeouts {
  milliseconds connect{5000};
  milliseconds request{70000};
};

// The parameter names the transport under test.
class TransportContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<HttpTransport> Make(Timeouts t = {}) {
    std::unique_ptr<HttpTransport> out;
    if (GetParam() == "curl") {
      auto c = CurlTransport::Create({.connect_timeout = t.connect, .request_timeout = t.request});
      EXPECT_TRUE(c.ok()) << c.status().ToString();
      if (c.ok()) out = std::move(c).value();
    } else {
      auto h = SocketTransport::Create({.connect_timeout = t.connect, .request_timeout = t.request});
      EXPECT_TRUE(h.ok()) << h.status().ToString();
      if (h.ok()) out = std::move(h).value();
    }
    return out;
  }
};

INSTANTIATE_TEST_SUITE_P(Transports, TransportContractTest, ::testing::Values("curl", "socket"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST_P(TransportContractTest, HeadReturnsHeadersWithoutBody) {
  LoopbackHttpServer server([](const ServerRequest&) {
    return Reply{200, {{"ETag", "\"abc\""}, {"Content-Length", "1234"}}, ""};
  });
  auto transport = Make();
  auto response = transport->Send(MakeRequest("HEAD", server.base_url() + "/b/k"));
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(HeaderOf(response->headers, "etag"), "\"abc\"");
  EXPECT_EQ(HeaderOf(response->headers, "content-length"), "1234");
  EXPECT_TRUE(response->body.empty());
  EXPECT_EQ(server.requests().at(0).method, "HEAD");
}

// A stored .json.gz is served with Content-Encoding: gzip; the bytes must come
// back as stored, not decompressed.
TEST_P(TransportContractTest, RoundTripsOneMebibyteBodiesAndLeavesGzipEncoded) {
  std::string body(1 << 20, '\0');
  for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>((i * 2654435761u) >> 13);
  LoopbackHttpServer server([](const ServerRequest& r) {
    Reply reply = Echo(r);
    reply.headers.emplace_back("Content-Encoding", "gzip");
    return reply;
  });
  auto transport = Make();
  auto response = transport->Send(MakeRequest("PUT", server.base_url() + "/big", body));
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(server.requests().at(0).body.size(), body.size());
  EXPECT_EQ(Sha256Hex(server.requests().at(0).body), Sha256Hex(body));
  EXPECT_EQ(Sha256Hex(response->body), Sha256Hex(body));
}

// The request target is what was signed: libcurl removes "/./" and "/../"
// unless told not to, which sent a PUT signed for one bucket to another.
TEST_P(TransportContractTest, SendsThePathByteForByteAsSigned) {
  LoopbackHttpServer server(Echo);
  auto transport = Make();
  const std::string target = "/bucketa/../bucketb/./pwn//x/%2E%2E/y?list-type=2&prefix=a%2F..";
  auto response = transport->Send(MakeRequest("PUT", server.base_url() + target, "body"));
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(server.requests().at(0).target, target);
}

TEST_P(TransportContractTest, ReusesConnectionsAcrossThreads) {
  LoopbackHttpServer server(Echo);
  auto transport = Make();
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
  RecordProperty("distinct_connections", static_cast<int>(ports.size()));
  // One connection per thread at most, each used for many requests.
  EXPECT_LE(ports.size(), static_cast<size_t>(kThreads));
  EXPECT_LT(ports.size() * 20, seen.size());
}

TEST_P(TransportContractTest, ServerSlowerThanTimeoutIsUnavailableWithoutTheQuery) {
  LoopbackHttpServer server([](const ServerRequest& r) {
    std::this_thread::sleep_for(milliseconds(1500));
    return Echo(r);
  });
  auto transport = Make({.connect = milliseconds(100), .request = milliseconds(300)});
  auto start = std::chrono::steady_clock::now();
  auto response = transport->Send(MakeRequest("GET", server.base_url() + "/slow?X-Amz-Signature=deadbeef"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1200));
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), ErrorCode::kUnavailable);
  EXPECT_TRUE(response.status().retryable());
  EXPECT_THAT(response.status().message(), HasSubstr("GET http://127.0.0.1:"));
  EXPECT_THAT(response.status().message(), HasSubstr("/slow"));
  EXPECT_THAT(response.status().message(), Not(HasSubstr("deadbeef")));

  // A per-request timeout overrides the default.
  HttpRequest patient = MakeRequest("GET", server.base_url() + "/slow");
  patient.timeout = milliseconds(5000);
  auto ok = transport->Send(patient);
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
}

TEST_P(TransportContractTest, ClosedPortIsUnavailable) {
  int port;
  {
    LoopbackHttpServer server(Echo);
    port = server.port();
  }
  auto transport = Make();
  auto response = transport->Send(MakeRequest("GET", fmt::format("http://127.0.0.1:{}/x?token=s3cr3t", port)));
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), ErrorCode::kUnavailable);
  EXPECT_THAT(response.status().message(), HasSubstr(fmt::format("127.0.0.1:{}", port)));
  EXPECT_THAT(response.status().message(), Not(HasSubstr("s3cr3t")));
}

TEST_P(TransportContractTest, RejectsMalformedRequests) {
  auto transport = Make();
  EXPECT_EQ(transport->Send(MakeRequest("PATCH", "http://127.0.0.1:1/")).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(transport->Send(MakeRequest("GET", "ftp://127.0.0.1/")).status().code(), ErrorCode::kInvalidArgument);
  HttpRequest injected = MakeRequest("GET", "http://127.0.0.1:1/");
  injected.headers = {{"X-A", "1\r\nX-B: 2"}};
  EXPECT_EQ(transport->Send(injected).status().code(), ErrorCode::kInvalidArgument);
}

TEST_P(TransportContractTest, CancelAbandonsARequestInFlightAtOnce) {
  std::atomic<bool> release{false};
  LoopbackHttpServer server([&](const ServerRequest& r) {
    if (r.body == "long poll") {  // would answer only after 10 s
      for (int i = 0; i < 1000 && !release; ++i) std::this_thread::sleep_for(milliseconds(10));
    }
    return Reply{};
  });
  auto transport = Make();
  std::atomic<bool> cancel{false};
  HttpRequest r = MakeRequest("POST", server.base_url() + "/", "long poll");
  r.cancel = &cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(200));
    cancel = true;
  });
  auto start = std::chrono::steady_clock::now();
  auto got = transport->Send(r);
  auto took = std::chrono::steady_clock::now() - start;
  canceller.join();
  release = true;
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), ErrorCode::kCancelled) << got.status().ToString();
  EXPECT_FALSE(got.status().retryable());
  EXPECT_LT(took, std::chrono::seconds(3));
  // The transport still works afterwards.
  auto again = transport->Send(MakeRequest("POST", server.base_url() + "/", "{}"));
  EXPECT_TRUE(again.ok()) << again.status().ToString();
}

}  // namespace
}  // namespace dlq
