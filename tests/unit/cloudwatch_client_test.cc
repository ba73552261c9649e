#include "cloudwatch/cloudwatch_client.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "aws/aws_client.h"
#include "common/strings.h"
#include "common/time_util.h"
#include "testing/fake_clock.h"
#include "testing/fake_http.h"

namespace dlq {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::map<std::string, std::string> ParseForm(const std::string& body) {
  std::map<std::string, std::string> out;
  for (std::string_view pair : Split(body, '&')) {
    auto eq = pair.find('=');
    EXPECT_NE(eq, std::string_view::npos) << pair;
    if (eq == std::string_view::npos) continue;
    EXPECT_TRUE(out.emplace(UriDecode(pair.substr(0, eq)), UriDecode(pair.substr(eq + 1))).second) << pair;
  }
  return out;
}

class CloudWatchClientTest : public ::testing::Test {
 protected:
  CloudWatchClientTest()
      : creds_(Credentials{"AKIDEXAMPLE", "secret", "", std::nullopt, "test"}),
        aws_(ServiceEndpoint{"monitoring", "us-east-1", "https://monitoring.us-east-1.amazonaws.com", false}, http_,
             creds_, clock_, RetryOptions{.max_attempts = 1}),
        cw_(aws_) {}

  FakeHttpTransport http_;
  StaticCredentialsProvider creds_;
  FakeClock clock_;
  AwsClient aws_;
  CloudWatchClient cw_;
};

constexpr char kPage1[] = R"(<GetMetricDataResponse xmlns="http://monitoring.amazonaws.com/doc/2010-08-01/">
  <GetMetricDataResult>
    <MetricDataResults>
      <member>
        <Id>age</Id>
        <Label>ApproximateAgeOfOldestMessage</Label>
        <Timestamps><member>2025-09-10T12:00:00Z</member><member>2025-09-10T12:05:00Z</member></Timestamps>
        <Values><member>3600.0</member><member>3900</member></Values>
        <StatusCode>PartialData</StatusCode>
      </member>
      <member>
        <Id>depth</Id>
        <Label>ApproximateNumberOfMessagesVisible</Label>
        <Timestamps/>
        <Values/>
        <StatusCode>Complete</StatusCode>
      </member>
    </MetricDataResults>
    <NextToken>token-2</NextToken>
    <Messages/>
  </GetMetricDataResult>
  <ResponseMetadata><RequestId>r-1</RequestId></ResponseMetadata>
</GetMetricDataResponse>)";

constexpr char kPage2[] = R"(<GetMetricDataResponse><GetMetricDataResult><MetricDataResults>
      <member><Id>age</Id><Timestamps><member>2025-09-10T12:10:00Z</member></Timestamps>
        <Values><member>4.2E3</member></Values><StatusCode>Complete</StatusCode></member>
    </MetricDataResults></GetMetricDataResult></GetMetricDataResponse>)";

TEST_F(CloudWatchClientTest, GetMetricDataSendsQueryProtocolFormAndFollowsNextToken) {
  http_.SetHandler([](const HttpRequest& r) -> Result<HttpResponse> {
    return MakeResponse(200, r.body.find("NextToken=") == std::string::npos ? kPage1 : kPage2);
  });
  SystemTime start = *ParseIso8601("2025-09-10T12:00:00Z");
  SystemTime end = *ParseIso8601("2025-09-10T13:00:00Z");
  auto series = cw_.GetMetricData({SqsQueueMetricQuery("age", "orders-dlq", "ApproximateAgeOfOldestMessage"),
                                   SqsQueueMetricQuery("depth", "orders-dlq", "ApproximateNumberOfMessagesVisible",
                                                       "Sum", std::chrono::seconds(60))},
                                  start, end);
  ASSERT_TRUE(series.ok()) << series.status().ToString();

  auto reqs = http_.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(*FindHeader(reqs[0].headers, "Content-Type"), "application/x-www-form-urlencoded; charset=utf-8");
  EXPECT_THAT(*FindHeader(reqs[0].headers, "Authorization"), HasSubstr("/us-east-1/monitoring/aws4_request"));
  EXPECT_TRUE(StartsWith(reqs[0].body, "Action=GetMetricData&Version=2010-08-01&")) << reqs[0].body;
  auto form = ParseForm(reqs[0].body);
  EXPECT_EQ(form["MetricDataQueries.member.1.Id"], "age");
  EXPECT_EQ(form["MetricDataQueries.member.1.MetricStat.Metric.Namespace"], "AWS/SQS");
  EXPECT_EQ(form["MetricDataQueries.member.1.MetricStat.Metric.MetricName"], "ApproximateAgeOfOldestMessage");
  EXPECT_EQ(form["MetricDataQueries.member.1.MetricStat.Metric.Dimensions.member.1.Name"], "QueueName");
  EXPECT_EQ(form["MetricDataQueries.member.1.MetricStat.Metric.Dimensions.member.1.Value"], "orders-dlq");
  EXPECT_EQ(form["MetricDataQueries.member.1.MetricStat.Period"], "300");
  EXPECT_EQ(form["MetricDataQueries.member.1.MetricStat.Stat"], "Maximum");
  EXPECT_EQ(form["MetricDataQueries.member.1.ReturnData"], "true");
  EXPECT_EQ(form["MetricDataQueries.member.2.Id"], "depth");
  EXPECT_EQ(form["MetricDataQueries.member.2.MetricStat.Period"], "60");
  EXPECT_EQ(form["MetricDataQueries.member.2.MetricStat.Stat"], "Sum");
  EXPECT_EQ(*ParseIso8601(form["StartTime"]), start);
  EXPECT_EQ(*ParseIso8601(form["EndTime"]), end);
  EXPECT_EQ(form.count("NextToken"), 0u);
  EXPECT_EQ(ParseForm(reqs[1].body)["NextToken"], "token-2");

  const MetricDataSeries& age = series->at("age");
  EXPECT_EQ(age.label, "ApproximateAgeOfOldestMessage");
  EXPECT_THAT(age.values, ElementsAre(3600.0, 3900.0, 4200.0));
  ASSERT_EQ(age.timestamps.size(), 3u);
  EXPECT_EQ(age.timestamps[2], *ParseIso8601("2025-09-10T12:10:00Z"));
  EXPECT_EQ(age.status_code, "PartialData");
  EXPECT_TRUE(series->at("depth").values.empty());
  EXPECT_EQ(series->at("depth").status_code, "Complete");
}

