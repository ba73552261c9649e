#include "lambda_api/lambda_api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lambda_api/lambda_codec.h"
#include "testing/fake_clock.h"
#include "testing/fake_http.h"
#include "testing/fake_lambda_api.h"

namespace dlq {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kQueueArn[] = "arn:aws:sqs:us-east-1:123456789012:orders";
constexpr char kFunctionArn[] = "arn:aws:lambda:us-east-1:123456789012:function:orders-worker";

std::string HeaderOf(const HttpRequest& r, std::string_view name) {
  const std::string* v = FindHeader(r.headers, name);
  return v ? *v : std::string();
}

// Lambda's REST-JSON errors: the type in x-amzn-ErrorType, {"Type","Message"} in the body.
HttpResponse RestError(int status, const std::string& type, const std::string& message) {
  return MakeResponse(status, R"({"Type":"User","Message":")" + message + R"("})",
                      {{"x-amzn-ErrorType", type + ":http://internal.amazon.com/coral/com.amazonaws.lambda/"},
                       {"x-amzn-RequestId", "req-lambda-1"}});
}

constexpr char kFunctionJson[] = R"({"FunctionName":"orders-worker",
  "FunctionArn":"arn:aws:lambda:us-east-1:123456789012:function:orders-worker","Runtime":"python3.12",
  "Role":"arn:aws:iam::123456789012:role/worker","Handler":"app.handler","CodeSize":312,"Timeout":30,
  "MemorySize":512,"Version":"$LATEST","DeadLetterConfig":{"TargetArn":"arn:aws:sqs:us-east-1:123456789012:async-dlq"},
  "LoggingConfig":{"LogFormat":"JSON","ApplicationLogLevel":"INFO","SystemLogLevel":"WARN","LogGroup":"/custom/orders"},
  "TracingConfig":{"Mode":"PassThrough"},"State":"Active","LastUpdateStatus":"Successful"})";

class LambdaApiTest : public ::testing::Test {
 protected:
  explicit LambdaApiTest(RetryOptions retry = RetryOptions{.max_attempts = 1})
      : creds_(Credentials{"AKIDEXAMPLE", "secret", "", std::nullopt, "test"}),
        aws_(ServiceEndpoint{"lambda", "us-east-1", "https://lambda.us-east-1.amazonaws.com", false}, http_, creds_,
             clock_, retry),
        lambda_(aws_) {}

  FakeHttpTransport http_;
  StaticCredentialsProvider creds_;
  FakeClock clock_;
  AwsClient aws_;
  AwsLambdaApi lambda_;
};

class LambdaApiRetryTest : public LambdaApiTest {
 protected:
  LambdaApiRetryTest() : LambdaApiTest(RetryOptions{.max_attempts = 4}) {}
};

TEST_F(LambdaApiTest, ListEventSourceMappingsGetsByEventSourceArnAndFollowsNextMarker) {
  http_.SetHandler([](const HttpRequest& r) -> Result<HttpResponse> {
    if (r.url.find("Marker=") == std::string::npos) {
      return MakeResponse(200, R"({"EventSourceMappings":[{"UUID":"u-1","BatchSize":10,
        "EventSourceArn":"arn:aws:sqs:us-east-1:123456789012:orders",
        "FunctionArn":"arn:aws:lambda:us-east-1:123456789012:function:orders-worker","State":"Enabled",
        "FunctionResponseTypes":["ReportBatchItemFailures"],"LastProcessingResult":null}],"NextMarker":"m/2"})");
    }
    return MakeResponse(200, R"({"EventSourceMappings":[{"UUID":"u-2","State":"Disabled",
        "EventSourceArn":"arn:aws:sqs:us-east-1:123456789012:orders",
        "FunctionArn":"arn:aws:lambda:us-east-1:123456789012:function:audit","FunctionResponseTypes":null}]})");
  });

  auto mappings = lambda_.ListEventSourceMappings(kQueueArn);

  ASSERT_TRUE(mappings.ok()) << mappings.status().ToString();
  ASSERT_EQ(http_.calls(), 2);
  const auto requests = http_.requests();
  EXPECT_EQ(requests[0].method, "GET");
  EXPECT_EQ(requests[0].url,
            "https://lambda.us-east-1.amazonaws.com/2015-03-31/event-source-mappings/"
            "?EventSourceArn=arn%3Aaws%3Asqs%3Aus-east-1%3A123456789012%3Aorders&MaxItems=100");
  EXPECT_THAT(requests[1].url, HasSubstr("&Marker=m%2F2&MaxItems=100"));
  EXPECT_THAT(HeaderOf(requests[0], "Authorization"), HasSubstr("/us-east-1/lambda/aws4_request"));
  ASSERT_EQ(mappings->size(), 2u);
  const EventSourceMapping& m = (*mappings)[0];
  EXPECT_EQ(m.uuid, "u-1");
  EXPECT_EQ(m.function_arn, kFunctionArn);
  EXPECT_EQ(m.event_source_arn, kQueueArn);
  EXPECT_EQ(m.state, "Enabled");
  EXPECT_EQ(m.batch_size, 10);
  EXPECT_TRUE(m.ReportsBatchItemFailures());
  EXPECT_FALSE((*mappings)[1].ReportsBatchItemFailures());
  EXPECT_FALSE((*mappings)[1].batch_size.has_value());
}

