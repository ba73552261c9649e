// `dlq-archive replay` as a command, on fakes: usage errors exit 2 before any
// call, destinations are resolved before anything is sent, the audit record
// lands beside the archive, and unreadable objects give exit 3.
#include "app/replay_command.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "archive/gzip.h"
#include "sqs/md5.h"
#include "testing/fake_clock.h"
#include "testing/fake_object_store.h"
#include "testing/fake_queue.h"

namespace dlq {
namespace {

using Op = FakeQueueClient::Operation;

std::string ReadAll(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  return out;
}

class ReplayCommandTest : public ::testing::Test {
 protected:
  ReplayCommandTest() : sqs_(clock_), store_("fake://archive", &clock_) {
    dest_ = *sqs_.CreateQueue("orders", {});
    dlq_ = *sqs_.CreateQueue("orders-dlq", {});
    out_ = std::tmpfile();
    err_ = std::tmpfile();
    deps_.sqs = &sqs_;
    deps_.open_store = [this](const Destination&) -> Result<std::unique_ptr<ObjectStore>> {
      return std::unique_ptr<ObjectStore>(new Borrowed(store_));
    };
    deps_.caller_arn = [] { return Result<std::string>(std::string("arn:aws:iam::123456789012:user/ops")); };
    deps_.region = "us-east-1";
    deps_.clock = &clock_;
    deps_.out = out_;
    deps_.err = err_;
    options_.from = "s3://bucket/dlq-archive";
    options_.all = true;  // the guard's own tests clear it
    options_.progress = "never";
  }
  ~ReplayCommandTest() override {
    std::fclose(out_);
    std::fclose(err_);
  }

  // An ObjectStore that forwards to the test's fake (the command owns what open_store returns).
  class Borrowed final : public ObjectStore {
   public:
    explicit Borrowed(FakeObjectStore& s) : s_(s) {}
    Status Put(const std::string& k, std::string_view d, const PutOptions& o) override { return s_.Put(k, d, o); }
    Result<std::string> Get(const std::string& k, std::optional<std::pair<uint64_t, uint64_t>> r) override {
      return s_.Get(k, r);
    }
    Result<ObjectInfo> Head(const std::string& k) override { return s_.Head(k); }
    Result<ListPage> List(const std::string& p, const std::string& d, const std::string& t) override {
      return s_.List(p, d, t);
    }
    Status Delete(const std::string& k) override { return s_.Delete(k); }
    Result<DestinationCheck> CheckWritable() override { return s_.CheckWritable(); }
    std::string Describe() const override { return s_.Describe(); }

   private:
    FakeObjectStore& s_;
  };

  void Archive(const std::string& key, int first, int n, const std::string& source_arn = "",
               const std::string& queue = "orders-dlq", const std::string& account = "123456789012") {
    std::string lines;
    for (int i = first; i < first + n; ++i) {
      ArchiveRecord r;
      r.queue = queue;
      r.queue_url = queue == "orders-dlq" ? dlq_ : "https://sqs.us-east-1.amazonaws.com/" + account + "/" + queue;
      r.region = "us-east-1";
      r.account_id = account;
      r.message_id = "id-" + std::to_string(i);
      r.body = "order " + std::to_string(i) + " failed";
      r.md5_of_body = Md5OfBody(r.body);
      r.message_attributes["kind"] = {"String", i % 2 ? "odd" : "even", ""};
      r.md5_of_message_attributes = Md5OfMessageAttributes(r.message_attributes);
      r.source_queue_arn = source_arn;
      r.archived_at = r.expires_at = clock_.Now();
      AppendRecordJson(r, lines);
    }
    store_.Insert(key, *GzipCompress(lines, 1));
  }

  int Run() { return RunReplay(options_, deps_, stop_); }
  std::string Out() { return ReadAll(out_); }
  std::string Err() { return ReadAll(err_); }
  std::vector<std::string> AuditKeys() {
    std::vector<std::string> keys;
    for (const std::string& k : store_.Keys()) {
      if (k.find("/_audit/") != std::string::npos) keys.push_back(k);
    }
    return keys;
  }

