// A queue that two groups' selectors match is watched by one group only:
// the higher `priority`, else the first in config order, and then it is an
// error in `check` and `run` naming the queue and both groups.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "app/check_command.h"
#include "monitor/daemon.h"
#include "monitor/discovery.h"
#include "testing/fake_notifier.h"
#include "testing/scoped_capturing_logger.h"
#include "unit/daemon_fixture.h"

namespace dlq {
namespace {

bool Has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

DiscoveredQueue Queue(const std::string& name) {
  DiscoveredQueue q;
  q.name = name;
  q.url = "https://sqs.us-east-1.amazonaws.com/123456789012/" + name;
  return q;
}

GroupConfig Group(std::string name, int priority) {
  GroupConfig g;
  g.name = std::move(name);
  g.priority = priority;
  return g;
}

std::vector<std::string> Names(const std::vector<DiscoveredQueue>& qs) {
  std::vector<std::string> out;
  for (const DiscoveredQueue& q : qs) out.push_back(q.name);
  return out;
}

TEST(ResolveGroupOverlapsTest, EqualPrioritiesKeepTheFirstGroupAndAreAnError) {
  GroupConfig a = Group("by-regex", 0), b = Group("discovered", 0);
  std::vector<DiscoveredQueue> fa = {Queue("orders-dlq"), Queue("billing-dlq")};
  std::vector<DiscoveredQueue> fb = {Queue("billing-dlq"), Queue("shipping-dlq")};
  auto overlaps = ResolveGroupOverlaps({&a, &b}, {&fa, &fb});
  EXPECT_EQ(Names(fa), (std::vector<std::string>{"orders-dlq", "billing-dlq"}));
  EXPECT_EQ(Names(fb), (std::vector<std::string>{"shipping-dlq"}));
  ASSERT_EQ(overlaps.size(), 1u);
  EXPECT_TRUE(overlaps[0].error());
  EXPECT_EQ(overlaps[0].kept, "by-regex");
  EXPECT_EQ(overlaps[0].dropped, "discovered");
  EXPECT_TRUE(Has(overlaps[0].Message(), "queue billing-dlq matches groups by-regex and discovered"))
      << overlaps[0].Message();
  EXPECT_TRUE(Has(overlaps[0].Message(), "priority")) << overlaps[0].Message();
}

TEST(ResolveGroupOverlapsTest, HigherPriorityWinsWhereverItIsListed) {
  GroupConfig a = Group("by-regex", 0), b = Group("discovered", 0), c = Group("billing", 5);
  std::vector<DiscoveredQueue> fa = {Queue("orders-dlq"), Queue("billing-dlq")};
  std::vector<DiscoveredQueue> fb = {Queue("billing-dlq")};
  std::vector<DiscoveredQueue> fc = {Queue("billing-dlq")};
  auto overlaps = ResolveGroupOverlaps({&a, &b, &c, &a}, {&fa, &fb, &fc, nullptr});
  EXPECT_EQ(Names(fa), (std::vector<std::string>{"orders-dlq"}));
  EXPECT_TRUE(fb.empty());
  EXPECT_EQ(Names(fc), (std::vector<std::string>{"billing-dlq"}));
  ASSERT_EQ(overlaps.size(), 2u);
  for (const GroupOverlap& o : overlaps) {
    EXPECT_EQ(o.kept, "billing");
    EXPECT_FALSE(o.error()) << o.Message();
  }
}

// Three DLQs, each with a source, matched both by `regex: "-dlq$"` and by
// `discover: true` (the report in issue 31).
class GroupOverlapTest : public DaemonFixture {
 protected:
  void SetUp() override {
    for (const std::string name : {"billing", "shipping"}) {
      EXPECT_TRUE(sqs_.CreateQueue(name + "-dlq", {{"MessageRetentionPeriod", "1209600"}}).ok());
    }
    for (const std::string name : {"orders", "billing", "shipping"}) {
      auto dlq = sqs_.GetQueueUrl(name + "-dlq", "");
      ASSERT_TRUE(dlq.ok());
      auto arn = sqs_.GetQueueAttributes(*dlq, {"QueueArn"});
      ASSERT_TRUE(arn.ok());
      ASSERT_TRUE(sqs_.CreateQueue(name, {{"MessageRetentionPeriod", "345600"},
                                          {"RedrivePolicy", "{\"deadLetterTargetArn\":\"" + arn->at("QueueArn") +
                                                                "\",\"maxReceiveCount\":3}"}})
                      .ok());
    }
    config_.groups.clear();
    GroupConfig by_regex = AlarmingGroup("by-regex", {});
    by_regex.regex = "-dlq$";
    by_regex.destination = "s3://archive-bucket/regex";
    GroupConfig discovered = AlarmingGroup("discovered", {});
    discovered.discover = true;
    discovered.destination = "s3://archive-bucket/discovered";
    config_.groups = {by_regex, discovered};
  }

