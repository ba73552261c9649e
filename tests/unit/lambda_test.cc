#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <deque>
#include <map>
#include <memory>
#include <thread>

#include "aws/credentials.h"
#include "causes/sidecar.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/time_util.h"
#include "lambda/event.h"
#include "lambda/handler.h"
#include "lambda/lambda_config.h"
#include "lambda/runtime_client.h"
#include "testing/fake_clock.h"
#include "testing/fake_http.h"
#include "testing/fake_lambda_api.h"
#include "testing/fake_logs.h"
#include "testing/fake_object_store.h"
#include "testing/fake_queue.h"

namespace dlq {
namespace {

constexpr std::string_view kAlarmAction = R"({
  "source": "aws.cloudwatch",
  "alarmArn": "arn:aws:cloudwatch:us-east-1:123456789012:alarm:orders-dlq-depth",
  "accountId": "123456789012", "time": "2024-01-01T00:00:00.000+0000", "region": "us-east-1",
  "alarmData": {
    "alarmName": "orders-dlq-depth",
    "state": {"value": "ALARM", "reason": "Threshold Crossed", "timestamp": "2024-01-01T00:00:00.000+0000"},
    "previousState": {"value": "OK", "reason": "", "timestamp": "2023-12-31T00:00:00.000+0000"},
    "configuration": {"description": "", "metrics": [{"id": "m1", "metricStat": {"metric": {
      "namespace": "AWS/SQS", "name": "ApproximateNumberOfMessagesVisible",
      "dimensions": {"QueueName": "orders-dlq"}}, "period": 60, "stat": "Maximum"}, "returnData": true}]}
  }})";

constexpr std::string_view kMetricMathAlarm = R"({
  "source": "aws.cloudwatch", "alarmArn": "arn:aws:cloudwatch:us-east-1:123456789012:alarm:two",
  "alarmData": {"alarmName": "two", "state": {"value": "ALARM"},
    "configuration": {"metrics": [
      {"id": "e1", "expression": "m1 + m2", "label": "total", "returnData": true},
      {"id": "m1", "metricStat": {"metric": {"namespace": "AWS/SQS", "name": "ApproximateNumberOfMessagesVisible",
        "dimensions": {"QueueName": "a-dlq"}}, "period": 60, "stat": "Maximum"}, "returnData": false},
      {"id": "m2", "metricStat": {"metric": {"namespace": "AWS/SQS", "name": "ApproximateNumberOfMessagesVisible",
        "dimensions": {"QueueName": "b-dlq"}}, "period": 60, "stat": "Maximum"}, "returnData": false}]}}})";

std::string SnsEvent(std::string_view message) {
  std::string escaped;
  AppendJsonString(escaped, message);
  return R"({"Records":[{"EventSource":"aws:sns","EventVersion":"1.0","Sns":{"Type":"Notification",)"
         R"("MessageId":"m","TopicArn":"arn:aws:sns:us-east-1:123456789012:alarms","Subject":"ALARM","Message":)" +
         escaped + "}}]}";
}

constexpr std::string_view kSnsAlarmMessage =
    R"({"AlarmName":"orders-dlq-depth","NewStateValue":"ALARM","OldStateValue":"OK","NewStateReason":"x",)"
    R"("Trigger":{"MetricName":"ApproximateNumberOfMessagesVisible","Namespace":"AWS/SQS","Statistic":"MAXIMUM",)"
    R"("Dimensions":[{"value":"orders-dlq","name":"QueueName"}],"Period":60,"EvaluationPeriods":1,"Threshold":0.0}})";

constexpr std::string_view kSnsMetricsMessage =
    R"({"AlarmName":"m","NewStateValue":"ALARM","Trigger":{"Metrics":[{"Id":"e1","Expression":"m1","ReturnData":true},)"
    R"({"Id":"m1","MetricStat":{"Metric":{"Dimensions":[{"value":"c-dlq","name":"QueueName"}],)"
    R"("MetricName":"ApproximateNumberOfMessagesVisible","Namespace":"AWS/SQS"},"Period":60,"Stat":"Maximum"},)"
    R"("ReturnData":false}]}})";

constexpr std::string_view kEventBridgeAlarm = R"({"version":"0","id":"1","detail-type":"CloudWatch Alarm State Change",
  "source":"aws.cloudwatch","account":"123456789012","time":"2024-01-01T00:00:00Z","region":"us-east-1",
  "resources":["arn:aws:cloudwatch:us-east-1:123456789012:alarm:orders-dlq-depth"],
  "detail":{"alarmName":"orders-dlq-depth","state":{"value":"ALARM","reason":"r","timestamp":"t"},
    "previousState":{"value":"OK"},"configuration":{"metrics":[{"id":"m1","metricStat":{"metric":{
      "namespace":"AWS/SQS","name":"ApproximateAgeOfOldestMessage","dimensions":{"QueueName":"orders-dlq"}},
      "period":300,"stat":"Maximum"},"returnData":true}]}}})";

constexpr std::string_view kSchedule = R"({"version":"0","id":"2","detail-type":"Scheduled Event",
  "source":"aws.events","account":"123456789012","time":"2024-01-01T00:00:00Z","region":"us-east-1",
  "resources":["arn:aws:events:us-east-1:123456789012:rule/sweep"],"detail":{}})";

