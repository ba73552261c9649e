#include "logs/logs_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>
#include <vector>

#include "logs/logs_codec.h"
#include "testing/fake_clock.h"
#include "testing/fake_http.h"
#include "testing/fake_logs.h"

namespace dlq {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string HeaderOf(const HttpRequest& r, std::string_view name) {
  const std::string* v = FindHeader(r.headers, name);
  return v ? *v : std::string();
}

HttpResponse JsonError(int status, std::string type, std::string message) {
  return MakeResponse(status, R"({"__type":")" + type + R"(","message":")" + message + R"("})",
                      {{"x-amzn-RequestId", "req-logs-1"}});
}

// An event line of a FilterLogEvents page.
std::string Event(const std::string& stream, int64_t ts, const std::string& message, const std::string& id) {
  return R"({"logStreamName":")" + stream + R"(","timestamp":)" + std::to_string(ts) + R"(,"message":")" + message +
         R"(","ingestionTime":)" + std::to_string(ts + 5) + R"(,"eventId":")" + id + R"("})";
}

std::string Page(const std::vector<std::string>& events, const std::string& next_token) {
  std::string out = R"({"events":[)";
  for (size_t i = 0; i < events.size(); ++i) out += (i ? "," : "") + events[i];
  out += R"(],"searchedLogStreams":[])";
  if (!next_token.empty()) out += R"(,"nextToken":")" + next_token + R"(")";
  return out + "}";
}

class LogsClientTest : public ::testing::Test {
 protected:
  explicit LogsClientTest(RetryOptions retry = RetryOptions{.max_attempts = 1})
      : creds_(Credentials{"AKIDEXAMPLE", "secret", "", std::nullopt, "test"}),
        aws_(ServiceEndpoint{"logs", "us-east-1", "https://logs.us-east-1.amazonaws.com", false}, http_, creds_, clock_,
             retry),
        logs_(aws_) {}

  // The body of the n-th request (0-based), parsed.
  simdjson::dom::element Body(size_t n) {
    bodies_.push_back(http_.requests().at(n).body);
    return parser_.parse(bodies_.back());
  }

  FakeHttpTransport http_;
  StaticCredentialsProvider creds_;
  FakeClock clock_;
  AwsClient aws_;
  AwsLogsClient logs_;
  simdjson::dom::parser parser_;
  std::vector<std::string> bodies_;
};

class LogsClientRetryTest : public LogsClientTest {
 protected:
  LogsClientRetryTest()
      : LogsClientTest(RetryOptions{.max_attempts = 4,
                                    .base_delay = std::chrono::milliseconds(200),
                                    .max_delay = std::chrono::milliseconds(10000)}) {}
};

FilterLogEventsRequest ForMessage(const std::string& group, const std::string& id) {
  FilterLogEventsRequest request;
  request.log_group = group;
  request.filter_pattern = *QuotedFilterTerm(id);
  request.start_time_ms = 1700000000000;
  request.end_time_ms = 1700000600000;
  return request;
}