  std::unique_ptr<Daemon> MakeDaemon() { return NewDaemon(notifier_, DaemonOptions{}); }

  FakeNotifier notifier_;
};

TEST_F(GroupOverlapTest, RunWatchesEachQueueOnceAndReportsTheOverlapNamingBothGroups) {
  ScopedCapturingLogger log;
  auto d = MakeDaemon();
  d->RunOnce();
  auto queues = d->views().Queues();
  ASSERT_EQ(queues.size(), 3u);
  for (const QueueStatus& q : queues) EXPECT_EQ(q.group, "by-regex") << q.queue.name;
  bool logged = false;
  for (const auto& e : log->entries()) {
    if (e.event != "queue_in_two_groups") continue;
    logged = true;
    EXPECT_EQ(e.level, LogLevel::kError);
    EXPECT_TRUE(Has(e.line, "by-regex") && Has(e.line, "discovered")) << e.line;
  }
  EXPECT_TRUE(logged);
  EXPECT_TRUE(Has(d->views().QueuesJson(), "matches groups by-regex and discovered")) << d->views().QueuesJson();
  // Later discoveries do not move the queues between groups.
  clock_.Advance(config_.discovery_interval);
  d->RunOnce();
  ASSERT_EQ(d->views().Queues().size(), 3u);
  for (const QueueStatus& q : d->views().Queues()) EXPECT_EQ(q.group, "by-regex") << q.queue.name;
}

TEST_F(GroupOverlapTest, PriorityDecidesWhichGroupWatchesWithoutAnError) {
  config_.groups[1].priority = 10;
  auto d = MakeDaemon();
  d->RunOnce();
  auto queues = d->views().Queues();
  ASSERT_EQ(queues.size(), 3u);
  for (const QueueStatus& q : queues) EXPECT_EQ(q.group, "discovered") << q.queue.name;
  EXPECT_FALSE(Has(d->views().QueuesJson(), "matches groups")) << d->views().QueuesJson();
}

TEST_F(GroupOverlapTest, ReloadWithAPriorityMovesTheQueuesAndKeepsTheirState) {
  auto d = MakeDaemon();
  d->RunOnce();
  ASSERT_EQ(d->views().Queues().size(), 3u);
  config_.groups[1].priority = 10;
  d->Reload(config_);
  clock_.Advance(config_.discovery_interval);
  d->RunOnce();
  auto queues = d->views().Queues();
  ASSERT_EQ(queues.size(), 3u);
  for (const QueueStatus& q : queues) EXPECT_EQ(q.group, "discovered") << q.queue.name;
}

TEST_F(GroupOverlapTest, CheckCountsEachQueueOnceAndFailsNamingBothGroups) {
  std::string out;
  EXPECT_EQ(CheckConfig(config_, FakeGroupClients(sqs_, store_), "text", out), 1) << out;
  EXPECT_TRUE(Has(out, "3 queues,")) << out;
  EXPECT_TRUE(Has(out, "ERROR: queue orders-dlq matches groups by-regex and discovered")) << out;
  EXPECT_FALSE(Has(out, "no queue matches the group's selectors")) << out;

  config_.groups[0].priority = 1;
  out.clear();
  CheckConfig(config_, FakeGroupClients(sqs_, store_), "text", out);
  EXPECT_TRUE(Has(out, "3 queues,")) << out;
  EXPECT_TRUE(Has(out, "queue orders-dlq matches groups by-regex and discovered; group by-regex watches it")) << out;
  EXPECT_FALSE(Has(out, "ERROR: queue")) << out;
}

}  // namespace
}  // namespace dlq
