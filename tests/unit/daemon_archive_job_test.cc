// One daemon archive run on its own: what it drains, what it reports back,
// and the audit record of a requested run. Fake SQS and store, no scheduler.
#include "monitor/daemon_archive_job.h"

#include <gtest/gtest.h>

#include <stop_token>
#include <string>
#include <vector>

#include "monitor/daemon_metrics.h"
#include "server/metrics.h"
#include "testing/fake_clock.h"
#include "testing/fake_object_store.h"
#include "testing/fake_queue.h"

namespace dlq {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

class DaemonArchiveRunTest : public ::testing::Test {
 protected:
  DaemonArchiveRunTest() : sqs_(clock_), store_("fake://archive", &clock_), metrics_(registry_, "test") {
    auto url = sqs_.CreateQueue("orders-dlq", {{"MessageRetentionPeriod", "345600"}});
    EXPECT_TRUE(url.ok());
    url_ = url.ok() ? *url : std::string();
  }

  // N messages sent 95 hours ago: each expires an hour from now.
  void Inject(int n) {
    for (int i = 0; i < n; ++i) {
      SendEntry e;
      e.id = std::to_string(i);
      e.body = "poison " + std::to_string(i);
      ASSERT_TRUE(sqs_.InjectMessage(url_, e, clock_.Now() - hours(95)).ok());
    }
  }

  DaemonArchiveRunSpec Spec(uint64_t budget, bool keep, std::string requested_by = "") {
    DaemonArchiveRunSpec spec;
    spec.group = "orders";
    spec.destination = "s3://archive-bucket/dlq-archive";
    spec.queue = ResolveQueue(sqs_, url_, "us-east-1").value();
    spec.drain.max_messages = budget;
    spec.drain.keep = keep;
    spec.drain.prefix = "dlq-archive";
    spec.context = MakeArchiveContext(spec.queue, "test-host");
    spec.clients.sqs = &sqs_;
    spec.clients.store = &store_;
    spec.requested_by = std::move(requested_by);
    return spec;
  }

  JobOutcome Run(DaemonArchiveRunSpec spec, const std::stop_token& stop = {}) {
    DaemonArchiveRunReports reports{.archived = [this](uint64_t n) { archived_reports_.push_back(n); },
                                    .finished =
                                        [this](const DaemonArchiveRunReport& r) {
                                          ++finished_calls_;
                                          report_ = r;
                                        }};
    return DaemonArchiveRun(std::move(spec), clock_, metrics_, std::chrono::milliseconds(5000), reports).Run(stop);
  }

  uint64_t ArchivedReported() const {
    uint64_t sum = 0;
    for (uint64_t n : archived_reports_) sum += n;
    return sum;
  }

