#include "aws/curl_transport.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "aws/aws_client.h"
#include "aws/sigv4.h"
#include "common/crypto.h"
#include "common/strings.h"
#include "common/time_util.h"
#include "testing/fake_clock.h"
#include "unit/loopback_http_server.h"

namespace dlq {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Reply = LoopbackHttpServer::Reply;
using ServerRequest = LoopbackHttpServer::Request;

std::unique_ptr<CurlTransport> MakeTransport(CurlTransportOptions options = {}) {
  auto t = CurlTransport::Create(std::move(options));
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
}

TEST(CurlTransportTest, SendsEveryMethodWithBodyAndHeaders) {
  LoopbackHttpServer server(Echo);
  auto transport = MakeTransport();
  for (std::string method : {"GET", "PUT", "POST", "DELETE"}) {
    std::string body = method == "GET" ? "" : "payload for " + method;
    HttpRequest r = MakeRequest(method, server.base_url() + "/bucket/key%20x?list-type=2&prefix=a%2Fb", body);
    r.headers = {{"X-Echo", "v-" + method}, {"X-Empty", ""}};
    auto response = transport->Send(r);
    ASSERT_TRUE(response.ok()) << response.status().ToString();
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->body, body) << method;
    EXPECT_EQ(HeaderOf(response->headers, "X-Method"), method);
    EXPECT_EQ(HeaderOf(response->headers, "X-Target"), "/bucket/key%20x?list-type=2&prefix=a%2Fb");
    EXPECT_EQ(HeaderOf(response->headers, "x-echo"), "v-" + method);
  }
  auto seen = server.requests();
  ASSERT_EQ(seen.size(), 4u);
  for (const auto& r : seen) {
    ASSERT_NE(FindHeader(r.headers, "X-Empty"), nullptr) << r.method;
    EXPECT_EQ(HeaderOf(r.headers, "X-Empty"), "");
  }
  EXPECT_EQ(HeaderOf(seen[1].headers, "Content-Length"), std::to_string(seen[1].body.size()));
}

// Handles are reused without curl_easy_reset: nothing of one request (method,
// body, NOBODY, cancel flag, timeout) may leak into the next one on the same
// handle (max_connections 1: one handle for all).
TEST(CurlTransportTest, OneHandleCarriesNothingOverBetweenRequests) {
  LoopbackHttpServer server([](const ServerRequest& r) {
    if (r.target == "/slow") std::this_thread::sleep_for(std::chrono::milliseconds(300));
    Reply reply = Echo(r);
    reply.headers.emplace_back("X-Length", HeaderOf(r.headers, "Content-Length"));
    if (r.method != "HEAD" && r.body.empty()) reply.body = "from-" + r.method;
    return reply;
  });
  CurlTransportOptions options;
  options.max_connections = 1;
  auto transport = MakeTransport(options);
  std::atomic<bool> cancel{false};
  struct Step {
    std::string method, body, expect_body;
    bool with_cancel = false;
  };
  const std::string big(100 * 1024, 'b');  // more than one receive buffer
  const std::vector<Step> steps = {
      {"PUT", big, big, true},       {"HEAD", "", ""}, {"GET", "", "from-GET"},  {"POST", "post-body", "post-body"},
      {"DELETE", "", "from-DELETE"}, {"HEAD", "", ""}, {"DELETE", "del", "del"}, {"GET", "", "from-GET"},
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    HttpRequest r = MakeRequest(step.method, server.base_url() + "/s" + std::to_string(i), step.body);
    if (step.with_cancel) r.cancel = &cancel;
    auto response = transport->Send(r);
    ASSERT_TRUE(response.ok()) << i << " " << response.status().ToString();
    EXPECT_EQ(HeaderOf(response->headers, "X-Method"), step.method) << i;
    EXPECT_EQ(response->body, step.expect_body) << i;
    const ServerRequest seen = server.requests().at(i);
    EXPECT_EQ(seen.method, step.method) << i;
    EXPECT_EQ(seen.body, step.body) << i;
    if (step.method == "GET" || step.method == "HEAD" || (step.method == "DELETE" && step.body.empty())) {
      EXPECT_EQ(FindHeader(seen.headers, "Content-Length"), nullptr) << i;
    }
  }
  // The cancel flag of the first request is not watched by later ones.
  cancel = true;
  auto after = transport->Send(MakeRequest("GET", server.base_url() + "/after"));
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->body, "from-GET");
  // A short timeout applies to its request only.
  HttpRequest slow = MakeRequest("GET", server.base_url() + "/slow");
  slow.timeout = std::chrono::milliseconds(100);
  auto timed_out = transport->Send(slow);
  ASSERT_FALSE(timed_out.ok());
  EXPECT_EQ(timed_out.status().code(), ErrorCode::kUnavailable);
  auto slow_ok = transport->Send(MakeRequest("GET", server.base_url() + "/slow"));
  ASSERT_TRUE(slow_ok.ok()) << slow_ok.status().ToString();
  EXPECT_EQ(slow_ok->body, "from-GET");
}