TEST(LambdaEventTest, AlarmActionTakesQueueNameDimension) {
  auto ev = ParseLambdaEvent(kAlarmAction);
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  EXPECT_EQ(ev->kind, LambdaEventKind::kAlarmAction);
  EXPECT_EQ(ev->alarm_name, "orders-dlq-depth");
  EXPECT_EQ(ev->alarm_state, "ALARM");
  EXPECT_EQ(ev->queues, std::vector<std::string>{"orders-dlq"});
  EXPECT_TRUE(ev->ShouldArchive());
}

TEST(LambdaEventTest, MetricMathAlarmTakesEveryQueue) {
  auto ev = ParseLambdaEvent(kMetricMathAlarm);
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  EXPECT_EQ(ev->queues, (std::vector<std::string>{"a-dlq", "b-dlq"}));
}

TEST(LambdaEventTest, AlarmViaSns) {
  auto ev = ParseLambdaEvent(SnsEvent(kSnsAlarmMessage));
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  EXPECT_EQ(ev->kind, LambdaEventKind::kAlarmSns);
  EXPECT_EQ(ev->alarm_state, "ALARM");
  EXPECT_EQ(ev->queues, std::vector<std::string>{"orders-dlq"});
  auto math = ParseLambdaEvent(SnsEvent(kSnsMetricsMessage));
  ASSERT_TRUE(math.ok()) << math.status().ToString();
  EXPECT_EQ(math->queues, std::vector<std::string>{"c-dlq"});
}

TEST(LambdaEventTest, EventBridgeAlarmAndSchedule) {
  auto ev = ParseLambdaEvent(kEventBridgeAlarm);
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  EXPECT_EQ(ev->kind, LambdaEventKind::kAlarmEventBridge);
  EXPECT_EQ(ev->queues, std::vector<std::string>{"orders-dlq"});
  auto sched = ParseLambdaEvent(kSchedule);
  ASSERT_TRUE(sched.ok()) << sched.status().ToString();
  EXPECT_EQ(sched->kind, LambdaEventKind::kSchedule);
  EXPECT_TRUE(sched->queues.empty());
}

TEST(LambdaEventTest, DirectInvokeRoundTripsThroughFollowUpPayload) {
  auto ev = ParseLambdaEvent(
      R"({"queues":["a","https://sqs.us-east-1.amazonaws.com/210987654321/b"],"policy":{"select":"older_than","window":"2h","max_messages":7}})");
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  EXPECT_EQ(ev->kind, LambdaEventKind::kDirect);
  ASSERT_TRUE(ev->policy);
  EXPECT_EQ(ev->policy->selection.kind, SelectionKind::kOlderThan);
  EXPECT_EQ(ev->policy->selection.window, std::chrono::hours(2));
  EXPECT_EQ(ev->policy->max_messages, 7u);
  auto again = ParseLambdaEvent(BuildDirectInvokePayload(ev->queues, ev->policy, 3));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->queues, ev->queues);
  EXPECT_EQ(again->hop, 3);
  EXPECT_EQ(again->policy->selection.window, std::chrono::hours(2));
  EXPECT_EQ(again->policy->max_messages, 7u);
}

