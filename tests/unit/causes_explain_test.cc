// The cause lookup end to end against fakes: consumer discovery, the lookup's
// answers (found, and each honest absence), bounded and cached calls, and the
// causes sidecar.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "archive/gzip.h"
#include "causes/explain.h"
#include "causes/sidecar.h"
#include "common/time_util.h"
#include "query/scan.h"
#include "testing/fake_clock.h"
#include "testing/fake_lambda_api.h"
#include "testing/fake_logs.h"
#include "testing/fake_object_store.h"
#include "testing/fake_queue.h"

namespace dlq {
namespace {

constexpr char kFunction[] = "orders-worker";
constexpr char kGroup[] = "/aws/lambda/orders-worker";

class CausesExplainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dlq_url_ = *sqs_.CreateQueue("orders-dlq", {});
    auto dlq_attrs = *sqs_.GetQueueAttributes(dlq_url_, {"QueueArn"});
    dlq_.name = "orders-dlq";
    dlq_.url = dlq_url_;
    dlq_.arn = dlq_attrs["QueueArn"];
    dlq_.region = "us-east-1";
    dlq_.account_id = "123456789012";
    source_url_ = *sqs_.CreateQueue(
        "orders", {{"VisibilityTimeout", "60"},
                   {"RedrivePolicy", fmt::format(R"({{"deadLetterTargetArn":"{}","maxReceiveCount":3}})", dlq_.arn)}});
    source_arn_ = sqs_.GetQueueAttributes(source_url_, {"QueueArn"})->at("QueueArn");
    FunctionConfiguration f;
    f.function_name = kFunction;
    f.timeout_seconds = 30;
    lambda_.AddFunction(f);
    EventSourceMapping m;
    m.uuid = "esm-1";
    m.function_arn = fmt::format("arn:aws:lambda:us-east-1:123456789012:function:{}", kFunction);
    m.event_source_arn = source_arn_;
    m.state = "Enabled";
    lambda_.AddEventSourceMapping(m);
    logs_.AddGroup(kGroup, 14);
    now_ms_ = ToUnixMillis(clock_.Now());
  }

  // A message sent ten minutes ago and archived a minute ago.
  LookupMessage Message(const std::string& id, const std::string& group_key = "g1") {
    LookupMessage m;
    m.queue = "orders-dlq";
    m.message_id = id;
    m.group_key = group_key;
    m.source_queue_arn = source_arn_;
    m.sent_ms = now_ms_ - 10 * 60'000;
    m.archived_ms = now_ms_ - 60'000;
    return m;
  }

  // One invocation of the function (Python runtime) that handled `id` and failed.
  void FailedInvocation(const std::string& id, const std::string& request_id, int64_t at_ms,
                        const std::string& error = "ValueError: bad sku 4711") {
    const std::string stream = "2023/11/14/[$LATEST]" + request_id;
    logs_.AddEvent(kGroup, stream, at_ms, fmt::format("START RequestId: {} Version: $LATEST\n", request_id));
    logs_.AddEvent(kGroup, stream, at_ms + 5, fmt::format("processing message {}\n", id));
    logs_.AddEvent(kGroup, stream, at_ms + 10,
                   fmt::format("[ERROR] {}\nTraceback (most recent call last):\n  File \"/var/task/app.py\", line 9, "
                               "in handler\n",
                               error));
    logs_.AddEvent(kGroup, stream, at_ms + 20, fmt::format("END RequestId: {}\n", request_id));
    logs_.AddEvent(kGroup, stream, at_ms + 21,
                   fmt::format("REPORT RequestId: {}\tDuration: 12.00 ms\tBilled Duration: 13 ms\tMemory Size: 128 "
                               "MB\tMax Memory Used: 40 MB\n",
                               request_id));
  }

  ExplainResult Explain(std::vector<LookupMessage> messages, std::vector<NamedLogGroup> named = {},
                        const CauseIndex* known = nullptr, size_t samples = 3, int max_filter_calls = 200) {
    ExplainRequest request;
    request.dlq = dlq_;
    request.messages = std::move(messages);
    request.named_log_groups = std::move(named);
    request.known = known;
    request.samples_per_group = samples;
    request.lookup.max_filter_calls = max_filter_calls;
    EXPECT_TRUE(request.Validate().ok());
    return ExplainFailures(request, ExplainClients{sqs_, lambda_, logs_, clock_});
  }

