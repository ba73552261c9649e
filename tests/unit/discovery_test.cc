#include "monitor/discovery.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "common/clock.h"
#include "common/log.h"
#include "common/time_util.h"
#include "testing/fake_clock.h"
#include "testing/fake_queue.h"

namespace dlq {
namespace {

using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

class DiscoveryTest : public ::testing::Test {
 protected:
  DiscoveryTest() : clock_(FromUnixMillis(1757500000000)), sqs_(clock_) {}

  std::string Create(const std::string& name, std::map<std::string, std::string> attrs = {}) {
    auto url = sqs_.CreateQueue(name, attrs);
    EXPECT_TRUE(url.ok()) << url.status().message();
    return url.ok() ? *url : "";
  }
  // `source` sends its dead letters to `dlq`.
  void Redrive(const std::string& source_url, const std::string& dlq_name, const std::string& max_receive) {
    std::string policy = fmt::format(R"({{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:{}",)"
                                     R"("maxReceiveCount":{}}})",
                                     dlq_name, max_receive);
    ASSERT_TRUE(sqs_.SetQueueAttributes(source_url, {{"RedrivePolicy", policy}}).ok());
  }
  static std::vector<std::string> Names(const std::vector<DiscoveredQueue>& qs) {
    std::vector<std::string> out;
    for (const auto& q : qs) out.push_back(q.name);
    return out;
  }

