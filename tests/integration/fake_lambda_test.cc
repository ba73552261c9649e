// The fake Lambda (scripts/lib/stand-ins-fake-lambda.py) through our own
// Lambda client: AwsLambdaApi on AWS_ENDPOINT_URL_LAMBDA (the fake), SQS on
// AWS_ENDPOINT_URL (moto), as the fake-lambda stand-in's env file says.
// Invoke's answers (Event 202, RequestResponse with a function error, 429,
// 404, 413), a failed Event's message in the function's dead-letter queue or
// its on-failure destination, and the calls the fake forwards to moto.
#include "fake_lambda.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "harness.h"
#include "lambda_api/lambda_api.h"
#include "moto_fixtures.h"

namespace dlq::it {
namespace {

class FakeLambdaTest : public FakeLambdaFixture {
 protected:
  FakeLambdaTest() : FakeLambdaFixture("fake-lambda-it") {}
  void TearDown() override {
    if (!base_.empty()) ClearLambdaRules(base_);
  }

  // A queue on moto; its URL and ARN.
  std::pair<std::string, std::string> Queue(const std::string& suffix) {
    auto url = svc_->sqs().CreateQueue(base_ + suffix, {});
    EXPECT_TRUE(url.ok()) << url.status().ToString();
    if (!url.ok()) return {};
    return {*url, QueueArn(*svc_, *url)};
  }

  // Every message now in `url` (a few receives, as moto may answer short).
  std::vector<Message> Drain(const std::string& url) {
    std::vector<Message> all;
    ReceiveOptions ro;
    ro.max_messages = 10;
    ro.message_attribute_names = {"All"};
    for (int i = 0; i < 3; ++i) {
      auto got = svc_->sqs().ReceiveMessages(url, ro);
      EXPECT_TRUE(got.ok()) << got.status().ToString();
      if (!got.ok()) break;
      all.insert(all.end(), got->begin(), got->end());
    }
    return all;
  }

  Result<InvokeResult> Invoke(const std::string& function, InvocationType type, const std::string& payload) {
    InvokeRequest r;
    r.function_name = function;
    r.type = type;
    r.payload = payload;
    return lambda_->Invoke(r);
  }
};

TEST_F(FakeLambdaTest, AnEventInvocationIsAcceptedWith202AndARequestIdWhateverNameTheFunctionGoesBy) {
  const std::string arn = CreateFakeLambdaFunction(*lambda_aws_, base_, role_arn_);
  ASSERT_FALSE(arn.empty());
  const std::string partial = arn.substr(arn.find(":123456789012:") + 1);  // 123456789012:function:NAME
  const std::vector<std::string> names = {base_, arn, partial, arn + ":$LATEST"};
  std::vector<std::string> request_ids;
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    auto r = Invoke(name, InvocationType::kEvent, R"({"order": 17, "note": "caf\u00e9"})");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status_code, 202);
    EXPECT_EQ(r->function_error, "");
    EXPECT_EQ(r->payload, "");
    EXPECT_EQ(r->request_id.size(), 36u) << r->request_id;  // a UUID
    request_ids.push_back(r->request_id);
  }
  auto dry = Invoke(base_, InvocationType::kDryRun, "");
  ASSERT_TRUE(dry.ok()) << dry.status().ToString();
  EXPECT_EQ(dry->status_code, 204);

  auto seen = LambdaInvocations(base_);
  ASSERT_EQ(seen.size(), names.size() + 1);
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(seen[i].function, base_);
    EXPECT_EQ(seen[i].type, "Event");
    EXPECT_EQ(seen[i].outcome, "ok");
    EXPECT_EQ(seen[i].payload, R"({"order": 17, "note": "caf\u00e9"})");
    EXPECT_EQ(seen[i].request_id, request_ids[i]);
    EXPECT_EQ(seen[i].sent_to, "");
  }
  EXPECT_EQ(seen[3].qualifier, "$LATEST");
  EXPECT_EQ(seen[4].outcome, "dry-run");
  EXPECT_NE(request_ids[0], request_ids[1]);
}

