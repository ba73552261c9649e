// `replay --to-origin` on fakes (replay/origins.h, replay/origin_sender.h,
// the use case): each origin resolved from what the message says or from its
// DLQ, each refusal named and counted, what is sent byte for byte, the
// canary invoked synchronously, a throttled function pausing the run, and an
// asynchronous re-failure recognised by its invocation's request id.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "archive/gzip.h"
#include "origin_run_helpers.h"
#include "replay/origin_clue.h"
#include "replay/origin_sender.h"
#include "replay/origins.h"
#include "replay/replay_run.h"
#include "sqs/md5.h"
#include "testing/fake_clock.h"
#include "testing/fake_events_api.h"
#include "testing/fake_http.h"
#include "testing/fake_lambda_api.h"
#include "testing/fake_object_store.h"
#include "testing/fake_queue.h"
#include "testing/fake_sns_api.h"

namespace dlq {
namespace {

constexpr char kAccount[] = "123456789012";
const std::string kFnArn = "arn:aws:lambda:us-east-1:123456789012:function:";

ArchiveRecord Record(const std::string& queue, const std::string& id, const std::string& body,
                     MessageAttributes attributes = {}) {
  ArchiveRecord r;
  r.queue = queue;
  r.queue_url = fmt::format("https://sqs.us-east-1.amazonaws.com/{}/{}", kAccount, queue);
  r.region = "us-east-1";
  r.account_id = kAccount;
  r.message_id = id;
  r.body = body;
  r.md5_of_body = Md5OfBody(body);
  r.message_attributes = std::move(attributes);
  r.md5_of_message_attributes = Md5OfMessageAttributes(r.message_attributes);
  return r;
}

MessageAttributes LambdaAsyncAttributes(const std::string& request_id) {
  return {{"RequestID", {"String", request_id, ""}},
          {"ErrorCode", {"Number", "200", ""}},
          {"ErrorMessage", {"String", "boom", ""}}};
}

MessageAttributes EventBridgeAttributes(const std::string& target) {
  return {{"RULE_ARN", {"String", "arn:aws:events:us-east-1:123456789012:rule/orders", ""}},
          {"TARGET_ARN", {"String", target, ""}},
          {"ERROR_CODE", {"String", "SDK_CLIENT_ERROR", ""}},
          {"ERROR_MESSAGE", {"String", "Unable to invoke", ""}}};
}

FunctionConfiguration Fn(const std::string& name, const std::string& dlq = "", int timeout = 3) {
  FunctionConfiguration f;
  f.function_name = name;
  f.function_arn = kFnArn + name;
  f.dead_letter_target_arn = dlq.empty() ? "" : fmt::format("arn:aws:sqs:us-east-1:{}:{}", kAccount, dlq);
  f.timeout_seconds = timeout;
  return f;
}

TEST(OriginResolverTest, ALambdaAsyncDlqGoesToTheOneFunctionWhoseDeadLetterConfigTargetsIt) {
  FakeLambdaApi lambda;
  lambda.AddFunction(Fn("orders", "orders-dlq"));
  lambda.AddFunction(Fn("billing", "billing-dlq"));
  OriginResolver resolver(&lambda, nullptr, "us-east-1");
  for (int i = 0; i < 3; ++i) {
    auto t = resolver.Resolve(Record("orders-dlq", "m" + std::to_string(i), "{}", LambdaAsyncAttributes("r")));
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(t->kind, TargetKind::kFunction);
    EXPECT_EQ(t->url, kFnArn + "orders");
    EXPECT_EQ(t->dlq_arn, "arn:aws:sqs:us-east-1:123456789012:orders-dlq");
    EXPECT_NE(t->how.find("DeadLetterConfig"), std::string::npos) << t->how;
  }
  EXPECT_EQ(lambda.calls("ListFunctions"), 1) << "listed once for every message of the DLQ";
}

TEST(OriginResolverTest, TwoFunctionsOnOneDlqAreRefusedNamingThemAndTheFlag) {
  FakeLambdaApi lambda;
  lambda.AddFunction(Fn("a", "shared-dlq"));
  lambda.AddFunction(Fn("b", "shared-dlq"));
  OriginResolver resolver(&lambda, nullptr, "us-east-1");
  ReplayTerms terms;
  terms.function = "--function NAME";
  resolver.UseTerms(terms);
  auto t = resolver.Resolve(Record("shared-dlq", "m", "{}", LambdaAsyncAttributes("r")));
  ASSERT_EQ(t.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("2 functions (a, b)"), std::string::npos) << t.status().ToString();
  EXPECT_NE(t.status().message().find("--function NAME"), std::string::npos);
}

TEST(OriginResolverTest, ANamedFunctionIsCheckedAndAMissingOneIsNotFound) {
  FakeLambdaApi lambda;
  lambda.AddFunction(Fn("orders"));
  OriginResolver named(&lambda, nullptr, "us-east-1", "orders");
  auto t = named.Resolve(Record("any-dlq", "m", "{}"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->name, "orders");
  OriginResolver missing(&lambda, nullptr, "us-east-1", "gone");
  EXPECT_EQ(missing.Resolve(Record("any-dlq", "m", "{}")).status().code(), ErrorCode::kNotFound);
}

TEST(OriginResolverTest, AnOnFailureRecordGoesToItsFunctionArnWithItsQualifierAndSendsTheRequestPayload) {
  FakeLambdaApi lambda;
  lambda.AddFunction(Fn("orders"));
  OriginResolver resolver(&lambda, nullptr, "us-east-1");
  const std::string payload = R"({ "order" : 7,  "note": "caf\u00e9 \"x\"" })";
  const std::string body = R"({"version":"1.0","timestamp":"2026-11-29T10:00:00.000Z","requestContext":{"requestId":)"
                           R"("e1","functionArn":")" +
                           kFnArn +
                           R"(orders:live","condition":"RetriesExhausted","approximateInvokeCount":3},)"
                           R"("requestPayload":)" +
                           payload +
                           R"(,"responseContext":{"statusCode":200,"executedVersion":"4","functionError":"Unhandled"},)"
                           R"("responsePayload":{"errorMessage":"boom"}})";
  ArchiveRecord r = Record("orders-destination", "m", body);
  auto t = resolver.Resolve(r);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->kind, TargetKind::kFunction);
  EXPECT_EQ(t->qualifier, "live");
  EXPECT_EQ(t->url, kFnArn + "orders:live");
  EXPECT_EQ(t->shape, PayloadShape::kRequestPayload);
  auto sent = OriginPayload(*t, r);
  ASSERT_TRUE(sent.ok()) << sent.status().ToString();
  EXPECT_EQ(*sent, payload) << "byte for byte, spaces and escapes kept";
}

