// The daemon's cause worker against fakes: it reads a run's objects back,
// samples each failure group, keeps the answers in the sidecar, never looks a
// group up twice once it has its samples, turns itself off at an access
// denial in auto mode, drops jobs past its queue, and reports the top groups.
#include "monitor/cause_worker.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "archive/gzip.h"
#include "archive/key_layout.h"
#include "archive/record.h"
#include "common/crypto.h"
#include "common/time_util.h"
#include "server/metrics.h"
#include "testing/fake_clock.h"
#include "testing/fake_lambda_api.h"
#include "testing/fake_logs.h"
#include "testing/fake_object_store.h"
#include "testing/fake_queue.h"

namespace dlq {
namespace {

constexpr char kLogGroup[] = "/aws/lambda/orders-worker";

class CauseWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dlq_url_ = *sqs_.CreateQueue("orders-dlq", {});
    dlq_.name = "orders-dlq";
    dlq_.url = dlq_url_;
    dlq_.arn = sqs_.GetQueueAttributes(dlq_url_, {"QueueArn"})->at("QueueArn");
    dlq_.region = "us-east-1";
    dlq_.account_id = "123456789012";
    const std::string source_url = *sqs_.CreateQueue(
        "orders", {{"VisibilityTimeout", "60"},
                   {"RedrivePolicy", fmt::format(R"({{"deadLetterTargetArn":"{}","maxReceiveCount":3}})", dlq_.arn)}});
    source_arn_ = sqs_.GetQueueAttributes(source_url, {"QueueArn"})->at("QueueArn");
    FunctionConfiguration f;
    f.function_name = "orders-worker";
    lambda_.AddFunction(f);
    lambda_.AddEventSourceMapping(
        {"esm-1", "arn:aws:lambda:us-east-1:123456789012:function:orders-worker", source_arn_, "Enabled", {}, 10});
    logs_.AddGroup(kLogGroup, 30);
    sent_ms_ = ToUnixMillis(clock_.Now()) - 20 * 60'000;
  }

  // Writes one archive object of `n` messages whose bodies have shape
  // `shape` (0: {"sku":..}, 1: {"ping":..}); the first `logged` of them have
  // a failed invocation in the consumer's log group. Returns its key.
  std::string Run(int first, int n, int shape, int logged) {
    ArchiveContext ctx;
    ctx.queue = dlq_.name;
    ctx.queue_url = dlq_url_;
    ctx.region = dlq_.region;
    ctx.account_id = dlq_.account_id;
    std::string lines;
    for (int i = first; i < first + n; ++i) {
      Message m;
      m.message_id = fmt::format("{:08d}-0000-4000-8000-000000000000", i);
      m.body = shape == 0 ? fmt::format(R"({{"sku":"S{}"}})", i) : fmt::format(R"({{"ping":{}}})", i);
      m.md5_of_body = Md5Hex(m.body);
      m.attributes["SentTimestamp"] = std::to_string(sent_ms_ + i);
      m.attributes["DeadLetterQueueSourceArn"] = source_arn_;
      AppendRecordJson(m, ctx, clock_.Now(), lines);
      if (i - first < logged) {
        const std::string rid = fmt::format("req-{}", i), stream = fmt::format("2026/11/29/[$LATEST]s{}", i);
        const int64_t at = sent_ms_ + 60'000 + i;
        logs_.AddEvent(kLogGroup, stream, at, fmt::format("START RequestId: {} Version: $LATEST\n", rid));
        logs_.AddEvent(kLogGroup, stream, at + 1, fmt::format("processing {}\n", m.message_id));
        logs_.AddEvent(kLogGroup, stream, at + 2, fmt::format("[ERROR] ValueError: bad sku 'S{}'\n", i));
        logs_.AddEvent(kLogGroup, stream, at + 3, fmt::format("END RequestId: {}\n", rid));
      }
    }
    const std::string key = KeyTemplate::Default().Render(
        {"dlq-archive", dlq_.name, "", "", clock_.Now(), fmt::format("{:016x}", static_cast<uint64_t>(first + 1))});
    store_.Insert(key, GzipCompress(lines, 1).value());
    return key;
  }

  CauseJob Job(std::vector<std::string> keys, bool auto_mode = true, size_t samples = 3) {
    CauseJob job;
    job.group = "prod";
    job.dlq = dlq_;
    job.archive_prefix = "dlq-archive";
    job.keys = std::move(keys);
    job.samples = samples;
    job.auto_mode = auto_mode;
    job.clients.sqs = &sqs_;
    job.clients.store = &store_;
    job.clients.logs = &logs_;
    job.clients.lambda = &lambda_;
    return job;
  }