TEST_F(FakeLambdaTest, ARequestResponseFailureIsAnUnhandledFunctionErrorAndASuccessAnswersNull) {
  ASSERT_FALSE(CreateFakeLambdaFunction(*lambda_aws_, base_, role_arn_).empty());
  SetLambdaRules(R"({"rules":[{"fail_if_contains":"poison","error_type":"ValueError",)"
                 R"("error_message":"order 17 is poison"}]})",
                 base_);
  auto failed = Invoke(base_, InvocationType::kRequestResponse, R"({"kind":"poison"})");
  ASSERT_TRUE(failed.ok()) << failed.status().ToString();  // a function error is a successful call
  EXPECT_EQ(failed->status_code, 200);
  EXPECT_EQ(failed->function_error, "Unhandled");
  EXPECT_EQ(failed->executed_version, "$LATEST");
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(failed->payload).get(doc), simdjson::SUCCESS) << failed->payload;
  EXPECT_EQ(std::string_view(doc["errorMessage"]), "order 17 is poison");
  EXPECT_EQ(std::string_view(doc["errorType"]), "ValueError");

  auto fine = Invoke(base_, InvocationType::kRequestResponse, R"({"kind":"good"})");
  ASSERT_TRUE(fine.ok()) << fine.status().ToString();
  EXPECT_EQ(fine->status_code, 200);
  EXPECT_EQ(fine->function_error, "");
  EXPECT_EQ(fine->payload, "null");

  auto seen = LambdaInvocations(base_);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].outcome, "failed");
  EXPECT_EQ(seen[0].error_message, "order 17 is poison");
  EXPECT_EQ(seen[0].request_id, failed->request_id);
  EXPECT_EQ(seen[1].outcome, "ok");
}

TEST_F(FakeLambdaTest, TheFirstNInvocationsOfAThrottledFunctionAreKThrottled) {
  ASSERT_FALSE(CreateFakeLambdaFunction(*lambda_aws_, base_, role_arn_).empty());
  SetLambdaRules(R"({"rules":[{"throttle_first":2}]})", base_);
  for (int i = 0; i < 2; ++i) {
    auto r = Invoke(base_, InvocationType::kEvent, "{}");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), ErrorCode::kThrottled) << r.status().ToString();
    ASSERT_TRUE(r.status().aws().has_value());
    EXPECT_EQ(r.status().aws()->error_code, "TooManyRequestsException");
    EXPECT_EQ(r.status().aws()->http_status, 429);
  }
  auto third = Invoke(base_, InvocationType::kEvent, "{}");
  ASSERT_TRUE(third.ok()) << third.status().ToString();
  EXPECT_EQ(third->status_code, 202);
  auto seen = LambdaInvocations(base_);
  ASSERT_EQ(seen.size(), 3u);  // Invoke is not retried on 429: the caller paces itself
  EXPECT_EQ(seen[0].outcome, "throttled");
  EXPECT_EQ(seen[1].outcome, "throttled");
  EXPECT_EQ(seen[2].outcome, "ok");
}