TEST_F(LambdaApiTest, GetFunctionConfigurationEncodesAnArnInThePathAndReadsEveryField) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, kFunctionJson); });

  auto fn = lambda_.GetFunctionConfiguration(std::string(kFunctionArn) + ":live");

  ASSERT_TRUE(fn.ok()) << fn.status().ToString();
  EXPECT_EQ(http_.requests()[0].method, "GET");
  EXPECT_EQ(http_.requests()[0].url,
            "https://lambda.us-east-1.amazonaws.com/2015-03-31/functions/"
            "arn%3Aaws%3Alambda%3Aus-east-1%3A123456789012%3Afunction%3Aorders-worker%3Alive/configuration");
  EXPECT_EQ(fn->function_name, "orders-worker");
  EXPECT_EQ(fn->function_arn, kFunctionArn);
  EXPECT_EQ(fn->version, "$LATEST");
  EXPECT_EQ(fn->log_group, "/custom/orders");
  EXPECT_EQ(fn->LogGroupOrDefault(), "/custom/orders");
  EXPECT_EQ(fn->log_format, "JSON");
  EXPECT_EQ(fn->timeout_seconds, 30);
  EXPECT_EQ(fn->memory_size_mb, 512);
  EXPECT_EQ(fn->dead_letter_target_arn, "arn:aws:sqs:us-east-1:123456789012:async-dlq");
}

TEST_F(LambdaApiTest, AFunctionWithoutLoggingConfigLogsToItsDefaultGroup) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(200, R"({"FunctionName":"old-worker","Timeout":3,"MemorySize":128})");
  });
  auto fn = lambda_.GetFunctionConfiguration("old-worker");
  ASSERT_TRUE(fn.ok());
  EXPECT_TRUE(fn->log_group.empty());
  EXPECT_TRUE(fn->dead_letter_target_arn.empty());
  EXPECT_EQ(fn->LogGroupOrDefault(), "/aws/lambda/old-worker");
}

TEST_F(LambdaApiTest, GetFunctionEventInvokeConfigReadsRetriesAgeAndTheOnFailureDestination) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(200,
                        R"({"LastModified":1.7E9,"FunctionArn":"arn:aws:lambda:us-east-1:123456789012:)"
                        R"(function:orders-worker:live","MaximumRetryAttempts":1,"MaximumEventAgeInSeconds":600,)"
                        R"("DestinationConfig":{"OnSuccess":{},"OnFailure":{"Destination":"arn:aws:s3:::fails"}}})");
  });

  auto config = lambda_.GetFunctionEventInvokeConfig("orders-worker", "live");

  ASSERT_TRUE(config.ok()) << config.status().ToString();
  ASSERT_TRUE(config->has_value());
  EXPECT_EQ(http_.requests()[0].method, "GET");
  EXPECT_EQ(http_.requests()[0].url,
            "https://lambda.us-east-1.amazonaws.com/2019-09-25/functions/orders-worker/event-invoke-config?"
            "Qualifier=live");
  EXPECT_EQ((*config)->maximum_retry_attempts, 1);
  EXPECT_EQ((*config)->maximum_event_age_seconds, 600);
  EXPECT_EQ((*config)->on_failure_destination, "arn:aws:s3:::fails");
  EXPECT_EQ((*config)->on_success_destination, "");
}