  int SqsCalls() const {
    int n = 0;
    for (auto op : {FakeQueueClient::Operation::kListDeadLetterSourceQueues, FakeQueueClient::Operation::kListQueues,
                    FakeQueueClient::Operation::kGetQueueAttributes}) {
      n += sqs_.calls(op);
    }
    return n;
  }

  FakeClock clock_;
  FakeQueueClient sqs_{clock_};
  FakeLambdaApi lambda_;
  FakeLogsClient logs_;
  QueueInfo dlq_;
  std::string dlq_url_, source_url_, source_arn_;
  int64_t now_ms_ = 0;
};

TEST_F(CausesExplainTest, DiscoveryFollowsTheSourceToItsLambdaConsumersLogGroup) {
  ConsumerMap map = DiscoverConsumers(sqs_, lambda_, dlq_, {{"/ecs/orders", "--logs"}});
  ASSERT_EQ(map.sources.size(), 1u);
  EXPECT_EQ(map.sources[0].name, "orders");
  EXPECT_EQ(map.sources[0].arn, source_arn_);
  EXPECT_EQ(map.sources[0].max_receive_count, 3);
  EXPECT_EQ(map.sources[0].visibility_timeout_ms, 60'000);
  ASSERT_EQ(map.log_groups.size(), 2u);
  EXPECT_EQ(map.log_groups[0].log_group, kGroup);
  EXPECT_EQ(map.log_groups[0].function_name, kFunction);
  EXPECT_EQ(map.log_groups[0].source_queue_arn, source_arn_);
  EXPECT_NE(map.log_groups[0].how.find("event source mapping esm-1 from orders"), std::string::npos)
      << map.log_groups[0].how;
  EXPECT_NE(map.log_groups[0].how.find("default log group"), std::string::npos);
  EXPECT_EQ(map.log_groups[1].log_group, "/ecs/orders");
  EXPECT_EQ(map.log_groups[1].how, "named by --logs");
  EXPECT_TRUE(map.notes.empty());
  EXPECT_EQ(map.ForSource(source_arn_).size(), 2u);
}

TEST_F(CausesExplainTest, DiscoveryReadsEveryRedrivePolicyWhereListDeadLetterSourceQueuesIsMissing) {
  sqs_.FailNext(FakeQueueClient::Operation::kListDeadLetterSourceQueues,
                Status(ErrorCode::kInvalidArgument, "InvalidAction").WithAws({"InvalidAction", 400, "r"}));
  ASSERT_TRUE(sqs_.CreateQueue("unrelated", {}).ok());
  ConsumerMap map = DiscoverConsumers(sqs_, lambda_, dlq_, {});
  EXPECT_EQ(sqs_.calls(FakeQueueClient::Operation::kListQueues), 1);
  ASSERT_EQ(map.sources.size(), 1u);
  EXPECT_EQ(map.sources[0].url, source_url_);
  ASSERT_EQ(map.log_groups.size(), 1u);
  EXPECT_EQ(map.log_groups[0].log_group, kGroup);
}

TEST_F(CausesExplainTest, DiscoveryTakesTheFunctionsLoggingConfigLogGroup) {
  FunctionConfiguration f;
  f.function_name = kFunction;
  f.log_group = "/shared/orders";
  f.log_format = "JSON";
  lambda_.AddFunction(f);
  ConsumerMap map = DiscoverConsumers(sqs_, lambda_, dlq_, {});
  ASSERT_EQ(map.log_groups.size(), 1u);
  EXPECT_EQ(map.log_groups[0].log_group, "/shared/orders");
  EXPECT_EQ(map.log_groups[0].log_format, "JSON");
  EXPECT_NE(map.log_groups[0].how.find("LoggingConfig.LogGroup"), std::string::npos);
}

TEST_F(CausesExplainTest, FindsTheConsumersErrorForASampleOfEachGroup) {
  std::vector<LookupMessage> messages;
  for (int i = 0; i < 5; ++i) {
    std::string id = fmt::format("0000000{}-aaaa-4bbb-8ccc-dddddddddddd", i);
    FailedInvocation(id, fmt::format("req-{}", i), now_ms_ - 9 * 60'000 + i * 1000);
    LookupMessage m = Message(id);
    m.sent_ms += i;  // the first three are the sample
    messages.push_back(m);
  }
  ExplainResult r = Explain(messages);
  EXPECT_EQ(r.sampled, 3u);
  EXPECT_EQ(r.reused, 0u);
  ASSERT_EQ(r.records.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const CauseRecord& c = r.records[i];
    EXPECT_EQ(c.message_id, messages[i].message_id);
    ASSERT_EQ(c.status, CauseStatus::kFound) << c.reason;
    EXPECT_EQ(c.cause->type, "ValueError");
    EXPECT_EQ(c.cause->message, "bad sku 4711");
    EXPECT_EQ(c.cause->request_id, fmt::format("req-{}", i));
    EXPECT_EQ(c.cause->log_group, kGroup);
    EXPECT_EQ(c.group_key, "g1");
    EXPECT_EQ(c.log_groups, std::vector<std::string>{kGroup});
  }
  EXPECT_EQ(r.records[0].cause->key, r.records[1].cause->key);
  // Two FilterLogEvents per message (the id, then the invocation), one DescribeLogGroups.
  EXPECT_EQ(r.calls.filter_log_events, 6);
  EXPECT_EQ(logs_.filter_calls(), 6);
  EXPECT_EQ(r.calls.describe_log_groups, 1);
  EXPECT_EQ(r.calls.lambda, 2);
  EXPECT_NE(DescribeExplainCalls(r).find("FilterLogEvents 6 (at most 200)"), std::string::npos)
      << DescribeExplainCalls(r);
}

TEST_F(CausesExplainTest, ASecondRunWithTheKeptRecordsMakesNoCalls) {
  std::vector<LookupMessage> messages;
  for (int i = 0; i < 3; ++i) {
    std::string id = fmt::format("1000000{}-aaaa-4bbb-8ccc-dddddddddddd", i);
    FailedInvocation(id, fmt::format("req-{}", i), now_ms_ - 9 * 60'000 + i * 1000);
    messages.push_back(Message(id));
  }
  // One message has no log line at all: not_mentioned is kept too.
  messages.push_back(Message("20000000-aaaa-4bbb-8ccc-dddddddddddd", "g2"));
  ExplainResult first = Explain(messages);
  ASSERT_EQ(first.records.size(), 4u);
  EXPECT_EQ(first.records[3].status, CauseStatus::kNotMentioned);
  CauseIndex kept;
  for (const CauseRecord& c : first.records) kept.Add(c);
  const int filter = logs_.filter_calls(), describe = logs_.describe_calls(), sqs = SqsCalls();
  const int lambda = lambda_.calls("ListEventSourceMappings") + lambda_.calls("GetFunctionConfiguration");

  ExplainResult second = Explain(messages, {}, &kept);
  EXPECT_TRUE(second.records.empty());
  EXPECT_EQ(second.sampled, 4u);
  EXPECT_EQ(second.reused, 4u);
  EXPECT_FALSE(second.consumers.has_value());
  EXPECT_EQ(second.calls.total(), 0);
  EXPECT_EQ(logs_.filter_calls(), filter);
  EXPECT_EQ(logs_.describe_calls(), describe);
  EXPECT_EQ(SqsCalls(), sqs);
  EXPECT_EQ(lambda_.calls("ListEventSourceMappings") + lambda_.calls("GetFunctionConfiguration"), lambda);

  // A log group named now that the kept not_mentioned record did not search: looked up again.
  ExplainResult third = Explain(messages, {{"/ecs/orders", "--logs"}}, &kept);
  ASSERT_EQ(third.records.size(), 1u);
  EXPECT_EQ(third.records[0].message_id, "20000000-aaaa-4bbb-8ccc-dddddddddddd");
}

TEST_F(CausesExplainTest, ThrottlingPastTheClientsRetriesIsTheMessagesStatusNotAFailedRun) {
  const std::string id = "30000000-aaaa-4bbb-8ccc-dddddddddddd";
  FailedInvocation(id, "req-t", now_ms_ - 9 * 60'000);
  logs_.ThrottleNext(100);
  ExplainResult r = Explain({Message(id)});
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0].status, CauseStatus::kThrottled);
  EXPECT_NE(r.records[0].reason.find("throttled FilterLogEvents on /aws/lambda/orders-worker"), std::string::npos)
      << r.records[0].reason;
  EXPECT_NE(r.records[0].reason.find("looked up again"), std::string::npos);
  EXPECT_FALSE(ReusableCause(r.records[0], {}));

  // Once CloudWatch Logs answers again, the next run finds the cause.
  logs_.ThrottleNext(0);
  CauseIndex kept;
  kept.Add(r.records[0]);
  ExplainResult again = Explain({Message(id)}, {}, &kept);
  ASSERT_EQ(again.records.size(), 1u);
  EXPECT_EQ(again.records[0].status, CauseStatus::kFound) << again.records[0].reason;
}

TEST_F(CausesExplainTest, AccessDeniedNamesThePermissionAndTheLogGroup) {
  const std::string id = "40000000-aaaa-4bbb-8ccc-dddddddddddd";
  FailedInvocation(id, "req-d", now_ms_ - 9 * 60'000);
  logs_.Deny("FilterLogEvents");
  ExplainResult r = Explain({Message(id)});
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0].status, CauseStatus::kAccessDenied);
  EXPECT_NE(r.records[0].reason.find("logs:FilterLogEvents on "), std::string::npos) << r.records[0].reason;
  EXPECT_NE(r.records[0].reason.find(kGroup), std::string::npos);
  EXPECT_FALSE(ReusableCause(r.records[0], {}));
}

TEST_F(CausesExplainTest, LambdaAccessDeniedWithNoNamedLogsSaysWhichPermission) {
  lambda_.Deny("ListEventSourceMappings");
  ExplainResult r = Explain({Message("41000000-aaaa-4bbb-8ccc-dddddddddddd")});
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0].status, CauseStatus::kAccessDenied);
  EXPECT_NE(r.records[0].reason.find("ListEventSourceMappings"), std::string::npos) << r.records[0].reason;
  ASSERT_TRUE(r.consumers.has_value());
  EXPECT_EQ(r.consumers->notes.size(), 1u);
}