TEST(OriginResolverTest, AnEventBridgeTargetIsSentToDirectlyByItsType) {
  FakeLambdaApi lambda;
  lambda.AddFunction(Fn("orders"));
  OriginResolver resolver(&lambda, nullptr, "us-east-1");
  struct Case {
    std::string target;
    TargetKind kind;
  };
  const std::vector<Case> cases = {
      {kFnArn + "orders", TargetKind::kFunction},
      {"arn:aws:sqs:us-east-1:123456789012:orders-in", TargetKind::kQueue},
      {"arn:aws:sns:us-east-1:123456789012:orders-topic", TargetKind::kTopic},
      {"arn:aws:events:us-east-1:123456789012:event-bus/downstream", TargetKind::kBus},
  };
  for (const Case& c : cases) {
    auto t = resolver.Resolve(Record("eb-dlq", "m", R"({"detail":{}})", EventBridgeAttributes(c.target)));
    ASSERT_TRUE(t.ok()) << c.target << ": " << t.status().ToString();
    EXPECT_EQ(t->kind, c.kind) << c.target;
    EXPECT_NE(t->how.find("EventBridge target"), std::string::npos) << t->how;
    if (c.kind != TargetKind::kFunction) {
      EXPECT_FALSE(t->keep_attributes) << "RULE_ARN and the rest are EventBridge's, not the event's";
    }
  }
  auto refused = resolver.Resolve(
      Record("eb-dlq", "m", "{}", EventBridgeAttributes("arn:aws:states:us-east-1:123456789012:stateMachine:orders")));
  ASSERT_EQ(refused.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("states target"), std::string::npos) << refused.status().ToString();
}