  FakeClock clock_;
  FakeQueueClient sqs_;
  FakeObjectStore store_;
  std::string dest_, dlq_;
  std::FILE* out_;
  std::FILE* err_;
  ReplayDeps deps_;
  ReplayCommandOptions options_;
  std::atomic<bool> stop_{false};
};

TEST_F(ReplayCommandTest, ReplaysTheSelectionAndWritesTheAuditRecordBesideTheArchive) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 6);
  options_.to_queue = "orders";
  options_.filter.attrs = {"kind=odd"};
  ASSERT_EQ(Run(), 0) << Err();
  EXPECT_EQ(sqs_.Messages(dest_).size(), 3u);
  auto audits = AuditKeys();
  ASSERT_EQ(audits.size(), 1u);
  EXPECT_EQ(audits[0].rfind("dlq-archive/_audit/", 0), 0u);
  std::string audit = store_.Object(audits[0])->data;
  EXPECT_NE(audit.find(R"("sent_ids":["id-1","id-3","id-5"])"), std::string::npos) << audit;
  EXPECT_NE(audit.find(R"([\"kind\",\"odd\"])"), std::string::npos) << audit;  // the filter, canonical
  EXPECT_NE(audit.find(R"("caller_arn":"arn:aws:iam::123456789012:user/ops")"), std::string::npos);
  std::string out = Out();
  EXPECT_NE(out.find("sent 3, failed 0"), std::string::npos) << out;
  EXPECT_NE(out.find("audit: fake://archive/dlq-archive/_audit/"), std::string::npos) << out;
  // The audit record is not an archive object: a second run reads it as nothing.
  ASSERT_EQ(Run(), 0) << Err();
  EXPECT_EQ(sqs_.Messages(dest_).size(), 6u);
}

TEST_F(ReplayCommandTest, UsageErrorsExit2BeforeAnyCall) {
  struct Case {
    std::function<void(ReplayCommandOptions&)> edit;
    std::string says;
  };
  std::vector<Case> cases = {
      {[](auto& o) { o.to_queue = ""; }, "--to-source and --to-queue"},
      {[](auto& o) { o.to_source = true; }, "--to-source and --to-queue"},
      {[](auto& o) { o.from_queue = "orders-dlq"; }, "--from URL and --from-queue"},
      {[](auto& o) { o.rate = "fast"; }, "--rate 'fast'"},
      {[](auto& o) { o.rate = "0/s"; }, "--rate '0/s'"},
      {[](auto& o) { o.filter.since = "yesterday-ish"; }, "--since"},
      {[](auto& o) { o.filter.body_regex = "(unclosed"; }, "--body-regex"},
      {[](auto& o) { o.from = "ftp://x"; }, "ftp://x"},
      {[](auto& o) {
         o.from.clear();
         o.from_queue = "orders-dlq";
         o.checkpoint = "/tmp/x";
       },
       "--checkpoint is for --from only"},
      {[](auto& o) {
         o.from.clear();
         o.from_queue = "orders-dlq";
       },
       "--audit-to"},
  };
  for (const Case& c : cases) {
    options_ = {};
    options_.all = true;
    options_.from = "s3://bucket/dlq-archive";
    options_.to_queue = "orders";
    c.edit(options_);
    std::rewind(err_);
    EXPECT_EQ(Run(), 2) << c.says;
    EXPECT_NE(Err().find(c.says), std::string::npos) << Err();
  }
  EXPECT_EQ(sqs_.calls(Op::kSendMessageBatch), 0);
  EXPECT_EQ(sqs_.calls(Op::kGetQueueUrl), 0);
}

