// `dlq-archive replay` as a command, on fakes: usage errors exit 2 before any
// call, destinations are resolved before anything is sent, the audit record
// lands beside the archive, and unreadable objects give exit 3.
#include "app/replay_command.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>

#include "app/replay_redrive.h"
#include "archive/gzip.h"
#include "query/fingerprint.h"
#include "replay/audit.h"
#include "replay/ledger.h"
#include "sqs/md5.h"
#include "sqs/queue_client_wrapper.h"
#include "testing/fake_clock.h"
#include "testing/fake_object_store.h"
#include "testing/fake_queue.h"
#include "testing/read_all.h"

namespace dlq {
namespace {

using Op = FakeQueueClient::Operation;

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

  // A message back in its DLQ after a replay, archived under its new id
  // (`copy_id`); body and attributes as record `i` of Archive().
  void ArchiveCopy(const std::string& key, const std::string& copy_id, int i) {
    ArchiveRecord r;
    r.queue = "orders-dlq";
    r.queue_url = dlq_;
    r.region = "us-east-1";
    r.account_id = "123456789012";
    r.message_id = copy_id;
    r.body = "order " + std::to_string(i) + " failed";
    r.md5_of_body = Md5OfBody(r.body);
    r.message_attributes["kind"] = {"String", i % 2 ? "odd" : "even", ""};
    r.md5_of_message_attributes = Md5OfMessageAttributes(r.message_attributes);
    r.archived_at = r.expires_at = clock_.Now();
    std::string lines;
    AppendRecordJson(r, lines);
    store_.Insert(key, *GzipCompress(lines, 1));
  }

  int Run() { return RunReplay(options_, deps_, stop_); }
  std::string Out() { return ReadAll(out_); }
  std::string Err() { return ReadAll(err_); }
  std::vector<std::string> AuditKeys() {
    std::vector<std::string> keys;
    for (const std::string& k : store_.Keys()) {
      // Records only: the ledger lives in subdirectories of _audit/.
      size_t at = k.find("/_audit/");
      if (at != std::string::npos && k.find('/', at + 8) == std::string::npos) keys.push_back(k);
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
  auto parsed = ParseAuditRecord(audit);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->sent.size(), 3u);
  EXPECT_EQ(parsed->sent[0].message_id, "id-1");
  EXPECT_EQ(parsed->sent[2].message_id, "id-5");
  for (const ReplayedMessage& m : parsed->sent) {
    EXPECT_EQ(m.destination, dest_);
    EXPECT_FALSE(m.new_message_id.empty());
    EXPECT_NE(m.new_message_id, m.message_id);
  }
  EXPECT_NE(audit.find(R"([\"kind\",\"odd\"])"), std::string::npos) << audit;  // the filter, canonical
  EXPECT_NE(audit.find(R"("caller_arn":"arn:aws:iam::123456789012:user/ops")"), std::string::npos);
  std::string out = Out();
  EXPECT_NE(out.find("sent 3, failed 0"), std::string::npos) << out;
  EXPECT_NE(out.find("audit: fake://archive/dlq-archive/_audit/"), std::string::npos) << out;
  // The audit record is not an archive object: a second run reads it as
  // nothing (and, by the ledger, sends nothing either).
  ASSERT_EQ(Run(), 0) << Err();
  EXPECT_EQ(sqs_.Messages(dest_).size(), 3u);
}

TEST_F(ReplayCommandTest, SecondRunSendsNothingAndSaysWhy) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 22);
  options_.to_queue = "orders";
  ASSERT_EQ(Run(), 0) << Err();
  ASSERT_EQ(sqs_.Messages(dest_).size(), 22u);
  Out();
  std::rewind(out_);
  ASSERT_EQ(Run(), 0) << Err();
  EXPECT_EQ(sqs_.Messages(dest_).size(), 22u);  // not 44
  std::string out = Out();
  EXPECT_NE(out.find("sent 0, failed 0"), std::string::npos) << out;
  EXPECT_NE(out.find("selected 22, sent 0, failed 0, skipped 22 already replayed"), std::string::npos) << out;
  EXPECT_NE(out.find("already replayed: delivered to the same destination by an earlier run"), std::string::npos)
      << out;
  EXPECT_NE(out.find("--again sends them"), std::string::npos) << out;
  // Both runs are in the audit trail; the second says what it skipped.
  auto audits = AuditKeys();
  ASSERT_EQ(audits.size(), 2u);
  auto second = ParseAuditRecord(store_.Object(audits[1])->data);
  auto first = ParseAuditRecord(store_.Object(audits[0])->data);
  ASSERT_TRUE(first.ok() && second.ok());
  if (first->stats.sent == 0) std::swap(first, second);  // same second: the keys sort by random suffix
  EXPECT_EQ(first->stats.sent, 22u);
  EXPECT_EQ(second->stats.sent, 0u);
  EXPECT_EQ(second->stats.already_replayed, 22u);
}

