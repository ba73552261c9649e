// The replay use case (replay/replay_run.h) on fakes: what a run did comes
// back as data, a dry run describes each message without sending, the
// archive is read once when the selection fits in memory, and refusals name
// the caller's knobs (ReplayTerms), never the CLI's flags unless the CLI
// passes them.
#include "replay/replay_run.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "archive/gzip.h"
#include "sqs/md5.h"
#include "testing/fake_clock.h"
#include "testing/fake_object_store.h"
#include "testing/fake_queue.h"

namespace dlq {
namespace {

// Forwards to the test's store and counts the objects fetched.
class CountingStore final : public ObjectStore {
 public:
  explicit CountingStore(FakeObjectStore& s) : s_(s) {}
  Status Put(const std::string& k, std::string_view d, const PutOptions& o) override { return s_.Put(k, d, o); }
  Result<std::string> Get(const std::string& k, std::optional<std::pair<uint64_t, uint64_t>> r) override {
    ++gets[k];
    return s_.Get(k, r);
  }
  Status GetInto(const std::string& k, std::string& out) override {
    ++gets[k];
    return s_.GetInto(k, out);
  }
  Result<ObjectInfo> Head(const std::string& k) override { return s_.Head(k); }
  Result<ListPage> List(const std::string& p, const std::string& d, const std::string& t) override {
    return s_.List(p, d, t);
  }
  Status Delete(const std::string& k) override { return s_.Delete(k); }
  Result<DestinationCheck> CheckWritable() override { return s_.CheckWritable(); }
  std::string Describe() const override { return s_.Describe(); }

  std::map<std::string, int> gets;

 private:
  FakeObjectStore& s_;
};

// Records what the run reported while it went.
class Recorder final : public ReplayObserver {
 public:
  void Warning(const std::string& text) override { warnings.push_back(text); }
  void SelectionChecked(const DlqCounts& by_dlq, const std::vector<std::string>&) override { checked = by_dlq; }
  void DryRun(const DryRunEntry& e) override { dry_run.push_back(e); }
  std::vector<std::string> warnings;
  DlqCounts checked;
  std::vector<DryRunEntry> dry_run;
};

class ReplayRunTest : public ::testing::Test {
 protected:
  ReplayRunTest()
      : sqs_(clock_), store_("fake://archive", &clock_), counting_(std::make_shared<CountingStore>(store_)) {
    dest_ = *sqs_.CreateQueue("orders", {});
    dlq_ = *sqs_.CreateQueue("orders-dlq", {});
    deps_.sqs = &sqs_;
    deps_.open_store = [this](const Destination&) -> Result<std::shared_ptr<ObjectStore>> {
      return std::shared_ptr<ObjectStore>(counting_);
    };
    deps_.caller_arn = [] { return Result<std::string>(std::string("arn:aws:iam::123456789012:user/ops")); };
    deps_.region = "us-east-1";
    deps_.clock = &clock_;
    rq_.from = "s3://bucket/dlq-archive";
    rq_.to_queue = "orders";
  }

  void Archive(const std::string& key, int first, int n, const std::string& queue = "orders-dlq") {
    std::string lines;
    for (int i = first; i < first + n; ++i) {
      ArchiveRecord r;
      r.queue = queue;
      r.queue_url = "https://sqs.us-east-1.amazonaws.com/123456789012/" + queue;
      r.region = "us-east-1";
      r.account_id = "123456789012";
      r.message_id = "id-" + std::to_string(i);
      r.body = "order " + std::to_string(i) + " failed";
      r.md5_of_body = Md5OfBody(r.body);
      r.archived_at = r.expires_at = clock_.Now();
      AppendRecordJson(r, lines);
    }
    store_.Insert(key, *GzipCompress(lines, 1));
  }

  ReplayRunResult Run() { return RunReplayUseCase(rq_, deps_, recorder_, stop_); }

  FakeClock clock_;
  FakeQueueClient sqs_;
  FakeObjectStore store_;
  std::shared_ptr<CountingStore> counting_;
  std::string dest_, dlq_;
  ReplayRunDeps deps_;
  ReplayRunRequest rq_;
  Recorder recorder_;
  std::atomic<bool> stop_{false};
};

TEST_F(ReplayRunTest, WhatWasSentComesBackAsData) {
  Archive("dlq-archive/orders-dlq/2026/11/29/a.jsonl.gz", 0, 3);
  Archive("dlq-archive/orders-dlq/2026/11/29/b.jsonl.gz", 3, 2);
  ReplayRunResult r = Run();
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_EQ(r.end, ReplayEnd::kDone);
  EXPECT_TRUE(r.reached_sending);
  EXPECT_EQ(r.destination, "orders");  // as named
  EXPECT_EQ(r.stats.sent, 5u);
  EXPECT_EQ(r.buckets.selected, 5u);
  EXPECT_EQ(r.buckets.sent, 5u);
  ASSERT_EQ(r.sent_by_destination.size(), 1u);
  EXPECT_EQ(r.sent_by_destination.at(dest_), 5u);
  std::vector<std::string> ids;
  for (const ReplayedMessage& m : r.sent) ids.push_back(m.message_id);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<std::string>{"id-0", "id-1", "id-2", "id-3", "id-4"}));
  EXPECT_NE(r.audit.find("/_audit/"), std::string::npos) << r.audit;
  EXPECT_EQ(recorder_.checked, (DlqCounts{{"orders-dlq", 5}}));
  EXPECT_TRUE(recorder_.dry_run.empty());
  EXPECT_EQ(sqs_.Depth(dest_), 5u);
}