TEST_F(ReplayCommandTest, AmbiguousSourceSendsNothingAndSaysWhy) {
  const std::string policy =
      R"({"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:orders-dlq","maxReceiveCount":"3"})";
  *sqs_.CreateQueue("orders-one", {{"RedrivePolicy", policy}});
  *sqs_.CreateQueue("orders-two", {{"RedrivePolicy", policy}});
  *sqs_.CreateQueue("orders-a", {});
  // The first object's records name their source; the second's do not.
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 3, "arn:aws:sqs:us-east-1:123456789012:orders-a");
  Archive("dlq-archive/orders-dlq/20231114/b.json.gz", 3, 3);
  options_.to_source = true;
  EXPECT_EQ(Run(), 2);
  std::string err = Err();
  EXPECT_NE(err.find("ambiguous"), std::string::npos) << err;
  EXPECT_NE(err.find("nothing was sent"), std::string::npos) << err;
  EXPECT_EQ(sqs_.calls(Op::kSendMessageBatch), 0);
  EXPECT_TRUE(AuditKeys().empty());
}

TEST_F(ReplayCommandTest, MissingDestinationExits2BeforeReadingTheArchive) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 3);
  options_.to_queue = "gone";
  EXPECT_EQ(Run(), 2);
  EXPECT_NE(Err().find("does not exist"), std::string::npos) << Err();
  EXPECT_EQ(store_.get_calls(), 0);
  EXPECT_EQ(sqs_.calls(Op::kSendMessageBatch), 0);
}

TEST_F(ReplayCommandTest, DryRunPrintsAndWritesNothing) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 2);
  options_.to_queue = "orders";
  options_.dry_run = true;
  ASSERT_EQ(Run(), 0) << Err();
  std::string out = Out();
  EXPECT_NE(out.find("would send id-0 to " + dest_), std::string::npos) << out;
  EXPECT_NE(out.find("would send id-1"), std::string::npos) << out;
  EXPECT_EQ(sqs_.calls(Op::kSendMessageBatch), 0);
  EXPECT_TRUE(AuditKeys().empty());
}

TEST_F(ReplayCommandTest, UnreadableObjectIsReportedByKeyAndExits3) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 2);
  store_.Insert("dlq-archive/orders-dlq/20231114/broken.json.gz", "not gzip at all");
  options_.to_queue = "orders";
  EXPECT_EQ(Run(), 3);
  EXPECT_EQ(sqs_.Messages(dest_).size(), 2u);
  EXPECT_NE(Err().find("dlq-archive/orders-dlq/20231114/broken.json.gz"), std::string::npos) << Err();
}

TEST_F(ReplayCommandTest, CheckpointOfAnotherFilterIsRefused) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 4);
  options_.to_queue = "orders";
  options_.checkpoint = ::testing::TempDir() + "replay_cmd_" + std::to_string(::getpid()) + ".ckpt";
  std::remove(options_.checkpoint.c_str());
  options_.filter.attrs = {"kind=odd"};
  ASSERT_EQ(Run(), 0) << Err();
  options_.filter.attrs = {"kind=even"};
  EXPECT_EQ(Run(), 2);
  EXPECT_NE(Err().find("another replay"), std::string::npos) << Err();
  EXPECT_EQ(sqs_.Messages(dest_).size(), 2u);
  std::remove(options_.checkpoint.c_str());
}

TEST_F(ReplayCommandTest, FailedSendsExit1AndAreListed) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 3);
  options_.to_queue = "orders";
  sqs_.FailSendEntries(100, "KmsThrottled");
  EXPECT_EQ(Run(), 1);
  std::string err = Err();
  EXPECT_NE(err.find("failed: id-0 -> " + dest_ + ": KmsThrottled"), std::string::npos) << err;
}

TEST_F(ReplayCommandTest, RefusesArchiveReplayWithNoFilterUnlessAll) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 4);
  options_.to_queue = "orders";
  options_.all = false;
  EXPECT_EQ(Run(), 2);
  EXPECT_NE(Err().find("--all"), std::string::npos) << Err();
  EXPECT_EQ(sqs_.calls(Op::kGetQueueUrl), 0);
  EXPECT_EQ(sqs_.calls(Op::kSendMessageBatch), 0);
  EXPECT_EQ(store_.get_calls(), 0);
  options_.all = true;
  ASSERT_EQ(Run(), 0) << Err();
  EXPECT_EQ(sqs_.Messages(dest_).size(), 4u);
}