  FakeClock clock_;
  FakeQueueClient sqs_;
  FakeObjectStore store_;
  metrics::Registry registry_;
  DaemonMetrics metrics_;
  std::string url_;
  std::vector<uint64_t> archived_reports_;
  int finished_calls_ = 0;
  DaemonArchiveRunReport report_;
};

bool HasKeyContaining(const std::vector<std::string>& keys, const std::string& part) {
  for (const std::string& k : keys) {
    if (k.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST_F(DaemonArchiveRunTest, ARunStoppedByItsBudgetReportsMoreAndIsNotComplete) {
  Inject(3);
  JobOutcome out = Run(Spec(/*budget=*/2, /*keep=*/false));
  EXPECT_TRUE(out.status.ok()) << out.status.ToString();
  EXPECT_TRUE(out.more);
  ASSERT_EQ(finished_calls_, 1);
  EXPECT_TRUE(report_.more);
  EXPECT_FALSE(report_.failed);
  EXPECT_FALSE(report_.complete);
  EXPECT_FALSE(report_.nearest_remaining.has_value());
  EXPECT_EQ(report_.result.stats.archived, 2u);
  EXPECT_EQ(ArchivedReported(), 2u);
  EXPECT_EQ(sqs_.Depth(url_), 1u);
  EXPECT_EQ(sqs_.deleted_count(), 2);
}

TEST_F(DaemonArchiveRunTest, ACompleteRunReportsWhatItLeftAndCountsItsMessagesOnce) {
  Inject(3);
  JobOutcome out = Run(Spec(/*budget=*/0, /*keep=*/false));
  EXPECT_TRUE(out.status.ok()) << out.status.ToString();
  EXPECT_FALSE(out.more);
  ASSERT_EQ(finished_calls_, 1);
  EXPECT_TRUE(report_.complete);
  EXPECT_FALSE(report_.nearest_remaining.has_value());  // everything was deleted
  EXPECT_EQ(report_.started, clock_.Now());
  EXPECT_EQ(ArchivedReported(), 3u);
  EXPECT_EQ(sqs_.Depth(url_), 0u);
  EXPECT_NE(registry_.Render().find("dlq_archive_messages_archived_total{queue=\"orders-dlq\",region=\"us-east-1\"} 3"),
            std::string::npos)
      << registry_.Render();
  EXPECT_FALSE(HasKeyContaining(store_.Keys(), "_audit/"));  // nobody asked for it
}

TEST_F(DaemonArchiveRunTest, ACopyNeverAsksForMoreAndReportsTheNearestExpiryItLeft) {
  Inject(3);
  JobOutcome out = Run(Spec(/*budget=*/0, /*keep=*/true));
  EXPECT_TRUE(out.status.ok()) << out.status.ToString();
  EXPECT_FALSE(out.more);
  EXPECT_EQ(sqs_.Depth(url_), 3u);
  EXPECT_EQ(sqs_.deleted_count(), 0);
  ASSERT_EQ(finished_calls_, 1);
  ASSERT_TRUE(report_.complete);  // it saw every queued message
  ASSERT_TRUE(report_.nearest_remaining.has_value());
  EXPECT_GT(*report_.nearest_remaining, clock_.Now());
  EXPECT_LE(*report_.nearest_remaining, clock_.Now() + hours(1) + seconds(1));
  EXPECT_EQ(report_.oldest_sent_remaining, clock_.Now() - hours(95));
  EXPECT_EQ(ArchivedReported(), 3u);
}

TEST_F(DaemonArchiveRunTest, AFailedUploadIsReportedAsAFailureAndDeletesNothing) {
  Inject(3);
  store_.FailNextPut(NotFound("the bucket does not exist").WithAws(AwsErrorInfo{"NoSuchBucket", 404, ""}), 100);
  JobOutcome out = Run(Spec(/*budget=*/0, /*keep=*/false));
  EXPECT_FALSE(out.status.ok());
  EXPECT_FALSE(out.more);
  ASSERT_EQ(finished_calls_, 1);
  EXPECT_TRUE(report_.failed);
  EXPECT_FALSE(report_.complete);
  EXPECT_EQ(sqs_.deleted_count(), 0);
  EXPECT_EQ(ArchivedReported(), 0u);
}

TEST_F(DaemonArchiveRunTest, AStopBeforeTheRunIsNotAFailure) {
  Inject(3);
  std::stop_source stop;
  stop.request_stop();
  JobOutcome out = Run(Spec(/*budget=*/0, /*keep=*/false), stop.get_token());
  ASSERT_EQ(finished_calls_, 1);
  EXPECT_FALSE(report_.failed);
  EXPECT_FALSE(report_.complete);
  EXPECT_FALSE(out.more);
  EXPECT_EQ(sqs_.deleted_count(), 0);
}

TEST_F(DaemonArchiveRunTest, ARequestedRunWritesItsAuditRecordUnderThePrefix) {
  Inject(2);
  Run(Spec(/*budget=*/0, /*keep=*/false, "arn:aws:iam::123456789012:user/ops"));
  ASSERT_EQ(finished_calls_, 1);
  EXPECT_TRUE(HasKeyContaining(store_.Keys(), "dlq-archive/_audit/")) << ::testing::PrintToString(store_.Keys());
}

}  // namespace
}  // namespace dlq