  CauseIndex Kept() { return ReadCauseRecords(store_, "dlq-archive", {dlq_.name}).value(); }

  double Counter(const std::string& needle) const {
    const std::string text = registry_.Render();
    size_t pos = text.find(needle);
    if (pos == std::string::npos) return 0;
    return std::stod(text.substr(pos + needle.size() + 1));
  }

  FakeClock clock_;
  FakeQueueClient sqs_{clock_};
  FakeLambdaApi lambda_;
  FakeLogsClient logs_;
  FakeObjectStore store_;
  metrics::Registry registry_;
  DaemonMetrics metrics_{registry_, "test"};
  QueueInfo dlq_;
  std::string dlq_url_, source_arn_;
  int64_t sent_ms_ = 0;
};

TEST_F(CauseWorkerTest, SamplesEachGroupOfARunAndKeepsTheAnswersInTheSidecar) {
  CauseWorker worker(clock_, &metrics_);
  const std::string a = Run(0, 5, /*shape=*/0, /*logged=*/5);
  const std::string b = Run(100, 4, /*shape=*/1, /*logged=*/0);
  ASSERT_TRUE(worker.Submit(Job({a, b})));
  worker.RunPending();

  CauseIndex kept = Kept();
  ASSERT_EQ(kept.size(), 6u);  // 3 of each group, never all 9
  size_t found = 0, not_mentioned = 0;
  for (const CauseRecord* r : kept.All()) {
    if (r->status == CauseStatus::kFound) {
      ++found;
      ASSERT_TRUE(r->cause.has_value());
      EXPECT_EQ(r->cause->type, "ValueError");
      EXPECT_EQ(r->cause->log_group, kLogGroup);
    } else {
      EXPECT_EQ(r->status, CauseStatus::kNotMentioned) << r->reason;
      ++not_mentioned;
    }
  }
  EXPECT_EQ(found, 3u);
  EXPECT_EQ(not_mentioned, 3u);
  EXPECT_EQ(Counter(R"(dlq_archive_cause_lookups_total{queue="orders-dlq",region="us-east-1",status="found"})"), 3);
  EXPECT_GT(Counter(R"(dlq_archive_cause_filter_calls_total{queue="orders-dlq",region="us-east-1"})"), 0);

  std::vector<CauseGroupSummary> top = worker.TopGroups("orders-dlq", 5);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].messages, 5u);
  EXPECT_EQ(top[0].answered, 3u);
  EXPECT_EQ(top[0].found, 3u);
  EXPECT_EQ(top[0].example_id, "00000000-0000-4000-8000-000000000000");
  EXPECT_EQ(top[0].cause_type, "ValueError");
  EXPECT_NE(top[0].cause_message.find("bad sku"), std::string::npos) << top[0].cause_message;
  EXPECT_EQ(top[1].messages, 4u);
  EXPECT_EQ(top[1].absence, "not_mentioned");
  EXPECT_TRUE(top[1].cause_type.empty());
  EXPECT_EQ(worker.TopGroups("orders-dlq", 1).size(), 1u);
  EXPECT_TRUE(worker.TopGroups("other-dlq", 5).empty());
}

TEST_F(CauseWorkerTest, AGroupWithItsSamplesIsNotLookedUpAgainEvenAfterARestart) {
  {
    CauseWorker worker(clock_, &metrics_);
    ASSERT_TRUE(worker.Submit(Job({Run(0, 3, 0, 3)})));
    worker.RunPending();
    const int calls = logs_.filter_calls();
    EXPECT_GT(calls, 0);
    // A later run of the same group: its three samples are kept already.
    ASSERT_TRUE(worker.Submit(Job({Run(10, 4, 0, 4)})));
    worker.RunPending();
    EXPECT_EQ(logs_.filter_calls(), calls);
    EXPECT_EQ(worker.TopGroups("orders-dlq", 1).at(0).messages, 7u);
  }
  // A new worker (the daemon restarted) reads the kept answers from the sidecar.
  const int calls = logs_.filter_calls();
  CauseWorker again(clock_, &metrics_);
  ASSERT_TRUE(again.Submit(Job({Run(20, 2, 0, 2)})));
  again.RunPending();
  EXPECT_EQ(logs_.filter_calls(), calls);
  EXPECT_EQ(Kept().size(), 3u);
}