TEST_F(ReplayCommandTest, FilteredArchiveReplayNeedsNoAll) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 4);
  options_.to_queue = "orders";
  options_.all = false;
  options_.filter.attrs = {"kind=even"};
  ASSERT_EQ(Run(), 0) << Err();
  EXPECT_EQ(sqs_.Messages(dest_).size(), 2u);
}

TEST_F(ReplayCommandTest, DryRunWithNoFilterShowsTheSelectionAndSaysTheRealRunNeedsAll) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 2);
  options_.to_queue = "orders";
  options_.all = false;
  options_.dry_run = true;
  ASSERT_EQ(Run(), 0) << Err();
  std::string out = Out();
  EXPECT_NE(out.find("the real run needs --all"), std::string::npos) << out;
  EXPECT_NE(out.find("would send 2 of 2"), std::string::npos) << out;
  EXPECT_EQ(sqs_.calls(Op::kSendMessageBatch), 0);
}

TEST_F(ReplayCommandTest, SelectionOverTwoDlqsIntoOneQueueIsRefusedNamingThemUnlessAllQueues) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 3);
  Archive("dlq-archive/payments-dlq/20231114/a.json.gz", 10, 2, "", "payments-dlq");
  options_.to_queue = "orders";
  EXPECT_EQ(Run(), 2);
  std::string err = Err();
  EXPECT_NE(err.find("2 dead-letter queues: orders-dlq (3), payments-dlq (2)"), std::string::npos) << err;
  EXPECT_NE(err.find("--all-queues"), std::string::npos) << err;
  EXPECT_EQ(sqs_.calls(Op::kSendMessageBatch), 0);
  EXPECT_TRUE(AuditKeys().empty());

  options_.all_queues = true;
  ASSERT_EQ(Run(), 0) << Err();
  EXPECT_EQ(sqs_.Messages(dest_).size(), 5u);
  std::string out = Out();
  EXPECT_NE(out.find("selection spans 2 dead-letter queues: orders-dlq (3), payments-dlq (2); all go to orders\n"),
            std::string::npos)
      << out;
}

TEST_F(ReplayCommandTest, DryRunOverTwoDlqsNamesThemAndTheFlagTheRealRunNeeds) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 1);
  Archive("dlq-archive/payments-dlq/20231114/a.json.gz", 10, 2, "", "payments-dlq");
  options_.to_queue = "orders";
  options_.dry_run = true;
  ASSERT_EQ(Run(), 0) << Err();
  std::string out = Out();
  EXPECT_NE(out.find("selection spans 2 dead-letter queues: orders-dlq (1), payments-dlq (2); all go to orders "
                     "(the real run needs --all-queues)"),
            std::string::npos)
      << out;
  EXPECT_EQ(sqs_.calls(Op::kSendMessageBatch), 0);
}

TEST_F(ReplayCommandTest, SelectionNarrowedToOneDlqNeedsNoAllQueues) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 3);
  Archive("dlq-archive/payments-dlq/20231114/a.json.gz", 10, 2, "", "payments-dlq");
  options_.to_queue = "orders";
  options_.filter.queues = {"payments-dlq"};
  ASSERT_EQ(Run(), 0) << Err();
  EXPECT_EQ(sqs_.Messages(dest_).size(), 2u);
  EXPECT_EQ(Out().find("selection spans"), std::string::npos);
}

TEST_F(ReplayCommandTest, SourceInAnotherAccountIsRefusedUnlessAllowedAndThenPrinted) {
  *sqs_.CreateQueue("orders-a", {});
  // Archived from a DLQ in account 210987654321; the source is in the fake's account.
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 2, "arn:aws:sqs:us-east-1:123456789012:orders-a",
          "orders-dlq", "210987654321");
  options_.to_source = true;
  EXPECT_EQ(Run(), 2);
  std::string err = Err();
  EXPECT_NE(err.find("account 210987654321"), std::string::npos) << err;
  EXPECT_NE(err.find("in another account"), std::string::npos) << err;
  EXPECT_NE(err.find("--allow-cross-account"), std::string::npos) << err;
  EXPECT_EQ(sqs_.calls(Op::kSendMessageBatch), 0);

  options_.allow_cross_account = true;
  ASSERT_EQ(Run(), 0) << Err();
  EXPECT_EQ(sqs_.Messages(sqs_.UrlFor("orders-a")).size(), 2u);
  std::string out = Out();
  EXPECT_NE(out.find("cross-account: orders-dlq (account 210987654321, region us-east-1) -> "
                     "arn:aws:sqs:us-east-1:123456789012:orders-a"),
            std::string::npos)
      << out;
}

