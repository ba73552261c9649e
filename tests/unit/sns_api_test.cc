#include "sns/sns_api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/strings.h"
#include "sns/sns_codec.h"
#include "testing/fake_clock.h"
#include "testing/fake_http.h"
#include "testing/fake_sns_api.h"

namespace dlq {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

constexpr char kTopicArn[] = "arn:aws:sns:us-east-1:123456789012:orders-topic";
constexpr char kSubscriptionArn[] = "arn:aws:sns:us-east-1:123456789012:orders-topic:1b2c3d4e";
constexpr char kQueueArn[] = "arn:aws:sqs:us-east-1:123456789012:orders";

std::string HeaderOf(const HttpRequest& r, std::string_view name) {
  const std::string* v = FindHeader(r.headers, name);
  return v ? *v : std::string();
}

// The form body as ordered name/value pairs, decoded.
std::vector<std::pair<std::string, std::string>> FormOf(const HttpRequest& r) {
  std::vector<std::pair<std::string, std::string>> out;
  for (std::string_view part : Split(r.body, '&')) {
    auto eq = part.find('=');
    out.emplace_back(UriDecode(part.substr(0, eq)), eq == std::string_view::npos ? "" : UriDecode(part.substr(eq + 1)));
  }
  return out;
}

// SNS's query-protocol error document.
HttpResponse SnsError(int status, const std::string& code, const std::string& message) {
  return MakeResponse(status,
                      "<ErrorResponse xmlns=\"http://sns.amazonaws.com/doc/2010-03-31/\"><Error><Type>Sender</Type>"
                      "<Code>" +
                          code + "</Code><Message>" + message +
                          "</Message></Error><RequestId>req-sns-1</RequestId></ErrorResponse>",
                      {{"Content-Type", "text/xml"}});
}

std::string Member(const std::string& subscription_arn, const std::string& endpoint) {
  return "<member><Owner>123456789012</Owner><Endpoint>" + endpoint + "</Endpoint><Protocol>sqs</Protocol>" +
         "<SubscriptionArn>" + subscription_arn + "</SubscriptionArn><TopicArn>" + kTopicArn + "</TopicArn></member>";
}

std::string ListPage(const std::string& members, const std::string& next_token) {
  std::string token = next_token.empty() ? "" : "<NextToken>" + next_token + "</NextToken>";
  return "<ListSubscriptionsResponse xmlns=\"http://sns.amazonaws.com/doc/2010-03-31/\"><ListSubscriptionsResult>"
         "<Subscriptions>" +
         members + "</Subscriptions>" + token +
         "</ListSubscriptionsResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata>"
         "</ListSubscriptionsResponse>";
}

constexpr char kAttributesXml[] =
    R"(<GetSubscriptionAttributesResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/">
  <GetSubscriptionAttributesResult>
    <Attributes>
      <entry><key>RedrivePolicy</key><value>{"deadLetterTargetArn": "arn:aws:sqs:us-east-1:123456789012:orders-dlq"}</value></entry>
      <entry><key>RawMessageDelivery</key><value>true</value></entry>
      <entry><key>FilterPolicy</key><value> {"kind": ["a &amp; b"]} </value></entry>
      <entry><key>PendingConfirmation</key><value>false</value></entry>
    </Attributes>
  </GetSubscriptionAttributesResult>
  <ResponseMetadata><RequestId>r</RequestId></ResponseMetadata>
</GetSubscriptionAttributesResponse>)";

constexpr char kPublishXml[] = R"(<PublishResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/">
  <PublishResult><MessageId>94f20ce6-13c5-43a0-9a9e-ca52d816e90b</MessageId>
  <SequenceNumber>10000000000000003000</SequenceNumber></PublishResult>
  <ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></PublishResponse>)";

class SnsApiTest : public ::testing::Test {
 protected:
  explicit SnsApiTest(RetryOptions retry = RetryOptions{.max_attempts = 1})
      : creds_(Credentials{"AKIDEXAMPLE", "secret", "", std::nullopt, "test"}),
        aws_(ServiceEndpoint{"sns", "us-east-1", "https://sns.us-east-1.amazonaws.com", false}, http_, creds_, clock_,
             retry),
        sns_(aws_) {}