TEST(LambdaEventTest, UnknownAndMalformedEventsNameWhatWasLookedFor) {
  auto unknown = ParseLambdaEvent(R"({"hello":"world"})");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("alarmData"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("queues"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("Sns"), std::string::npos);
  for (std::string_view bad :
       {"", "{", "[1,2]", R"({"queues":"a"})", R"({"queues":[1]})", R"({"policy":{"select":"older_than"}})",
        R"({"source":"aws.cloudwatch"})", R"({"source":"aws.cloudwatch","alarmData":{"state":{"value":"ALARM"}}})",
        R"({"Records":[{"Sns":{"Message":"not json"}}]})", R"({"detail-type":"Other","detail":{}})",
        R"({"queues":[],"hop":-1})"}) {
    auto r = ParseLambdaEvent(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument) << bad;
  }
}

TEST(LambdaEventTest, OkStateDoesNotArchive) {
  std::string ok(kAlarmAction);
  ok.replace(ok.find("\"ALARM\""), 7, "\"OK\"");
  auto ev = ParseLambdaEvent(ok);
  ASSERT_TRUE(ev.ok());
  EXPECT_FALSE(ev->ShouldArchive());
}

TEST(LambdaEventTest, AnAlarmLeavingAlarmWithoutMetricsIsSkippedNotInvalid) {
  // An OK or INSUFFICIENT_DATA transition may carry no metrics; it archives
  // nothing either way, so it is answered as skipped (doc/lambda.md).
  for (std::string_view state : {"OK", "INSUFFICIENT_DATA"}) {
    const std::string action =
        fmt::format(R"({{"source":"aws.cloudwatch","alarmData":{{"alarmName":"a","state":{{"value":"{}"}}}}}})", state);
    const std::string bridge = fmt::format(
        R"({{"detail-type":"CloudWatch Alarm State Change","detail":{{"alarmName":"a","state":{{"value":"{}"}},)"
        R"("configuration":{{"metrics":[]}}}}}})",
        state);
    const std::string sns = SnsEvent(fmt::format(R"({{"AlarmName":"a","NewStateValue":"{}"}})", state));
    for (const std::string& event : {action, bridge, sns}) {
      auto ev = ParseLambdaEvent(event);
      ASSERT_TRUE(ev.ok()) << event << ": " << ev.status().ToString();
      EXPECT_EQ(ev->alarm_state, state);
      EXPECT_TRUE(ev->queues.empty());
      EXPECT_FALSE(ev->ShouldArchive());
    }
  }
  // The same alarm in ALARM cannot be acted on: an invalid event naming what was looked for.
  for (const std::string& event :
       {std::string(R"({"source":"aws.cloudwatch","alarmData":{"alarmName":"a","state":{"value":"ALARM"}}})"),
        SnsEvent(R"({"AlarmName":"a","NewStateValue":"ALARM"})")}) {
    auto ev = ParseLambdaEvent(event);
    ASSERT_FALSE(ev.ok()) << event;
    EXPECT_EQ(ev.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(ev.status().message().find("QueueName"), std::string::npos) << ev.status().message();
  }
}

class RecordingInvoker final : public FunctionInvoker {
 public:
  Status InvokeAsync(const std::string& payload) override {
    payloads.push_back(payload);
    return result;
  }
  std::vector<std::string> payloads;
  Status result;
};

class LambdaHandlerTest : public ::testing::Test {
 protected:
  LambdaHandlerTest() : sqs_(clock_), store_("fake://archive", &clock_) {
    for (const char* name : {"orders-dlq", "a-dlq", "b-dlq"}) {
      auto url = sqs_.CreateQueue(name, {{"VisibilityTimeout", "30"}});
      EXPECT_TRUE(url.ok());
      urls_[name] = *url;
    }
    config_.drain.wait_time_seconds = 0;
    config_.drain.receivers = 1;
    config_.drain.heartbeat_interval = std::chrono::milliseconds(20);
    config_.drain.batch.max_messages = 10;
    config_.queues = {"a-dlq", "b-dlq"};
    config_.deadline_margin = std::chrono::seconds(10);
    deps_.sqs_for = [this](const std::string& account) -> Result<QueueClient*> {
      accounts_.push_back(account);
      return &sqs_;
    };
    deps_.store = &store_;
    deps_.clock = &clock_;
    deps_.region = "us-east-1";
    deps_.invoker = &invoker_;
    deps_.emit_metric = [this](const std::string& line) { metrics_.push_back(line); };
  }

  void Send(const std::string& queue, int n) {
    for (int i = 0; i < n; ++i) {
      SendEntry e;
      e.body = queue + " message " + std::to_string(i);
      ASSERT_TRUE(sqs_.InjectMessage(urls_[queue], e, clock_.Now()).ok());
    }
  }

  SystemTime Deadline(std::chrono::seconds in) { return clock_.Now() + in; }

  FakeClock clock_;
  FakeQueueClient sqs_;
  FakeObjectStore store_;
  std::map<std::string, std::string> urls_;
  LambdaConfig config_;
  LambdaDeps deps_;
  RecordingInvoker invoker_;
  std::vector<std::string> metrics_;
  std::vector<std::string> accounts_;
};

TEST_F(LambdaHandlerTest, AlarmActionDrainsTheAlarmedQueueOnly) {
  Send("orders-dlq", 25);
  Send("a-dlq", 3);
  LambdaOutcome o = HandleLambdaEvent(kAlarmAction, Deadline(std::chrono::seconds(900)), config_, deps_);
  ASSERT_TRUE(o.ok) << o.body;
  EXPECT_EQ(sqs_.Depth(urls_["orders-dlq"]), 0u);
  EXPECT_EQ(sqs_.Depth(urls_["a-dlq"]), 3u);
  EXPECT_EQ(store_.size(), 3u);  // 10 + 10 + 5
  EXPECT_NE(o.body.find(R"("event":"alarm")"), std::string::npos) << o.body;
  EXPECT_NE(o.body.find(R"("complete":true,"follow_up":"none")"), std::string::npos) << o.body;
  EXPECT_NE(o.body.find(R"("result":"done","archived":25,"deleted":25)"), std::string::npos) << o.body;
  EXPECT_TRUE(invoker_.payloads.empty());
  ASSERT_EQ(metrics_.size(), 1u);
  EXPECT_NE(metrics_[0].find(R"("CloudWatchMetrics":[{"Namespace":"DlqArchive","Dimensions":[["Queue"]],)"),
            std::string::npos)
      << metrics_[0];
  EXPECT_NE(metrics_[0].find(R"("Queue":"orders-dlq","Archived":25,"Failed":0,"Duration":)"), std::string::npos)
      << metrics_[0];
}

TEST_F(LambdaHandlerTest, ScheduleSweepsConfiguredQueues) {
  Send("a-dlq", 4);
  Send("b-dlq", 6);
  LambdaOutcome o = HandleLambdaEvent(kSchedule, Deadline(std::chrono::seconds(900)), config_, deps_);
  ASSERT_TRUE(o.ok) << o.body;
  EXPECT_EQ(sqs_.Depth(urls_["a-dlq"]), 0u);
  EXPECT_EQ(sqs_.Depth(urls_["b-dlq"]), 0u);
  EXPECT_EQ(metrics_.size(), 2u);
}

TEST_F(LambdaHandlerTest, OkAlarmArchivesNothing) {
  Send("orders-dlq", 2);
  std::string ok(kAlarmAction);
  ok.replace(ok.find("\"ALARM\""), 7, "\"OK\"");
  LambdaOutcome o = HandleLambdaEvent(ok, Deadline(std::chrono::seconds(900)), config_, deps_);
  ASSERT_TRUE(o.ok);
  EXPECT_NE(o.body.find("not ALARM"), std::string::npos);
  EXPECT_EQ(sqs_.Depth(urls_["orders-dlq"]), 2u);
}

TEST_F(LambdaHandlerTest, OkAlarmWithoutMetricsIsAnsweredSkipped) {
  LambdaOutcome o = HandleLambdaEvent(
      R"({"source":"aws.cloudwatch","alarmData":{"alarmName":"orders-dlq-depth","state":{"value":"OK"}}})",
      Deadline(std::chrono::seconds(900)), config_, deps_);
  ASSERT_TRUE(o.ok) << o.error_type << ": " << o.body;
  EXPECT_NE(o.body.find(R"("state":"OK")"), std::string::npos) << o.body;
  EXPECT_NE(o.body.find(R"("skipped":"alarm state is not ALARM")"), std::string::npos) << o.body;
  EXPECT_TRUE(metrics_.empty());
}

TEST_F(LambdaHandlerTest, NoTimeLeftStartsNothingAndInvokesFollowUp) {
  Send("a-dlq", 3);
  SystemTime deadline = clock_.Now();  // e.g. a Runtime API clock ahead of ours
  LambdaOutcome o = HandleLambdaEvent(R"({"queues":["a-dlq","b-dlq"],"hop":1})", deadline, config_, deps_);
  ASSERT_TRUE(o.ok) << o.body;
  EXPECT_EQ(sqs_.Depth(urls_["a-dlq"]), 3u);
  EXPECT_NE(o.body.find(R"("complete":false,"follow_up":"invoked")"), std::string::npos) << o.body;
  EXPECT_NE(o.body.find(R"("result":"not_started")"), std::string::npos) << o.body;
  ASSERT_EQ(invoker_.payloads.size(), 1u);
  auto follow = ParseLambdaEvent(invoker_.payloads[0]);
  ASSERT_TRUE(follow.ok());
  EXPECT_EQ(follow->queues, (std::vector<std::string>{"a-dlq", "b-dlq"}));
  EXPECT_EQ(follow->hop, 2);
}

TEST_F(LambdaHandlerTest, HopLimitLeavesItToTheSchedule) {
  config_.max_hops = 2;
  clock_.Advance(std::chrono::seconds(1));
  LambdaOutcome o = HandleLambdaEvent(R"({"queues":["a-dlq"],"hop":2})", clock_.Now(), config_, deps_);
  ASSERT_TRUE(o.ok) << o.body;
  EXPECT_NE(o.body.find(R"("follow_up":"hop_limit")"), std::string::npos) << o.body;
  EXPECT_TRUE(invoker_.payloads.empty());
}

TEST_F(LambdaHandlerTest, DeadlineDuringDrainStopsAndReleases) {
  Send("a-dlq", 2000);
  SystemTime deadline = Deadline(std::chrono::seconds(60));  // receiving stops at deadline - 10 s
  std::atomic<bool> first{true};
  store_.SetPutHook([&](const std::string&, std::string_view) {
    if (first.exchange(false)) {
      clock_.Advance(std::chrono::seconds(55));                     // past the stop time
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the watcher sees it
    }
    return Status::Ok();
  });
  LambdaOutcome o = HandleLambdaEvent(R"({"queues":["a-dlq","b-dlq"]})", deadline, config_, deps_);
  ASSERT_TRUE(o.ok) << o.body;
  EXPECT_NE(o.body.find(R"("queue":"a-dlq","result":"stopped")"), std::string::npos) << o.body;
  EXPECT_NE(o.body.find(R"("queue":"b-dlq","result":"not_started")"), std::string::npos) << o.body;
  EXPECT_NE(o.body.find(R"("complete":false,"follow_up":"invoked")"), std::string::npos) << o.body;
  // The upload in flight finished and its messages were deleted; the rest is
  // back in the queue, visible: nothing lost, nothing held.
  size_t deleted = store_.size() * 10;  // every object holds one full batch of 10
  EXPECT_GE(deleted, 10u);
  EXPECT_LT(deleted, 2000u);
  EXPECT_EQ(sqs_.Depth(urls_["a-dlq"]), 2000u - deleted);
  EXPECT_NE(o.body.find(fmt::format(R"("archived":{},"deleted":{})", deleted, deleted)), std::string::npos) << o.body;
  ASSERT_EQ(invoker_.payloads.size(), 1u);
  EXPECT_EQ(ParseLambdaEvent(invoker_.payloads[0])->queues, (std::vector<std::string>{"a-dlq", "b-dlq"}));
}

TEST_F(LambdaHandlerTest, MalformedEventIsAnInvocationError) {
  LambdaOutcome o = HandleLambdaEvent("{\"queues\":", Deadline(std::chrono::seconds(900)), config_, deps_);
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.error_type, "DlqArchive.InvalidEvent");
  EXPECT_NE(o.body.find("not valid JSON"), std::string::npos) << o.body;
}

TEST_F(LambdaHandlerTest, MissingQueueIsAQueueFailure) {
  LambdaOutcome o =
      HandleLambdaEvent(R"({"queues":["nope-dlq","a-dlq"]})", Deadline(std::chrono::seconds(900)), config_, deps_);
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.error_type, "DlqArchive.QueueFailed");
  EXPECT_NE(o.body.find(R"("queue":"nope-dlq","result":"failed")"), std::string::npos) << o.body;
  EXPECT_NE(o.body.find(R"("queue":"a-dlq","result":"not_started")"), std::string::npos) << o.body;
}