TEST_F(LogsClientTest, FilterLogEventsSendsTheJson11TargetAndEveryField) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(200, Page({Event("2025/01/01/[$LATEST]abc", 1700000001000, "ERROR abc-123 failed", "e1")}, ""));
  });
  FilterLogEventsRequest request = ForMessage("/aws/lambda/orders", "abc-123");
  request.log_stream_names = {"s1", "s2"};
  request.page_limit = 500;

  auto result = logs_.FilterLogEvents(request);

  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(http_.calls(), 1);
  const HttpRequest sent = http_.requests()[0];
  EXPECT_EQ(sent.method, "POST");
  EXPECT_EQ(sent.url, "https://logs.us-east-1.amazonaws.com/");
  EXPECT_EQ(HeaderOf(sent, "X-Amz-Target"), "Logs_20140328.FilterLogEvents");
  EXPECT_EQ(HeaderOf(sent, "Content-Type"), "application/x-amz-json-1.1");
  EXPECT_THAT(HeaderOf(sent, "Authorization"), HasSubstr("/us-east-1/logs/aws4_request"));
  simdjson::dom::element body = Body(0);
  EXPECT_EQ(std::string_view(body["logGroupName"]), "/aws/lambda/orders");
  EXPECT_TRUE(body["logGroupIdentifier"].error() == simdjson::NO_SUCH_FIELD);
  EXPECT_EQ(std::string_view(body["filterPattern"]), "\"abc-123\"");
  EXPECT_EQ(int64_t(body["startTime"]), 1700000000000);
  EXPECT_EQ(int64_t(body["endTime"]), 1700000600000);
  EXPECT_EQ(int64_t(body["limit"]), 500);
  EXPECT_EQ(simdjson::dom::array(body["logStreamNames"]).size(), 2u);
  EXPECT_TRUE(body["nextToken"].error() == simdjson::NO_SUCH_FIELD);

  EXPECT_TRUE(result->complete);
  EXPECT_EQ(result->calls, 1);
  ASSERT_EQ(result->events.size(), 1u);
  const FilteredLogEvent& e = result->events[0];
  EXPECT_EQ(e.log_group, "/aws/lambda/orders");
  EXPECT_EQ(e.log_stream, "2025/01/01/[$LATEST]abc");
  EXPECT_EQ(e.timestamp_ms, 1700000001000);
  EXPECT_EQ(e.message, "ERROR abc-123 failed");
  EXPECT_EQ(e.event_id, "e1");
}

TEST_F(LogsClientTest, AnArnIsSentAsLogGroupIdentifierWithoutItsWildcard) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, Page({}, "")); });
  auto result = logs_.FilterLogEvents(ForMessage("arn:aws:logs:us-east-1:123456789012:log-group:/ecs/worker:*", "m-1"));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  simdjson::dom::element body = Body(0);
  EXPECT_EQ(std::string_view(body["logGroupIdentifier"]), "arn:aws:logs:us-east-1:123456789012:log-group:/ecs/worker");
  EXPECT_TRUE(body["logGroupName"].error() == simdjson::NO_SUCH_FIELD);
}

TEST_F(LogsClientTest, FollowsNextTokenAndCountsTheCalls) {
  http_.SetHandler([](const HttpRequest& r) -> Result<HttpResponse> {
    if (r.body.find("\"nextToken\":\"t2\"") != std::string::npos) {
      return MakeResponse(200, Page({Event("s", 3, "m-1 three", "e3")}, ""));
    }
    if (r.body.find("\"nextToken\":\"t1\"") != std::string::npos) return MakeResponse(200, Page({}, "t2"));
    return MakeResponse(200, Page({Event("s", 1, "m-1 one", "e1"), Event("s", 2, "m-1 two", "e2")}, "t1"));
  });

  auto result = logs_.FilterLogEvents(ForMessage("/aws/lambda/orders", "m-1"));

  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->calls, 3);  // the empty middle page counts: CloudWatch Logs returns those
  EXPECT_TRUE(result->complete);
  EXPECT_TRUE(result->next_token.empty());
  std::vector<std::string> ids;
  for (const auto& e : result->events) ids.push_back(e.event_id);
  EXPECT_THAT(ids, ElementsAre("e1", "e2", "e3"));
  EXPECT_EQ(std::string_view(Body(2)["nextToken"]), "t2");
}