TEST(OriginResolverTest, ASchedulerUniversalTargetIsRefusedNamingTheApiCall) {
  // AWS's own example of a schedule's dead-letter event (configuring-schedule-dlq.html).
  FakeLambdaApi lambda;
  OriginResolver resolver(&lambda, nullptr, "us-west-2");
  ArchiveRecord r = Record(
      "scheduler-dlq-test", "2aeg3510",
      R"({"MessageBody":"Hello, world!","QueueUrl":"https://sqs.us-west-2.amazonaws.com/123456789012/does-not-exist"})",
      {{"ERROR_CODE", {"String", "AWS.SimpleQueueService.NonExistentQueue", ""}},
       {"ERROR_MESSAGE", {"String", "The specified queue does not exist for this wsdl version.", ""}},
       {"EXECUTION_ID", {"String", "ad06616e51cdf74a", ""}},
       {"EXHAUSTED_RETRY_CONDITION", {"String", "MaximumEventAgeInSeconds", ""}},
       {"IS_PAYLOAD_TRUNCATED", {"String", "false", ""}},
       {"RETRY_ATTEMPTS", {"String", "0", ""}},
       {"SCHEDULED_TIME", {"String", "2022-05-14T01:12:00Z", ""}},
       {"SCHEDULE_ARN", {"String", "arn:aws:scheduler:us-west-2:123456789012:schedule/DLQ-test", ""}},
       {"TARGET_ARN", {"String", "arn:aws:scheduler:::aws-sdk:sqs:sendMessage", ""}}});
  EXPECT_EQ(ReadOriginClue(r).kind, ClueKind::kSchedulerTarget);
  auto t = resolver.Resolve(r);
  ASSERT_EQ(t.status().code(), ErrorCode::kInvalidArgument) << t.status().ToString();
  EXPECT_NE(t.status().message().find("universal target arn:aws:scheduler:::aws-sdk:sqs:sendMessage, an API call "
                                      "(sqs:sendMessage)"),
            std::string::npos)
      << t.status().ToString();
  EXPECT_NE(t.status().message().find("--to-queue"), std::string::npos);
}

TEST(OriginResolverTest, AnotherAccountNeedsCrossAccountAndIsListedOnceAllowed) {
  FakeLambdaApi lambda;
  FunctionConfiguration f = Fn("orders");
  f.function_arn = "arn:aws:lambda:us-east-1:999999999999:function:orders";
  lambda.AddFunction(f);
  OriginResolver resolver(&lambda, nullptr, "us-east-1");
  ArchiveRecord r = Record("eb-dlq", "m", "{}", EventBridgeAttributes(f.function_arn));
  auto refused = resolver.Resolve(r);
  ASSERT_EQ(refused.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("another account"), std::string::npos) << refused.status().ToString();
  resolver.AllowCrossAccount(true);
  ASSERT_TRUE(resolver.Resolve(r).ok());
  ASSERT_EQ(resolver.CrossAccountRoutes().size(), 1u);
  EXPECT_NE(resolver.CrossAccountRoutes()[0].find("999999999999"), std::string::npos);
}

TEST(OriginResolverTest, AMessageThatSaysNothingAndNoFunctionFeedsTheDlqIsRefusedSayingWhy) {
  FakeLambdaApi lambda;
  lambda.AddFunction(Fn("orders", "orders-dlq"));
  OriginResolver resolver(&lambda, nullptr, "us-east-1");
  auto t = resolver.Resolve(Record("mystery-dlq", "m-9", "hello"));
  ASSERT_EQ(t.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("m-9"), std::string::npos);
  EXPECT_NE(t.status().message().find("cannot be told"), std::string::npos) << t.status().ToString();
}

SnsSubscription Sub(const std::string& name, const std::string& protocol, const std::string& endpoint) {
  return {"arn:aws:sns:us-east-1:123456789012:orders:" + name, "arn:aws:sns:us-east-1:123456789012:orders", protocol,
          endpoint, kAccount};
}

std::map<std::string, std::string> Redrive(const std::string& dlq, bool raw) {
  return {{"RedrivePolicy", R"({"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:)" + dlq + R"("})"},
          {"RawMessageDelivery", raw ? "true" : "false"}};
}