TEST_F(LambdaHandlerTest, RemainingIsNullForQueuesNeverReadAndACountForDrainedOnes) {
  Send("a-dlq", 3);
  LambdaOutcome o = HandleLambdaEvent(R"({"queues":["a-dlq","nope-dlq","b-dlq"]})", Deadline(std::chrono::seconds(900)),
                                      config_, deps_);
  EXPECT_FALSE(o.ok);
  simdjson::dom::parser parser;
  simdjson::dom::element summary;
  ASSERT_EQ(parser.parse(o.body).get(summary), simdjson::SUCCESS) << o.body;
  std::map<std::string, simdjson::dom::element> by_queue;
  for (simdjson::dom::element q : summary["queues"].get_array())
    by_queue[std::string(q["queue"].get_string().value())] = q;
  ASSERT_EQ(by_queue.size(), 3u) << o.body;
  EXPECT_EQ(by_queue["a-dlq"]["result"].get_string().value(), "done");
  EXPECT_TRUE(by_queue["a-dlq"]["remaining"].is_int64()) << o.body;
  EXPECT_EQ(by_queue["nope-dlq"]["result"].get_string().value(), "failed");
  EXPECT_TRUE(by_queue["nope-dlq"]["remaining"].is_null()) << o.body;
  EXPECT_EQ(by_queue["b-dlq"]["result"].get_string().value(), "not_started");
  EXPECT_TRUE(by_queue["b-dlq"]["remaining"].is_null()) << o.body;
  EXPECT_EQ(o.body.find("18446744073709551615"), std::string::npos) << o.body;
}