  FakeClock clock_;
  FakeQueueClient sqs_;
  GroupConfig group_;
};

TEST_F(DiscoveryTest, DiscoversDeadLetterTargetsWithTheirSources) {
  std::string dlq = Create("orders-dlq", {{"MessageRetentionPeriod", "1209600"}});
  std::string a = Create("orders", {{"MessageRetentionPeriod", "345600"}});
  std::string b = Create("orders-retry", {{"MessageRetentionPeriod", "604800"}});
  Create("unrelated");
  Redrive(a, "orders-dlq", "\"2\"");  // maxReceiveCount as a string
  Redrive(b, "orders-dlq", "5");      // and as a number
  group_.name = "g";
  group_.discover = true;

  auto r = DiscoverQueues(sqs_, group_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 1u);
  const DiscoveredQueue& q = (*r)[0];
  EXPECT_EQ(q.name, "orders-dlq");
  EXPECT_EQ(q.url, dlq);
  EXPECT_EQ(q.arn, "arn:aws:sqs:us-east-1:123456789012:orders-dlq");
  EXPECT_EQ(q.region, "us-east-1");
  EXPECT_EQ(q.account_id, "123456789012");
  EXPECT_FALSE(q.fifo);
  EXPECT_EQ(q.retention, seconds(1209600));
  ASSERT_EQ(q.redrive_sources.size(), 2u);
  std::map<std::string, RedriveSource> by_name;
  for (const auto& s : q.redrive_sources) by_name[s.name] = s;
  EXPECT_EQ(by_name["orders"].max_receive_count, 2);
  EXPECT_EQ(by_name["orders"].retention, seconds(345600));
  EXPECT_EQ(by_name["orders-retry"].max_receive_count, 5);
  EXPECT_EQ(by_name["orders-retry"].url, b);
  EXPECT_EQ(q.MaxSourceRetention(), seconds(604800));
  const QueueInfo& info = q;  // what a QueueDrainer is given
  EXPECT_EQ(info.url, dlq);
  EXPECT_EQ(info.retention, seconds(1209600));
}

TEST_F(DiscoveryTest, FindsSourcesByScanningWhenListDeadLetterSourceQueuesIsUnsupported) {
  // fauxqs and some SQS-compatible servers answer InvalidAction.
  Create("pay-dlq", {{"MessageRetentionPeriod", "3600"}});
  std::string src = Create("pay", {{"MessageRetentionPeriod", "7200"}});
  Create("other");
  Redrive(src, "pay-dlq", "2");
  group_.name = "g";
  group_.queues = {"pay-dlq"};
  sqs_.FailNext(FakeQueueClient::Operation::kListDeadLetterSourceQueues,
                Status(ErrorCode::kInvalidArgument, "Unknown action: ListDeadLetterSourceQueues")
                    .WithAws({"InvalidAction", 400, "r"}));
  auto r = DiscoverQueues(sqs_, group_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1u);
  ASSERT_EQ((*r)[0].redrive_sources.size(), 1u);
  EXPECT_EQ((*r)[0].redrive_sources[0].url, src);
  EXPECT_EQ((*r)[0].redrive_sources[0].retention, seconds(7200));
  EXPECT_EQ((*r)[0].redrive_sources[0].max_receive_count, 2);
}

TEST_F(DiscoveryTest, CombinesNamesPrefixesAndRegexWithoutDuplicates) {
  std::string named = Create("orders-dlq");
  Create("prod-a-dlq");
  Create("prod-b");
  Create("billing-dlq");
  Create("dev-x");
  group_.name = "g";
  group_.queues = {"orders-dlq", named};  // same queue by name and URL
  group_.prefixes = {"prod-"};
  group_.regex = "-dlq$";

  auto r = DiscoverQueues(sqs_, group_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::vector<std::string> names = Names(*r);
  EXPECT_EQ(names.front(), "orders-dlq");  // explicit queues first
  EXPECT_THAT(names, UnorderedElementsAre("orders-dlq", "prod-a-dlq", "prod-b", "billing-dlq"));
}

TEST_F(DiscoveryTest, RegexUsesRe2AndAnUnsupportedConstructIsNamed) {
  Create("orders-prod-dlq");
  Create("orders-test-dlq");
  group_.name = "g";
  group_.regex = "^orders-(?P<env>prod|stage)-dlq$";
  auto r = DiscoverQueues(sqs_, group_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_THAT(Names(*r), ElementsAre("orders-prod-dlq"));
  group_.regex = "^orders-(?!test)";
  r = DiscoverQueues(sqs_, group_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              HasSubstr("group g: regex '^orders-(?!test)': lookahead assertions ((?!) are not supported"));
}

TEST_F(DiscoveryTest, ExcludeRemovesQueuesByNameOrUrl) {
  Create("prod-a-dlq");
  std::string legacy = Create("prod-legacy-dlq");
  Create("prod-old-dlq");
  group_.name = "g";
  group_.prefixes = {"prod-"};
  group_.exclude = {"prod-old-dlq", legacy};
  auto r = DiscoverQueues(sqs_, group_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_THAT(Names(*r), ElementsAre("prod-a-dlq"));
}

TEST_F(DiscoveryTest, DetectsFifoQueues) {
  std::string dlq = Create("jobs-dlq.fifo", {{"FifoQueue", "true"}});
  std::string src = Create("jobs.fifo", {{"FifoQueue", "true"}});
  Redrive(src, "jobs-dlq.fifo", "3");
  group_.name = "g";
  group_.discover = true;
  auto r = DiscoverQueues(sqs_, group_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_TRUE((*r)[0].fifo);
  EXPECT_EQ((*r)[0].url, dlq);
  ASSERT_EQ((*r)[0].redrive_sources.size(), 1u);
  EXPECT_EQ((*r)[0].redrive_sources[0].max_receive_count, 3);
}

TEST_F(DiscoveryTest, MissingNamedQueueIsAnErrorNamingIt) {
  Create("present-dlq");
  group_.name = "prod-us";
  group_.queues = {"present-dlq", "ghost-dlq"};
  auto r = DiscoverQueues(sqs_, group_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("group prod-us: queue 'ghost-dlq' does not exist"));

  group_.queues = {sqs_.UrlFor("ghost-dlq")};
  r = DiscoverQueues(sqs_, group_);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("ghost-dlq"));
}

TEST_F(DiscoveryTest, QueueVanishingDuringDiscoveryIsSkippedWithAWarning) {
  Create("prod-a");
  Create("prod-b");
  auto logger = std::make_unique<CapturingLogger>();
  CapturingLogger* log = logger.get();
  SetLogger(std::move(logger));
  // ListQueues succeeds; the first GetQueueAttributes finds the queue gone.
  sqs_.FailNext(FakeQueueClient::Operation::kGetQueueAttributes,
                NotFound("GetQueueAttributes: The specified queue does not exist."));
  group_.name = "g";
  group_.prefixes = {"prod-"};
  auto r = DiscoverQueues(sqs_, group_);
  bool warned = log->Contains("discovery.queue_vanished");
  SetLogger(std::make_unique<StreamLogger>(stderr, LogFormat::kText, LogLevel::kInfo));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->size(), 1u);
  EXPECT_TRUE(warned);
}

TEST_F(DiscoveryTest, OtherSqsErrorsFailWithContext) {
  Create("prod-a");
  sqs_.FailNext(FakeQueueClient::Operation::kListQueues, PermissionDenied("AccessDenied"));
  group_.name = "g";
  group_.prefixes = {"prod-"};
  auto r = DiscoverQueues(sqs_, group_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kPermissionDenied);
  EXPECT_THAT(r.status().message(), HasSubstr("group g: list queues with prefix 'prod-'"));
}

TEST_F(DiscoveryTest, DanglingRedriveTargetIsSkipped) {
  std::string src = Create("orphan");
  Create("gone-dlq");
  Redrive(src, "gone-dlq", "2");
  ASSERT_TRUE(sqs_.DeleteQueue(sqs_.UrlFor("gone-dlq")).ok());
  group_.name = "g";
  group_.discover = true;
  auto r = DiscoverQueues(sqs_, group_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->empty());
}

TEST(RedrivePolicyTest, ParsesStringAndNumberCountsAndRejectsGarbage) {
  auto a = ParseRedrivePolicy(R"({"deadLetterTargetArn":"arn:aws:sqs:eu-west-1:1:d","maxReceiveCount":"7"})");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->dead_letter_target_arn, "arn:aws:sqs:eu-west-1:1:d");
  EXPECT_EQ(a->max_receive_count, 7);
  auto b = ParseRedrivePolicy(R"({"deadLetterTargetArn":"arn:aws:sqs:eu-west-1:1:d","maxReceiveCount":3})");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->max_receive_count, 3);
  EXPECT_FALSE(ParseRedrivePolicy("not json").ok());
  EXPECT_FALSE(ParseRedrivePolicy(R"({"maxReceiveCount":3})").ok());
  std::string region, account, name;
  EXPECT_TRUE(ParseSqsArn("arn:aws:sqs:eu-west-1:123:q.fifo", &region, &account, &name));
  EXPECT_EQ(region, "eu-west-1");
  EXPECT_EQ(account, "123");
  EXPECT_EQ(name, "q.fifo");
  EXPECT_FALSE(ParseSqsArn("arn:aws:sns:eu-west-1:123:t", nullptr, nullptr, nullptr));
}

}  // namespace
}  // namespace dlq
