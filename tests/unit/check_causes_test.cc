// `check` says where each DLQ's causes would come from (issue 40): its
// sources, their Lambda consumers' log groups and how each was found, the
// log groups consumer_logs: names, and what to do when none is known.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>

#include "app/check_command.h"
#include "testing/fake_lambda_api.h"
#include "testing/fake_logs.h"
#include "unit/daemon_fixture.h"

namespace dlq {
namespace {

bool Has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

class CheckCausesTest : public DaemonFixture {
 protected:
  void SetUp() override {
    FeedFromOneDaySource();  // orders -> orders-dlq
    const std::string source_arn =
        sqs_.GetQueueAttributes(*sqs_.GetQueueUrl("orders", ""), {"QueueArn"})->at("QueueArn");
    FunctionConfiguration f;
    f.function_name = "orders-worker";
    lambda_.AddFunction(f);
    lambda_.AddEventSourceMapping(
        {"esm-1", "arn:aws:lambda:us-east-1:123456789012:function:orders-worker", source_arn, "Enabled", {}, 10});
    ASSERT_TRUE(sqs_.CreateQueue("lonely-dlq", {{"MessageRetentionPeriod", "1209600"}}).ok());
    config_.groups[0].queues = {"orders-dlq", "lonely-dlq"};
  }

  GroupClientsFactory Factory() {
    return [this](const GroupConfig&) -> Result<GroupClients> {
      GroupClients c;
      c.sqs = &sqs_;
      c.store = &store_;
      c.logs = &logs_;
      c.lambda = &lambda_;
      c.default_region = "us-east-1";
      return c;
    };
  }

  FakeLambdaApi lambda_;
  FakeLogsClient logs_;
};

TEST_F(CheckCausesTest, SaysWhichConsumersLogsAnswerForEachDlqAndHowTheyWereFound) {
  config_.groups[0].consumer_logs = {"lonely-dlq=/ecs/lonely"};
  std::string out;
  CheckConfig(config_, Factory(), "text", out);
  EXPECT_TRUE(Has(out, "orders-dlq: source orders (maxReceiveCount 3")) << out;
  EXPECT_TRUE(Has(out, "orders-dlq: logs /aws/lambda/orders-worker: function orders-worker")) << out;
  EXPECT_TRUE(Has(out, "event source mapping esm-1 from orders")) << out;
  EXPECT_TRUE(Has(out, "lonely-dlq: no source queue names it as its dead-letter queue")) << out;
  EXPECT_TRUE(Has(out, "lonely-dlq: logs /ecs/lonely: named by consumer_logs")) << out;
  EXPECT_FALSE(Has(out, "no cause can be looked up")) << out;
}

TEST_F(CheckCausesTest, ADlqWithNoKnownConsumerSaysHowToNameItsLogs) {
  std::string out;
  CheckConfig(config_, Factory(), "text", out);
  EXPECT_TRUE(Has(out, "lonely-dlq: no consumer log group known")) << out;
  EXPECT_TRUE(Has(out, R"(name the consumer's log groups with consumer_logs: ["lonely-dlq=LOG_GROUP"])")) << out;

  out.clear();
  CheckConfig(config_, Factory(), "json", out);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(out).get(doc), simdjson::SUCCESS) << out;
  simdjson::dom::array queues;
  ASSERT_EQ(doc["groups"].at(0)["queues"].get(queues), simdjson::SUCCESS) << out;
  size_t seen = 0;
  for (simdjson::dom::element q : queues) {
    std::string_view name;
    ASSERT_EQ(q["queue"].get(name), simdjson::SUCCESS);
    simdjson::dom::array consumers;
    ASSERT_EQ(q["consumers"].get(consumers), simdjson::SUCCESS) << out;
    if (name == "orders-dlq") {
      ASSERT_EQ(consumers.size(), 1u);
      std::string_view group, function;
      ASSERT_EQ(consumers.at(0)["log_group"].get(group), simdjson::SUCCESS);
      ASSERT_EQ(consumers.at(0)["function"].get(function), simdjson::SUCCESS);
      EXPECT_EQ(group, "/aws/lambda/orders-worker");
      EXPECT_EQ(function, "orders-worker");
      ++seen;
    } else if (name == "lonely-dlq") {
      EXPECT_EQ(consumers.size(), 0u);
      ++seen;
    }
  }
  EXPECT_EQ(seen, 2u);
}

TEST_F(CheckCausesTest, ADeniedLambdaCallIsSaidWithItsPermission) {
  lambda_.Deny("ListEventSourceMappings");
  std::string out;
  CheckConfig(config_, Factory(), "text", out);
  EXPECT_TRUE(Has(out, "lambda:ListEventSourceMappings")) << out;
}

TEST_F(CheckCausesTest, CausesOffLooksNothingUp) {
  config_.groups[0].causes = GroupConfig::Causes::kOff;
  std::string out;
  CheckConfig(config_, Factory(), "text", out);
  EXPECT_FALSE(Has(out, "causes:")) << out;
  EXPECT_EQ(lambda_.calls("ListEventSourceMappings"), 0);
}

}  // namespace
}  // namespace dlq