TEST_F(LambdaHandlerTest, QueueUrlSelectsItsAccount) {
  (void)HandleLambdaEvent(R"({"queues":["https://sqs.us-east-1.amazonaws.com/210987654321/x-dlq"]})",
                          Deadline(std::chrono::seconds(900)), config_, deps_);
  EXPECT_EQ(accounts_, std::vector<std::string>{"210987654321"});
  EXPECT_EQ(QueueAccount("orders-dlq"), "");
}

class FakeRuntime final : public RuntimeClient {
 public:
  Result<Invocation> Next() override {
    if (events.empty()) return Unavailable("no more events");
    Invocation inv = std::move(events.front());
    events.pop_front();
    return inv;
  }
  Status Respond(const std::string& id, std::string_view body) override {
    responses.emplace_back(id, std::string(body));
    return Status::Ok();
  }
  Status ReportError(const std::string& id, std::string_view type, std::string_view message) override {
    errors.emplace_back(id, std::string(type) + ": " + std::string(message));
    return Status::Ok();
  }
  Status ReportInitError(std::string_view, std::string_view) override { return Status::Ok(); }
  std::deque<Invocation> events;
  std::vector<std::pair<std::string, std::string>> responses, errors;
};

TEST_F(LambdaHandlerTest, LoopAnswersEachInvocationUntilTheApiGoesAway) {
  Send("orders-dlq", 2);
  FakeRuntime rt;
  rt.events.push_back({"r1", std::string(kAlarmAction), Deadline(std::chrono::seconds(900)), "", ""});
  rt.events.push_back({"r2", "garbage", Deadline(std::chrono::seconds(900)), "", ""});
  rt.events.push_back({"r3", std::string(kSchedule), Deadline(std::chrono::seconds(900)), "", ""});
  std::atomic<bool> stop{false};
  Status st = RunLambdaLoop(
      rt, [&](const Invocation& inv) { return HandleLambdaEvent(inv.body, inv.deadline, config_, deps_); }, stop);
  EXPECT_EQ(st.code(), ErrorCode::kUnavailable);
  ASSERT_EQ(rt.responses.size(), 2u);
  EXPECT_EQ(rt.responses[0].first, "r1");
  EXPECT_EQ(rt.responses[1].first, "r3");
  ASSERT_EQ(rt.errors.size(), 1u);
  EXPECT_EQ(rt.errors[0].first, "r2");
  EXPECT_EQ(rt.errors[0].second.rfind("DlqArchive.InvalidEvent: ", 0), 0u);
}

// The cause lookup after each drain (doc/causes.md): orders-dlq is fed by
// the source queue "orders", consumed by the Lambda function orders-worker,
// whose log group says why each logged message failed.
class LambdaCausesTest : public LambdaHandlerTest {
 protected:
  static constexpr char kLogGroup[] = "/aws/lambda/orders-worker";

  void SetUp() override {
    const std::string dlq_arn = sqs_.GetQueueAttributes(urls_["orders-dlq"], {"QueueArn"})->at("QueueArn");
    const std::string source_url = *sqs_.CreateQueue(
        "orders", {{"VisibilityTimeout", "60"},
                   {"RedrivePolicy", fmt::format(R"({{"deadLetterTargetArn":"{}","maxReceiveCount":3}})", dlq_arn)}});
    source_arn_ = sqs_.GetQueueAttributes(source_url, {"QueueArn"})->at("QueueArn");
    FunctionConfiguration f;
    f.function_name = "orders-worker";
    lambda_.AddFunction(f);
    lambda_.AddEventSourceMapping(
        {"esm-1", "arn:aws:lambda:us-east-1:123456789012:function:orders-worker", source_arn_, "Enabled", {}, 10});
    logs_.AddGroup(kLogGroup, 30);
    config_.causes.mode = LambdaCauses::Mode::kAuto;
    deps_.logs = &logs_;
    deps_.lambda_api = &lambda_;
  }