TEST_F(CausesExplainTest, NoConsumerSaysHowToNameItsLogs) {
  auto lonely = *sqs_.CreateQueue("lonely-dlq", {});
  QueueInfo q;
  q.name = "lonely-dlq";
  q.url = lonely;
  dlq_ = q;
  LookupMessage m = Message("50000000-aaaa-4bbb-8ccc-dddddddddddd");
  m.queue = "lonely-dlq";
  m.source_queue_arn.clear();
  ExplainResult r = Explain({m});
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0].status, CauseStatus::kNoConsumer);
  EXPECT_NE(r.records[0].reason.find("no source queue names lonely-dlq"), std::string::npos) << r.records[0].reason;
  EXPECT_NE(r.records[0].reason.find("`consumer_logs:`"), std::string::npos);
  EXPECT_NE(r.records[0].reason.find("`--logs GROUP`"), std::string::npos);
  EXPECT_EQ(logs_.filter_calls(), 0);
}

TEST_F(CausesExplainTest, NoMentionSaysTheWindowAndPointsToTheDoc) {
  // The consumer logs, but never the message id.
  logs_.AddEvent(kGroup, "s", now_ms_ - 9 * 60'000, "[ERROR] ValueError: something\n");
  const LookupMessage m = Message("60000000-aaaa-4bbb-8ccc-dddddddddddd");
  ExplainResult r = Explain({m});
  ASSERT_EQ(r.records.size(), 1u);
  const CauseRecord& c = r.records[0];
  EXPECT_EQ(c.status, CauseStatus::kNotMentioned);
  EXPECT_EQ(c.window_start_ms, m.sent_ms - kClockSkewMarginMs);
  // SentTimestamp plus maxReceiveCount (3) x the visibility timeout (60 s), before the archiving.
  EXPECT_EQ(c.window_end_ms, m.sent_ms + 3 * 60'000 + kClockSkewMarginMs);
  EXPECT_NE(c.reason.find(fmt::format("no log line in {} mentions {} between {} and {}", kGroup, m.message_id,
                                      FormatIso8601(FromUnixMillis(c.window_start_ms)),
                                      FormatIso8601(FromUnixMillis(c.window_end_ms)))),
            std::string::npos)
      << c.reason;
  EXPECT_NE(c.reason.find("doc/causes.md"), std::string::npos);
}

TEST_F(CausesExplainTest, ExpiredLogsSayTheRetentionAndCostNoSearch) {
  LookupMessage m = Message("70000000-aaaa-4bbb-8ccc-dddddddddddd");
  m.sent_ms = now_ms_ - 30LL * 24 * 3600 * 1000;  // a month ago; the group keeps 14 days
  m.archived_ms = m.sent_ms + 60'000;
  ExplainResult r = Explain({m});
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0].status, CauseStatus::kLogsExpired);
  EXPECT_NE(r.records[0].reason.find("keeps events 14 days (retentionInDays)"), std::string::npos)
      << r.records[0].reason;
  EXPECT_EQ(logs_.filter_calls(), 0);
  EXPECT_TRUE(ReusableCause(r.records[0], {}));
}