  FakeHttpTransport http_;
  StaticCredentialsProvider creds_;
  FakeClock clock_;
  AwsClient aws_;
  AwsSnsApi sns_;
};

class SnsApiRetryTest : public SnsApiTest {
 protected:
  SnsApiRetryTest() : SnsApiTest(RetryOptions{.max_attempts = 3}) {}
};

TEST_F(SnsApiTest, ListSubscriptionsPostsTheQueryFormAndFollowsNextToken) {
  http_.SetHandler([](const HttpRequest& r) -> Result<HttpResponse> {
    if (r.body.find("NextToken=") == std::string::npos) {
      return MakeResponse(200, ListPage(Member(kSubscriptionArn, kQueueArn), "token/2+="));
    }
    return MakeResponse(200, ListPage(Member("PendingConfirmation", "https://example.com/hook"), ""));
  });

  auto subscriptions = sns_.ListSubscriptions();

  ASSERT_TRUE(subscriptions.ok()) << subscriptions.status().ToString();
  ASSERT_EQ(http_.calls(), 2);
  const auto requests = http_.requests();
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].url, "https://sns.us-east-1.amazonaws.com/");
  EXPECT_EQ(requests[0].body, "Action=ListSubscriptions&Version=2010-03-31");
  EXPECT_EQ(HeaderOf(requests[0], "Content-Type"), "application/x-www-form-urlencoded; charset=utf-8");
  EXPECT_THAT(HeaderOf(requests[0], "Authorization"), HasSubstr("/us-east-1/sns/aws4_request"));
  EXPECT_EQ(requests[1].body, "Action=ListSubscriptions&Version=2010-03-31&NextToken=token%2F2%2B%3D");
  ASSERT_EQ(subscriptions->size(), 2u);
  const SnsSubscription& s = (*subscriptions)[0];
  EXPECT_EQ(s.subscription_arn, kSubscriptionArn);
  EXPECT_EQ(s.topic_arn, kTopicArn);
  EXPECT_EQ(s.protocol, "sqs");
  EXPECT_EQ(s.endpoint, kQueueArn);
  EXPECT_EQ(s.owner, "123456789012");
  EXPECT_EQ((*subscriptions)[1].subscription_arn, "PendingConfirmation");
}

TEST_F(SnsApiTest, GetSubscriptionAttributesReadsEveryEntryAndKeepsValuesVerbatim) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, kAttributesXml); });

  auto attributes = sns_.GetSubscriptionAttributes(kSubscriptionArn);

  ASSERT_TRUE(attributes.ok()) << attributes.status().ToString();
  const HttpRequest sent = http_.requests()[0];
  EXPECT_THAT(FormOf(sent), ElementsAre(Pair("Action", "GetSubscriptionAttributes"), Pair("Version", "2010-03-31"),
                                        Pair("SubscriptionArn", kSubscriptionArn)));
  EXPECT_THAT(sent.body, HasSubstr("SubscriptionArn=arn%3Aaws%3Asns%3Aus-east-1"));
  EXPECT_EQ(attributes->size(), 4u);
  EXPECT_EQ(attributes->at("RedrivePolicy"),
            R"({"deadLetterTargetArn": "arn:aws:sqs:us-east-1:123456789012:orders-dlq"})");
  EXPECT_EQ(attributes->at("RawMessageDelivery"), "true");
  EXPECT_EQ(attributes->at("FilterPolicy"), R"( {"kind": ["a & b"]} )");
}