TEST_F(LambdaApiTest, AFunctionWithoutEventInvokeConfigHasNoneAndADenialNamesTheAction) {
  http_.FailCall(1, RestError(404, "ResourceNotFoundException",
                              "The function arn:aws:lambda:us-east-1:123456789012:function:orders-worker doesn't "
                              "have an EventInvokeConfig"));
  http_.FailCall(2, RestError(403, "AccessDeniedException", "not authorized"));
  http_.SetHandler(
      [](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, R"({"MaximumRetryAttempts":7})"); });

  auto none = lambda_.GetFunctionEventInvokeConfig("orders-worker", "");
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(none->has_value());

  auto denied = lambda_.GetFunctionEventInvokeConfig("orders-worker", "");
  ASSERT_FALSE(denied.ok());
  EXPECT_THAT(denied.status().message(), HasSubstr("needs lambda:GetFunctionEventInvokeConfig on orders-worker"));

  auto malformed = lambda_.GetFunctionEventInvokeConfig("orders-worker", "");
  ASSERT_FALSE(malformed.ok());
  EXPECT_THAT(malformed.status().message(), HasSubstr("MaximumRetryAttempts is not 0, 1 or 2"));

  auto bad_qualifier = lambda_.GetFunctionEventInvokeConfig("orders-worker", "a/b");
  ASSERT_FALSE(bad_qualifier.ok());
  EXPECT_EQ(bad_qualifier.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(http_.requests().size(), 3u);
}

TEST_F(LambdaApiTest, ListFunctionsFollowsNextMarker) {
  http_.SetHandler([](const HttpRequest& r) -> Result<HttpResponse> {
    if (r.url.find("Marker=") == std::string::npos) {
      return MakeResponse(200, std::string(R"({"Functions":[)") + kFunctionJson + R"(],"NextMarker":"next"})");
    }
    return MakeResponse(200, R"({"Functions":[{"FunctionName":"audit","Timeout":60}]})");
  });

  auto functions = lambda_.ListFunctions();

  ASSERT_TRUE(functions.ok()) << functions.status().ToString();
  EXPECT_EQ(http_.requests()[0].url, "https://lambda.us-east-1.amazonaws.com/2015-03-31/functions/?MaxItems=50");
  EXPECT_EQ(http_.requests()[1].url,
            "https://lambda.us-east-1.amazonaws.com/2015-03-31/functions/?Marker=next&MaxItems=50");
  ASSERT_EQ(functions->size(), 2u);
  EXPECT_EQ((*functions)[0].dead_letter_target_arn, "arn:aws:sqs:us-east-1:123456789012:async-dlq");
  EXPECT_EQ((*functions)[1].function_name, "audit");
  EXPECT_EQ((*functions)[1].timeout_seconds, 60);
}

TEST_F(LambdaApiTest, InvokeSendsThePayloadAndTypeAndReadsTheFunctionError) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(
        200, R"({"errorMessage":"boom","errorType":"ValueError"})",
        {{"X-Amz-Function-Error", "Unhandled"}, {"X-Amz-Executed-Version", "7"}, {"x-amzn-RequestId", "inv-1"}});
  });
  InvokeRequest request;
  request.function_name = "orders-worker";
  request.type = InvocationType::kRequestResponse;
  request.qualifier = "live";
  request.payload = R"({"Records":[{"body":"x"}]})";

  auto result = lambda_.Invoke(request);

  ASSERT_TRUE(result.ok()) << result.status().ToString();
  const HttpRequest sent = http_.requests()[0];
  EXPECT_EQ(sent.method, "POST");
  EXPECT_EQ(sent.url,
            "https://lambda.us-east-1.amazonaws.com/2015-03-31/functions/orders-worker/invocations?Qualifier=live");
  EXPECT_EQ(HeaderOf(sent, "X-Amz-Invocation-Type"), "RequestResponse");
  EXPECT_EQ(sent.body, request.payload);
  EXPECT_EQ(result->status_code, 200);
  EXPECT_EQ(result->function_error, "Unhandled");
  EXPECT_EQ(result->executed_version, "7");
  EXPECT_EQ(result->request_id, "inv-1");
  EXPECT_EQ(result->payload, R"({"errorMessage":"boom","errorType":"ValueError"})");
}

TEST_F(LambdaApiTest, AnAsynchronousInvokeIsAccepted) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(202, ""); });
  InvokeRequest request;
  request.function_name = kFunctionArn;
  request.payload = "{}";
  auto result = lambda_.Invoke(request);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(HeaderOf(http_.requests()[0], "X-Amz-Invocation-Type"), "Event");
  EXPECT_EQ(result->status_code, 202);
  EXPECT_TRUE(result->function_error.empty());
}

