// The fake Lambda stand-in (scripts/stand-ins start moto fake-lambda; see
// doc/development.md, "The fake Lambda"): its endpoint, its control API
// (outcome rules, the invocations it saw) and a function made through it.
// Services(fake_lambda_stand_in) reach Lambda at the fake and everything else
// at moto, as AWS_ENDPOINT_URL_LAMBDA and AWS_ENDPOINT_URL say in its env file.
//
// The fake is shared by every test process of a run: pass `function` to
// scope rules and invocations to a function only this test uses.
#pragma once

#include <gtest/gtest.h>
#include <simdjson.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "aws/default_transport.h"
#include "aws/http.h"
#include "common/json_writer.h"
#include "common/strings.h"
#include "harness.h"
#include "lambda_api/lambda_api.h"
#include "moto_fixtures.h"

namespace dlq::it {

// http://127.0.0.1:PORT of the running fake Lambda; empty when it is not running.
inline std::string FakeLambdaEndpoint() {
  StandIn s;
  if (!LoadStandIn("fake-lambda", s)) return "";
  auto it = s.env.find("AWS_ENDPOINT_URL_LAMBDA");
  return it == s.env.end() ? "" : it->second;
}

// One call to the fake's control API; fails the test and returns "" unless it answers 200.
inline std::string FakeLambdaControl(const std::string& method, const std::string& path_and_query,
                                     const std::string& body = "") {
  static std::unique_ptr<HttpTransport> transport = [] {
    auto t = MakeDefaultTransport(TransportSettings{});
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? std::move(*t) : nullptr;
  }();
  const std::string endpoint = FakeLambdaEndpoint();
  EXPECT_FALSE(endpoint.empty()) << "the fake-lambda stand-in is not running";
  if (endpoint.empty() || !transport) return "";
  HttpRequest request;
  request.method = method;
  request.url = endpoint + path_and_query;
  if (!body.empty()) request.headers = {{"Content-Type", "application/json"}};
  request.body = body;
  auto response = transport->Send(request);
  EXPECT_TRUE(response.ok()) << method << " " << path_and_query << ": " << response.status().ToString();
  if (!response.ok()) return "";
  EXPECT_EQ(response->status, 200) << method << " " << path_and_query << ": " << response->body;
  return response->status == 200 ? response->body : "";
}

inline std::string FunctionQuery(const std::string& function) {
  return function.empty() ? "" : "?function=" + UriEncode(function);
}

// Replaces the outcome rules: `json` is {"rules":[{"function":"name or *",
// "fail_if_contains":"text","error_type":"Error","error_message":"...",
// "throttle_first":N}]}. With `function`, only that function's rules are
// replaced (each rule is then for it, whatever its "function").
inline void SetLambdaRules(const std::string& json, const std::string& function = "") {
  FakeLambdaControl("POST", "/_fake/rules" + FunctionQuery(function), json);
}

// No rules (of `function`, when given): every invocation succeeds.
inline void ClearLambdaRules(const std::string& function = "") {
  FakeLambdaControl("DELETE", "/_fake/rules" + FunctionQuery(function));
}

struct LambdaInvocation {
  std::string function;  // the function's name, whatever name or ARN was invoked
  std::string qualifier;
  std::string type;  // "Event", "RequestResponse", "DryRun"
  std::string payload;
  std::string request_id;
  // "ok", "failed", "throttled", "dry-run", "too-large", "not-found", "invalid-request", "error"
  std::string outcome;
  std::string sent_to;        // the queue URL a failed Event went to; empty when none
  std::string sent_as;        // "dead-letter", "destination-record", "discarded"; empty when not failed Event
  std::string error_message;  // of a failed invocation
};

// The invocations the fake saw (of `function`, when given), oldest first.
inline std::vector<LambdaInvocation> LambdaInvocations(const std::string& function = "") {
  std::vector<LambdaInvocation> out;
  const std::string body = FakeLambdaControl("GET", "/_fake/invocations" + FunctionQuery(function));
  if (body.empty()) return out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(body).get(doc) != simdjson::SUCCESS || !doc.is_array()) {
    ADD_FAILURE() << "GET /_fake/invocations: not a JSON array: " << body;
    return out;
  }
  for (simdjson::dom::element e : doc.get_array()) {
    auto text = [&](const char* key) {
      std::string_view v;
      return e[key].get(v) == simdjson::SUCCESS ? std::string(v) : std::string();
    };
    out.push_back({text("function"), text("qualifier"), text("type"), text("payload"), text("request_id"),
                   text("outcome"), text("sent_to"), text("sent_as"), text("error_message")});
  }
  return out;
}