TEST_F(LogsClientTest, StopsAtTheCallCapAndSaysWhereToContinue) {
  int n = 0;
  http_.SetHandler([&n](const HttpRequest&) -> Result<HttpResponse> {
    ++n;
    return MakeResponse(200, Page({Event("s", n, "m-1", "e" + std::to_string(n))}, "t" + std::to_string(n)));
  });
  FilterLogEventsRequest request = ForMessage("/aws/lambda/orders", "m-1");
  request.max_calls = 2;

  auto result = logs_.FilterLogEvents(request);

  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(http_.calls(), 2);
  EXPECT_EQ(result->calls, 2);
  EXPECT_FALSE(result->complete);
  EXPECT_EQ(result->next_token, "t2");
  EXPECT_EQ(result->events.size(), 2u);

  request.next_token = result->next_token;
  request.max_calls = 1;
  auto more = logs_.FilterLogEvents(request);
  ASSERT_TRUE(more.ok());
  EXPECT_EQ(std::string_view(Body(2)["nextToken"]), "t2");
}

TEST_F(LogsClientTest, StopsAtTheEventCapWithinAPage) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(200,
                        Page({Event("s", 1, "a", "e1"), Event("s", 2, "b", "e2"), Event("s", 3, "c", "e3")}, "t1"));
  });
  FilterLogEventsRequest request = ForMessage("/aws/lambda/orders", "m-1");
  request.max_events = 2;

  auto result = logs_.FilterLogEvents(request);

  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->events.size(), 2u);
  EXPECT_EQ(result->calls, 1);
  EXPECT_FALSE(result->complete);
  EXPECT_TRUE(result->next_token.empty());  // the first page was cut: start again from it
}

TEST_F(LogsClientTest, ARepeatedNextTokenIsAPaginationLoop) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, Page({}, "same")); });
  auto result = logs_.FilterLogEvents(ForMessage("/aws/lambda/orders", "m-1"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kInternal);
  EXPECT_THAT(result.status().message(), HasSubstr("pagination loop"));
  EXPECT_EQ(http_.calls(), 2);
}

TEST_F(LogsClientRetryTest, ThrottlingIsRetriedWithBackoffThenSucceeds) {
  http_.FailCall(1, JsonError(400, "ThrottlingException", "Rate exceeded"));
  http_.FailCall(2, JsonError(400, "LimitExceededException", "Resource limit exceeded."));
  http_.FailCall(3, MakeResponse(503, "", {{"x-amzn-RequestId", "r503"}}));
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(200, Page({Event("s", 1, "m-1", "e1")}, ""));
  });
  const SystemTime start = clock_.Now();

  auto result = logs_.FilterLogEvents(ForMessage("/aws/lambda/orders", "m-1"));

  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(http_.calls(), 4);
  EXPECT_EQ(result->calls, 1);  // one API call, retried three times
  EXPECT_EQ(result->events.size(), 1u);
  EXPECT_LE(clock_.Now() - start, std::chrono::milliseconds(200 + 400 + 800));
}

TEST_F(LogsClientRetryTest, ThrottlingPastTheLastAttemptIsANamedThrottledError) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return JsonError(400, "com.amazonaws.logs#ThrottlingException", "Rate exceeded");
  });

  auto result = logs_.FilterLogEvents(ForMessage("/aws/lambda/orders", "m-1"));

  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kThrottled);
  EXPECT_TRUE(result.status().retryable());
  ASSERT_TRUE(result.status().aws().has_value());
  EXPECT_EQ(result.status().aws()->error_code, "ThrottlingException");
  EXPECT_EQ(result.status().aws()->request_id, "req-logs-1");
  EXPECT_THAT(result.status().message(), HasSubstr("FilterLogEvents /aws/lambda/orders"));
  EXPECT_THAT(result.status().message(), HasSubstr("after 4 attempts"));
  EXPECT_EQ(http_.calls(), 4);
}