  // `n` messages of one failure group moved from "orders" to `queue` 20
  // minutes ago; the first `logged` of them failed in a logged invocation.
  void SendFailed(const std::string& queue, int n, int logged) {
    const SystemTime sent = clock_.Now() - std::chrono::minutes(20);
    for (int i = 0; i < n; ++i) {
      SendEntry e;
      e.body = fmt::format(R"({{"sku":"S{}"}})", i);
      auto id = sqs_.InjectMessage(urls_[queue], e, sent, {{"DeadLetterQueueSourceArn", source_arn_}});
      ASSERT_TRUE(id.ok()) << id.status().ToString();
      if (i >= logged) continue;
      const std::string rid = fmt::format("req-{}", i), stream = fmt::format("2026/11/29/[$LATEST]s{}", i);
      const int64_t at = ToUnixMillis(sent) + 60'000 + i;
      logs_.AddEvent(kLogGroup, stream, at, fmt::format("START RequestId: {} Version: $LATEST\n", rid));
      logs_.AddEvent(kLogGroup, stream, at + 1, fmt::format("processing {}\n", *id));
      logs_.AddEvent(kLogGroup, stream, at + 2, fmt::format("[ERROR] ValueError: bad sku 'S{}'\n", i));
      logs_.AddEvent(kLogGroup, stream, at + 3, fmt::format("END RequestId: {}\n", rid));
    }
  }

  std::vector<const CauseRecord*> Kept(const std::string& queue) {
    auto read = ReadCauseRecords(store_, config_.drain.prefix, {queue});
    EXPECT_TRUE(read.ok()) << read.status().ToString();
    kept_ = read.ok() ? std::move(*read) : CauseIndex();
    return kept_.All();
  }

  FakeLogsClient logs_;
  FakeLambdaApi lambda_;
  std::string source_arn_;
  CauseIndex kept_;
};

TEST_F(LambdaCausesTest, AnswersOfEachFailureGroupAreKeptInTheSidecarAfterTheDrain) {
  SendFailed("orders-dlq", 5, 5);
  LambdaOutcome o = HandleLambdaEvent(kAlarmAction, Deadline(std::chrono::seconds(900)), config_, deps_);
  ASSERT_TRUE(o.ok) << o.body;
  EXPECT_EQ(sqs_.Depth(urls_["orders-dlq"]), 0u);
  // One failure group, 3 samples (the default): 3 looked up, each found.
  const auto kept = Kept("orders-dlq");
  ASSERT_EQ(kept.size(), 3u);
  for (const CauseRecord* r : kept) {
    EXPECT_EQ(r->status, CauseStatus::kFound) << r->reason;
    ASSERT_TRUE(r->cause.has_value());
    EXPECT_NE(r->cause->message.find("bad sku"), std::string::npos) << r->cause->message;
  }
  EXPECT_NE(o.body.find(R"("causes":{"state":"looked_up","looked_up":3,"found":3,)"), std::string::npos) << o.body;
  EXPECT_GT(logs_.filter_calls(), 0);
  EXPECT_LE(logs_.filter_calls(), config_.causes.max_filter_calls);
  EXPECT_EQ(lambda_.calls("ListEventSourceMappings"), 1);

  // The next invocation's messages of the same group need no lookup: the sidecar has its samples.
  const int calls = logs_.filter_calls();
  SendFailed("orders-dlq", 2, 2);
  o = HandleLambdaEvent(kAlarmAction, Deadline(std::chrono::seconds(900)), config_, deps_);
  ASSERT_TRUE(o.ok) << o.body;
  EXPECT_EQ(logs_.filter_calls(), calls);
  EXPECT_EQ(Kept("orders-dlq").size(), 3u);
}

TEST_F(LambdaCausesTest, OffMakesNoCall) {
  config_.causes.mode = LambdaCauses::Mode::kOff;
  SendFailed("orders-dlq", 5, 5);
  LambdaOutcome o = HandleLambdaEvent(kAlarmAction, Deadline(std::chrono::seconds(900)), config_, deps_);
  ASSERT_TRUE(o.ok) << o.body;
  EXPECT_EQ(sqs_.Depth(urls_["orders-dlq"]), 0u);
  EXPECT_EQ(logs_.filter_calls() + logs_.describe_calls(), 0);
  EXPECT_EQ(lambda_.calls("ListEventSourceMappings") + lambda_.calls("GetFunctionConfiguration"), 0);
  EXPECT_TRUE(Kept("orders-dlq").empty());
  EXPECT_EQ(o.body.find(R"("causes")"), std::string::npos) << o.body;
}

TEST_F(LambdaCausesTest, ADenialDoesNotFailTheInvocationAndAutoStopsForTheRestOfIt) {
  for (auto mode : {LambdaCauses::Mode::kAuto, LambdaCauses::Mode::kOn}) {
    SCOPED_TRACE(mode == LambdaCauses::Mode::kAuto ? "auto" : "on");
    config_.causes.mode = mode;
    logs_.Deny("FilterLogEvents");
    SendFailed("orders-dlq", 2, 2);
    SendFailed("a-dlq", 2, 2);
    LambdaOutcome o =
        HandleLambdaEvent(R"({"queues":["orders-dlq","a-dlq"]})", Deadline(std::chrono::seconds(900)), config_, deps_);
    // The archive succeeded: the invocation does too.
    ASSERT_TRUE(o.ok) << o.body;
    EXPECT_NE(o.body.find(R"("complete":true)"), std::string::npos) << o.body;
    EXPECT_EQ(sqs_.Depth(urls_["orders-dlq"]), 0u);
    EXPECT_EQ(sqs_.Depth(urls_["a-dlq"]), 0u);
    EXPECT_NE(o.body.find(R"("queue":"orders-dlq","result":"done")"), std::string::npos) << o.body;
    EXPECT_NE(o.body.find(R"("causes":{"state":"looked_up","looked_up":2,"found":0,)"), std::string::npos) << o.body;
    const auto kept = Kept("orders-dlq");
    ASSERT_FALSE(kept.empty());
    for (const CauseRecord* r : kept) EXPECT_EQ(r->status, CauseStatus::kAccessDenied);
    // auto: a-dlq is not looked up after the denial; on: it is.
    const bool skipped = o.body.find(R"("causes":{"state":"skipped_denied")") != std::string::npos;
    EXPECT_EQ(skipped, mode == LambdaCauses::Mode::kAuto) << o.body;
    EXPECT_EQ(Kept("a-dlq").empty(), mode == LambdaCauses::Mode::kAuto);
    logs_.Deny("");
  }
}

