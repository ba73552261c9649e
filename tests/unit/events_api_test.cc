#include "events/events_api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/time_util.h"
#include "events/events_codec.h"
#include "testing/fake_clock.h"
#include "testing/fake_events_api.h"
#include "testing/fake_http.h"

namespace dlq {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string HeaderOf(const HttpRequest& r, std::string_view name) {
  const std::string* v = FindHeader(r.headers, name);
  return v ? *v : std::string();
}

// EventBridge's AWS JSON 1.1 error: {"__type","message"}.
HttpResponse JsonError(int status, const std::string& type, const std::string& message) {
  return MakeResponse(status, R"({"__type":")" + type + R"(","message":")" + message + R"("})",
                      {{"x-amzn-RequestId", "req-events-1"}});
}

PutEventsEntry Entry(const std::string& detail, const std::string& bus = "orders-bus") {
  PutEventsEntry e;
  e.event_bus_name = bus;
  e.source = "com.example.orders";
  e.detail_type = "OrderPlaced";
  e.detail = detail;
  return e;
}

// An event as EventBridge delivers it to a target; `detail` is put in as is.
std::string Event(const std::string& detail) {
  return R"({"version":"0","id":"6a7e8feb-b491-4cf7-a9f1-bf3703467718","detail-type":"OrderPlaced",)"
         R"("source":"com.example.orders","account":"123456789012","time":"2024-05-01T12:30:45Z",)"
         R"("region":"us-east-1","resources":["arn:aws:s3:::orders"],"detail":)" +
         detail + "}";
}

class EventsApiTest : public ::testing::Test {
 protected:
  explicit EventsApiTest(RetryOptions retry = RetryOptions{.max_attempts = 1})
      : creds_(Credentials{"AKIDEXAMPLE", "secret", "", std::nullopt, "test"}),
        aws_(ServiceEndpoint{"events", "us-east-1", "https://events.us-east-1.amazonaws.com", false}, http_, creds_,
             clock_, retry),
        events_(aws_) {}

  FakeHttpTransport http_;
  StaticCredentialsProvider creds_;
  FakeClock clock_;
  AwsClient aws_;
  AwsEventsApi events_;
};

class EventsApiRetryTest : public EventsApiTest {
 protected:
  EventsApiRetryTest() : EventsApiTest(RetryOptions{.max_attempts = 3}) {}
};

TEST_F(EventsApiTest, PutEventsSendsJson11WithTheTargetAndEveryField) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(200, R"({"FailedEntryCount":0,"Entries":[{"EventId":"e-1"},{"EventId":"e-2"}]})");
  });
  PutEventsEntry full = Entry("{\"id\": 7,\n \"note\": \"a \\\"b\\\" é\"}");
  full.resources = {"arn:aws:s3:::orders"};
  full.time = *ParseIso8601("2024-05-01T12:30:45Z");
  full.trace_header = "Root=1-5759e988-bd862e3fe1be46a994272793";
  PutEventsEntry minimal = Entry("{}", "");
  minimal.time = *ParseIso8601("2024-05-01T12:30:45.250Z");

  auto results = events_.PutEvents({full, minimal});

  ASSERT_TRUE(results.ok()) << results.status().ToString();
  const HttpRequest sent = http_.requests()[0];
  EXPECT_EQ(sent.method, "POST");
  EXPECT_EQ(sent.url, "https://events.us-east-1.amazonaws.com/");
  EXPECT_EQ(HeaderOf(sent, "X-Amz-Target"), "AWSEvents.PutEvents");
  EXPECT_EQ(HeaderOf(sent, "Content-Type"), "application/x-amz-json-1.1");
  EXPECT_THAT(HeaderOf(sent, "Authorization"), HasSubstr("/us-east-1/events/aws4_request"));
  EXPECT_EQ(
      sent.body,
      R"({"Entries":[{"Source":"com.example.orders","DetailType":"OrderPlaced",)"
      R"("Detail":"{\"id\": 7,\n \"note\": \"a \\\"b\\\" é\"}","Resources":["arn:aws:s3:::orders"],)"
      R"("Time":1714566645,"EventBusName":"orders-bus","TraceHeader":"Root=1-5759e988-bd862e3fe1be46a994272793"},)"
      R"({"Source":"com.example.orders","DetailType":"OrderPlaced","Detail":"{}","Time":1714566645.25}]})");
  ASSERT_EQ(results->size(), 2u);
  EXPECT_EQ((*results)[0].event_id, "e-1");
  EXPECT_TRUE((*results)[1].ok());
}