TEST_F(LogsClientRetryTest, AccessDeniedIsNotRetriedAndNamesTheActionAndGroup) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return JsonError(400, "AccessDeniedException",
                     "User: arn:aws:iam::123456789012:user/ops is not authorized to perform: logs:FilterLogEvents on "
                     "resource: arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/orders:log-stream:");
  });

  auto result = logs_.FilterLogEvents(ForMessage("/aws/lambda/orders", "m-1"));

  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kPermissionDenied);
  EXPECT_EQ(http_.calls(), 1);
  EXPECT_EQ(result.status().aws()->error_code, "AccessDeniedException");
  EXPECT_THAT(result.status().message(), HasSubstr("needs logs:FilterLogEvents on log group /aws/lambda/orders"));
  EXPECT_THAT(result.status().message(), HasSubstr("log-group:/aws/lambda/orders"));
}

TEST_F(LogsClientTest, AMissingGroupIsNotFound) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return JsonError(400, "ResourceNotFoundException", "The specified log group does not exist.");
  });
  auto result = logs_.FilterLogEvents(ForMessage("/aws/lambda/gone", "m-1"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(result.status().aws()->error_code, "ResourceNotFoundException");
  EXPECT_THAT(result.status().message(), HasSubstr("log group /aws/lambda/gone does not exist"));
}

TEST_F(LogsClientTest, MalformedResponsesAreClearErrors) {
  struct Case {
    std::string body;
    std::string want;
  };
  std::vector<Case> cases = {
      {"<html>", "malformed FilterLogEvents response: not JSON"},
      {"[]", "malformed FilterLogEvents response: the top level is not an object"},
      {R"({"events":{}})", "events is not an array"},
      {R"({"events":[{"logStreamName":"s","timestamp":"soon","message":"m"}]})",
       "events[0].timestamp is not an integer"},
      {R"({"events":[{"logStreamName":"s","message":"m"}]})", "events[0].timestamp is missing"},
      {R"({"events":[],"nextToken":7})", "nextToken is not a string"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    http_.SetHandler([&](const HttpRequest&) -> Result<HttpResponse> { return MakeResponse(200, c.body); });
    auto result = logs_.FilterLogEvents(ForMessage("/aws/lambda/orders", "m-1"));
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), ErrorCode::kInternal);
    EXPECT_THAT(result.status().message(), HasSubstr(c.want));
    EXPECT_THAT(result.status().message(), HasSubstr("FilterLogEvents /aws/lambda/orders"));
  }
}

TEST_F(LogsClientTest, DescribeLogGroupsReadsRetentionAndFollowsPages) {
  http_.SetHandler([](const HttpRequest& r) -> Result<HttpResponse> {
    if (r.body.find("nextToken") == std::string::npos) {
      return MakeResponse(200, R"({"logGroups":[{"logGroupName":"/aws/lambda/orders","creationTime":1700000000000,
          "retentionInDays":14,"metricFilterCount":0,"storedBytes":2048,"logGroupClass":"STANDARD",
          "arn":"arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/orders:*",
          "logGroupArn":"arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/orders"}],"nextToken":"p2"})");
    }
    return MakeResponse(200, R"({"logGroups":[{"logGroupName":"/aws/lambda/orders-v2",
          "arn":"arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/orders-v2:*"}]})");
  });

  auto list = logs_.DescribeLogGroups("/aws/lambda/orders", 5);

  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(HeaderOf(http_.requests()[0], "X-Amz-Target"), "Logs_20140328.DescribeLogGroups");
  EXPECT_EQ(std::string_view(Body(0)["logGroupNamePrefix"]), "/aws/lambda/orders");
  EXPECT_EQ(std::string_view(Body(1)["nextToken"]), "p2");
  EXPECT_EQ(list->calls, 2);
  EXPECT_TRUE(list->complete);
  ASSERT_EQ(list->groups.size(), 2u);
  EXPECT_EQ(list->groups[0].retention_in_days, 14);
  EXPECT_EQ(list->groups[0].stored_bytes, 2048);
  EXPECT_EQ(list->groups[0].creation_time_ms, 1700000000000);
  EXPECT_EQ(list->groups[0].log_group_class, "STANDARD");
  EXPECT_EQ(list->groups[0].arn, "arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/orders");
  EXPECT_FALSE(list->groups[1].retention_in_days.has_value());  // never expires
  EXPECT_EQ(list->groups[1].arn, "arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/orders-v2");

  auto found = FindLogGroup(logs_, "/aws/lambda/orders-v2");
  ASSERT_TRUE(found.ok());
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->name, "/aws/lambda/orders-v2");
}