TEST_F(CauseWorkerTest, AGroupWithFewerAnswersThanItsSamplesGetsTheRest) {
  CauseWorker worker(clock_, &metrics_);
  ASSERT_TRUE(worker.Submit(Job({Run(0, 1, 0, 1)})));
  worker.RunPending();
  EXPECT_EQ(Kept().size(), 1u);
  ASSERT_TRUE(worker.Submit(Job({Run(10, 5, 0, 5)})));
  worker.RunPending();
  EXPECT_EQ(Kept().size(), 3u);  // two more, not five
}

TEST_F(CauseWorkerTest, TheLedgersArrivalEndsTheWindow) {
  CauseWorker worker(clock_, &metrics_);
  CauseJob job = Job({Run(0, 1, 0, 1)});
  const std::string id = "00000000-0000-4000-8000-000000000000";
  job.arrivals_ms[id] = sent_ms_ + 2 * 60'000;
  ASSERT_TRUE(worker.Submit(std::move(job)));
  worker.RunPending();
  const CauseIndex kept = Kept();
  const CauseRecord* r = kept.Find("orders-dlq", id);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->status, CauseStatus::kFound) << r->reason;
  // The window ends at the arrival plus the clock-skew margin, not at the archiving.
  EXPECT_LT(r->window_end_ms, ToUnixMillis(clock_.Now()) - 60'000);
  EXPECT_GE(r->window_end_ms, sent_ms_ + 2 * 60'000);
}

TEST_F(CauseWorkerTest, AutoModeTurnsAGroupOffAtTheFirstAccessDenial) {
  logs_.Deny("FilterLogEvents");
  CauseWorker worker(clock_, &metrics_);
  ASSERT_TRUE(worker.Submit(Job({Run(0, 2, 0, 2)})));
  worker.RunPending();
  EXPECT_TRUE(worker.Disabled("prod"));
  const CauseIndex kept = Kept();
  ASSERT_FALSE(kept.empty());
  EXPECT_EQ(kept.All()[0]->status, CauseStatus::kAccessDenied);
  const int calls = logs_.filter_calls();
  EXPECT_FALSE(worker.Submit(Job({Run(10, 2, 0, 2)})));
  worker.RunPending();
  EXPECT_EQ(logs_.filter_calls(), calls);
}

TEST_F(CauseWorkerTest, OnModeKeepsTryingAfterAnAccessDenial) {
  logs_.Deny("FilterLogEvents");
  CauseWorker worker(clock_, &metrics_);
  ASSERT_TRUE(worker.Submit(Job({Run(0, 1, 0, 1)}, /*auto_mode=*/false)));
  worker.RunPending();
  EXPECT_FALSE(worker.Disabled("prod"));
  EXPECT_TRUE(worker.Submit(Job({Run(10, 1, 0, 1)}, false)));
  worker.RunPending();
  EXPECT_EQ(Counter(R"(dlq_archive_cause_lookups_total{queue="orders-dlq",region="us-east-1",status="access_denied"})"),
            2);
}

TEST_F(CauseWorkerTest, AFullQueueDropsTheJobAndCountsIt) {
  CauseWorkerOptions options;
  options.max_pending = 1;
  CauseWorker worker(clock_, &metrics_, options);
  EXPECT_TRUE(worker.Submit(Job({Run(0, 1, 0, 1)})));
  EXPECT_FALSE(worker.Submit(Job({Run(10, 1, 0, 1)})));
  EXPECT_EQ(worker.pending(), 1u);
  EXPECT_EQ(Counter(R"(dlq_archive_cause_jobs_dropped_total{queue="orders-dlq",region="us-east-1"})"), 1);
}

TEST_F(CauseWorkerTest, AnUnreadableObjectIsSkippedAndTheOthersAreLookedUp) {
  CauseWorker worker(clock_, &metrics_);
  store_.Insert("dlq-archive/orders-dlq/broken.jsonl.gz", "not gzip");
  ASSERT_TRUE(
      worker.Submit(Job({"dlq-archive/orders-dlq/broken.jsonl.gz", "dlq-archive/missing.jsonl.gz", Run(0, 2, 0, 2)})));
  worker.RunPending();
  EXPECT_EQ(Kept().size(), 2u);
}

TEST_F(CauseWorkerTest, TheThreadDoesTheWorkAndStopReturns) {
  CauseWorker worker(clock_, &metrics_);
  worker.Start();
  ASSERT_TRUE(worker.Submit(Job({Run(0, 2, 0, 2)})));
  // The job is done when its answers are kept; give the thread real time.
  for (int i = 0; i < 500 && Kept().size() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(Kept().size(), 2u);
  worker.Stop();
  EXPECT_FALSE(worker.Submit(Job({Run(10, 1, 0, 1)})));
}

}  // namespace
}  // namespace dlq