TEST(OriginResolverTest, AnSnsSubscriptionsDlqGoesToThatSubscriptionsEndpointInItsShape) {
  FakeLambdaApi lambda;
  lambda.AddFunction(Fn("consumer"));
  FakeSnsApi sns;
  sns.AddSubscription(Sub("q", "sqs", "arn:aws:sqs:us-east-1:123456789012:orders-in"), Redrive("q-dlq", true));
  sns.AddSubscription(Sub("fn", "lambda", kFnArn + "consumer"), Redrive("fn-dlq", false));
  sns.AddSubscription(Sub("web", "https", "https://hooks.example.com/orders"), Redrive("web-dlq", false));
  sns.AddSubscription(Sub("mail", "email", "ops@example.com"), Redrive("mail-dlq", false));
  sns.AddSubscription(Sub("other", "sqs", "arn:aws:sqs:us-east-1:123456789012:audit"));  // no DLQ
  OriginResolver resolver(&lambda, &sns, "us-east-1");

  auto q = resolver.Resolve(Record("q-dlq", "m1", "raw message"));
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->kind, TargetKind::kQueue);
  EXPECT_EQ(q->arn, "arn:aws:sqs:us-east-1:123456789012:orders-in");
  EXPECT_TRUE(q->keep_attributes) << "raw delivery: SNS's attributes are the message's";
  EXPECT_NE(q->how.find("(sqs, raw)"), std::string::npos) << q->how;

  auto fn = resolver.Resolve(Record("fn-dlq", "m2", "{}"));
  ASSERT_TRUE(fn.ok()) << fn.status().ToString();
  EXPECT_EQ(fn->kind, TargetKind::kFunction);
  EXPECT_EQ(fn->shape, PayloadShape::kSnsLambdaEvent);
  EXPECT_EQ(fn->subscription_arn, Sub("fn", "", "").subscription_arn);

  auto web = resolver.Resolve(Record("web-dlq", "m3", "{}"));
  ASSERT_TRUE(web.ok()) << web.status().ToString();
  EXPECT_EQ(web->kind, TargetKind::kHttp);
  EXPECT_EQ(web->url, "https://hooks.example.com/orders");

  auto mail = resolver.Resolve(Record("mail-dlq", "m4", "{}"));
  ASSERT_EQ(mail.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(mail.status().message().find("delivers over email"), std::string::npos) << mail.status().ToString();
  EXPECT_NE(mail.status().message().find("never to the topic"), std::string::npos);

  EXPECT_EQ(sns.calls("ListSubscriptions"), 1) << "listed once for the run";
  EXPECT_EQ(sns.calls("GetSubscriptionAttributes"), 5) << "each subscription read once";
  EXPECT_TRUE(sns.publishes().empty());
}

TEST(OriginResolverTest, TwoSubscriptionsOnOneDlqAreRefused) {
  FakeSnsApi sns;
  sns.AddSubscription(Sub("a", "sqs", "arn:aws:sqs:us-east-1:123456789012:a"), Redrive("shared-dlq", true));
  sns.AddSubscription(Sub("b", "sqs", "arn:aws:sqs:us-east-1:123456789012:b"), Redrive("shared-dlq", true));
  FakeLambdaApi lambda;
  OriginResolver resolver(&lambda, &sns, "us-east-1");
  auto t = resolver.Resolve(Record("shared-dlq", "m", "x"));
  ASSERT_EQ(t.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("2 SNS subscriptions"), std::string::npos) << t.status().ToString();
}

ReplayTarget Target(TargetKind kind, const std::string& arn_or_url) {
  ReplayTarget t;
  t.kind = kind;
  t.arn = kind == TargetKind::kHttp ? "" : arn_or_url;
  t.url = arn_or_url;
  return t;
}

TEST(OriginSenderTest, ATopicGetsPublishWithTheAttributesOnlyWhenTheyAreTheMessages) {
  FakeSnsApi sns;
  AwsOriginSender sender(nullptr, &sns, nullptr, nullptr);
  ArchiveRecord r = Record("eb-dlq", "m", "the event", {{"tenant", {"String", "acme", ""}}});
  ReplayTarget topic = Target(TargetKind::kTopic, "arn:aws:sns:us-east-1:123456789012:orders");
  topic.keep_attributes = false;
  OriginDelivery d = sender.Deliver(topic, r, false);
  EXPECT_EQ(d.outcome, OriginDelivery::kDelivered) << d.reason;
  EXPECT_EQ(d.new_id, PayloadKey("the event"));
  topic.keep_attributes = true;
  EXPECT_EQ(sender.Deliver(topic, r, false).outcome, OriginDelivery::kDelivered);
  auto sent = sns.publishes();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].message, "the event");
  EXPECT_TRUE(sent[0].attributes.empty());
  EXPECT_EQ(sent[1].attributes.at("tenant").string_value, "acme");
  sns.ThrottleNext(1);
  EXPECT_EQ(sender.Deliver(topic, r, false).outcome, OriginDelivery::kThrottled);
}