TEST(CurlTransportTest, AddsNoHeadersOfItsOwn) {
  LoopbackHttpServer server(Echo);
  auto transport = MakeTransport();
  HttpRequest r = MakeRequest("POST", server.base_url() + "/", std::string(4096, 'x'));  // big enough for Expect
  r.headers = {{"X-Amz-Target", "AmazonSQS.ReceiveMessage"}};
  ASSERT_TRUE(transport->Send(r).ok());
  const HttpHeaders headers = server.requests().at(0).headers;
  EXPECT_EQ(FindHeader(headers, "Expect"), nullptr);
  EXPECT_EQ(FindHeader(headers, "Accept"), nullptr);
  EXPECT_EQ(FindHeader(headers, "Content-Type"), nullptr);
  EXPECT_EQ(FindHeader(headers, "User-Agent"), nullptr);
  EXPECT_EQ(FindHeader(headers, "Transfer-Encoding"), nullptr);
  EXPECT_EQ(HeaderOf(headers, "Content-Length"), "4096");

  // Given ones are sent as they are.
  r.headers = {{"Content-Type", "application/x-amz-json-1.0"}, {"Accept", "application/json"}};
  ASSERT_TRUE(transport->Send(r).ok());
  EXPECT_EQ(HeaderOf(server.requests().at(1).headers, "Content-Type"), "application/x-amz-json-1.0");
  EXPECT_EQ(HeaderOf(server.requests().at(1).headers, "Accept"), "application/json");
}

// (Malformed requests: transport_contract_test.cc.)
// With a proxy variable in effect for the URL's scheme, a connection failure
// names the variable (curl's own text names only a host and port, which reads
// like the endpoint's); for the other scheme, or without one, it does not.
TEST(CurlTransportTest, AConnectionFailureNamesTheProxyVariableInEffect) {
  CurlTransportOptions options;
  options.proxy_variable_http = "http_proxy";
  auto transport = MakeTransport(options);
  const std::string url = fmt::format("http://127.0.0.1:{}/", RefusingLoopbackPort());
  auto failed = transport->Send(MakeRequest("POST", url, "{}"));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), ErrorCode::kUnavailable);
  EXPECT_THAT(failed.status().message(), HasSubstr("(curl error 7)"));
  EXPECT_THAT(failed.status().message(), HasSubstr("through the proxy in http_proxy unless NO_PROXY exempts"));
  EXPECT_THAT(failed.status().message(), HasSubstr("DLQ_HTTP_CLIENT=builtin"));

  CurlTransportOptions https_only;
  https_only.proxy_variable_https = "HTTPS_PROXY";
  auto direct = MakeTransport(https_only)->Send(MakeRequest("POST", url, "{}"));
  ASSERT_FALSE(direct.ok());
  EXPECT_THAT(direct.status().message(), Not(HasSubstr("proxy"))) << "http URLs do not use HTTPS_PROXY";
  auto plain = MakeTransport()->Send(MakeRequest("POST", url, "{}"));
  ASSERT_FALSE(plain.ok());
  EXPECT_THAT(plain.status().message(), Not(HasSubstr("proxy")));
}