TEST_F(LambdaCausesTest, TooLittleTimeLeftSkipsTheLookup) {
  SendFailed("orders-dlq", 3, 3);
  // 9 s left: the drain runs (it stops at deadline - 4.5 s), the lookup needs 10 s.
  LambdaOutcome o = HandleLambdaEvent(kAlarmAction, Deadline(std::chrono::seconds(9)), config_, deps_);
  ASSERT_TRUE(o.ok) << o.body;
  EXPECT_EQ(sqs_.Depth(urls_["orders-dlq"]), 0u);
  EXPECT_NE(o.body.find(R"("causes":{"state":"skipped_deadline","looked_up":0)"), std::string::npos) << o.body;
  EXPECT_EQ(logs_.filter_calls() + logs_.describe_calls(), 0);
  EXPECT_EQ(lambda_.calls("ListEventSourceMappings"), 0);
  EXPECT_TRUE(Kept("orders-dlq").empty());
}

TEST_F(LambdaCausesTest, AQueueNamedByUrlIsArchivedButNotLookedUp) {
  // The stack names other accounts' queues by URL: their consumers and logs
  // are out of the function's reach.
  SendFailed("orders-dlq", 3, 3);
  LambdaOutcome o = HandleLambdaEvent(fmt::format(R"({{"queues":["{}"]}})", urls_["orders-dlq"]),
                                      Deadline(std::chrono::seconds(900)), config_, deps_);
  ASSERT_TRUE(o.ok) << o.body;
  EXPECT_EQ(sqs_.Depth(urls_["orders-dlq"]), 0u);
  EXPECT_NE(o.body.find(R"("causes":{"state":"skipped_other_account")"), std::string::npos) << o.body;
  EXPECT_EQ(logs_.filter_calls() + logs_.describe_calls(), 0);
  EXPECT_EQ(lambda_.calls("ListEventSourceMappings"), 0);
}

TEST(LambdaSettingsTest, CausesAreOffUnlessSetAndTheirVariablesAreChecked) {
  auto base = [] {
    return std::make_unique<MapEnvironment>(std::initializer_list<std::pair<const std::string, std::string>>{
        {"AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"}, {"DLQ_ARCHIVE_DESTINATION", "s3://b/p"}});
  };
  auto d = LambdaSettingsFromEnv(*base());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->config.causes.mode, LambdaCauses::Mode::kOff);
  EXPECT_EQ(d->config.causes.samples, 3u);
  EXPECT_TRUE(d->config.causes.consumer_logs.empty());

  auto env = base();
  env->Set("DLQ_ARCHIVE_CAUSES", "auto");
  env->Set("DLQ_ARCHIVE_CAUSE_SAMPLES", "5");
  env->Set("DLQ_ARCHIVE_CONSUMER_LOGS", "/ecs/orders, payments-dlq=/ecs/payments");
  auto s = LambdaSettingsFromEnv(*env);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->config.causes.mode, LambdaCauses::Mode::kAuto);
  EXPECT_EQ(s->config.causes.samples, 5u);
  // "GROUP" for every queue, "QUEUE=GROUP" for one.
  auto names = [&](const std::string& queue) {
    std::vector<std::string> out;
    for (const NamedLogGroup& g : s->config.causes.NamedFor(queue)) out.push_back(g.log_group);
    return out;
  };
  EXPECT_EQ(names("orders-dlq"), (std::vector<std::string>{"/ecs/orders"}));
  EXPECT_EQ(names("payments-dlq"), (std::vector<std::string>{"/ecs/orders", "/ecs/payments"}));
  env->Set("DLQ_ARCHIVE_CAUSES", "on");
  EXPECT_EQ(LambdaSettingsFromEnv(*env)->config.causes.mode, LambdaCauses::Mode::kOn);

  for (auto [var, value] :
       std::vector<std::pair<std::string, std::string>>{{"DLQ_ARCHIVE_CAUSES", "yes"},
                                                        {"DLQ_ARCHIVE_CAUSE_SAMPLES", "0"},
                                                        {"DLQ_ARCHIVE_CAUSE_SAMPLES", "101"},
                                                        {"DLQ_ARCHIVE_CAUSE_SAMPLES", "three"},
                                                        {"DLQ_ARCHIVE_CONSUMER_LOGS", "=/ecs/orders"},
                                                        {"DLQ_ARCHIVE_CONSUMER_LOGS", "orders-dlq="},
                                                        {"DLQ_ARCHIVE_CONSUMER_LOGS", "/ecs/*"}}) {
    auto bad = base();
    bad->Set(var, value);
    auto r = LambdaSettingsFromEnv(*bad);
    ASSERT_FALSE(r.ok()) << var << "=" << value;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(var), std::string::npos) << r.status().message();
  }
}