TEST(OriginSenderTest, ABusGetsTheEventsFieldsAndARefusedEntryIsARefusal) {
  FakeEventsApi events;
  AwsOriginSender sender(nullptr, nullptr, &events, nullptr);
  const std::string event =
      R"({"version":"0","id":"1","detail-type":"OrderPlaced","source":"shop","account":"123456789012",)"
      R"("time":"2026-11-29T10:00:00Z","region":"us-east-1","resources":["arn:x"],"detail":{ "order" : 9 }})";
  ReplayTarget bus = Target(TargetKind::kBus, "arn:aws:events:us-east-1:123456789012:event-bus/downstream");
  bus.shape = PayloadShape::kEvent;
  OriginDelivery d = sender.Deliver(bus, Record("eb-dlq", "m", event), false);
  EXPECT_EQ(d.outcome, OriginDelivery::kDelivered) << d.reason;
  ASSERT_EQ(events.put().size(), 1u);
  EXPECT_EQ(events.put()[0].detail, R"({ "order" : 9 })") << "detail kept as its text";
  EXPECT_EQ(events.put()[0].detail_type, "OrderPlaced");
  EXPECT_EQ(events.put()[0].event_bus_name, bus.arn);
  events.FailEntries(1, "AccessDeniedException", "no");
  d = sender.Deliver(bus, Record("eb-dlq", "m", event), false);
  EXPECT_EQ(d.outcome, OriginDelivery::kRefused);
  EXPECT_NE(d.reason.find("AccessDeniedException"), std::string::npos);
  d = sender.Deliver(bus, Record("eb-dlq", "m", "not an event"), false);
  EXPECT_EQ(d.outcome, OriginDelivery::kRefused) << "an input transformer's output cannot be put on a bus again";
}

TEST(OriginSenderTest, AnHttpEndpointGetsThePostSnsWouldSendAndItsAnswerDecides) {
  std::vector<HttpRequest> seen;
  int status = 200;
  FakeHttpTransport http([&](const HttpRequest& rq) -> Result<HttpResponse> {
    seen.push_back(rq);
    HttpResponse r;
    r.status = status;
    return r;
  });
  AwsOriginSender sender(nullptr, nullptr, nullptr, &http);
  ReplayTarget web = Target(TargetKind::kHttp, "https://hooks.example.com/orders");
  web.subscription_arn = "arn:aws:sns:us-east-1:123456789012:orders:web";
  web.topic_arn = "arn:aws:sns:us-east-1:123456789012:orders";
  web.keep_attributes = false;
  const std::string envelope = R"({"Type":"Notification","MessageId":"n1","Message":"hi"})";
  EXPECT_EQ(sender.Deliver(web, Record("web-dlq", "m", envelope), false).outcome, OriginDelivery::kDelivered);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[0].body, envelope);
  EXPECT_EQ(*FindHeader(seen[0].headers, "x-amz-sns-message-type"), "Notification");
  EXPECT_EQ(*FindHeader(seen[0].headers, "x-amz-sns-topic-arn"), web.topic_arn);
  EXPECT_EQ(*FindHeader(seen[0].headers, "x-amz-sns-subscription-arn"), web.subscription_arn);
  EXPECT_EQ(FindHeader(seen[0].headers, "x-amz-sns-rawdelivery"), nullptr);
  status = 503;
  EXPECT_EQ(sender.Deliver(web, Record("web-dlq", "m", envelope), false).outcome, OriginDelivery::kRetry);
  status = 410;
  EXPECT_EQ(sender.Deliver(web, Record("web-dlq", "m", envelope), false).outcome, OriginDelivery::kRefused);
  status = 429;
  EXPECT_EQ(sender.Deliver(web, Record("web-dlq", "m", envelope), false).outcome, OriginDelivery::kThrottled);
}

TEST(OriginSenderTest, AFunctionSubscribedToATopicGetsTheSnsEventAroundTheEnvelope) {
  FakeLambdaApi lambda;
  lambda.AddFunction(Fn("consumer"));
  AwsOriginSender sender(&lambda, nullptr, nullptr, nullptr);
  ReplayTarget fn = Target(TargetKind::kFunction, kFnArn + "consumer");
  fn.shape = PayloadShape::kSnsLambdaEvent;
  fn.subscription_arn = "arn:aws:sns:us-east-1:123456789012:orders:fn";
  const std::string envelope = R"({"Type":"Notification","MessageId":"n1","Message":"hi"})";
  EXPECT_EQ(sender.Deliver(fn, Record("fn-dlq", "m", envelope), false).outcome, OriginDelivery::kDelivered);
  ASSERT_EQ(lambda.invocations().size(), 1u);
  EXPECT_EQ(lambda.invocations()[0].payload,
            R"({"Records":[{"EventSource":"aws:sns","EventVersion":"1.0","EventSubscriptionArn":")" +
                fn.subscription_arn + R"(","Sns":)" + envelope + "}]}");
  OriginDelivery d = sender.Deliver(fn, Record("fn-dlq", "m", "raw text"), false);
  EXPECT_EQ(d.outcome, OriginDelivery::kRefused);
  EXPECT_NE(d.reason.find("not an SNS notification envelope"), std::string::npos) << d.reason;
}

