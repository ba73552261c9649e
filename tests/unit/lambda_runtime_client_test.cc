// HttpRuntimeClient over the real curl transport against a loopback server
// playing the Lambda Runtime API.
#include <gtest/gtest.h>

#include "aws/curl_transport.h"
#include "common/time_util.h"
#include "lambda/runtime_client.h"
#include "unit/loopback_http_server.h"

namespace dlq {
namespace {

std::unique_ptr<CurlTransport> MakeCurl() {
  auto t = CurlTransport::Create();
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
}

TEST(HttpRuntimeClientTest, NextReadsTheInvocationHeaders) {
  LoopbackHttpServer server([](const LoopbackHttpServer::Request& r) {
    LoopbackHttpServer::Reply reply;
    EXPECT_EQ(r.method, "GET");
    EXPECT_EQ(r.target, "/2018-06-01/runtime/invocation/next");
    reply.headers = {{"Lambda-Runtime-Aws-Request-Id", "8476a536-e9f4-11e8-9739-2dfe598c3fcd"},
                     {"Lambda-Runtime-Deadline-Ms", "1542409706888"},
                     {"Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-2:123456789012:function:f"},
                     {"Lambda-Runtime-Trace-Id", "Root=1-5bef4de7-ad49b0e87f6ef6c87fc2e700;Sampled=1"}};
    reply.body = R"({"queues":["a"]})";
    return reply;
  });
  auto transport = MakeCurl();
  HttpRuntimeClient client(*transport, "127.0.0.1:" + std::to_string(server.port()));
  auto inv = client.Next();
  ASSERT_TRUE(inv.ok()) << inv.status().ToString();
  EXPECT_EQ(inv->request_id, "8476a536-e9f4-11e8-9739-2dfe598c3fcd");
  EXPECT_EQ(ToUnixMillis(inv->deadline), 1542409706888);
  EXPECT_EQ(inv->function_arn, "arn:aws:lambda:us-east-2:123456789012:function:f");
  EXPECT_EQ(inv->body, R"({"queues":["a"]})");
}

TEST(HttpRuntimeClientTest, NextWithoutDeadlineOrIdIsAnError) {
  for (const HttpHeaders& headers :
       {HttpHeaders{{"Lambda-Runtime-Aws-Request-Id", "r"}},
        HttpHeaders{{"Lambda-Runtime-Deadline-Ms", "1542409706888"}},
        HttpHeaders{{"Lambda-Runtime-Aws-Request-Id", "r"}, {"Lambda-Runtime-Deadline-Ms", "soon"}}}) {
    LoopbackHttpServer server([&](const LoopbackHttpServer::Request&) {
      LoopbackHttpServer::Reply reply;
      reply.headers = headers;
      return reply;
    });
    auto transport = MakeCurl();
    HttpRuntimeClient client(*transport, "127.0.0.1:" + std::to_string(server.port()));
    auto inv = client.Next();
    ASSERT_FALSE(inv.ok());
    EXPECT_EQ(inv.status().code(), ErrorCode::kInvalidArgument) << inv.status().ToString();
  }
}

TEST(HttpRuntimeClientTest, PostsResponsesAndErrorsWhereTheApiSays) {
  LoopbackHttpServer server([](const LoopbackHttpServer::Request& r) {
    LoopbackHttpServer::Reply reply;
    reply.status = r.target == "/2018-06-01/runtime/invocation/bad/response" ? 413 : 202;
    return reply;
  });
  auto transport = MakeCurl();
  HttpRuntimeClient client(*transport, "127.0.0.1:" + std::to_string(server.port()));
  EXPECT_TRUE(client.Respond("r1", R"({"ok":true})").ok());
  EXPECT_TRUE(client.ReportError("r2", "DlqArchive.InvalidEvent", "event is not valid JSON").ok());
  EXPECT_TRUE(client.ReportInitError("DlqArchive.InvalidConfig", "DLQ_ARCHIVE_DESTINATION is not set").ok());
  Status rejected = client.Respond("bad", "x");
  EXPECT_FALSE(rejected.ok());
  EXPECT_NE(rejected.message().find("413"), std::string::npos);

  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 4u);
  EXPECT_EQ(reqs[0].target, "/2018-06-01/runtime/invocation/r1/response");
  EXPECT_EQ(reqs[0].body, R"({"ok":true})");
  EXPECT_EQ(reqs[1].target, "/2018-06-01/runtime/invocation/r2/error");
  EXPECT_EQ(reqs[1].body,
            R"({"errorMessage":"event is not valid JSON","errorType":"DlqArchive.InvalidEvent","stackTrace":[]})");
  const std::string* type = FindHeader(reqs[1].headers, "Lambda-Runtime-Function-Error-Type");
  ASSERT_NE(type, nullptr);
  EXPECT_EQ(*type, "DlqArchive.InvalidEvent");
  EXPECT_EQ(reqs[2].target, "/2018-06-01/runtime/init/error");
}

TEST(HttpRuntimeClientTest, UnreachableApiIsUnavailable) {
  int port;
  {
    LoopbackHttpServer server([](const LoopbackHttpServer::Request&) { return LoopbackHttpServer::Reply{}; });
    port = server.port();
  }
  auto transport = MakeCurl();
  HttpRuntimeClient client(*transport, "127.0.0.1:" + std::to_string(port));
  auto inv = client.Next();
  ASSERT_FALSE(inv.ok());
  EXPECT_EQ(inv.status().code(), ErrorCode::kUnavailable) << inv.status().ToString();
}

}  // namespace
}  // namespace dlq