TEST_F(ReplayCommandTest, AgainSendsWhatAnEarlierRunDelivered) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 5);
  options_.to_queue = "orders";
  ASSERT_EQ(Run(), 0) << Err();
  options_.again = true;
  ASSERT_EQ(Run(), 0) << Err();
  EXPECT_EQ(sqs_.Messages(dest_).size(), 10u);
  EXPECT_NE(Out().find("--again: earlier deliveries not skipped"), std::string::npos);
  // A third run without --again skips all 5 (the --again run's deliveries are recorded too).
  options_.again = false;
  ASSERT_EQ(Run(), 0) << Err();
  EXPECT_EQ(sqs_.Messages(dest_).size(), 10u);
}

// Issue 37: a message that failed again is finished by a rerun after the
// fix (sent without --again, once, even when its copy was archived too);
// once delivered it is no longer "failed again"; --again keeps its meaning.
TEST_F(ReplayCommandTest, AMessageThatFailedAgainIsSentByTheRerunOnceAndThenCountsAsDelivered) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 4);
  options_.to_queue = "orders";
  ASSERT_EQ(Run(), 0) << Err();  // delivers id-0..3 (the ledger has them)
  ASSERT_EQ(sqs_.Messages(dest_).size(), 4u);
  // Then a replay of id-1 found it in the DLQ again as copy-1, and the
  // archiver archived that copy under its new id.
  clock_.Advance(std::chrono::minutes(1));
  AuditRecord refailed;
  refailed.started_at = refailed.finished_at = clock_.Now();
  refailed.source = "s3://bucket/dlq-archive";
  refailed.filter = "{}";
  refailed.destination = "orders";
  refailed.outcome = "stopped";
  refailed.sent = {{"id-1", "copy-1", dest_}};
  refailed.failed_again = {{"id-1", "copy-1", dest_, dlq_, clock_.Now()}};
  ASSERT_TRUE(WriteAudit(store_, "dlq-archive", refailed).ok());
  ArchiveCopy("dlq-archive/orders-dlq/20231115/b.json.gz", "copy-1", 1);
  clock_.Advance(std::chrono::minutes(1));

  // --failed-again selects exactly it, under both of its ids (as search does).
  options_.failed_again = true;
  options_.dry_run = true;
  std::rewind(out_);
  ASSERT_EQ(Run(), 0) << Err();
  std::string out = Out();
  EXPECT_NE(out.find("would send id-1 to " + dest_), std::string::npos) << out;
  EXPECT_NE(out.find("skip copy-1: a copy of the same message (it failed again after a replay) is sent as id-1"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("selected 2, would send 1, failed 0, skipped 1 copies of messages sent in this run"),
            std::string::npos)
      << out;
  options_.failed_again = false;
  options_.dry_run = false;

  // The rerun after the fix: id-1 is sent (once), the three delivered ones
  // and the copy are skipped, and every selected message is in one bucket.
  const size_t before = sqs_.Messages(dest_).size();
  std::rewind(out_);
  ASSERT_EQ(Run(), 0) << Err();
  EXPECT_EQ(sqs_.Messages(dest_).size(), before + 1);
  EXPECT_EQ(sqs_.Messages(dest_).back().body, "order 1 failed");
  out = Out();
  EXPECT_NE(out.find("selected 5, sent 1, failed 0, skipped 3 already replayed, skipped 1 copies of messages sent "
                     "in this run"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("1 message failed again after an earlier replay: this run took it to send again"),
            std::string::npos)
      << out;

  // Delivered now: no longer "failed again", and a third run sends nothing.
  auto index = ReadFailedAgain(store_, "dlq-archive");
  ASSERT_TRUE(index.ok());
  EXPECT_FALSE(index->Contains("id-1"));
  EXPECT_FALSE(index->Contains("copy-1"));
  std::rewind(out_);
  ASSERT_EQ(Run(), 0) << Err();
  EXPECT_EQ(sqs_.Messages(dest_).size(), before + 1);
  EXPECT_NE(Out().find("selected 5, sent 0, failed 0, skipped 5 already replayed"), std::string::npos) << Out();
  options_.failed_again = true;
  std::rewind(out_);
  ASSERT_EQ(Run(), 0) << Err();
  EXPECT_NE(Out().find("selected 0, sent 0, failed 0"), std::string::npos) << Out();
  options_.failed_again = false;

  // --again sends what was delivered, but one copy of each message.
  options_.again = true;
  ASSERT_EQ(Run(), 0) << Err();
  EXPECT_EQ(sqs_.Messages(dest_).size(), before + 1 + 4);
}

TEST_F(ReplayCommandTest, SkipsOnlyWhatWentToTheSameDestination) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 4);
  std::string other = *sqs_.CreateQueue("orders-fixed", {});
  options_.to_queue = "orders";
  options_.filter.attrs = {"kind=odd"};
  ASSERT_EQ(Run(), 0) << Err();
  ASSERT_EQ(sqs_.Messages(dest_).size(), 2u);
  // The whole queue now: the two odd ones are skipped, the two even ones sent.
  options_.filter.attrs.clear();
  ASSERT_EQ(Run(), 0) << Err();
  EXPECT_EQ(sqs_.Messages(dest_).size(), 4u);
  // Another destination has no earlier deliveries.
  options_.to_queue = "orders-fixed";
  ASSERT_EQ(Run(), 0) << Err();
  EXPECT_EQ(sqs_.Messages(other).size(), 4u);
}