TEST_F(CausesExplainTest, AMissingLogGroupIsSaid) {
  FakeLogsClient empty;
  ExplainRequest request;
  request.dlq = dlq_;
  request.messages = {Message("80000000-aaaa-4bbb-8ccc-dddddddddddd")};
  ExplainResult r = ExplainFailures(request, ExplainClients{sqs_, lambda_, empty, clock_});
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0].status, CauseStatus::kLogGroupNotFound);
  EXPECT_NE(r.records[0].reason.find("log group /aws/lambda/orders-worker does not exist"), std::string::npos)
      << r.records[0].reason;
}

TEST_F(CausesExplainTest, ANamedLogGroupOfAServiceIsSearched) {
  const std::string id = "90000000-aaaa-4bbb-8ccc-dddddddddddd";
  logs_.AddEvent("/ecs/orders", "orders/task/1", now_ms_ - 8 * 60'000,
                 fmt::format(R"({{"level":"ERROR","messageId":"{}","error":{{"name":"PaymentDeclined","message":)"
                             R"("card 4242 declined"}},"correlation_id":"c-1"}})",
                             id));
  ExplainResult r = Explain({Message(id)}, {{"/ecs/orders", "--logs"}});
  ASSERT_EQ(r.records.size(), 1u);
  ASSERT_EQ(r.records[0].status, CauseStatus::kFound) << r.records[0].reason;
  EXPECT_EQ(r.records[0].cause->type, "PaymentDeclined");
  EXPECT_EQ(r.records[0].cause->log_group, "/ecs/orders");
  EXPECT_EQ(r.records[0].log_groups, (std::vector<std::string>{kGroup, "/ecs/orders"}));
}