TEST_F(EventsApiTest, APerEntryFailureIsAResultNotAnError) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(200, R"({"FailedEntryCount":1,"Entries":[{"EventId":"e-1"},)"
                             R"({"ErrorCode":"InternalFailure","ErrorMessage":"try again"}]})");
  });
  auto results = events_.PutEvents({Entry("{}"), Entry("{}")});
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  ASSERT_EQ(results->size(), 2u);
  EXPECT_TRUE((*results)[0].ok());
  EXPECT_FALSE((*results)[1].ok());
  EXPECT_EQ((*results)[1].error_code, "InternalFailure");
  EXPECT_EQ((*results)[1].error_message, "try again");
}

TEST_F(EventsApiTest, DeniedNamesTheIamActionAndTheBusAndNotFoundIsNotFound) {
  http_.FailCall(1,
                 JsonError(400, "AccessDeniedException",
                           "User: arn:aws:iam::123456789012:user/ops is not authorized to perform: "
                           "events:PutEvents on resource: arn:aws:events:us-east-1:123456789012:event-bus/orders-bus"));
  http_.FailCall(2, JsonError(400, "ResourceNotFoundException", "Event bus gone-bus does not exist."));

  auto denied = events_.PutEvents({Entry("{}")});
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.status().code(), ErrorCode::kPermissionDenied);
  EXPECT_EQ(denied.status().aws()->error_code, "AccessDeniedException");
  EXPECT_EQ(denied.status().aws()->request_id, "req-events-1");
  EXPECT_THAT(denied.status().message(), HasSubstr("needs events:PutEvents on orders-bus"));

  auto missing = events_.PutEvents({Entry("{}", "gone-bus")});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("PutEvents gone-bus"));
  EXPECT_THAT(missing.status().message(), HasSubstr("does not exist"));
}

TEST_F(EventsApiRetryTest, ThrottlingIsRetriedThenReturnedAsThrottled) {
  http_.FailCall(1, JsonError(400, "ThrottlingException", "Rate exceeded"));
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(200, R"({"FailedEntryCount":0,"Entries":[{"EventId":"e-1"}]})");
  });
  ASSERT_TRUE(events_.PutEvents({Entry("{}")}).ok());
  EXPECT_EQ(http_.calls(), 2);

  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return JsonError(400, "ThrottlingException", "Rate exceeded");
  });
  auto throttled = events_.PutEvents({Entry("{}")});
  ASSERT_FALSE(throttled.ok());
  EXPECT_EQ(throttled.status().code(), ErrorCode::kThrottled);
  EXPECT_EQ(http_.calls(), 2 + 3);
}

TEST_F(EventsApiTest, InvalidCallsAreRefusedBeforeSending) {
  std::vector<PutEventsEntry> eleven(11, Entry("{}"));
  auto too_many = events_.PutEvents(eleven);
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(too_many.status().message(), HasSubstr("11 entries, more than 10"));
  PutEventsEntry no_detail = Entry("");
  auto missing = events_.PutEvents({Entry("{}"), no_detail});
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("entry 1 has no detail"));
  PutEventsEntry no_source = Entry("{}");
  no_source.source.clear();
  EXPECT_THAT(events_.PutEvents({no_source}).status().message(), HasSubstr("has no source"));
  auto none = events_.PutEvents({});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(http_.calls(), 0);
}