TEST_F(ReplayCommandTest, DryRunNamesEachMessageItWouldSkip) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 3);
  options_.to_queue = "orders";
  options_.filter.ids = {"id-1"};
  ASSERT_EQ(Run(), 0) << Err();
  options_.filter.ids.clear();
  options_.dry_run = true;
  const size_t audits = AuditKeys().size(), objects = store_.Keys().size();
  std::rewind(out_);
  ASSERT_EQ(Run(), 0) << Err();
  std::string out = Out();
  EXPECT_NE(out.find("skip id-1: already replayed to " + dest_), std::string::npos) << out;
  EXPECT_NE(out.find("would send id-0"), std::string::npos) << out;
  EXPECT_EQ(out.find("would send id-1"), std::string::npos) << out;
  EXPECT_EQ(AuditKeys().size(), audits);
  EXPECT_EQ(store_.Keys().size(), objects);  // a dry run writes nothing
}

TEST_F(ReplayCommandTest, EveryRunWritesAnAuditRecordEvenWhenNothingIsSent) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 2);
  options_.to_queue = "orders";
  options_.filter.ids = {"no-such-id"};
  ASSERT_EQ(Run(), 0) << Err();
  ASSERT_EQ(AuditKeys().size(), 1u);
  auto r = ParseAuditRecord(store_.Object(AuditKeys()[0])->data);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stats.accepted, 0u);
  EXPECT_EQ(r->outcome, "done");
}

TEST_F(ReplayCommandTest, AuditToTakesTheRecordAndTheLedgerElsewhere) {
  FakeObjectStore audit_store("fake://audit", &clock_);
  deps_.open_store = [this, &audit_store](const Destination& d) -> Result<std::unique_ptr<ObjectStore>> {
    return std::unique_ptr<ObjectStore>(new Borrowed(d.bucket == "audits" ? audit_store : store_));
  };
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 3);
  options_.to_queue = "orders";
  options_.audit_to = "s3://audits/trail";
  ASSERT_EQ(Run(), 0) << Err();
  ASSERT_EQ(Run(), 0) << Err();
  EXPECT_EQ(sqs_.Messages(dest_).size(), 3u);
  EXPECT_TRUE(AuditKeys().empty());  // nothing written into the archive
  size_t records = 0;
  for (const std::string& k : audit_store.Keys()) records += k.starts_with("trail/_audit/") && k.ends_with(".json");
  EXPECT_EQ(records, 2u);
}

TEST_F(ReplayCommandTest, ALedgerThatCannotBeWrittenFailsTheRunAndTheAuditSaysSo) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 2);
  options_.to_queue = "orders";
  store_.FailNextPut(PermissionDenied("AccessDenied: not allowed to write"));  // the ledger part, written first
  EXPECT_EQ(Run(), 1);
  EXPECT_NE(Err().find("replay ledger fake://archive/dlq-archive/_audit/sent/"), std::string::npos) << Err();
  ASSERT_EQ(AuditKeys().size(), 1u);
  auto r = ParseAuditRecord(store_.Object(AuditKeys()[0])->data);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->outcome, "failed");
  EXPECT_EQ(r->sent.size(), 2u);  // what was sent is still on record
}

TEST_F(ReplayCommandTest, ACorruptLedgerPartSendsNothingAndNamesIt) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 2);
  options_.to_queue = "orders";
  const std::string part =
      "dlq-archive/_audit/sent/" + LedgerDestinationKey(dest_) + "/20231114T000000Z-0000000000000000-000000.ids";
  store_.Insert(part, "dlq-archive sent ids v1\ndestination " + dest_ + "\nid-0");  // torn: no final newline
  EXPECT_EQ(Run(), 1);
  EXPECT_EQ(sqs_.Messages(dest_).size(), 0u);
  EXPECT_NE(Err().find(part), std::string::npos) << Err();
}

TEST_F(ReplayCommandTest, LiveFormSkipsAMessageAnEarlierRunDeliveredButCouldNotDelete) {
  for (int i = 0; i < 3; ++i) {
    SendEntry e;
    e.id = "s";
    e.body = "order " + std::to_string(i);
    ASSERT_TRUE(sqs_.SendMessage(dlq_, e).ok());
  }
  options_.from.clear();
  options_.from_queue = "orders-dlq";
  options_.audit_to = "s3://bucket/dlq-archive";
  options_.to_queue = "orders";
  sqs_.FailDeleteEntries(4, "InternalError");  // all 3 deletes fail, and one of them again on the retry
  EXPECT_EQ(Run(), 3) << Err();                // sent, but a delete failed
  ASSERT_EQ(sqs_.Messages(dest_).size(), 3u);
  ASSERT_EQ(sqs_.Messages(dlq_).size(), 1u);
  clock_.Advance(std::chrono::minutes(10));  // let anything still held become visible again
  std::rewind(out_);
  ASSERT_EQ(Run(), 0) << Err();
  EXPECT_EQ(sqs_.Messages(dest_).size(), 3u);  // the leftover was not sent twice
  EXPECT_EQ(sqs_.Messages(dlq_).size(), 1u);   // and stays in the DLQ
  std::string out = Out();
  EXPECT_NE(out.find("skipped 1 already replayed"), std::string::npos) << out;
  options_.again = true;
  clock_.Advance(std::chrono::minutes(10));
  ASSERT_EQ(Run(), 0) << Err();
  EXPECT_EQ(sqs_.Messages(dest_).size(), 4u);
  EXPECT_EQ(sqs_.Messages(dlq_).size(), 0u);
}