TEST_F(SnsApiTest, PublishSendsEveryFieldAndEncodesAttributesByType) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, kPublishXml); });
  PublishRequest request;
  request.topic_arn = std::string(kTopicArn) + ".fifo";
  request.message = "{\"order\": 7}\n&=+ é";
  request.subject = "replayed";
  request.message_group_id = "g-1";
  request.message_deduplication_id = "d-1";
  request.attributes["kind"] = {"String", "created", ""};
  request.attributes["count"] = {"Number.int", "3", ""};
  request.attributes["blob"] = {"Binary", "", std::string("\x00\xff\x10", 3)};
  request.attributes["tags"] = {"String.Array", R"(["a","b"])", ""};

  auto result = sns_.Publish(request);

  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_THAT(FormOf(http_.requests()[0]),
              ElementsAre(Pair("Action", "Publish"), Pair("Version", "2010-03-31"), Pair("TopicArn", request.topic_arn),
                          Pair("Message", request.message), Pair("Subject", "replayed"), Pair("MessageGroupId", "g-1"),
                          Pair("MessageDeduplicationId", "d-1"), Pair("MessageAttributes.entry.1.Name", "blob"),
                          Pair("MessageAttributes.entry.1.Value.DataType", "Binary"),
                          Pair("MessageAttributes.entry.1.Value.BinaryValue", "AP8Q"),
                          Pair("MessageAttributes.entry.2.Name", "count"),
                          Pair("MessageAttributes.entry.2.Value.DataType", "Number.int"),
                          Pair("MessageAttributes.entry.2.Value.StringValue", "3"),
                          Pair("MessageAttributes.entry.3.Name", "kind"),
                          Pair("MessageAttributes.entry.3.Value.DataType", "String"),
                          Pair("MessageAttributes.entry.3.Value.StringValue", "created"),
                          Pair("MessageAttributes.entry.4.Name", "tags"),
                          Pair("MessageAttributes.entry.4.Value.DataType", "String.Array"),
                          Pair("MessageAttributes.entry.4.Value.StringValue", R"(["a","b"])")));
  EXPECT_EQ(result->message_id, "94f20ce6-13c5-43a0-9a9e-ca52d816e90b");
  EXPECT_EQ(result->sequence_number, "10000000000000003000");
}

TEST_F(SnsApiTest, APublishWithoutSubjectOrFifoIdsLeavesThemOut) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, kPublishXml); });
  PublishRequest request;
  request.topic_arn = kTopicArn;
  request.message = "m";
  ASSERT_TRUE(sns_.Publish(request).ok());
  EXPECT_EQ(http_.requests()[0].body,
            "Action=Publish&Version=2010-03-31&TopicArn=arn%3Aaws%3Asns%3Aus-east-1%3A123456789012%3Aorders-topic&"
            "Message=m");
}

TEST_F(SnsApiTest, DeniedNamesTheIamActionAndNotFoundIsNotFound) {
  http_.FailCall(1, SnsError(403, "AuthorizationError",
                             "User: arn:aws:iam::123456789012:user/ops is not authorized to perform: "
                             "SNS:ListSubscriptions on resource: arn:aws:sns:us-east-1:123456789012:*"));
  http_.FailCall(2, SnsError(404, "NotFound", "Subscription does not exist"));
  http_.FailCall(3, SnsError(403, "AuthorizationError", "not authorized to perform: SNS:Publish"));
  http_.FailCall(4, SnsError(403, "AccessDenied", "denied"));

  auto denied = sns_.ListSubscriptions();
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.status().code(), ErrorCode::kPermissionDenied);
  EXPECT_EQ(denied.status().aws()->error_code, "AuthorizationError");
  EXPECT_EQ(denied.status().aws()->request_id, "req-sns-1");
  EXPECT_THAT(denied.status().message(), HasSubstr("needs sns:ListSubscriptions on *"));

  auto missing = sns_.GetSubscriptionAttributes(kSubscriptionArn);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr(kSubscriptionArn));
  EXPECT_THAT(missing.status().message(), HasSubstr("Subscription does not exist"));

  PublishRequest request;
  request.topic_arn = kTopicArn;
  request.message = "m";
  auto publish_denied = sns_.Publish(request);
  ASSERT_FALSE(publish_denied.ok());
  EXPECT_EQ(publish_denied.status().code(), ErrorCode::kPermissionDenied);
  EXPECT_THAT(publish_denied.status().message(), HasSubstr(std::string("needs sns:Publish on ") + kTopicArn));

  auto attributes_denied = sns_.GetSubscriptionAttributes(kSubscriptionArn);
  ASSERT_FALSE(attributes_denied.ok());
  EXPECT_EQ(attributes_denied.status().code(), ErrorCode::kPermissionDenied);
  EXPECT_THAT(attributes_denied.status().message(),
              HasSubstr(std::string("needs sns:GetSubscriptionAttributes on ") + kSubscriptionArn));
}