TEST(OriginSenderTest, APayloadOverTheAsynchronousLimitIsNotSentAndSaysWhy) {
  FakeLambdaApi lambda;
  lambda.AddFunction(Fn("orders"));
  AwsOriginSender sender(&lambda, nullptr, nullptr, nullptr);
  ReplayTarget fn = Target(TargetKind::kFunction, kFnArn + "orders");
  const std::string big(kLambdaEventPayloadMax + 1, 'x');
  OriginDelivery d = sender.Deliver(fn, Record("orders-dlq", "m", big), false);
  EXPECT_EQ(d.outcome, OriginDelivery::kRefused);
  EXPECT_NE(d.reason.find("over the function limit of 1048576 bytes"), std::string::npos) << d.reason;
  EXPECT_TRUE(lambda.invocations().empty());
  EXPECT_EQ(sender.Deliver(fn, Record("orders-dlq", "m", big), true).outcome, OriginDelivery::kDelivered)
      << "a synchronous invocation takes 6 MB";
}

// The use case with --to-origin, on an archive of Lambda DLQ messages.
class ReplayOriginRunTest : public ::testing::Test {
 protected:
  ReplayOriginRunTest() : sqs_(clock_), store_("fake://archive", &clock_) {
    fn_dlq_ = *sqs_.CreateQueue("orders-dlq", {});
    lambda_.AddFunction(Fn("orders", "orders-dlq", 3));
    lambda_.SetInvokeHandler([this](const InvokeRequest& rq) { return Handle(rq); });
    deps_.sqs = &sqs_;
    deps_.open_store = [this](const Destination&) -> Result<std::shared_ptr<ObjectStore>> {
      return std::shared_ptr<ObjectStore>(&store_, [](ObjectStore*) {});
    };
    deps_.region = "us-east-1";
    deps_.clock = &clock_;
    deps_.lambda = &lambda_;
    rq_.from = "s3://bucket/dlq-archive";
    rq_.to_origin = true;
  }

  // Lambda as the fake runs it: a payload with "bug" fails; a synchronous
  // failure answers a function error, an asynchronous one lands in the
  // function's DLQ with Lambda's attributes (its RequestID the invocation's).
  Result<InvokeResult> Handle(const InvokeRequest& rq) {
    InvokeResult r;
    r.request_id = "req-" + std::to_string(++invocations_);
    const bool fails = rq.payload.find("bug") != std::string::npos && !fixed_;
    if (rq.type == InvocationType::kRequestResponse) {
      ++synchronous_;
      r.status_code = 200;
      if (fails) {
        r.function_error = "Unhandled";
        r.payload = R"({"errorMessage":"bug still there"})";
      }
      return r;
    }
    r.status_code = 202;
    if (fails) {
      SendEntry e;
      e.id = "0";
      e.body = rq.payload;
      e.message_attributes = LambdaAsyncAttributes(r.request_id);
      EXPECT_TRUE(sqs_.SendMessageBatch(fn_dlq_, {e}).ok());
    }
    return r;
  }

  void Archive(const std::string& queue, int n, const std::string& text, MessageAttributes attributes) {
    std::string lines;
    for (int i = 0; i < n; ++i) {
      ArchiveRecord r =
          Record(queue, fmt::format("{}-{}", queue, i), fmt::format(R"({{"n":{},"t":"{}"}})", i, text), attributes);
      r.archived_at = r.expires_at = clock_.Now();
      AppendRecordJson(r, lines);
    }
    store_.Insert(fmt::format("dlq-archive/{}/2026/11/29/{}.jsonl.gz", queue, ++objects_), *GzipCompress(lines, 1));
  }

  void Guarded(uint64_t canary) { GuardFast(rq_.plan, canary); }

  ReplayRunResult Run() { return RunReplayUseCase(rq_, deps_, observer_, stop_); }

  FakeClock clock_;
  FakeQueueClient sqs_;
  FakeObjectStore store_;
  FakeLambdaApi lambda_;
  std::string fn_dlq_;
  ReplayRunDeps deps_;
  ReplayRunRequest rq_;
  ReplayObserver observer_;
  std::atomic<bool> stop_{false};
  std::atomic<int> invocations_{0}, synchronous_{0};
  bool fixed_ = false;
  int objects_ = 0;
};