TEST_F(LambdaApiRetryTest, AThrottledInvokeIsReturnedAtOnceAsThrottled) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    HttpResponse r = RestError(429, "TooManyRequestsException", "Rate Exceeded.");
    r.headers.emplace_back("Retry-After", "2");
    return r;
  });
  InvokeRequest request;
  request.function_name = "orders-worker";
  request.payload = "{}";

  auto result = lambda_.Invoke(request);

  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kThrottled);
  EXPECT_EQ(result.status().aws()->error_code, "TooManyRequestsException");
  EXPECT_EQ(result.status().aws()->http_status, 429);
  EXPECT_EQ(http_.calls(), 1);  // not retried: the caller pauses
}

TEST_F(LambdaApiRetryTest, ListingsAreRetriedWhenThrottledAnd5xxInvokesToo) {
  http_.FailCall(1, RestError(429, "TooManyRequestsException", "Rate Exceeded."));
  http_.SetHandler([](const HttpRequest& r) -> Result<HttpResponse> {
    if (r.method == "POST") return MakeResponse(202, "");
    return MakeResponse(200, R"({"EventSourceMappings":[]})");
  });
  auto mappings = lambda_.ListEventSourceMappings(kQueueArn);
  ASSERT_TRUE(mappings.ok()) << mappings.status().ToString();
  EXPECT_EQ(http_.calls(), 2);

  http_.FailCall(3, RestError(500, "ServiceException", "internal"));
  InvokeRequest request;
  request.function_name = "orders-worker";
  auto invoked = lambda_.Invoke(request);
  ASSERT_TRUE(invoked.ok()) << invoked.status().ToString();
  EXPECT_EQ(http_.calls(), 4);
}

TEST_F(LambdaApiTest, DeniedNamesTheIamActionAndNotFoundIsNotFound) {
  http_.FailCall(1, RestError(403, "AccessDeniedException",
                              "User: arn:aws:iam::123456789012:user/ops is not authorized to perform: "
                              "lambda:ListEventSourceMappings on resource: *"));
  http_.FailCall(2, RestError(404, "ResourceNotFoundException",
                              "Function not found: arn:aws:lambda:us-east-1:123456789012:function:gone"));
  http_.FailCall(3, RestError(403, "AccessDeniedException", "not authorized"));

  auto denied = lambda_.ListEventSourceMappings(kQueueArn);
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.status().code(), ErrorCode::kPermissionDenied);
  EXPECT_EQ(denied.status().aws()->error_code, "AccessDeniedException");
  EXPECT_EQ(denied.status().aws()->request_id, "req-lambda-1");
  EXPECT_THAT(denied.status().message(),
              HasSubstr(std::string("needs lambda:ListEventSourceMappings on ") + kQueueArn));

  auto missing = lambda_.GetFunctionConfiguration("gone");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("GetFunctionConfiguration gone: ResourceNotFoundException"));

  InvokeRequest request;
  request.function_name = "orders-worker";
  auto invoke_denied = lambda_.Invoke(request);
  ASSERT_FALSE(invoke_denied.ok());
  EXPECT_THAT(invoke_denied.status().message(), HasSubstr("needs lambda:InvokeFunction on orders-worker"));
}

TEST_F(LambdaApiTest, MalformedResponsesAreClearErrors) {
  struct Case {
    std::string body;
    std::string want;
  };
  std::vector<Case> cases = {
      {"not json", "malformed GetFunctionConfiguration response: not JSON"},
      {R"({"FunctionName":"x","Timeout":"30"})", "Timeout is not an integer"},
      {R"({"FunctionName":"x","LoggingConfig":"/x"})", "LoggingConfig is not an object"},
      {R"({"FunctionName":"x","DeadLetterConfig":{"TargetArn":1}})", "DeadLetterConfig.TargetArn is not a string"},
      {R"({"Timeout":3})", "FunctionName is missing"},
      {R"({"FunctionName":"x","MemorySize":99999999999})", "MemorySize is out of range"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    http_.SetHandler([&](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, c.body); });
    auto fn = lambda_.GetFunctionConfiguration("x");
    ASSERT_FALSE(fn.ok());
    EXPECT_EQ(fn.status().code(), ErrorCode::kInternal);
    EXPECT_THAT(fn.status().message(), HasSubstr(c.want));
  }
  auto page = lambda_api::ParseListEventSourceMappingsResponse(
      R"({"EventSourceMappings":[{"UUID":"u","FunctionResponseTypes":[1]}]})");
  ASSERT_FALSE(page.ok());
  EXPECT_THAT(page.status().message(),
              HasSubstr("EventSourceMappings[0].FunctionResponseTypes has an item that is not a string"));
  auto functions = lambda_api::ParseListFunctionsResponse(R"({"Functions":[7]})");
  ASSERT_FALSE(functions.ok());
  EXPECT_THAT(functions.status().message(), HasSubstr("Functions[0] is not an object"));
}