TEST_F(CausesExplainTest, APartialBatchFailureDoesNotSpreadToTheBatch) {
  const std::string a = "a0000000-aaaa-4bbb-8ccc-dddddddddddd", b = "b0000000-aaaa-4bbb-8ccc-dddddddddddd";
  const std::string stream = "2023/11/14/[$LATEST]batch";
  const int64_t t = now_ms_ - 9 * 60'000;
  logs_.AddEvent(kGroup, stream, t, "START RequestId: req-b Version: $LATEST\n");
  logs_.AddEvent(kGroup, stream, t + 1, fmt::format("processing message {}\n", a));
  logs_.AddEvent(kGroup, stream, t + 2, fmt::format("processing message {}\n", b));
  logs_.AddEvent(kGroup, stream, t + 3,
                 fmt::format("[ERROR]\t2023-11-14T22:03:20.003Z\treq-b\tRecord {} failed: KeyError 'sku'\n", b));
  logs_.AddEvent(kGroup, stream, t + 4, "END RequestId: req-b\n");
  ExplainResult r = Explain({Message(a, "ga"), Message(b, "gb")});
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.records[0].message_id, a);
  EXPECT_EQ(r.records[0].status, CauseStatus::kNoError) << r.records[0].reason;
  EXPECT_EQ(r.records[1].status, CauseStatus::kFound);
  EXPECT_TRUE(r.records[1].cause->batch_partial);
  EXPECT_EQ(r.records[1].cause->message, fmt::format("Record {} failed: KeyError 'sku'", b));
}