TEST_F(ReplayOriginRunTest, EachMessageIsInvokedOnceAsynchronouslyWithItsBodyAsTheEvent) {
  Archive("orders-dlq", 12, "ok", LambdaAsyncAttributes("r0"));
  ReplayRunResult r = Run();
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_EQ(r.end, ReplayEnd::kDone);
  EXPECT_EQ(r.destination, "origin");
  EXPECT_EQ(r.buckets.selected, 12u);
  EXPECT_EQ(r.buckets.sent, 12u);
  EXPECT_EQ(r.buckets.Sum(), r.buckets.selected);
  EXPECT_EQ(r.sent_by_destination.at(kFnArn + "orders"), 12u);
  std::vector<std::string> payloads;
  for (const InvokeRequest& rq : lambda_.invocations()) {
    EXPECT_EQ(rq.type, InvocationType::kEvent);
    payloads.push_back(rq.payload);
  }
  std::sort(payloads.begin(), payloads.end());
  ASSERT_EQ(payloads.size(), 12u);
  EXPECT_EQ(payloads.front(), R"({"n":0,"t":"ok"})");
  for (const ReplayedMessage& m : r.sent) EXPECT_EQ(m.new_message_id.rfind("lambda-request:req-", 0), 0u);
}

TEST_F(ReplayOriginRunTest, ADryRunSaysWhereEachMessageGoesAndHowItWasFound) {
  Archive("orders-dlq", 2, "ok", LambdaAsyncAttributes("r0"));
  Archive("mystery-dlq", 1, "ok", {});
  rq_.dry_run = true;
  ReplayRunResult r = Run();
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  ASSERT_EQ(r.dry_run_entries.size(), 3u);
  int would = 0, cannot = 0;
  for (const DryRunEntry& e : r.dry_run_entries) {
    const std::string line = DryRunLine(e);
    if (e.kind == DryRunEntry::kWouldSend) {
      ++would;
      EXPECT_NE(line.find("to function " + kFnArn + "orders"), std::string::npos) << line;
      EXPECT_NE(line.find("DeadLetterConfig targets this DLQ"), std::string::npos) << line;
    } else {
      ++cannot;
      EXPECT_EQ(e.kind, DryRunEntry::kUnresolved);
      EXPECT_NE(line.find("cannot send mystery-dlq-0: "), std::string::npos) << line;
    }
  }
  EXPECT_EQ(would, 2);
  EXPECT_EQ(cannot, 1);
  EXPECT_EQ(r.buckets.unresolved, 1u);
  EXPECT_EQ(r.buckets.Sum(), r.buckets.selected);
  EXPECT_TRUE(lambda_.invocations().empty());
}

TEST_F(ReplayOriginRunTest, AMessageWhoseOriginCannotBeToldIsNotSentCountedAndNamed) {
  Archive("orders-dlq", 3, "ok", LambdaAsyncAttributes("r0"));
  Archive("mystery-dlq", 2, "ok", {});
  ReplayRunResult r = Run();
  EXPECT_EQ(r.end, ReplayEnd::kSomeFailed);
  EXPECT_EQ(r.buckets.sent, 3u);
  EXPECT_EQ(r.buckets.unresolved, 2u);
  EXPECT_EQ(r.buckets.Sum(), 5u);
  int unresolved = 0;
  for (const ReplayFailure& f : r.failures) {
    if (!f.unresolved) continue;
    ++unresolved;
    EXPECT_EQ(f.message_id.rfind("mystery-dlq-", 0), 0u);
    EXPECT_NE(f.reason.find("cannot be told"), std::string::npos) << f.reason;
  }
  EXPECT_EQ(unresolved, 2);
  EXPECT_EQ(lambda_.invocations().size(), 3u);
}

TEST_F(ReplayOriginRunTest, WhenNoMessagesOriginCanBeToldTheRunIsRefusedWithTheFirstReason) {
  Archive("mystery-dlq", 2, "ok", {});
  Guarded(1);
  ReplayRunResult r = Run();
  EXPECT_EQ(r.end, ReplayEnd::kBadInput);
  EXPECT_NE(r.error.message().find("the origin of none of the 2 selected messages can be told"), std::string::npos)
      << r.error.ToString();
  EXPECT_NE(r.error.message().find("mystery-dlq-0"), std::string::npos) << "the first one, named";
  EXPECT_TRUE(lambda_.invocations().empty());
}

TEST_F(ReplayOriginRunTest, ABacklogBoundIsRefusedWhenNoOriginIsAQueue) {
  Archive("orders-dlq", 3, "ok", LambdaAsyncAttributes("r0"));
  rq_.plan.backpressure = true;
  rq_.plan.max_backlog = 100;
  ReplayRunResult r = Run();
  EXPECT_EQ(r.end, ReplayEnd::kBadInput);
  EXPECT_NE(r.error.message().find("these origins are no queues"), std::string::npos) << r.error.ToString();
  EXPECT_TRUE(lambda_.invocations().empty());
}