TEST_F(SnsApiRetryTest, ThrottledIsRetriedThenReturnedAsThrottled) {
  http_.FailCall(1, SnsError(400, "Throttled", "Rate exceeded"));
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, ListPage("", "")); });
  auto recovered = sns_.ListSubscriptions();
  ASSERT_TRUE(recovered.ok()) << recovered.status().ToString();
  EXPECT_EQ(http_.calls(), 2);

  http_.SetHandler(
      [](const HttpRequest&) -> Result<HttpResponse> { return SnsError(400, "Throttling", "Rate exceeded"); });
  PublishRequest request;
  request.topic_arn = kTopicArn;
  request.message = "m";
  auto throttled = sns_.Publish(request);
  ASSERT_FALSE(throttled.ok());
  EXPECT_EQ(throttled.status().code(), ErrorCode::kThrottled);
  EXPECT_EQ(throttled.status().aws()->error_code, "Throttling");
  EXPECT_EQ(http_.calls(), 2 + 3);  // every attempt used
}

TEST_F(SnsApiTest, AnInvalidPublishIsRefusedBeforeAnyCall) {
  PublishRequest ok;
  ok.topic_arn = kTopicArn;
  ok.message = "m";
  EXPECT_TRUE(ok.Validate().ok());
  std::vector<std::pair<PublishRequest, std::string>> cases;
  auto with = [&](auto change, std::string want) {
    PublishRequest r = ok;
    change(r);
    cases.emplace_back(std::move(r), std::move(want));
  };
  with([](PublishRequest& r) { r.topic_arn.clear(); }, "no topic ARN");
  with([](PublishRequest& r) { r.message.clear(); }, "empty message");
  with([](PublishRequest& r) { r.subject = std::string(101, 's'); }, "subject of 101 characters");
  with([](PublishRequest& r) { r.subject = "a\nb"; }, "line break");
  with([](PublishRequest& r) { r.message = std::string(262145, 'x'); }, "more than SNS's 262144");
  with([](PublishRequest& r) { r.attributes["k"] = {"Decimal", "1", ""}; }, "not String, Number or Binary");
  with([](PublishRequest& r) { r.attributes["k"] = {"String", "", ""}; }, "attribute k has an empty value");
  with([](PublishRequest& r) { r.attributes["b"] = {"Binary", "x", ""}; }, "attribute b has an empty value");
  with([](PublishRequest& r) { r.attributes[""] = {"String", "x", ""}; }, "has no name");
  with([](PublishRequest& r) { r.topic_arn += ".fifo"; }, "needs a message group id");
  for (const auto& [request, want] : cases) {
    SCOPED_TRACE(want);
    auto result = sns_.Publish(request);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(result.status().message(), HasSubstr(want));
  }
  EXPECT_EQ(sns_.GetSubscriptionAttributes("").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(http_.calls(), 0);
}

TEST_F(SnsApiTest, HostileResponsesAreClearErrors) {
  struct Case {
    std::string body;
    std::string want;
  };
  std::vector<Case> cases = {
      {"", "malformed ListSubscriptions response: not XML"},
      {ListPage(Member(kSubscriptionArn, kQueueArn), "").substr(0, 150), "not XML"},
      {"<ListSubscriptionsResponse/>", "missing <ListSubscriptionsResult>"},
      {"<PublishResponse><PublishResult/></PublishResponse>", "root element is <PublishResponse>"},
      {ListPage("<member><TopicArn>t</TopicArn></member>", ""), "member 1 has no <SubscriptionArn>"},
      {ListPage("<member><SubscriptionArn>s</SubscriptionArn></member>", ""), "member 1 has no <TopicArn>"},
      // An error document with a 200 status is not a page.
      {"<ErrorResponse><Error><Code>InternalError</Code></Error></ErrorResponse>", "root element is <ErrorResponse>"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    http_.SetHandler([&](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, c.body); });
    auto subscriptions = sns_.ListSubscriptions();
    ASSERT_FALSE(subscriptions.ok());
    EXPECT_EQ(subscriptions.status().code(), ErrorCode::kInternal);
    EXPECT_THAT(subscriptions.status().message(), HasSubstr(c.want));
  }
  auto no_key = sns::ParseGetSubscriptionAttributesResponse(
      "<GetSubscriptionAttributesResponse><GetSubscriptionAttributesResult><Attributes><entry><value>v</value>"
      "</entry></Attributes></GetSubscriptionAttributesResult></GetSubscriptionAttributesResponse>");
  ASSERT_FALSE(no_key.ok());
  EXPECT_THAT(no_key.status().message(), HasSubstr("attribute entry 1 has no <key>"));
  auto no_id = sns::ParsePublishResponse("<PublishResponse><PublishResult/></PublishResponse>");
  ASSERT_FALSE(no_id.ok());
  EXPECT_THAT(no_id.status().message(), HasSubstr("missing <MessageId>"));
  auto empty_attributes = sns::ParseGetSubscriptionAttributesResponse(
      "<GetSubscriptionAttributesResponse><GetSubscriptionAttributesResult/></GetSubscriptionAttributesResponse>");
  ASSERT_TRUE(empty_attributes.ok());
  EXPECT_TRUE(empty_attributes->empty());
}

TEST_F(SnsApiTest, AHugePageIsReadWhole) {
  std::string members;
  for (int i = 0; i < 20000; ++i) members += Member(std::string(kTopicArn) + ":" + std::to_string(i), kQueueArn);
  const std::string body = ListPage(members, "");
  http_.SetHandler([&](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, body); });
  auto subscriptions = sns_.ListSubscriptions();
  ASSERT_TRUE(subscriptions.ok()) << subscriptions.status().ToString();
  ASSERT_EQ(subscriptions->size(), 20000u);
  EXPECT_EQ(subscriptions->back().subscription_arn, std::string(kTopicArn) + ":19999");
}