TEST_F(CausesExplainTest, TheCallCapLeavesMessagesForTheNextRun) {
  std::vector<LookupMessage> messages;
  for (int i = 0; i < 3; ++i) {
    std::string id = fmt::format("c000000{}-aaaa-4bbb-8ccc-dddddddddddd", i);
    FailedInvocation(id, fmt::format("req-{}", i), now_ms_ - 9 * 60'000 + i * 1000);
    messages.push_back(Message(id, fmt::format("g{}", i)));
  }
  ExplainResult r = Explain(messages, {}, nullptr, 3, 2);
  EXPECT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.left_out, 2u);
  EXPECT_EQ(logs_.filter_calls(), 2);
  EXPECT_NE(DescribeExplainCalls(r).find("2 left for the next run"), std::string::npos) << DescribeExplainCalls(r);
}

// The sidecar.

CauseRecord FoundRecord(const std::string& queue, const std::string& id, int64_t at_ms) {
  CauseRecord r;
  r.queue = queue;
  r.message_id = id;
  r.group_key = "shape: {\"sku\":<str>}";
  r.looked_up_at = FromUnixMillis(at_ms);
  r.status = CauseStatus::kFound;
  r.log_groups = {kGroup};
  r.window_start_ms = at_ms - 600'000;
  r.window_end_ms = at_ms - 1000;
  Cause c;
  c.type = "ValueError";
  c.message = "bad sku \"ü\" 4711";
  c.key = "ValueError: bad sku <str> <num>";
  c.stack = "Traceback (most recent call last):\n  File \"app.py\"";
  c.request_id = "req-1";
  c.log_group = kGroup;
  c.log_stream = "2023/11/14/[$LATEST]abc";
  c.timestamp_ms = at_ms - 5000;
  c.context_lines = {"START RequestId: req-1", "[ERROR] ValueError: bad sku"};
  c.batch_partial = true;
  r.cause = c;
  return r;
}

TEST(CauseRecordTest, RoundTripsEveryFieldAndIgnoresUnknownOnes) {
  CauseRecord found = FoundRecord("orders-dlq", "m-1", 1700000000123);
  CauseRecord absent;
  absent.queue = "orders-dlq";
  absent.message_id = "m-2";
  absent.looked_up_at = FromUnixMillis(1700000000000);
  absent.status = CauseStatus::kNoConsumer;
  absent.reason = "no consumer known";
  for (const CauseRecord& r : {found, absent}) {
    std::string line;
    AppendCauseRecordJson(r, line);
    ASSERT_EQ(line.back(), '\n');
    auto parsed = ParseCauseRecordJson(line);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString() << "\n" << line;
    EXPECT_EQ(*parsed, r) << line;
  }
  auto extra = ParseCauseRecordJson(
      R"({"schema":1,"queue":"q","message_id":"m","looked_up_at":"2023-11-14T22:13:20Z","status":"not_mentioned",)"
      R"("future":{"x":[1,2]},"reason":"r"})");
  ASSERT_TRUE(extra.ok()) << extra.status().ToString();
  EXPECT_EQ(extra->status, CauseStatus::kNotMentioned);
}

TEST(CauseRecordTest, RejectsWhatItCannotTrust) {
  auto newer = ParseCauseRecordJson(
      R"({"schema":2,"queue":"q","message_id":"m","looked_up_at":"2023-11-14T22:13:20Z","status":"found"})");
  EXPECT_EQ(newer.status().code(), ErrorCode::kFailedPrecondition);
  for (std::string_view bad : {
           R"(not json)",
           R"({"queue":"q","message_id":"m","looked_up_at":"2023-11-14T22:13:20Z","status":"found"})",
           R"({"schema":1,"message_id":"m","looked_up_at":"2023-11-14T22:13:20Z","status":"no_error"})",
           R"({"schema":1,"queue":"q","message_id":"m","looked_up_at":"2023-11-14T22:13:20Z","status":"maybe"})",
           R"({"schema":1,"queue":"q","message_id":"m","looked_up_at":"yesterday","status":"no_error"})",
           R"({"schema":1,"queue":"q","message_id":"m","looked_up_at":"2023-11-14T22:13:20Z","status":"found"})",
           R"({"schema":1,"queue":"q","message_id":"m","looked_up_at":"2023-11-14T22:13:20Z","status":"no_error",)"
           R"("cause":{"type":"E","message":"m"}})",
       }) {
    auto r = ParseCauseRecordJson(bad);
    EXPECT_EQ(r.status().code(), ErrorCode::kDataLoss) << bad << " -> " << r.status().ToString();
  }
}