// libcurl is loaded on first use; a library that is not there (or not
// libcurl) is one error naming it and what to install or unset.
TEST(CurlTransportTest, LibcurlLoadsOnDemandAndAMissingOneSaysWhatToDo) {
  EXPECT_TRUE(ProbeLibcurl().ok()) << ProbeLibcurl().ToString();
  Status missing = ProbeLibcurl("libcurl-not-installed.so.4");
  EXPECT_EQ(missing.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(missing.message(), HasSubstr("libcurl (libcurl-not-installed.so.4) could not be loaded"));
  EXPECT_THAT(missing.message(), HasSubstr("Debian: libcurl4"));
  EXPECT_THAT(missing.message(), HasSubstr("unset the proxy variables"));
  Status not_curl = ProbeLibcurl("libz.so.1");
  EXPECT_EQ(not_curl.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(not_curl.message(), HasSubstr("libcurl (libz.so.1) lacks curl_global_init"));
}

TEST(CurlTransportTest, RejectsBadOptions) {
  EXPECT_TRUE(CurlTransportOptions{}.Validate().ok());
  EXPECT_FALSE(CurlTransportOptions{.max_connections = 0}.Validate().ok());
  EXPECT_FALSE(CurlTransportOptions{.request_timeout = std::chrono::milliseconds(0)}.Validate().ok());
  EXPECT_FALSE(CurlTransportOptions{.ca_bundle = "/nonexistent/ca.pem"}.Validate().ok());
  EXPECT_FALSE(CurlTransport::Create({.max_connections = -1}).ok());
}

// ---- AwsClient + CurlTransport + SignRequest end to end ----

constexpr char kAccessKey[] = "AKIDEXAMPLE";
constexpr char kSecret[] = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
constexpr char kToken[] = "IQoJb3JpZ2luX2VjEXAMPLETOKEN";

Credentials TestCredentials() {
  Credentials c;
  c.access_key_id = kAccessKey;
  c.secret_access_key = kSecret;
  c.session_token = kToken;
  return c;
}

// HMAC-SHA256 chain and hex, written out here so the expected signature does
// not come from the signer under test.
std::string HmacHex(std::string_view key, std::string_view data) {
  return HexEncode(HmacSha256(key, data));
}
std::string Raw(const Sha256Digest& d) {
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

TEST(SignedCallTest, ServerReceivesExactSigV4Headers) {
  LoopbackHttpServer server([](const ServerRequest&) { return Reply{200, {}, R"({"Messages":[]})"}; });
  auto transport = MakeTransport();
  StaticCredentialsProvider creds(TestCredentials());
  FakeClock clock(SystemTime(std::chrono::seconds(1700000000)));  // 2023-11-14T22:13:20Z
  AwsClient client({"sqs", "us-east-1", server.base_url()}, *transport, creds, clock);

  AwsRequest request;
  request.operation = "ReceiveMessage";
  request.headers = {{"Content-Type", "application/x-amz-json-1.0"}, {"X-Amz-Target", "AmazonSQS.ReceiveMessage"}};
  request.body = R"({"QueueUrl":"http://127.0.0.1/000000000000/dlq","MaxNumberOfMessages":10})";
  auto result = client.Call(request);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->body, R"({"Messages":[]})");

  ASSERT_EQ(server.requests().size(), 1u);
  const ServerRequest got = server.requests()[0];
  const std::string host = fmt::format("127.0.0.1:{}", server.port());
  EXPECT_EQ(got.method, "POST");
  EXPECT_EQ(got.target, "/");
  EXPECT_EQ(got.body, request.body);
  EXPECT_EQ(HeaderOf(got.headers, "Host"), host);
  EXPECT_EQ(HeaderOf(got.headers, "X-Amz-Date"), "20231114T221320Z");
  EXPECT_EQ(HeaderOf(got.headers, "X-Amz-Security-Token"), kToken);
  EXPECT_EQ(FindHeader(got.headers, "x-amz-content-sha256"), nullptr);  // SQS does not use it

  const std::string canonical_request = fmt::format(
      "POST\n/\n\n"
      "content-type:application/x-amz-json-1.0\nhost:{}\nx-amz-date:20231114T221320Z\n"
      "x-amz-security-token:{}\nx-amz-target:AmazonSQS.ReceiveMessage\n\n"
      "content-type;host;x-amz-date;x-amz-security-token;x-amz-target\n{}",
      host, kToken, Sha256Hex(request.body));
  const std::string string_to_sign =
      "AWS4-HMAC-SHA256\n20231114T221320Z\n20231114/us-east-1/sqs/aws4_request\n" + Sha256Hex(canonical_request);
  std::string key = Raw(HmacSha256(std::string("AWS4") + kSecret, "20231114"));
  key = Raw(HmacSha256(key, "us-east-1"));
  key = Raw(HmacSha256(key, "sqs"));
  key = Raw(HmacSha256(key, "aws4_request"));
  EXPECT_EQ(HeaderOf(got.headers, "Authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20231114/us-east-1/sqs/aws4_request, "
            "SignedHeaders=content-type;host;x-amz-date;x-amz-security-token;x-amz-target, Signature=" +
                HmacHex(key, string_to_sign));
}

TEST(SignedCallTest, S3PutCarriesPayloadHashAndVerifies) {
  LoopbackHttpServer server([](const ServerRequest&) { return Reply{200, {{"ETag", "\"e\""}}, ""}; });
  auto transport = MakeTransport();
  StaticCredentialsProvider creds(TestCredentials());
  FakeClock clock(SystemTime(std::chrono::seconds(1700000000)));
  AwsClient client({"s3", "eu-west-1", server.base_url(), /*s3=*/true}, *transport, creds, clock);

  // The body as a string, and as a view of the caller's bytes (uploads are not copied).
  const std::string payload = "gzipped bytes";
  for (auto [unsigned_payload, by_view] : {std::pair{false, false}, {true, false}, {false, true}, {true, true}}) {
    SCOPED_TRACE(fmt::format("unsigned_payload={} by_view={}", unsigned_payload, by_view));
    AwsRequest request;
    request.operation = "PutObject";
    request.method = "PUT";
    request.path = "/archive/dlq-archive/orders%20dlq/20231114/batch.json.gz";
    request.headers = {{"Content-Type", "application/gzip"},
                       {"Content-MD5", Base64Encode(Md5("gzipped bytes"))},
                       {"If-None-Match", "*"}};
    if (by_view) {
      request.body_view = payload;
    } else {
      request.body = payload;
    }
    request.unsigned_payload = unsigned_payload;
    auto result = client.Call(request);
    ASSERT_TRUE(result.ok()) << result.status().ToString();

    const ServerRequest got = server.requests().back();
    EXPECT_EQ(got.target, request.path);
    EXPECT_EQ(got.body, payload);
    EXPECT_EQ(HeaderOf(got.headers, "x-amz-content-sha256"),
              unsigned_payload ? "UNSIGNED-PAYLOAD" : Sha256Hex("gzipped bytes"));
    EXPECT_EQ(HeaderOf(got.headers, "X-Amz-Date"), "20231114T221320Z");
    EXPECT_EQ(HeaderOf(got.headers, "X-Amz-Security-Token"), kToken);

    // Verify as S3 would: recompute the signature over what arrived.
    HttpRequest received;
    received.method = got.method;
    received.url = server.base_url() + got.target;
    received.body = got.body;
    for (const auto& [k, v] : got.headers) {
      if (!IEquals(k, "Authorization") && !IEquals(k, "Content-Length")) received.headers.emplace_back(k, v);
    }
    SigningOptions options;
    options.region = "eu-west-1";
    options.service = "s3";
    options.time = clock.Now();
    options.s3 = true;
    options.unsigned_payload = unsigned_payload;
    SigningStages stages = ComputeHeaderSignature(received, TestCredentials(), options);
    EXPECT_EQ(stages.signed_headers,
              "content-md5;content-type;host;if-none-match;x-amz-content-sha256;x-amz-date;x-amz-security-token");
    EXPECT_EQ(HeaderOf(got.headers, "Authorization"),
              "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20231114/eu-west-1/s3/aws4_request, SignedHeaders=" +
                  stages.signed_headers + ", Signature=" + stages.signature);
  }
}

TEST(SignedCallTest, ErrorFromRealServerIsClassifiedWithoutSecrets) {
  LoopbackHttpServer server([](const ServerRequest&) {
    return Reply{400,
                 {{"x-amzn-RequestId", "6fde8d1e-52cd-4581-8cd9-c512f4c64223"},
                  {"x-amzn-query-error", "AWS.SimpleQueueService.NonExistentQueue;Sender"},
                  {"Content-Type", "application/x-amz-json-1.0"}},
                 R"({"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"The specified queue does not exist."})"};
  });
  auto transport = MakeTransport();
  StaticCredentialsProvider creds(TestCredentials());
  FakeClock clock;
  AwsClient client({"sqs", "us-east-1", server.base_url()}, *transport, creds, clock);
  AwsRequest request;
  request.operation = "ReceiveMessage";
  request.resource = server.base_url() + "/000000000000/missing";
  auto result = client.Call(request);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(result.status().message(),
            "ReceiveMessage " + request.resource + ": QueueDoesNotExist: The specified queue does not exist.");
  EXPECT_EQ(result.status().aws()->request_id, "6fde8d1e-52cd-4581-8cd9-c512f4c64223");
  EXPECT_THAT(result.status().ToString(), Not(HasSubstr(kSecret)));
  EXPECT_THAT(result.status().ToString(), Not(HasSubstr(kToken)));
  EXPECT_EQ(server.requests().size(), 1u);
}

}  // namespace
}  // namespace dlq

namespace dlq {
namespace {}  // namespace
}  // namespace dlq