TEST_F(LogsClientTest, FindLogGroupWantsTheExactName) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(200, R"({"logGroups":[{"logGroupName":"/aws/lambda/orders-v2"}]})");
  });
  auto found = FindLogGroup(logs_, "/aws/lambda/orders");
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE(found->has_value());
}

TEST_F(LogsClientTest, DescribeLogGroupsDeniedNamesTheAction) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return JsonError(400, "AccessDeniedException", "not authorized");
  });
  auto list = logs_.DescribeLogGroups("/aws/lambda/orders", 1);
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.status().code(), ErrorCode::kPermissionDenied);
  EXPECT_THAT(list.status().message(), HasSubstr("needs logs:DescribeLogGroups on log group /aws/lambda/orders"));
}

TEST(QuotedFilterTermTest, QuotesAMessageIdAndRejectsWhatWouldBreakThePattern) {
  EXPECT_EQ(*QuotedFilterTerm("0b7f3a5c-1d2e-4f60-8a9b-0c1d2e3f4a5b"), "\"0b7f3a5c-1d2e-4f60-8a9b-0c1d2e3f4a5b\"");
  for (std::string bad : {std::string(), std::string("a\"b"), std::string("a\\b"), std::string("a\nb")}) {
    auto r = QuotedFilterTerm(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  }
}

TEST(FilterLogEventsRequestTest, ValidateRejectsBadCombinations) {
  auto base = [] {
    FilterLogEventsRequest r;
    r.log_group = "/aws/lambda/x";
    return r;
  };
  EXPECT_TRUE(base().Validate().ok());
  auto no_group = base();
  no_group.log_group.clear();
  auto backwards = base();
  backwards.start_time_ms = 10;
  backwards.end_time_ms = 5;
  auto too_many_streams = base();
  too_many_streams.log_stream_names.assign(101, "s");
  auto big_page = base();
  big_page.page_limit = 10001;
  auto no_calls = base();
  no_calls.max_calls = 0;
  auto no_events = base();
  no_events.max_events = 0;
  for (const auto& r : {no_group, backwards, too_many_streams, big_page, no_calls, no_events}) {
    EXPECT_EQ(r.Validate().code(), ErrorCode::kInvalidArgument);
  }
}

TEST(LogsRetryOptionsTest, AreValidAndBackOffLongerThanTheDefault) {
  RetryOptions logs = LogsRetryOptions();
  EXPECT_TRUE(logs.Validate().ok());
  EXPECT_GT(logs.max_attempts, RetryOptions{}.max_attempts);
  EXPECT_GT(logs.base_delay, RetryOptions{}.base_delay);
}

// ---------------------------------------------------------------- the fake

class FakeLogsClientTest : public ::testing::Test {
 protected:
  FakeLogsClientTest() {
    fake_.AddGroup("/aws/lambda/orders", 7);
    fake_.AddEvent("/aws/lambda/orders", "a", 1000, "START RequestId: r1");
    fake_.AddEvent("/aws/lambda/orders", "a", 1100, "[ERROR] m-1 KeyError: 'sku'");
    fake_.AddEvent("/aws/lambda/orders", "b", 1050, "processing m-1");
    fake_.AddEvent("/aws/lambda/orders", "b", 5000, "processing m-1 again, later");
    fake_.AddEvent("/aws/lambda/orders", "a", 1200, "processing m-2");
  }
  FilterLogEventsRequest Request() {
    FilterLogEventsRequest r;
    r.log_group = "/aws/lambda/orders";
    r.filter_pattern = "\"m-1\"";
    r.end_time_ms = 2000;
    return r;
  }
  static std::vector<std::string> Messages(const FilterLogEventsResult& r) {
    std::vector<std::string> out;
    for (const auto& e : r.events) out.push_back(e.message);
    return out;
  }
  FakeLogsClient fake_;
};

TEST_F(FakeLogsClientTest, FiltersByQuotedTermTimeWindowAndStreamInTimeOrder) {
  auto all = fake_.FilterLogEvents(Request());
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_THAT(Messages(*all), ElementsAre("processing m-1", "[ERROR] m-1 KeyError: 'sku'"));
  EXPECT_TRUE(all->complete);

  FilterLogEventsRequest one_stream = Request();
  one_stream.log_stream_names = {"a"};
  auto a = fake_.FilterLogEvents(one_stream);
  ASSERT_TRUE(a.ok());
  EXPECT_THAT(Messages(*a), ElementsAre("[ERROR] m-1 KeyError: 'sku'"));
  EXPECT_EQ(a->events[0].log_stream, "a");
  EXPECT_EQ(fake_.filter_calls(), 2);
}

TEST_F(FakeLogsClientTest, PagesLikeTheServiceAndStopsAtTheCaps) {
  fake_.SetPageSize(1);
  FilterLogEventsRequest request = Request();
  request.end_time_ms.reset();
  request.max_calls = 2;
  auto first = fake_.FilterLogEvents(request);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->calls, 2);
  EXPECT_FALSE(first->complete);
  EXPECT_EQ(first->events.size(), 2u);

  request.next_token = first->next_token;
  auto rest = fake_.FilterLogEvents(request);
  ASSERT_TRUE(rest.ok());
  EXPECT_TRUE(rest->complete);
  EXPECT_THAT(Messages(*rest), ElementsAre("processing m-1 again, later"));
  EXPECT_EQ(fake_.filter_calls(), 3);
}