// Forgets the invocations seen (of `function`, when given).
inline void ClearLambdaInvocations(const std::string& function = "") {
  FakeLambdaControl("DELETE", "/_fake/invocations" + FunctionQuery(function));
}

// Creates a function through the fake (which then keeps its DeadLetterConfig,
// as moto 5.2.1 does not), with a dead-letter queue when `dead_letter_arn` is
// not empty; returns its ARN. `lambda_aws` must be built on the fake's endpoint.
inline std::string CreateFakeLambdaFunction(AwsClient& lambda_aws, const std::string& name, const std::string& role_arn,
                                            const std::string& dead_letter_arn = "") {
  JsonWriter fn;
  fn.BeginObject().Key("FunctionName").String(name).Key("Runtime").String("python3.12");
  fn.Key("Role").String(role_arn).Key("Handler").String("app.handler");
  fn.Key("Code").BeginObject().Key("ZipFile").String(ZipBase64()).EndObject();
  if (!dead_letter_arn.empty())
    fn.Key("DeadLetterConfig").BeginObject().Key("TargetArn").String(dead_letter_arn).EndObject();
  fn.EndObject();
  const std::string reply = LambdaCall(lambda_aws, "POST", "/2015-03-31/functions", fn.Take());
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  std::string_view arn;
  if (parser.parse(reply).get(doc) != simdjson::SUCCESS || doc["FunctionArn"].get(arn) != simdjson::SUCCESS) {
    ADD_FAILURE() << "CreateFunction " << name << ": no FunctionArn in " << reply;
    return "";
  }
  return std::string(arn);
}

// A test against moto through the fake Lambda's environment (skipped, or
// failed under DLQ_REQUIRE_STAND_INS, when it is not running): the services,
// a Lambda client on the fake, a unique base name from `prefix` and an IAM
// role for the functions it makes. A subclass's SetUp calls this one first and
// returns when IsSkipped() or HasFatalFailure().
class FakeLambdaFixture : public ::testing::Test {
 protected:
  explicit FakeLambdaFixture(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    if (!LoadStandIn("fake-lambda", fake_)) {
      if (std::getenv("DLQ_REQUIRE_STAND_INS")) FAIL() << "stand-in fake-lambda is not running";
      GTEST_SKIP() << "stand-in fake-lambda not running (scripts/stand-ins start moto fake-lambda)";
    }
    svc_ = Services(fake_);
    ASSERT_TRUE(svc_);
    ASSERT_EQ(svc_->settings().Endpoint("lambda").endpoint, FakeLambdaEndpoint());
    lambda_aws_ = std::make_unique<AwsClient>(svc_->settings().Endpoint("lambda"), svc_->transport(),
                                              svc_->credentials(), DefaultClock());
    lambda_ = std::make_unique<AwsLambdaApi>(*lambda_aws_);
    base_ = UniqueName(prefix_);
    role_arn_ = CreateRole(*svc_, fake_.endpoint(), base_ + "-role");
    ASSERT_FALSE(role_arn_.empty());
  }

  StandIn fake_;
  std::unique_ptr<AwsServices> svc_;
  std::unique_ptr<AwsClient> lambda_aws_;
  std::unique_ptr<AwsLambdaApi> lambda_;
  std::string base_, role_arn_;

 private:
  std::string prefix_;
};

}  // namespace dlq::it