TEST_F(FakeLambdaTest, AFailedEventLandsInTheFunctionsDeadLetterQueueByteForByteWithLambdasAttributes) {
  auto [dlq_url, dlq_arn] = Queue("-dlq");
  ASSERT_FALSE(dlq_arn.empty());
  ASSERT_FALSE(CreateFakeLambdaFunction(*lambda_aws_, base_, role_arn_, dlq_arn).empty());
  auto config = lambda_->GetFunctionConfiguration(base_);  // moto 5.2.1 drops it; the fake adds it back
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->dead_letter_target_arn, dlq_arn);

  const std::string long_message(1500, 'm');
  SetLambdaRules(fmt::format(R"({{"rules":[{{"fail_if_contains":"poison","error_message":"order is poison"}},)"
                             R"({{"fail_if_contains":"wordy","error_type":"TypeError","error_message":"{}"}}]}})",
                             long_message),
                 base_);
  const std::string poison = "{ \"kind\" : \"poison\",\n  \"n\": 1.50, \"s\": \"caf\xC3\xA9 \\u00e9\" }";
  const std::string wordy = R"({"kind":"wordy"})";
  auto first = Invoke(base_, InvocationType::kEvent, poison);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->status_code, 202);
  auto second = Invoke(base_, InvocationType::kEvent, wordy);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  auto good = Invoke(base_, InvocationType::kEvent, R"({"kind":"good"})");
  ASSERT_TRUE(good.ok()) << good.status().ToString();

  std::vector<Message> got = Drain(dlq_url);
  ASSERT_EQ(got.size(), 2u);
  std::map<std::string, Message> by_request;
  for (Message& m : got) by_request[m.message_attributes["RequestID"].string_value] = m;
  ASSERT_EQ(by_request.count(first->request_id), 1u);
  ASSERT_EQ(by_request.count(second->request_id), 1u);
  const Message& m1 = by_request[first->request_id];
  EXPECT_EQ(m1.body, poison);
  ASSERT_EQ(m1.message_attributes.size(), 3u);
  EXPECT_EQ(m1.message_attributes.at("RequestID").data_type, "String");
  EXPECT_EQ(m1.message_attributes.at("ErrorCode").data_type, "Number");
  EXPECT_EQ(m1.message_attributes.at("ErrorCode").string_value, "200");
  EXPECT_EQ(m1.message_attributes.at("ErrorMessage").data_type, "String");
  EXPECT_EQ(m1.message_attributes.at("ErrorMessage").string_value, "order is poison");
  const Message& m2 = by_request[second->request_id];
  EXPECT_EQ(m2.body, wordy);
  EXPECT_EQ(m2.message_attributes.at("ErrorMessage").string_value, long_message.substr(0, 1024));  // 1 KB

  auto seen = LambdaInvocations(base_);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].outcome, "failed");
  EXPECT_EQ(seen[0].sent_to, dlq_url);
  EXPECT_EQ(seen[0].sent_as, "dead-letter");
  EXPECT_EQ(seen[2].outcome, "ok");
  EXPECT_EQ(seen[2].sent_to, "");
}

TEST_F(FakeLambdaTest, AnOnFailureDestinationGetsTheInvocationRecordInsteadOfTheDeadLetterQueue) {
  auto [dlq_url, dlq_arn] = Queue("-dlq");
  auto [dest_url, dest_arn] = Queue("-on-failure");
  ASSERT_FALSE(dest_arn.empty());
  const std::string arn = CreateFakeLambdaFunction(*lambda_aws_, base_, role_arn_, dlq_arn);
  ASSERT_FALSE(arn.empty());
  LambdaCall(*lambda_aws_, "PUT", "/2019-09-25/functions/" + base_ + "/event-invoke-config",
             fmt::format(R"({{"DestinationConfig":{{"OnFailure":{{"Destination":"{}"}}}}}})", dest_arn));
  SetLambdaRules(R"({"rules":[{"fail_if_contains":"poison","error_type":"KeyError","error_message":"no key"}]})",
                 base_);
  auto r = Invoke(base_, InvocationType::kEvent, R"({"kind":"poison","n":[1,2]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();

  EXPECT_TRUE(Drain(dlq_url).empty());
  std::vector<Message> got = Drain(dest_url);
  ASSERT_EQ(got.size(), 1u);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(got[0].body).get(doc), simdjson::SUCCESS) << got[0].body;
  EXPECT_EQ(std::string_view(doc["version"]), "1.0");
  EXPECT_EQ(std::string_view(doc["requestContext"]["requestId"]), r->request_id);
  EXPECT_EQ(std::string_view(doc["requestContext"]["functionArn"]), arn + ":$LATEST");
  EXPECT_EQ(std::string_view(doc["requestContext"]["condition"]), "RetriesExhausted");
  EXPECT_EQ(std::string_view(doc["requestPayload"]["kind"]), "poison");
  EXPECT_EQ(int64_t(doc["requestPayload"]["n"].at(1)), 2);
  EXPECT_EQ(std::string_view(doc["responseContext"]["functionError"]), "Unhandled");
  EXPECT_EQ(std::string_view(doc["responsePayload"]["errorMessage"]), "no key");
  EXPECT_EQ(std::string_view(doc["responsePayload"]["errorType"]), "KeyError");
  auto seen = LambdaInvocations(base_);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].sent_to, dest_url);
  EXPECT_EQ(seen[0].sent_as, "destination-record");
}