TEST(LambdaSettingsTest, ReadsEnvironmentAndRejectsBadValues) {
  MapEnvironment env{{"AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"},
                     {"DLQ_ARCHIVE_DESTINATION", "s3://bucket/archive"},
                     {"DLQ_ARCHIVE_QUEUES", "a-dlq, b-dlq"},
                     {"DLQ_ARCHIVE_SSE", "aws:kms"},
                     {"DLQ_ARCHIVE_SSE_KMS_KEY_ID", "alias/dlq"},
                     {"DLQ_ARCHIVE_POLICY", "older_than:1h"},
                     {"DLQ_ARCHIVE_BATCH_MAX_MESSAGES", "500"},
                     {"DLQ_ARCHIVE_DEADLINE_MARGIN", "20s"},
                     {"DLQ_ARCHIVE_ROLE_ARNS", "210987654321=arn:aws:iam::210987654321:role/dlq"}};
  auto s = LambdaSettingsFromEnv(env);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->destination.bucket, "bucket");
  EXPECT_EQ(s->config.drain.prefix, "archive");
  EXPECT_EQ(s->config.queues, (std::vector<std::string>{"a-dlq", "b-dlq"}));
  EXPECT_EQ(s->config.drain.put.sse_kms_key_id, "alias/dlq");
  EXPECT_EQ(s->config.drain.selection.kind, SelectionKind::kOlderThan);
  EXPECT_EQ(s->config.drain.batch.max_messages, 500u);
  EXPECT_EQ(s->config.deadline_margin, std::chrono::seconds(20));
  EXPECT_TRUE(s->config.drain.finish_receives_on_stop);
  EXPECT_EQ(s->role_arns.at("210987654321"), "arn:aws:iam::210987654321:role/dlq");

  for (auto [var, value] : std::vector<std::pair<std::string, std::string>>{{"DLQ_ARCHIVE_DESTINATION", "bucket"},
                                                                            {"DLQ_ARCHIVE_POLICY", "older_than"},
                                                                            {"DLQ_ARCHIVE_SSE", "kms"},
                                                                            {"DLQ_ARCHIVE_ROLE_ARNS", "123=arn"},
                                                                            {"DLQ_ARCHIVE_MAX_HOPS", "-1"}}) {
    MapEnvironment bad{{"AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"}, {"DLQ_ARCHIVE_DESTINATION", "s3://b/p"}};
    bad.Set(var, value);
    auto r = LambdaSettingsFromEnv(bad);
    ASSERT_FALSE(r.ok()) << var;
    EXPECT_NE(r.status().message().find(var), std::string::npos) << r.status().message();
  }
}

TEST(LambdaRuntimeTest, ErrorDocumentShape) {
  EXPECT_EQ(RuntimeErrorJson("T", "a \"b\""), R"({"errorMessage":"a \"b\"","errorType":"T","stackTrace":[]})");
}

}  // namespace
}  // namespace dlq

namespace dlq {
namespace {

TEST(AwsFunctionInvokerTest, PostsAnAsyncInvokeSignedForLambda) {
  FakeHttpTransport http([](const HttpRequest&) -> Result<HttpResponse> {
    HttpResponse r;
    r.status = 202;
    return r;
  });
  Credentials creds;
  creds.access_key_id = "AKIDEXAMPLE";
  creds.secret_access_key = "secret";
  StaticCredentialsProvider provider(creds);
  FakeClock clock;
  AwsClient client({"lambda", "us-east-1", "https://lambda.us-east-1.amazonaws.com", false}, http, provider, clock);
  AwsFunctionInvoker invoker(client, "dlq-archive");
  ASSERT_TRUE(invoker.InvokeAsync(R"({"queues":["a"],"hop":1})").ok());
  auto reqs = http.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].url, "https://lambda.us-east-1.amazonaws.com/2015-03-31/functions/dlq-archive/invocations");
  EXPECT_EQ(reqs[0].body, R"({"queues":["a"],"hop":1})");
  ASSERT_NE(FindHeader(reqs[0].headers, "X-Amz-Invocation-Type"), nullptr);
  EXPECT_EQ(*FindHeader(reqs[0].headers, "X-Amz-Invocation-Type"), "Event");
  const std::string* auth = FindHeader(reqs[0].headers, "Authorization");
  ASSERT_NE(auth, nullptr);
  EXPECT_NE(auth->find("/us-east-1/lambda/aws4_request"), std::string::npos) << *auth;
}

TEST(AwsFunctionInvokerTest, AnErrorOrAnUnexpectedStatusIsReported) {
  FakeHttpTransport http([](const HttpRequest&) -> Result<HttpResponse> {
    HttpResponse r;
    r.status = 200;  // a synchronous answer: not what was asked for
    return r;
  });
  StaticCredentialsProvider provider(Credentials{"AKID", "secret", "", std::nullopt, "test"});
  FakeClock clock;
  AwsClient client({"lambda", "us-east-1", "https://lambda.us-east-1.amazonaws.com", false}, http, provider, clock);
  AwsFunctionInvoker invoker(client, "f");
  EXPECT_FALSE(invoker.InvokeAsync("{}").ok());
  http.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    HttpResponse r;
    r.status = 403;
    r.body = R"({"Type":"User","message":"not authorized"})";
    r.headers = {{"x-amzn-ErrorType", "AccessDeniedException"}};
    return r;
  });
  Status st = invoker.InvokeAsync("{}");
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.message().find("secret"), std::string::npos);
}

}  // namespace
}  // namespace dlq