TEST_F(FakeLogsClientTest, ThrottlesOnCommandThenAnswers) {
  fake_.ThrottleNext(2);
  for (int i = 0; i < 2; ++i) {
    auto throttled = fake_.FilterLogEvents(Request());
    ASSERT_FALSE(throttled.ok());
    EXPECT_EQ(throttled.status().code(), ErrorCode::kThrottled);
    EXPECT_EQ(throttled.status().aws()->error_code, "ThrottlingException");
  }
  EXPECT_TRUE(fake_.FilterLogEvents(Request()).ok());
  EXPECT_EQ(fake_.filter_calls(), 3);
}

TEST_F(FakeLogsClientTest, DeniesOnCommandAndKnowsMissingGroups) {
  fake_.Deny("FilterLogEvents");
  auto denied = fake_.FilterLogEvents(Request());
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.status().code(), ErrorCode::kPermissionDenied);
  EXPECT_THAT(denied.status().message(), HasSubstr("logs:FilterLogEvents"));
  EXPECT_TRUE(fake_.DescribeLogGroups("/aws/lambda/", 1).ok());
  fake_.Deny("");

  FilterLogEventsRequest missing = Request();
  missing.log_group = "/aws/lambda/gone";
  auto not_found = fake_.FilterLogEvents(missing);
  ASSERT_FALSE(not_found.ok());
  EXPECT_EQ(not_found.status().code(), ErrorCode::kNotFound);

  auto group = FindLogGroup(fake_, "/aws/lambda/orders");
  ASSERT_TRUE(group.ok());
  ASSERT_TRUE(group->has_value());
  EXPECT_EQ((*group)->retention_in_days, 7);
  EXPECT_EQ(fake_.describe_calls(), 2);
}

TEST_F(FakeLogsClientTest, RejectsPatternSyntaxItDoesNotKnow) {
  FilterLogEventsRequest request = Request();
  request.filter_pattern = "{ $.level = \"ERROR\" }";
  auto r = fake_.FilterLogEvents(request);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace dlq