TEST_F(EventsApiTest, HostileResponsesAreClearErrors) {
  struct Case {
    std::string body;
    std::string want;
  };
  std::vector<Case> cases = {
      {"", "malformed PutEvents response: not JSON"},
      {R"({"FailedEntryCount":0,"Entries":[{"EventId":"e-1"})", "not JSON"},
      {"[]", "not an object"},
      {R"({"Entries":{"EventId":"e"}})", "Entries is not an array"},
      {R"({"Entries":[{"EventId":7}]})", "EventId is not a string"},
      {R"({"Entries":[{}]})", "EventId and ErrorCode are both missing"},
      {R"({"FailedEntryCount":"0","Entries":[{"EventId":"e"}]})", "FailedEntryCount is not an integer"},
      {R"({"FailedEntryCount":0})", "0 results for 1 entries"},
      {R"({"Entries":[{"EventId":"a"},{"EventId":"b"}]})", "2 results for 1 entries"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    http_.SetHandler([&](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, c.body); });
    auto results = events_.PutEvents({Entry("{}")});
    ASSERT_FALSE(results.ok());
    EXPECT_EQ(results.status().code(), ErrorCode::kInternal);
    EXPECT_THAT(results.status().message(), HasSubstr(c.want));
  }
  std::string huge = R"({"FailedEntryCount":0,"Entries":[)";
  for (int i = 0; i < 100000; ++i) huge += R"({"EventId":"e"},)";
  huge += R"({"EventId":"last"}]})";
  auto parsed = events::ParsePutEventsResponse(huge);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->entries.size(), 100001u);
  EXPECT_EQ(parsed->entries.back().event_id, "last");
}

// ---------------------------------------------------------------- an event back to its entry

TEST(PutEventsEntryFromEventTest, KeepsTheDetailTextByteForByte) {
  const std::vector<std::string> details = {
      "{}",
      "{ \"order\" : { \"id\" : 7, \"total\": 1.50e2 },\n\t\"tags\": [ \"a\", \"}\" ] }",
      R"({"quote":"he said \"}\" then \\","u":"\u00e9\ud83d\ude00","raw":"é😀"})",
      R"({"nested":[[[{"a":[]}]]],"n":null,"t":true,"f":false,"neg":-0.0})",
  };
  for (const std::string& detail : details) {
    SCOPED_TRACE(detail);
    auto entry = PutEventsEntryFromEvent(Event(detail), "replay-bus");
    ASSERT_TRUE(entry.ok()) << entry.status().ToString();
    EXPECT_EQ(entry->detail, detail);
    EXPECT_EQ(entry->event_bus_name, "replay-bus");
    EXPECT_EQ(entry->source, "com.example.orders");
    EXPECT_EQ(entry->detail_type, "OrderPlaced");
    EXPECT_THAT(entry->resources, ElementsAre("arn:aws:s3:::orders"));
    ASSERT_TRUE(entry->time.has_value());
    EXPECT_EQ(FormatIso8601(*entry->time), FormatIso8601(*ParseIso8601("2024-05-01T12:30:45Z")));
  }
}

TEST(PutEventsEntryFromEventTest, FindsDetailWhereverItIsAndHoweverItsKeyIsWritten) {
  auto first = PutEventsEntryFromEvent(
      "  {\"detail\" :\n{\"x\":1} , \"source\":\"s\",\"detail-type\":\"t\",\"resources\":[]}  ", "");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->detail, "{\"x\":1}");
  EXPECT_TRUE(first->resources.empty());
  EXPECT_FALSE(first->time.has_value());
  EXPECT_TRUE(first->event_bus_name.empty());
  // A member whose string value holds what looks like another "detail" key comes first.
  auto escaped = PutEventsEntryFromEvent(
      R"({"source":"s","note":"\"detail\":{\"fake\":1}","detail-type":"t","det\u0061il":{"real":2}})", "b");
  ASSERT_TRUE(escaped.ok()) << escaped.status().ToString();
  EXPECT_EQ(escaped->detail, R"({"real":2})");
}