TEST_F(ReplayOriginRunTest, TheBugStillThereIsStoppedByTheSynchronousCanary) {
  Archive("orders-dlq", 30, "bug", LambdaAsyncAttributes("r0"));
  Guarded(2);
  ReplayRunResult r = Run();
  EXPECT_EQ(r.end, ReplayEnd::kRefailed) << r.error.ToString();
  EXPECT_EQ(lambda_.invocations().size(), 2u) << "only the canary reached the still-failing function";
  EXPECT_EQ(synchronous_.load(), 2);
  ASSERT_TRUE(r.guard.has_value());
  EXPECT_EQ(r.guard->status.refailures.size(), 2u);
  EXPECT_EQ(r.buckets.failed, 2u) << "refused at once: not sent, still in the archive";
  EXPECT_EQ(r.buckets.sent, 0u);
  EXPECT_EQ(r.buckets.Sum(), r.buckets.selected);
  EXPECT_EQ(sqs_.Depth(fn_dlq_), 0u) << "a synchronous failure is not put in the DLQ";
}

TEST_F(ReplayOriginRunTest, TheBugFixedDeliversEveryMessageOnceTheCanarySynchronously) {
  Archive("orders-dlq", 30, "bug", LambdaAsyncAttributes("r0"));
  fixed_ = true;
  Guarded(2);
  ReplayRunResult r = Run();
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_EQ(r.end, ReplayEnd::kDone);
  EXPECT_EQ(r.buckets.sent, 30u);
  EXPECT_EQ(lambda_.invocations().size(), 30u);
  EXPECT_EQ(synchronous_.load(), 2) << "the canary only";
  EXPECT_EQ(sqs_.Depth(fn_dlq_), 0u);
}

TEST_F(ReplayOriginRunTest, AnAsynchronousReFailureIsRecognisedByItsRequestIdAndStopsTheRamp) {
  // The canary passes (the bug shows only asynchronously here); the first ramp
  // step's messages land in the function's DLQ again.
  Archive("orders-dlq", 2, "fine", LambdaAsyncAttributes("r0"));
  Archive("orders-dlq", 40, "bug", LambdaAsyncAttributes("r0"));
  lambda_.SetInvokeHandler(CanaryPasses([this](const InvokeRequest& rq) { return Handle(rq); }));
  Guarded(2);
  rq_.plan.max_refailures = 0;
  ReplayRunResult r = Run();
  EXPECT_EQ(r.end, ReplayEnd::kRefailed) << r.error.ToString();
  ASSERT_TRUE(r.guard.has_value());
  ASSERT_FALSE(r.guard->status.refailures.empty());
  for (const RefailedMessage& m : r.guard->status.refailures) {
    EXPECT_EQ(m.new_message_id.rfind("lambda-request:", 0), 0u) << m.new_message_id;
    EXPECT_EQ(m.dlq, fn_dlq_);
  }
  EXPECT_LT(lambda_.invocations().size(), 42u) << "the ramp stopped before the end";
  EXPECT_EQ(r.buckets.Sum(), r.buckets.selected);
}

TEST_F(ReplayOriginRunTest, AThrottledFunctionPausesTheRunAndEveryMessageIsDelivered) {
  Archive("orders-dlq", 10, "ok", LambdaAsyncAttributes("r0"));
  lambda_.ThrottleInvokes(4);
  ReplayRunResult r = Run();
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_EQ(r.end, ReplayEnd::kDone);
  EXPECT_EQ(r.buckets.sent, 10u);
  EXPECT_EQ(r.stats.throttled, 4u);
  EXPECT_EQ(r.buckets.failed, 0u);
}

TEST_F(ReplayOriginRunTest, AFunctionWithoutADeadLetterConfigRefusesACanary) {
  lambda_.AddFunction(Fn("nodlq"));
  rq_.function = "nodlq";
  Archive("orders-dlq", 3, "ok", LambdaAsyncAttributes("r0"));
  Guarded(1);
  ReplayRunResult r = Run();
  EXPECT_EQ(r.end, ReplayEnd::kBadInput);
  EXPECT_NE(r.error.message().find("has neither a DeadLetterConfig nor an OnFailure destination"), std::string::npos)
      << r.error.ToString();
  EXPECT_TRUE(lambda_.invocations().empty());
}

}  // namespace
}  // namespace dlq