TEST_F(ReplayCommandTest, UsageErrorsExit2BeforeAnyCall) {
  struct Case {
    std::function<void(ReplayCommandOptions&)> edit;
    std::string says;
  };
  std::vector<Case> cases = {
      {[](auto& o) { o.to_queue = ""; }, "--to-source, --to-origin and --to-queue"},
      {[](auto& o) { o.to_source = true; }, "--to-source, --to-origin and --to-queue"},
      {[](auto& o) { o.to_origin = true; }, "--to-source, --to-origin and --to-queue"},
      {[](auto& o) { o.function = "orders"; }, "--function names the origin of --to-origin"},
      {[](auto& o) {
         o.all_queues = true;
         o.to_queue = "";
         o.to_source = true;
       },
       "--all-queues lets --to-queue"},
      {[](auto& o) { o.allow_cross_account = true; }, "--allow-cross-account is for --to-source and --to-origin"},
      {[](auto& o) { o.from_queue = "orders-dlq"; }, "--from URL, --from-queue DLQ and --from-lambda-records"},
      {[](auto& o) { o.from_lambda_records = "s3://fails"; }, "--from URL, --from-queue DLQ and --from-lambda-records"},
      {[](auto& o) {
         o.from.clear();
         o.from_lambda_records = "s3://fails";
       },
       "--from-lambda-records reads Lambda's records of failed invocations, which go back to their functions: give "
       "--to-origin"},
      {[](auto& o) {
         o.from.clear();
         o.from_lambda_records = "s3://fails";
         o.to_queue.clear();
         o.to_origin = true;
       },
       "--from-lambda-records needs --audit-to"},
      {[](auto& o) {
         o.from.clear();
         o.from_lambda_records = "s3://fails";
         o.to_queue.clear();
         o.to_origin = true;
         o.filter.queues = {"orders-fn"};
       },
       "--queue selects DLQs of an archive; Lambda's records are not in one"},
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

// ---- the live form (--from-queue)

class LiveReplayCommandTest : public ReplayCommandTest {
 protected:
  LiveReplayCommandTest() {
    options_.from.clear();
    options_.from_queue = "orders-dlq";
    options_.to_queue = "orders";
    options_.audit_to = "s3://bucket/dlq-archive";
    options_.filter.attrs = {"tenant=acme"};
  }
  void Fill(int n, int matching) {
    for (int i = 0; i < n; ++i) {
      SendEntry e;
      e.body = "order " + std::to_string(i);
      e.message_attributes["tenant"] = {"String", i < matching ? "acme" : "globex", ""};
      ASSERT_TRUE(sqs_.SendMessage(dlq_, e).ok());
    }
  }
};

TEST_F(LiveReplayCommandTest, SummaryCountsDistinctMessagesOfTheWholeDlq) {
  Fill(200, 50);
  sqs_.SampleReceives(0.25, 9);
  ASSERT_EQ(Run(), 0) << Err();
  std::string out = Out();
  EXPECT_NE(out.find("selected 50, sent 50, failed 0"), std::string::npos) << out;
  EXPECT_NE(out.find("DLQ: examined 200 of ~200 present at the start, not selected 150, deleted 50, delete "
                     "failures 0, released 150"),
            std::string::npos)
      << out;
  EXPECT_EQ(sqs_.Messages(dest_).size(), 50u);
  EXPECT_EQ(sqs_.Messages(dlq_).size(), 150u);
}

TEST_F(LiveReplayCommandTest, DryRunPrintsEachMessageOnce) {
  Fill(60, 12);
  sqs_.SampleReceives(0.25, 4);
  options_.dry_run = true;
  ASSERT_EQ(Run(), 0) << Err();
  std::string out = Out();
  size_t lines = 0;
  for (size_t at = out.find("would send "); at != std::string::npos; at = out.find("would send ", at + 1)) ++lines;
  EXPECT_EQ(lines, 12u + 1u) << out;  // 12 lines and the summary's "would send 12 of 12"
  EXPECT_NE(out.find("selected 12, would send 12, failed 0"), std::string::npos) << out;
  EXPECT_NE(out.find("examined 60 of ~60"), std::string::npos) << out;
  EXPECT_EQ(sqs_.Messages(dlq_).size(), 60u);
}

TEST_F(LiveReplayCommandTest, PassThatCannotSeeEverythingExits4WithTheReason) {
  Fill(30, 30);
  ReceiveOptions other;
  other.max_messages = 5;
  other.visibility_timeout = 600;
  ASSERT_EQ(sqs_.ReceiveMessages(dlq_, other)->size(), 5u);
  EXPECT_EQ(Run(), 4);
  EXPECT_NE(Out().find("examined 25 of ~30 present at the start"), std::string::npos) << Out();
  std::string err = Err();
  EXPECT_NE(err.find("incomplete: ~5 messages are in flight without this pass holding them"), std::string::npos) << err;
  EXPECT_EQ(sqs_.Messages(dest_).size(), 25u);
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
  EXPECT_NE(out.find("selected 2, would send 2, failed 0"), std::string::npos) << out;
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
  options_.redrive.no_canary = true;  // a plain replay: this test is about the route
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
  options_.redrive.no_canary = true;  // a plain replay: this test is about the route
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
  options_.redrive.no_canary = true;  // a plain replay: this test is about the route
  EXPECT_EQ(Run(), 2);                // found on receipt, before anything was sent
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

TEST_F(ReplayCommandTest, FingerprintSelectsOneFailureGroupOfTheArchive) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 4);  // "order <num> failed"
  std::string lines;
  for (int i = 0; i < 6; ++i) {
    ArchiveRecord r;
    r.queue = "orders-dlq";
    r.queue_url = dlq_;
    r.region = "us-east-1";
    r.account_id = "123456789012";
    r.message_id = "json-" + std::to_string(i);
    r.body = fmt::format(R"({{"type":"{}","tenant":"t{}","order":{}}})", i % 3 ? "Timeout" : "Denied", i, i);
    r.md5_of_body = Md5OfBody(r.body);
    r.archived_at = r.expires_at = clock_.Now();
    AppendRecordJson(r, lines);
  }
  store_.Insert("dlq-archive/orders-dlq/20231114/b.json.gz", *GzipCompress(lines, 1));
  options_.all = false;  // the group is the filter
  options_.to_queue = "orders";
  options_.filter.fingerprint = GroupId(R"(type="Timeout" {order,tenant,type})");
  ASSERT_EQ(Run(), 0) << Err();
  std::vector<Message> sent = sqs_.Messages(dest_);
  ASSERT_EQ(sent.size(), 4u) << Out();
  for (const Message& m : sent) EXPECT_NE(m.body.find(R"("type":"Timeout")"), std::string::npos) << m.body;
  auto audit = ParseAuditRecord(store_.Object(AuditKeys().at(0))->data);
  ASSERT_TRUE(audit.ok());
  EXPECT_NE(audit->filter.find(R"("fingerprint":")" + options_.filter.fingerprint), std::string::npos) << audit->filter;

  options_.filter.fingerprint = "nothex";
  EXPECT_EQ(Run(), 2);
  EXPECT_NE(Err().find("--fingerprint 'nothex'"), std::string::npos);
}

TEST_F(LiveReplayCommandTest, FingerprintSelectsOneFailureGroupOfTheLiveDlq) {
  for (int i = 0; i < 20; ++i) {
    SendEntry e;
    e.body = fmt::format(R"({{"type":"{}","order":{}}})", i % 2 ? "Timeout" : "Denied", i);
    ASSERT_TRUE(sqs_.SendMessage(dlq_, e).ok());
  }
  options_.filter.attrs.clear();
  options_.filter.fingerprint = GroupId(R"(type="Timeout" {order,type})");
  ASSERT_EQ(Run(), 0) << Err();
  std::string out = Out();
  EXPECT_NE(out.find("selected 10, sent 10, failed 0"), std::string::npos) << out;
  ASSERT_EQ(sqs_.Messages(dest_).size(), 10u);
  for (const Message& m : sqs_.Messages(dest_)) EXPECT_NE(m.body.find("Timeout"), std::string::npos);
  for (const Message& m : sqs_.Messages(dlq_)) EXPECT_NE(m.body.find("Denied"), std::string::npos);
}

// A consumer of "orders" that runs whenever the replay reads a queue's
// attributes (the guard samples the backlog and the DLQ's counts): it takes
// what is visible, keeps the messages it cannot process (visibility 0) and
// deletes the rest; with maxReceiveCount 1 a kept message is in orders-dlq
// at its next receive.
class FailingConsumer final : public QueueClientWrapper {
 public:
  FailingConsumer(FakeQueueClient& sqs, std::string queue) : QueueClientWrapper(sqs), queue_(std::move(queue)) {}
  Result<std::map<std::string, std::string>> GetQueueAttributes(const std::string& url,
                                                                const std::vector<std::string>& names) override {
    ReceiveOptions ro;
    ro.visibility_timeout = 0;
    auto got = target().ReceiveMessages(queue_, ro);
    if (got.ok()) {
      for (const Message& m : *got) {
        if (fails && fails(m.body)) continue;
        (void)target().DeleteMessageBatch(queue_, {{"d", m.receipt_handle}});
        ++consumed;
      }
    }
    return target().GetQueueAttributes(url, names);
  }
  std::function<bool(const std::string& body)> fails;
  int consumed = 0;

 private:
  std::string queue_;
};

class GuardedReplayCommandTest : public ReplayCommandTest {
 protected:
  GuardedReplayCommandTest() : consumer_(sqs_, dest_) {
    EXPECT_TRUE(sqs_.SetQueueAttributes(dest_, {{"RedrivePolicy", R"({"deadLetterTargetArn":)"
                                                                  R"("arn:aws:sqs:us-east-1:123456789012:orders-dlq",)"
                                                                  R"("maxReceiveCount":1})"}})
                    .ok());
    deps_.sqs = &consumer_;
    options_.to_queue = "orders";
    options_.redrive.canary = 10;
    options_.redrive.window = "10s";
  }
  AuditRecord OnlyAudit() {
    auto keys = AuditKeys();
    EXPECT_EQ(keys.size(), 1u);
    auto r = ParseAuditRecord(store_.Object(keys.at(0))->data);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return *r;
  }

  FailingConsumer consumer_;
};

TEST_F(GuardedReplayCommandTest, BugStillThereStopsAfterTheCanaryWithExit5AndSaysWhatWasNotSent) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 100);
  consumer_.fails = [](const std::string&) { return true; };
  ASSERT_EQ(Run(), 5) << Err();
  const std::string err = Err();
  AuditRecord audit = OnlyAudit();
  EXPECT_EQ(audit.stats.sent, 10u);  // no more than the canary was exposed
  EXPECT_EQ(audit.outcome, "stopped");
  ASSERT_TRUE(audit.redrive.has_value());
  EXPECT_EQ(audit.redrive->outcome, "stopped");
  EXPECT_EQ(audit.redrive->canary, 10u);
  EXPECT_EQ(audit.redrive->window_s, 10);
  ASSERT_FALSE(audit.failed_again.empty());
  EXPECT_EQ(audit.redrive->refailed, audit.failed_again.size());
  EXPECT_NE(err.find("stopped: sent 10, re-failed " + std::to_string(audit.failed_again.size()) +
                     ", not sent 90 (still in the archive)"),
            std::string::npos)
      << err;
  for (const FailedAgainMessage& f : audit.failed_again) {
    EXPECT_EQ(f.dlq, dlq_);
    EXPECT_NE(err.find("failed again: " + f.message_id + " -> " + f.new_message_id), std::string::npos) << err;
  }
  const std::string out = Out();
  EXPECT_NE(out.find("guard: stopped: canary sent 10 (planned 10)"), std::string::npos) << out;
  // Every selected message in one bucket: 100 selected, not "selected 10".
  const size_t r = audit.failed_again.size();
  EXPECT_NE(out.find(fmt::format("selected 100, sent {}, failed 0, failed again {}, not sent 90 (still in the archive)",
                                 10 - r, r)),
            std::string::npos)
      << out;
  ASSERT_TRUE(audit.buckets.has_value());
  EXPECT_EQ(audit.buckets->selected, 100u);
  EXPECT_EQ(audit.buckets->failed_again, r);
  EXPECT_EQ(audit.buckets->not_sent, 90u);
  EXPECT_EQ(audit.buckets->Sum(), 100u);
  // The rerun (the fix is out) takes the messages that failed again too.
  consumer_.fails = [](const std::string&) { return false; };
  options_.redrive = {};
  options_.redrive.no_canary = true;
  std::rewind(out_);
  ASSERT_EQ(Run(), 0) << Err();
  EXPECT_NE(Out().find(fmt::format("{} {} failed again after an earlier replay: this run took", r,
                                   r == 1 ? "message" : "messages")),
            std::string::npos)
      << Out();
  EXPECT_NE(Out().find(fmt::format("selected 100, sent {}, failed 0{}", 90 + r,
                                   r < 10 ? fmt::format(", skipped {} already replayed", 10 - r) : ",")),
            std::string::npos)
      << Out();
}