TEST(CausesSidecarTest, WritesOneObjectPerQueueAndReadsTheLatestRecordPerMessage) {
  FakeObjectStore store;
  const int64_t t0 = 1700000000000;
  CauseRecord old_answer = FoundRecord("orders-dlq", "m-1", t0);
  old_answer.cause->message = "old";
  auto first =
      WriteCauseRecords(store, "dlq-archive", {old_answer, FoundRecord("billing-dlq", "m-9", t0)}, FromUnixMillis(t0));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->keys.size(), 2u);
  EXPECT_EQ(first->keys[0].rfind("dlq-archive/_causes/billing-dlq/20231114T221320Z-", 0), 0u) << first->keys[0];
  EXPECT_TRUE(first->keys[1].ends_with(".jsonl.gz"));
  const CauseRecord newer = FoundRecord("orders-dlq", "m-1", t0 + 60'000);
  ASSERT_TRUE(WriteCauseRecords(store, "dlq-archive", {newer}, FromUnixMillis(t0 + 60'000)).ok());

  auto orders = ReadCauseRecords(store, "dlq-archive", {"orders-dlq"});
  ASSERT_TRUE(orders.ok()) << orders.status().ToString();
  EXPECT_EQ(orders->objects, 2u);
  EXPECT_EQ(orders->size(), 1u);
  ASSERT_NE(orders->Find("orders-dlq", "m-1"), nullptr);
  EXPECT_EQ(*orders->Find("orders-dlq", "m-1"), newer);
  EXPECT_EQ(orders->Find("billing-dlq", "m-9"), nullptr);  // another queue's directory is not read

  auto all = ReadCauseRecords(store, "dlq-archive");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 2u);
  EXPECT_TRUE(all->unreadable.empty());
  auto none = ReadCauseRecords(store, "elsewhere");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(CausesSidecarTest, ABadLineIsReportedAndTheRestRead) {
  FakeObjectStore store;
  std::string text;
  AppendCauseRecordJson(FoundRecord("orders-dlq", "m-1", 1700000000000), text);
  text += "{\"schema\":1,\"broken\n";
  auto gz = GzipCompress(text, 6);
  ASSERT_TRUE(gz.ok());
  ASSERT_TRUE(store.Put("p/_causes/orders-dlq/20231114T221320Z-x.jsonl.gz", *gz, {}).ok());
  auto index = ReadCauseRecords(store, "p", {"orders-dlq"});
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(index->size(), 1u);
  ASSERT_EQ(index->unreadable.size(), 1u);
  EXPECT_NE(index->unreadable[0].find("line 2"), std::string::npos) << index->unreadable[0];
}

TEST(CausesSidecarTest, ArchiveListingSkipsTheSidecarAsItSkipsTheAuditRecords) {
  FakeObjectStore store;
  std::string line = "{}\n";
  auto gz = GzipCompress(line, 6);
  ASSERT_TRUE(gz.ok());
  ASSERT_TRUE(store.Put("dlq-archive/orders-dlq/20231114/orders-dlq-221320-abc.json.gz", *gz, {}).ok());
  ASSERT_TRUE(WriteCauseRecords(store, "dlq-archive", {FoundRecord("orders-dlq", "m-1", 1700000000000)},
                                FromUnixMillis(1700000000000))
                  .ok());
  ASSERT_TRUE(store.Put("dlq-archive/_audit/20231114T221320Z-r.json", "{}", {}).ok());
  auto from = ParseDestination("s3://bucket/dlq-archive");
  ASSERT_TRUE(from.ok());
  ListStats stats;
  auto objects = ListArchive(store, *from, ListOptions{}, &stats);
  ASSERT_TRUE(objects.ok()) << objects.status().ToString();
  ASSERT_EQ(objects->size(), 1u);
  EXPECT_EQ((*objects)[0].info.key, "dlq-archive/orders-dlq/20231114/orders-dlq-221320-abc.json.gz");
  EXPECT_TRUE(stats.unrecognised_key.empty()) << stats.unrecognised_key;
}

}  // namespace
}  // namespace dlq