TEST_F(ReplayCommandTest, SourceInAnotherRegionIsRefusedNamingTheRegion) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 1, "arn:aws:sqs:eu-west-1:123456789012:orders-a");
  options_.to_source = true;
  EXPECT_EQ(Run(), 2);
  std::string err = Err();
  EXPECT_NE(err.find("in another region"), std::string::npos) << err;
  EXPECT_NE(err.find("--allow-cross-account"), std::string::npos) << err;
  EXPECT_EQ(sqs_.calls(Op::kSendMessageBatch), 0);
}

TEST_F(ReplayCommandTest, SourceInTheSameAccountAndRegionNeedsNoFlag) {
  *sqs_.CreateQueue("orders-a", {});
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 2, "arn:aws:sqs:us-east-1:123456789012:orders-a");
  options_.to_source = true;
  ASSERT_EQ(Run(), 0) << Err();
  EXPECT_EQ(sqs_.Messages(sqs_.UrlFor("orders-a")).size(), 2u);
  EXPECT_EQ(Out().find("cross-account"), std::string::npos);
}

TEST_F(ReplayCommandTest, LiveFormRefusesASourceInAnotherAccountAndLeavesTheMessageInTheDlq) {
  *sqs_.CreateQueue("orders-a", {});
  SendEntry e;
  e.id = "e0";
  e.body = "from another account";
  ASSERT_TRUE(sqs_.InjectMessage(dlq_, e, clock_.Now(),
                                 {{"DeadLetterQueueSourceArn", "arn:aws:sqs:us-east-1:999999999999:orders-a"}})
                  .ok());
  options_.from.clear();
  options_.from_queue = "orders-dlq";
  options_.audit_to = "s3://bucket/dlq-archive";
  options_.to_source = true;
  EXPECT_EQ(Run(), 2);  // found on receipt, before anything was sent
  EXPECT_NE(Err().find("--allow-cross-account"), std::string::npos) << Err();
  EXPECT_EQ(sqs_.calls(Op::kSendMessageBatch), 0);
  EXPECT_EQ(sqs_.Depth(dlq_), 1u);
}

TEST_F(ReplayCommandTest, SummaryMentionsEarlierRunsOnlyWithACheckpoint) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 2);
  options_.to_queue = "orders";
  ASSERT_EQ(Run(), 0) << Err();
  std::string out = Out();
  EXPECT_NE(out.find("sent 2, failed 0,"), std::string::npos) << out;
  EXPECT_EQ(out.find("earlier run"), std::string::npos) << out;

  options_.checkpoint = ::testing::TempDir() + "replay_summary_" + std::to_string(::getpid()) + ".ckpt";
  std::remove(options_.checkpoint.c_str());
  std::rewind(out_);
  ASSERT_EQ(Run(), 0) << Err();
  out = Out();
  EXPECT_NE(out.find("skipped 0 (finished by an earlier run)"), std::string::npos) << out;
  std::remove(options_.checkpoint.c_str());
}

TEST(ParseRateTest, AcceptsPerSecondForms) {
  EXPECT_EQ(ParseRate("250"), 250);
  EXPECT_EQ(ParseRate("250/s"), 250);
  EXPECT_EQ(ParseRate("0.5/s"), 0.5);
  EXPECT_FALSE(ParseRate("0"));
  EXPECT_FALSE(ParseRate("-3/s"));
  EXPECT_FALSE(ParseRate("10/m"));
  EXPECT_FALSE(ParseRate(""));
}

}  // namespace
}  // namespace dlq