TEST_F(LambdaApiTest, ARepeatedNextMarkerIsAPaginationLoop) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(200, R"({"Functions":[],"NextMarker":"again"})");
  });
  auto functions = lambda_.ListFunctions();
  ASSERT_FALSE(functions.ok());
  EXPECT_THAT(functions.status().message(), HasSubstr("pagination loop"));
  EXPECT_EQ(http_.calls(), 2);
}

TEST(InvokeRequestTest, ValidateNeedsAFunctionAndAQualifierThatIsAName) {
  InvokeRequest ok;
  ok.function_name = "f";
  ok.qualifier = "$LATEST";
  EXPECT_TRUE(ok.Validate().ok());
  InvokeRequest no_name;
  EXPECT_EQ(no_name.Validate().code(), ErrorCode::kInvalidArgument);
  InvokeRequest bad_qualifier = ok;
  bad_qualifier.qualifier = "live&x=1";
  EXPECT_EQ(bad_qualifier.Validate().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(InvocationTypeName(InvocationType::kDryRun), "DryRun");
}

// ---------------------------------------------------------------- the fake

TEST(FakeLambdaApiTest, AnswersFromWhatItHoldsAndCountsCalls) {
  FakeLambdaApi fake;
  FunctionConfiguration fn;
  fn.function_name = "orders-worker";
  fn.dead_letter_target_arn = "arn:aws:sqs:us-east-1:123456789012:async-dlq";
  fake.AddFunction(fn);
  fake.AddEventSourceMapping({"u-1", kFunctionArn, kQueueArn, "Enabled", {"ReportBatchItemFailures"}, 10});
  fake.AddEventSourceMapping({"u-2", kFunctionArn, "arn:aws:sqs:us-east-1:123456789012:other", "Enabled", {}, 10});

  auto mappings = fake.ListEventSourceMappings(kQueueArn);
  ASSERT_TRUE(mappings.ok());
  ASSERT_EQ(mappings->size(), 1u);
  EXPECT_EQ((*mappings)[0].uuid, "u-1");
  auto by_arn = fake.GetFunctionConfiguration(std::string(kFunctionArn) + ":3");
  ASSERT_TRUE(by_arn.ok());
  EXPECT_EQ(by_arn->function_name, "orders-worker");
  auto missing = fake.GetFunctionConfiguration("gone");
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  auto all = fake.ListFunctions();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 1u);
  EXPECT_EQ(fake.calls("GetFunctionConfiguration"), 2);
  EXPECT_EQ(fake.calls("ListEventSourceMappings"), 1);
}

TEST(FakeLambdaApiTest, InvokesThrottleAndDenyOnCommandAndAreRecorded) {
  FakeLambdaApi fake;
  FunctionConfiguration fn;
  fn.function_name = "orders-worker";
  fake.AddFunction(fn);
  InvokeRequest request;
  request.function_name = "orders-worker";
  request.payload = "p1";

  fake.ThrottleInvokes(1);
  auto throttled = fake.Invoke(request);
  ASSERT_FALSE(throttled.ok());
  EXPECT_EQ(throttled.status().code(), ErrorCode::kThrottled);
  EXPECT_EQ(throttled.status().aws()->http_status, 429);
  auto accepted = fake.Invoke(request);
  ASSERT_TRUE(accepted.ok());
  EXPECT_EQ(accepted->status_code, 202);

  fake.SetInvokeHandler([](const InvokeRequest& r) -> Result<InvokeResult> {
    InvokeResult result;
    result.status_code = 200;
    result.function_error = r.payload == "bad" ? "Unhandled" : "";
    return result;
  });
  request.payload = "bad";
  request.type = InvocationType::kRequestResponse;
  auto failed = fake.Invoke(request);
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(failed->function_error, "Unhandled");

  fake.Deny("InvokeFunction");
  auto denied = fake.Invoke(request);
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.status().code(), ErrorCode::kPermissionDenied);

  std::vector<std::string> payloads;
  for (const auto& r : fake.invocations()) payloads.push_back(r.payload);
  EXPECT_THAT(payloads, ElementsAre("p1", "p1", "bad", "bad"));
  EXPECT_EQ(fake.calls("InvokeFunction"), 4);
}

}  // namespace
}  // namespace dlq