TEST(PutEventsEntryFromEventTest, AnythingButAnEventIsInvalidNamingWhatIsMissing) {
  struct Case {
    std::string event;
    std::string want;
  };
  std::vector<Case> cases = {
      {"", "not a JSON object"},
      {"[1]", "not a JSON object"},
      {R"({"source":"s","detail-type":"t","detail":{})", "not a JSON object"},
      {R"({"detail-type":"t","detail":{}})", "no \"source\" string"},
      {R"({"source":"s","detail":{}})", "no \"detail-type\" string"},
      {R"({"source":"s","detail-type":"t"})", "no \"detail\" object"},
      {R"({"source":"s","detail-type":"t","detail":"{}"})", "no \"detail\" object"},
      {R"({"source":1,"detail-type":"t","detail":{}})", "no \"source\" string"},
      {R"({"source":"s","detail-type":"t","detail":{},"time":"yesterday"})", "\"time\" is not an ISO 8601 time"},
      {R"({"source":"s","detail-type":"t","detail":{},"resources":"arn"})", "\"resources\" is not an array"},
      {R"({"source":"s","detail-type":"t","detail":{},"resources":[1]})", "item that is not a string"},
      {R"({"source":"s","detail-type":"t","detail":{},"detail":{"again":1}})", "\"detail\" appears twice"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.event);
    auto entry = PutEventsEntryFromEvent(c.event, "b");
    ASSERT_FALSE(entry.ok());
    EXPECT_EQ(entry.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(entry.status().message(), HasSubstr(c.want));
  }
}

TEST(PutEventsEntryFromEventTest, TopLevelMemberTextStopsAtTheEnd) {
  EXPECT_EQ(events::TopLevelMemberText(R"({"a":1,"b":"x,}","c":[1,{"d":2}]})", 0), "1");
  EXPECT_EQ(events::TopLevelMemberText(R"({"a":1,"b":"x,}","c":[1,{"d":2}]})", 1), R"("x,}")");
  EXPECT_EQ(events::TopLevelMemberText(R"({"a":1,"b":"x,}","c":[1,{"d":2}]})", 2), R"([1,{"d":2}])");
  EXPECT_FALSE(events::TopLevelMemberText(R"({"a":1})", 1).has_value());
  EXPECT_FALSE(events::TopLevelMemberText("{}", 0).has_value());
  EXPECT_FALSE(events::TopLevelMemberText("", 0).has_value());
  EXPECT_FALSE(events::TopLevelMemberText(R"({"a)", 0).has_value());
}

// ---------------------------------------------------------------- the fake

TEST(FakeEventsApiTest, RecordsEntriesFailsEntriesAndDeniesOnCommand) {
  FakeEventsApi fake;
  auto put = fake.PutEvents({Entry(R"({"n":1})")});
  ASSERT_TRUE(put.ok());
  EXPECT_EQ((*put)[0].event_id, "fake-event-1");

  fake.FailEntries(1, "ThrottlingException", "slow down");
  auto partial = fake.PutEvents({Entry(R"({"n":2})"), Entry(R"({"n":3})")});
  ASSERT_TRUE(partial.ok());
  EXPECT_EQ((*partial)[0].error_code, "ThrottlingException");
  EXPECT_FALSE((*partial)[0].ok());
  EXPECT_TRUE((*partial)[1].ok());

  fake.Deny("PutEvents");
  auto denied = fake.PutEvents({Entry(R"({"n":4})")});
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.status().code(), ErrorCode::kPermissionDenied);
  EXPECT_THAT(denied.status().message(), HasSubstr("needs events:PutEvents on orders-bus"));
  EXPECT_EQ(fake.PutEvents(std::vector<PutEventsEntry>(11, Entry("{}"))).status().code(), ErrorCode::kInvalidArgument);

  std::vector<std::string> received, stored;
  for (const auto& e : fake.received()) received.push_back(e.detail);
  for (const auto& e : fake.put()) stored.push_back(e.detail);
  EXPECT_THAT(received, ElementsAre(R"({"n":1})", R"({"n":2})", R"({"n":3})", R"({"n":4})"));
  EXPECT_THAT(stored, ElementsAre(R"({"n":1})", R"({"n":3})"));
  EXPECT_EQ(fake.calls("PutEvents"), 3);
}

}  // namespace
}  // namespace dlq