TEST_F(ReplayRunTest, ADryRunDescribesEachMessageAndSendsNothing) {
  Archive("dlq-archive/orders-dlq/2026/11/29/a.jsonl.gz", 0, 4);
  rq_.dry_run = true;
  ReplayRunResult r = Run();
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_EQ(r.end, ReplayEnd::kDone);
  ASSERT_EQ(r.dry_run_entries.size(), 4u);
  for (const DryRunEntry& e : r.dry_run_entries) {
    EXPECT_EQ(e.kind, DryRunEntry::kWouldSend);
    EXPECT_EQ(e.destination, dest_);
  }
  EXPECT_EQ(recorder_.dry_run.size(), 4u);
  EXPECT_EQ(r.buckets.would_send, 4u);
  EXPECT_TRUE(r.audit.empty());
  EXPECT_EQ(sqs_.Depth(dest_), 0u);
}

TEST_F(ReplayRunTest, ADryRunKeepsAtMostTheEntriesAskedForAndCountsEveryOne) {
  Archive("dlq-archive/orders-dlq/2026/11/29/a.jsonl.gz", 0, 5);
  rq_.dry_run = true;
  rq_.max_dry_run_entries = 2;
  ReplayRunResult r = Run();
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_EQ(r.dry_run_entries.size(), 2u);
  EXPECT_EQ(r.dry_run_entries_omitted, 3u);
  EXPECT_EQ(recorder_.dry_run.size(), 5u);  // the observer sees every one
  ASSERT_EQ(r.would_send_by_destination.size(), 1u);
  EXPECT_EQ(r.would_send_by_destination.at(dest_), 5u);

  rq_.max_dry_run_entries = 0;  // the CLI's text: printed as they come, none kept
  recorder_.dry_run.clear();
  r = Run();
  EXPECT_TRUE(r.dry_run_entries.empty());
  EXPECT_EQ(r.dry_run_entries_omitted, 5u);
  EXPECT_EQ(recorder_.dry_run.size(), 5u);
}

TEST_F(ReplayRunTest, TheArchiveIsReadOnceWhenTheSelectionFits) {
  Archive("dlq-archive/orders-dlq/2026/11/29/a.jsonl.gz", 0, 3);
  Archive("dlq-archive/orders-dlq/2026/11/29/b.jsonl.gz", 3, 3);
  Archive("dlq-archive/orders-dlq/2026/11/29/c.jsonl.gz", 6, 3);
  ReplayRunResult r = Run();
  ASSERT_EQ(r.end, ReplayEnd::kDone) << r.error.ToString();
  EXPECT_EQ(r.stats.sent, 9u);
  int archive_gets = 0;
  for (const auto& [key, n] : counting_->gets) {
    if (key.find(".jsonl.gz") == std::string::npos) continue;
    EXPECT_EQ(n, 1) << key;
    archive_gets += n;
  }
  EXPECT_EQ(archive_gets, 3);
}

TEST_F(ReplayRunTest, RefusalsNameTheCallersKnobs) {
  // Two DLQs into one named queue: refused before sending, in the caller's words.
  Archive("dlq-archive/orders-dlq/2026/11/29/a.jsonl.gz", 0, 2);
  Archive("dlq-archive/payments-dlq/2026/11/29/a.jsonl.gz", 2, 2, "payments-dlq");
  rq_.terms.to_queue = "THE-NAMED-QUEUE";
  rq_.terms.all_queues = "THE-ALL-QUEUES-SWITCH";
  ReplayRunResult r = Run();
  EXPECT_EQ(r.end, ReplayEnd::kBadInput);
  EXPECT_FALSE(r.reached_sending);
  EXPECT_NE(r.error.message().find("THE-NAMED-QUEUE"), std::string::npos) << r.error.message();
  EXPECT_NE(r.error.message().find("THE-ALL-QUEUES-SWITCH"), std::string::npos) << r.error.message();
  EXPECT_EQ(sqs_.Depth(dest_), 0u);

  // The defaults describe the knobs in words: no command-line flag in them.
  rq_.terms = ReplayTerms{};
  r = Run();
  EXPECT_EQ(r.end, ReplayEnd::kBadInput);
  EXPECT_EQ(r.error.message().find("--"), std::string::npos) << r.error.message();
}

TEST_F(ReplayRunTest, ASourceThatCannotBeToldIsRefusedInTheCallersWords) {
  Archive("dlq-archive/orders-dlq/2026/11/29/a.jsonl.gz", 0, 1);  // no DeadLetterQueueSourceArn, no redrive source
  rq_.to_queue.clear();
  rq_.to_source = true;
  ReplayRunResult r = Run();
  EXPECT_EQ(r.end, ReplayEnd::kBadInput);
  EXPECT_NE(r.error.message().find("source is unknown"), std::string::npos) << r.error.message();
  EXPECT_EQ(r.error.message().find("--"), std::string::npos) << r.error.message();
  EXPECT_NE(r.error.message().find("nothing was sent"), std::string::npos) << r.error.message();
}

}  // namespace
}  // namespace dlq