TEST_F(SnsApiTest, ARepeatedNextTokenIsAPaginationLoop) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(200, ListPage(Member(kSubscriptionArn, kQueueArn), "again"));
  });
  auto subscriptions = sns_.ListSubscriptions();
  ASSERT_FALSE(subscriptions.ok());
  EXPECT_THAT(subscriptions.status().message(), HasSubstr("pagination loop"));
  EXPECT_EQ(http_.calls(), 2);
}

// ---------------------------------------------------------------- the fake

TEST(FakeSnsApiTest, AnswersFromWhatItHoldsAndCountsCalls) {
  FakeSnsApi fake;
  fake.AddSubscription({kSubscriptionArn, kTopicArn, "sqs", kQueueArn, "123456789012"},
                       {{"RedrivePolicy", R"({"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:dlq"})"}});

  auto all = fake.ListSubscriptions();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].endpoint, kQueueArn);
  auto attributes = fake.GetSubscriptionAttributes(kSubscriptionArn);
  ASSERT_TRUE(attributes.ok());
  EXPECT_EQ(attributes->at("RedrivePolicy"), R"({"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:dlq"})");
  EXPECT_EQ(attributes->at("Protocol"), "sqs");
  EXPECT_EQ(attributes->at("TopicArn"), kTopicArn);
  auto missing = fake.GetSubscriptionAttributes(std::string(kTopicArn) + ":gone");
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(fake.calls("GetSubscriptionAttributes"), 2);
  EXPECT_EQ(fake.calls("ListSubscriptions"), 1);
}

TEST(FakeSnsApiTest, PublishesThrottleAndDenyOnCommandAndAreRecorded) {
  FakeSnsApi fake;
  PublishRequest request;
  request.topic_arn = kTopicArn;
  request.message = "p1";

  fake.ThrottleNext(1);
  auto throttled = fake.Publish(request);
  ASSERT_FALSE(throttled.ok());
  EXPECT_EQ(throttled.status().code(), ErrorCode::kThrottled);
  auto published = fake.Publish(request);
  ASSERT_TRUE(published.ok());
  EXPECT_EQ(published->message_id, "fake-message-2");
  EXPECT_TRUE(published->sequence_number.empty());

  fake.Deny("Publish");
  request.message = "p2";
  auto denied = fake.Publish(request);
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.status().code(), ErrorCode::kPermissionDenied);
  EXPECT_THAT(denied.status().message(), HasSubstr("needs sns:Publish on"));
  EXPECT_TRUE(fake.ListSubscriptions().ok());  // only Publish is denied

  PublishRequest invalid;
  EXPECT_EQ(fake.Publish(invalid).status().code(), ErrorCode::kInvalidArgument);

  std::vector<std::string> messages;
  for (const auto& r : fake.publishes()) messages.push_back(r.message);
  EXPECT_THAT(messages, ElementsAre("p1", "p1", "p2"));
  EXPECT_EQ(fake.calls("Publish"), 3);
}

}  // namespace
}  // namespace dlq