TEST_F(GuardedReplayCommandTest, BugFixedRampsToTheEndAndNothingIsBackInTheDlq) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 100);
  consumer_.fails = [](const std::string&) { return false; };
  ASSERT_EQ(Run(), 0) << Err();
  AuditRecord audit = OnlyAudit();
  EXPECT_EQ(audit.stats.sent, 100u);
  ASSERT_TRUE(audit.redrive.has_value());
  EXPECT_EQ(audit.redrive->outcome, "done");
  EXPECT_TRUE(audit.failed_again.empty());
  EXPECT_EQ(sqs_.Depth(dlq_), 0u);
  EXPECT_NE(Out().find("guard: done: canary sent 10 (planned 10), ramp 5,25,100 % (2 of 2 steps sent), window 10 s, "
                       "re-failed 0"),
            std::string::npos)
      << Out();
}

TEST_F(GuardedReplayCommandTest, ACanaryToAQueueWithoutDlqExits2NamingItAndNoCanaryBeforeSending) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 5, "arn:aws:sqs:us-east-1:123456789012:orders-a");
  const std::string plain = *sqs_.CreateQueue("orders-a", {});
  options_.to_queue.clear();
  options_.to_source = true;  // the default canary of --to-source
  options_.redrive = {};
  EXPECT_EQ(Run(), 2);
  const std::string err = Err();
  EXPECT_NE(err.find(plain + " has no RedrivePolicy"), std::string::npos) << err;
  EXPECT_NE(err.find("--no-canary"), std::string::npos) << err;
  EXPECT_EQ(sqs_.Depth(plain), 0u);
  EXPECT_TRUE(AuditKeys().empty());
  options_.redrive.no_canary = true;  // a plain replay goes
  ASSERT_EQ(Run(), 0) << Err();
  EXPECT_EQ(sqs_.Depth(plain), 5u);
}