TEST_F(CloudWatchClientTest, GetMetricDataRejectsDuplicateIdsWithoutCalling) {
  auto r = cw_.GetMetricData({SqsQueueMetricQuery("a", "q", "M"), SqsQueueMetricQuery("a", "q", "N")},
                             clock_.Now() - std::chrono::hours(1), clock_.Now());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(http_.calls(), 0);
}

TEST_F(CloudWatchClientTest, GetMetricDataReturnsAwsErrors) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(403,
                        "<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>no</Message>"
                        "</Error><RequestId>rid-9</RequestId></ErrorResponse>");
  });
  auto r = cw_.GetMetricData({SqsQueueMetricQuery("a", "q", "M")}, clock_.Now() - std::chrono::hours(1), clock_.Now());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kPermissionDenied);
}

TEST_F(CloudWatchClientTest, PutMetricDataBatchesAtMostOneThousandDatums) {
  http_.SetHandler([](const HttpRequest&) -> Result<HttpResponse> {
    return MakeResponse(200,
                        "<PutMetricDataResponse><ResponseMetadata><RequestId>x</RequestId>"
                        "</ResponseMetadata></PutMetricDataResponse>");
  });
  std::vector<MetricDatum> datums;
  for (int i = 0; i < 2500; ++i) {
    MetricDatum d;
    d.metric_name = "ArchivedMessages";
    d.dimensions = {{"Queue", fmt::format("q{}", i)}};
    d.value = i + 0.5;
    d.unit = "Count";
    d.timestamp = *ParseIso8601("2025-09-10T12:00:00Z");
    datums.push_back(d);
  }
  ASSERT_TRUE(cw_.PutMetricData("DlqArchive", datums).ok());
  auto reqs = http_.requests();
  ASSERT_EQ(reqs.size(), 3u);
  std::vector<int> counts;
  for (const HttpRequest& r : reqs) {
    auto form = ParseForm(r.body);
    EXPECT_EQ(form["Action"], "PutMetricData");
    EXPECT_EQ(form["Namespace"], "DlqArchive");
    int n = 0;
    while (form.count(fmt::format("MetricData.member.{}.MetricName", n + 1))) ++n;
    counts.push_back(n);
  }
  EXPECT_THAT(counts, ElementsAre(1000, 1000, 500));
  auto last = ParseForm(reqs[2].body);
  EXPECT_EQ(last["MetricData.member.1.Dimensions.member.1.Name"], "Queue");
  EXPECT_EQ(last["MetricData.member.1.Dimensions.member.1.Value"], "q2000");
  EXPECT_EQ(last["MetricData.member.1.Value"], "2000.5");
  EXPECT_EQ(last["MetricData.member.1.Unit"], "Count");
  EXPECT_EQ(*ParseIso8601(last["MetricData.member.1.Timestamp"]), *ParseIso8601("2025-09-10T12:00:00Z"));
}

TEST_F(CloudWatchClientTest, PutMetricDataRejectsNonFiniteValuesBeforeSending) {
  MetricDatum d;
  d.metric_name = "M";
  d.value = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(cw_.PutMetricData("Ns", {d}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(http_.calls(), 0);
}

TEST(CloudWatchFormTest, EncodesNamesAndValues) {
  EXPECT_EQ(EncodeForm({{"A.b", "x y/z"}, {"C", "é&="}}), "A.b=x%20y%2Fz&C=%C3%A9%26%3D");
}

TEST(CloudWatchFormTest, ParserRejectsMismatchedSeries) {
  auto r = ParseGetMetricDataResponse(
      "<GetMetricDataResponse><GetMetricDataResult><MetricDataResults><member><Id>a</Id>"
      "<Timestamps><member>2025-09-10T12:00:00Z</member></Timestamps><Values/></member>"
      "</MetricDataResults></GetMetricDataResult></GetMetricDataResponse>");
  EXPECT_EQ(r.status().code(), ErrorCode::kInternal);
  EXPECT_EQ(ParseGetMetricDataResponse("<oops").status().code(), ErrorCode::kInternal);
}

}  // namespace
}  // namespace dlq
