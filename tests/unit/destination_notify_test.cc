// A group's failing destination reaches people: one webhook when its check
// first fails and one when it passes again, none for the repeats between.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "monitor/daemon.h"
#include "monitor/notifier.h"
#include "testing/fake_notifier.h"
#include "unit/daemon_fixture.h"

namespace dlq {
namespace {

class DestinationNotifyTest : public DaemonFixture {
 protected:
  std::unique_ptr<Daemon> MakeDaemon() { return NewDaemon(notifier_, DaemonOptions{}); }

  // The destination notifications so far (queue alarms have a queue name).
  std::vector<AlarmNotification> DestinationNotices() const {
    std::vector<AlarmNotification> out;
    for (const AlarmNotification& n : notifier_.notifications()) {
      if (!n.group.empty()) out.push_back(n);
    }
    return out;
  }

  FakeNotifier notifier_;
};

TEST_F(DestinationNotifyTest, FirstFailureAndRecoveryEachSendOneWebhook) {
  store_.FailNextCheck(NotFound("bucket s3://archive-bucket does not exist (NoSuchBucket)")
                           .WithAws(AwsErrorInfo{"NoSuchBucket", 404, ""}));
  auto d = MakeDaemon();
  auto notices = DestinationNotices();
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].group, "orders");
  EXPECT_EQ(notices[0].destination, "s3://archive-bucket/dlq-archive");
  EXPECT_EQ(notices[0].old_state, "INSUFFICIENT_DATA");
  EXPECT_EQ(notices[0].new_state, "ALARM");
  EXPECT_EQ(notices[0].alarm_name, "orders-destination");
  EXPECT_NE(notices[0].reason.find("NoSuchBucket"), std::string::npos) << notices[0].reason;
  const std::string json = notices[0].ToJson();
  EXPECT_NE(json.find("\"Namespace\":\"DLQArchive\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"Destination\":\"s3://archive-bucket/dlq-archive\""), std::string::npos) << json;
  EXPECT_NE(json.find("{\"name\":\"Group\",\"value\":\"orders\"}"), std::string::npos) << json;

  // Still failing at the next discovery: no second webhook.
  store_.FailNextCheck(NotFound("bucket s3://archive-bucket does not exist (NoSuchBucket)"));
  d->RunOnce();
  clock_.Advance(config_.discovery_interval);
  d->RunOnce();
  EXPECT_EQ(store_.check_calls(), 2);
  EXPECT_EQ(DestinationNotices().size(), 1u);
  // A reload re-checks; a destination still failing is not notified again.
  store_.FailNextCheck(NotFound("bucket s3://archive-bucket does not exist (NoSuchBucket)"));
  d->Reload(config_);
  EXPECT_EQ(DestinationNotices().size(), 1u);

  // It passes at the next discovery: one recovery webhook.
  clock_.Advance(config_.discovery_interval);
  d->RunOnce();
  EXPECT_TRUE(d->views().Destination("orders")->ok);
  notices = DestinationNotices();
  ASSERT_EQ(notices.size(), 2u);
  EXPECT_EQ(notices[1].old_state, "ALARM");
  EXPECT_EQ(notices[1].new_state, "OK");
  clock_.Advance(config_.discovery_interval);
  d->RunOnce();
  EXPECT_EQ(DestinationNotices().size(), 2u);
}

TEST_F(DestinationNotifyTest, AWorkingDestinationSendsNothing) {
  auto d = MakeDaemon();
  d->RunOnce();
  d->Reload(config_);
  EXPECT_TRUE(DestinationNotices().empty());
}

}  // namespace
}  // namespace dlq