TEST_F(GuardedReplayCommandTest, BadGuardFlagsExit2BeforeAnyCall) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 5);
  for (auto edit : std::vector<std::function<void(RedriveFlags&)>>{
           [](RedriveFlags& f) { f.ramp = "50,10"; }, [](RedriveFlags& f) { f.max_refailures = "lots"; },
           [](RedriveFlags& f) { f.no_canary = true; }, [](RedriveFlags& f) { f.max_backlog = {"0"}; }}) {
    options_.redrive.canary = 10;
    edit(options_.redrive);
    const int calls = sqs_.calls(Op::kGetQueueUrl) + sqs_.calls(Op::kGetQueueAttributes);
    EXPECT_EQ(Run(), 2) << Err();
    EXPECT_EQ(sqs_.calls(Op::kGetQueueUrl) + sqs_.calls(Op::kGetQueueAttributes), calls);
    options_.redrive = {};
  }
  EXPECT_EQ(sqs_.Depth(dest_), 0u);
}

TEST_F(GuardedReplayCommandTest, ToQueueHasNoCanaryUnlessAsked) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 5);
  options_.redrive = {};
  ASSERT_EQ(Run(), 0) << Err();
  EXPECT_EQ(Out().find("guard:"), std::string::npos) << Out();
  EXPECT_FALSE(OnlyAudit().redrive.has_value());
}