TEST_F(FakeLambdaTest, ListFunctionsThroughTheFakeIsMotosWithTheDeadLetterQueueItKept) {
  auto [dlq_url, dlq_arn] = Queue("-dlq");
  ASSERT_FALSE(CreateFakeLambdaFunction(*lambda_aws_, base_ + "-a", role_arn_).empty());
  ASSERT_FALSE(CreateFakeLambdaFunction(*lambda_aws_, base_ + "-b", role_arn_, dlq_arn).empty());
  AwsClient moto_lambda_aws(ServiceEndpoint{"lambda", "us-east-1", fake_.endpoint(), false}, svc_->transport(),
                            svc_->credentials(), DefaultClock());
  auto from_moto = AwsLambdaApi(moto_lambda_aws).ListFunctions();
  ASSERT_TRUE(from_moto.ok()) << from_moto.status().ToString();
  auto through_fake = lambda_->ListFunctions();  // after moto's: other tests may add functions meanwhile
  ASSERT_TRUE(through_fake.ok()) << through_fake.status().ToString();

  std::map<std::string, FunctionConfiguration> fake_by_arn;
  for (const FunctionConfiguration& f : *through_fake) fake_by_arn[f.function_arn] = f;
  int ours = 0;
  for (const FunctionConfiguration& m : *from_moto) {
    SCOPED_TRACE(m.function_arn);
    ASSERT_EQ(fake_by_arn.count(m.function_arn), 1u);
    const FunctionConfiguration& f = fake_by_arn[m.function_arn];
    EXPECT_EQ(f.function_name, m.function_name);
    EXPECT_EQ(f.version, m.version);
    EXPECT_EQ(f.timeout_seconds, m.timeout_seconds);
    EXPECT_EQ(f.memory_size_mb, m.memory_size_mb);
    EXPECT_EQ(m.dead_letter_target_arn, "");  // moto 5.2.1 keeps none
    if (m.function_name == base_ + "-a") {
      ++ours;
      EXPECT_EQ(f.dead_letter_target_arn, "");
    } else if (m.function_name == base_ + "-b") {
      ++ours;
      EXPECT_EQ(f.dead_letter_target_arn, dlq_arn);
    }
  }
  EXPECT_EQ(ours, 2);
}

TEST_F(FakeLambdaTest, AMissingFunctionIsKNotFoundAndAnOversizedEventIsRefused) {
  const std::string missing = base_ + "-missing";
  auto r = Invoke(missing, InvocationType::kEvent, "{}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound) << r.status().ToString();
  ASSERT_TRUE(r.status().aws().has_value());
  EXPECT_EQ(r.status().aws()->error_code, "ResourceNotFoundException");
  auto seen = LambdaInvocations(missing);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].outcome, "not-found");

  ASSERT_FALSE(CreateFakeLambdaFunction(*lambda_aws_, base_, role_arn_).empty());
  const std::string at_limit = "\"" + std::string(1024 * 1024 - 2, 'x') + "\"";  // 1 MB, async's limit
  auto fits = Invoke(base_, InvocationType::kEvent, at_limit);
  ASSERT_TRUE(fits.ok()) << fits.status().ToString();
  auto big = Invoke(base_, InvocationType::kEvent, at_limit + " ");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), ErrorCode::kInvalidArgument) << big.status().ToString();
  ASSERT_TRUE(big.status().aws().has_value());
  EXPECT_EQ(big.status().aws()->error_code, "RequestEntityTooLargeException");
  auto sync = Invoke(base_, InvocationType::kRequestResponse, at_limit + " ");  // 6 MB there
  ASSERT_TRUE(sync.ok()) << sync.status().ToString();
  auto outcomes = LambdaInvocations(base_);
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_EQ(outcomes[1].outcome, "too-large");
}

}  // namespace
}  // namespace dlq::it