TEST_F(GuardedReplayCommandTest, LiveFormStopsLeavingWhatItDidNotSendInTheDlqAndKeepsAJournal) {
  for (int i = 0; i < 50; ++i) {
    SendEntry e;
    e.body = "order " + std::to_string(i);
    ASSERT_TRUE(sqs_.SendMessage(dlq_, e).ok());
  }
  options_.from.clear();
  options_.from_queue = "orders-dlq";
  options_.audit_to = "s3://bucket/dlq-archive";
  char dir[] = "/tmp/guarded-live-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  options_.checkpoint = std::string(dir) + "/run";  // a guarded live run may keep its guard journal
  consumer_.fails = [](const std::string&) { return true; };
  ASSERT_EQ(Run(), 5) << Err();
  AuditRecord audit = OnlyAudit();
  EXPECT_EQ(audit.stats.sent, 10u);
  ASSERT_FALSE(audit.failed_again.empty());
  const size_t refailed = audit.failed_again.size();
  EXPECT_EQ(sqs_.Depth(dlq_), 40u + refailed);  // the 40 not sent, and the copies that failed again
  EXPECT_EQ(sqs_.Depth(dest_), 10u - refailed);
  const std::string err = Err();
  EXPECT_NE(err.find("stopped: sent 10, re-failed " + std::to_string(refailed)), std::string::npos) << err;
  EXPECT_NE(err.find(", not sent 40 (still in the DLQ)"), std::string::npos) << err;
  // The DLQ part as a completed run prints it, and what is left and why.
  const std::string out = Out();
  EXPECT_NE(out.find("; DLQ: examined "), std::string::npos) << out;
  EXPECT_NE(out.find(", deleted 10,"), std::string::npos) << out;  // the originals sent left the DLQ
  // Every message the pass selected is in one bucket (one more may have been
  // received and selected while the guard judged the canary: not sent).
  EXPECT_NE(out.find(fmt::format("sent {}, failed 0, failed again {}", 10 - refailed, refailed)), std::string::npos)
      << out;
  EXPECT_NE(out.find(fmt::format("left in the DLQ: {} failed again in this run", refailed)), std::string::npos) << out;
  EXPECT_NE(out.find("`dlq-archive archive --queue orders-dlq --to s3://bucket/dlq-archive` archives them"),
            std::string::npos)
      << out;
  std::FILE* journal = std::fopen((options_.checkpoint + ".guard").c_str(), "r");
  EXPECT_NE(journal, nullptr);
  if (journal != nullptr) std::fclose(journal);
  std::remove((options_.checkpoint + ".guard").c_str());
  std::remove(dir);
}

TEST_F(GuardedReplayCommandTest, DryRunSaysHowTheRealRunWillBeGuardedAndSendsNothing) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 20);
  ASSERT_TRUE(sqs_.SetQueueAttributes(dest_, {{"VisibilityTimeout", "30"}, {"DelaySeconds", "5"}}).ok());
  options_.redrive = {};
  options_.redrive.canary = 4;
  options_.dry_run = true;
  ASSERT_EQ(Run(), 0) << Err();
  const std::string out = Out();
  EXPECT_NE(out.find("the real run is guarded: canary 4, ramp 5,25,100 %, window 45 s (from " + dest_ +
                     ": maxReceiveCount 1 x VisibilityTimeout 30 s + DelaySeconds 5 s, plus margin), backlog bound "),
            std::string::npos)
      << out;
  EXPECT_EQ(sqs_.Depth(dest_), 0u);
}

// A consumer of "orders" that takes nothing until `consuming`, then takes
// everything visible whenever the replay reads a queue's attributes.
class GatedConsumer final : public QueueClientWrapper {
 public:
  GatedConsumer(FakeQueueClient& sqs, std::string queue) : QueueClientWrapper(sqs), queue_(std::move(queue)) {}
  Result<std::map<std::string, std::string>> GetQueueAttributes(const std::string& url,
                                                                const std::vector<std::string>& names) override {
    for (bool more = consuming; more;) {
      auto got = target().ReceiveMessages(queue_, ReceiveOptions{});
      more = got.ok() && !got->empty();
      for (const Message& m : more ? *got : std::vector<Message>{}) {
        (void)target().DeleteMessageBatch(queue_, {{"d", m.receipt_handle}});
        ++consumed;
      }
    }
    return target().GetQueueAttributes(url, names);
  }
  bool consuming = false;
  int consumed = 0;

 private:
  std::string queue_;
};

// Issue 37: --max-backlog holds without a canary too (before: silently ignored).
TEST_F(GuardedReplayCommandTest, MaxBacklogWithoutACanaryHoldsTheBound) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 60);
  options_.redrive = {};
  options_.redrive.max_backlog = {"20"};
  GatedConsumer consumer(sqs_, dest_);
  deps_.sqs = &consumer;
  size_t peak = 0;
  bool paused = false;
  deps_.on_redrive_status = [&](const RedriveStatus& s) {
    peak = std::max(peak, sqs_.Depth(dest_));
    if (s.phase == RedrivePhase::kPaused) paused = consumer.consuming = true;
  };
  ASSERT_EQ(Run(), 0) << Err();
  EXPECT_TRUE(paused);
  EXPECT_LE(peak, 20u);
  EXPECT_EQ(consumer.consumed + static_cast<int>(sqs_.Depth(dest_)), 60);
  const std::string out = Out();
  EXPECT_NE(out.find("backlog bound: 20 visible messages (resumes at 10)"), std::string::npos) << out;
  EXPECT_FALSE(OnlyAudit().redrive.has_value());  // no canary: no guard in the audit
}

TEST_F(GuardedReplayCommandTest, CanaryFlagsWithoutACanaryExit2NamingTheFlag) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 5);
  options_.redrive = {};
  options_.redrive.ramp = "10,100";
  EXPECT_EQ(Run(), 2);
  EXPECT_NE(Err().find("--ramp applies to a guarded replay only"), std::string::npos) << Err();
  EXPECT_EQ(sqs_.Depth(dest_), 0u);
}

TEST_F(GuardedReplayCommandTest, DryRunWithAShortCheckSaysWhatItRisks) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 20);
  options_.redrive.check = "2s";
  options_.dry_run = true;
  ASSERT_EQ(Run(), 0) << Err();
  EXPECT_NE(Out().find("--check 2 s is shorter than the window: a step's re-failures can come back after the next "
                       "step was sent"),
            std::string::npos)
      << Out();
}

TEST_F(GuardedReplayCommandTest, OutputJsonIsOneDocumentWhoseBucketsAddUp) {
  Archive("dlq-archive/orders-dlq/20231114/a.json.gz", 0, 40);
  consumer_.fails = [](const std::string&) { return true; };
  options_.output = "json";
  ASSERT_EQ(Run(), 5) << Err();
  const std::string out = Out();
  ASSERT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;  // one document, nothing else
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(out).get(doc), simdjson::SUCCESS) << out;
  uint64_t selected = 0, sum = 0;
  ASSERT_EQ(doc["buckets"]["selected"].get_uint64().get(selected), simdjson::SUCCESS);
  for (const char* b : {"sent", "failed", "failed_again", "already_replayed", "copies", "resumed",
                        "skipped_failed_again", "would_send", "not_sent"}) {
    uint64_t n = 0;
    ASSERT_EQ(doc["buckets"][b].get_uint64().get(n), simdjson::SUCCESS) << b;
    sum += n;
  }
  EXPECT_EQ(selected, 40u);
  EXPECT_EQ(sum, 40u);
  int64_t code = 0;
  ASSERT_EQ(doc["exit_code"].get_int64().get(code), simdjson::SUCCESS);
  EXPECT_EQ(code, 5);
  std::string_view phase;
  ASSERT_EQ(doc["guard"]["phase"].get_string().get(phase), simdjson::SUCCESS);
  EXPECT_EQ(phase, "stopped");
}

}  // namespace
}  // namespace dlq
