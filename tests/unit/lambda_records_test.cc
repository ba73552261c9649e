// Lambda's on-failure records in S3 (replay/lambda_records.h): reading them
// as dead-letter messages, watching a function's prefix for re-failures, and
// `replay --from-lambda-records --to-origin` on fakes: each record's
// requestPayload invoked once, the canary, an asynchronous re-failure found
// as a new record, a rerun that sends nothing, and the refusals.
#include "replay/lambda_records.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "common/time_util.h"
#include "origin_run_helpers.h"
#include "replay/replay_run.h"
#include "testing/fake_clock.h"
#include "testing/fake_lambda_api.h"
#include "testing/fake_object_store.h"
#include "testing/fake_queue.h"

namespace dlq {
namespace {

const std::string kFnArn = "arn:aws:lambda:us-east-1:123456789012:function:orders";

// "aws/lambda/async/FUNCTION/YYYY/MM/DD/YYYY-MM-DDTHH.MM.SS-UUID" for `t`.
std::string RecordKey(const std::string& function, SystemTime t, const std::string& uuid) {
  const CivilTime c = ToCivilTime(t);
  return fmt::format("aws/lambda/async/{}/{:04}/{:02}/{:02}/{:04}-{:02}-{:02}T{:02}.{:02}.{:02}-{}", function, c.year,
                     c.month, c.day, c.year, c.month, c.day, c.hour, c.minute, c.second, uuid);
}

// An invocation record as Lambda writes it (invocation-async-retain-records).
std::string RecordText(const std::string& request_id, const std::string& payload,
                       const std::string& function_arn = kFnArn + ":$LATEST") {
  return fmt::format(
      R"({{"version":"1.0","timestamp":"2026-11-29T10:00:00.000Z","requestContext":{{"requestId":"{}",)"
      R"("functionArn":"{}","condition":"RetriesExhausted","approximateInvokeCount":3}},"requestPayload":{},)"
      R"("responseContext":{{"statusCode":200,"executedVersion":"$LATEST","functionError":"Unhandled"}},)"
      R"("responsePayload":{{"errorMessage":"boom"}}}})",
      request_id, function_arn, payload);
}

TEST(LambdaRecordsTest, ARecordObjectIsAMessageIdentifiedByItsRequestIdAndTimedByItsKey) {
  const std::string key = "aws/lambda/async/orders/2026/11/29/2026-11-29T10.15.30-6f1c";
  auto r = LambdaRecordFromObject("fails", key, RecordText("req-1", R"({"order":7})"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->message_id, "req-1");
  EXPECT_EQ(r->queue, "s3://fails/aws/lambda/async/orders/2026/11/29");
  EXPECT_EQ(r->attributes.at("S3Key"), key);
  ASSERT_TRUE(r->sent_at.has_value());
  EXPECT_EQ(FormatIso8601(*r->sent_at), "2026-11-29T10:15:30.000Z");
  EXPECT_EQ(r->body, RecordText("req-1", R"({"order":7})")) << "kept byte for byte";

  auto other = LambdaRecordFromObject("fails", key, R"({"hello":"world"})");
  EXPECT_EQ(other.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(other.status().message().find("s3://fails/" + key + " is not a Lambda invocation record"),
            std::string::npos)
      << other.status().ToString();
  auto no_id = LambdaRecordFromObject(
      "fails", key, R"({"requestContext":{"functionArn":")" + kFnArn + R"("},"requestPayload":{"a":1}})");
  EXPECT_NE(no_id.status().message().find("no requestContext with a functionArn and a requestId"), std::string::npos)
      << no_id.status().ToString();
  EXPECT_FALSE(LambdaRecordKeyTime("aws/lambda/async/orders/notatime").has_value());
}

TEST(LambdaRecordsTest, AScanReadsEveryRecordInKeyOrderAndSkipsWhatIsNotOneCountingIt) {
  FakeClock clock;
  FakeObjectStore store("s3://fails", &clock);
  const SystemTime t = clock.Now();
  store.Insert(RecordKey("orders", t, "b"), RecordText("req-b", R"({"n":2})"));
  store.Insert(RecordKey("orders", t, "a"), RecordText("req-a", R"({"n":1})"));
  store.Insert(RecordKey("orders", t, "c"), "not json");
  store.Insert("elsewhere/x", RecordText("req-x", "{}"));
  std::vector<std::string> ids;
  auto stats = ScanLambdaRecords(store, "fails", "", nullptr, [&](const ArchiveRecord& r) {
    ids.push_back(r.message_id);
    return true;
  });
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(ids, (std::vector<std::string>{"req-a", "req-b"}));
  EXPECT_EQ(stats->objects_listed, 3u) << "only under aws/lambda/async/";
  EXPECT_EQ(stats->skipped_objects, 1u);
  ASSERT_EQ(stats->errors.size(), 1u);
  EXPECT_NE(stats->errors[0].message.find("is not a Lambda invocation record"), std::string::npos);
  EXPECT_FALSE(stats->complete());

  ids.clear();
  auto only_b = ScanLambdaRecords(
      store, "fails", "aws/lambda/async/orders/", [](const ArchiveRecord& r) { return r.message_id == "req-b"; },
      [&](const ArchiveRecord& r) {
        ids.push_back(r.message_id);
        return true;
      });
  ASSERT_TRUE(only_b.ok());
  EXPECT_EQ(ids, (std::vector<std::string>{"req-b"}));
  EXPECT_EQ(only_b->records, 1u);
}

TEST(LambdaRecordsTest, AScanReadsPageByPageAndStopsWhenAsked) {
  FakeClock clock;
  FakeObjectStore store("s3://fails", &clock, /*page_size=*/2);
  for (int i = 0; i < 7; ++i) {
    const std::string id = fmt::format("req-{}", i);
    store.Insert(RecordKey("orders", clock.Now(), id), RecordText(id, "{}"));
  }
  std::vector<std::string> ids;
  auto all = ScanLambdaRecords(store, "fails", "", nullptr, [&](const ArchiveRecord& r) {
    ids.push_back(r.message_id);
    return true;
  });
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(ids.size(), 7u) << "every page";
  EXPECT_EQ(all->objects_listed, 7u);
  EXPECT_TRUE(all->complete());
  ids.clear();
  auto three = ScanLambdaRecords(store, "fails", "", nullptr, [&](const ArchiveRecord& r) {
    ids.push_back(r.message_id);
    return ids.size() < 3;
  });
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(ids, (std::vector<std::string>{"req-0", "req-1", "req-2"}));
  EXPECT_LE(three->objects_listed, 4u) << "the listing stopped with the scan";
}

TEST(LambdaRecordProbeTest, ARecordWrittenAfterTheStartIsFoundByItsRequestIdOnceAndOlderOnesAreNot) {
  FakeClock clock;
  FakeObjectStore store("s3://fails", &clock);
  store.Insert(RecordKey("orders", clock.Now() - std::chrono::hours(2), "old"), RecordText("req-9", "{}"));
  LambdaRecordProbe probe(store, "fails", clock, {"orders"});
  std::map<std::string, ReplayedMessage> watched = {
      {"lambda-request:req-9", {"m9", "lambda-request:req-9", kFnArn}},
      {"lambda-request:req-1", {"m1", "lambda-request:req-1", kFnArn}},
      {"lambda-request:req-2", {"m2", "lambda-request:req-2", kFnArn}},
  };
  auto none = probe.Find(watched);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->empty()) << "a record from before the run is not one of its re-failures";

  clock.Advance(std::chrono::minutes(70));  // into the next hour
  const std::string key = RecordKey("orders", clock.Now(), "u1");
  store.Insert(key, RecordText("req-1", R"({"order":1})"));
  store.Insert(RecordKey("billing", clock.Now(), "u2"), RecordText("req-2", "{}"));  // another function: not watched
  auto found = probe.Find(watched);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].message_id, "m1");
  EXPECT_EQ((*found)[0].new_message_id, "lambda-request:req-1");
  EXPECT_EQ((*found)[0].dlq, "s3://fails/" + key);
  const uint64_t reads = probe.receives();
  auto again = probe.Find(watched);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty()) << "reported once";
  EXPECT_EQ(probe.receives(), reads) << "an object is read once";
}

TEST(LambdaRecordProbeTest, ALookReadsAtMostItsBudgetAndTheNextLookTheRestAndAListingErrorNamesThePrefix) {
  FakeClock clock;
  FakeObjectStore store("s3://fails", &clock);
  LambdaRecordProbe probe(store, "fails", clock, {"orders"}, 2);
  std::map<std::string, ReplayedMessage> watched;
  for (int i = 0; i < 5; ++i) {
    const std::string id = fmt::format("req-{}", i);
    store.Insert(RecordKey("orders", clock.Now(), id), RecordText(id, "{}"));
    watched["lambda-request:" + id] = {fmt::format("m{}", i), "lambda-request:" + id, kFnArn};
  }
  size_t found = 0;
  for (int look = 0; look < 3; ++look) {
    auto f = probe.Find(watched);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    EXPECT_LE(f->size(), 2u);
    found += f->size();
  }
  EXPECT_EQ(found, 5u);
  store.FailNextList(Unavailable("SlowDown"));
  auto failed = probe.Find(watched);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("listing s3://fails/aws/lambda/async/orders/"), std::string::npos)
      << failed.status().ToString();
}

TEST(LambdaRecordProbeTest, AnObjectOverTheRecordLimitIsNeverReadAndTheLookGoesOn) {
  FakeClock clock;
  FakeObjectStore store("s3://fails", &clock);
  LambdaRecordProbe probe(store, "fails", clock, {"orders"});
  store.Insert(RecordKey("orders", clock.Now(), "huge"), std::string(kMaxLambdaRecordBytes + 1, 'x'));
  store.FailNextGet(Internal("the oversized object was read"));
  auto found = probe.Find({{"lambda-request:req-1", {"m1", "lambda-request:req-1", kFnArn}}});
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_TRUE(found->empty());
  EXPECT_EQ(probe.receives(), 1u) << "looked at once, skipped by its listed size";
}

// `replay --from-lambda-records s3://fails --to-origin` on fakes: the
// function "orders" sends its failed events to the bucket; a payload with
// "bug" fails (synchronously a function error; asynchronously a new record
// in the bucket, as Lambda writes it) unless fixed.
class LambdaRecordsRunTest : public ::testing::Test {
 protected:
  LambdaRecordsRunTest() : sqs_(clock_), records_("s3://fails", &clock_), audit_("s3://ops", &clock_) {
    FunctionConfiguration f;
    f.function_name = "orders";
    f.function_arn = kFnArn;
    f.timeout_seconds = 3;
    lambda_.AddFunction(f);
    lambda_.SetEventInvokeConfig("orders", {.maximum_retry_attempts = 0,
                                            .maximum_event_age_seconds = std::nullopt,
                                            .on_failure_destination = "arn:aws:s3:::fails",
                                            .on_success_destination = ""});
    lambda_.SetInvokeHandler([this](const InvokeRequest& rq) { return Handle(rq); });
    deps_.sqs = &sqs_;
    deps_.open_store = [this](const Destination& d) -> Result<std::shared_ptr<ObjectStore>> {
      ObjectStore* s = d.bucket == "fails" ? static_cast<ObjectStore*>(&records_) : &audit_;
      return std::shared_ptr<ObjectStore>(s, [](ObjectStore*) {});
    };
    deps_.region = "us-east-1";
    deps_.clock = &clock_;
    deps_.lambda = &lambda_;
    rq_.from_lambda_records = "s3://fails";
    rq_.audit_to = "s3://ops/replays";
    rq_.to_origin = true;
  }

  Result<InvokeResult> Handle(const InvokeRequest& rq) {
    InvokeResult r;
    r.request_id = fmt::format("new-{}", ++invocations_);
    const bool fails = rq.payload.find("bug") != std::string::npos && !fixed_;
    if (rq.type == InvocationType::kRequestResponse) {
      r.status_code = 200;
      if (fails) r.function_error = "Unhandled";
      return r;
    }
    r.status_code = 202;
    if (fails) records_.Insert(RecordKey("orders", clock_.Now(), r.request_id), RecordText(r.request_id, rq.payload));
    return r;
  }

  void Records(int n, const std::string& text) {
    for (int i = 0; i < n; ++i) {
      const std::string id = fmt::format("old-{}-{}", text, i);
      records_.Insert(RecordKey("orders", clock_.Now() - std::chrono::hours(30), id),
                      RecordText(id, fmt::format(R"({{ "n": {}, "t": "{}" }})", i, text)));
    }
  }

  void Guarded(uint64_t canary) { GuardFast(rq_.plan, canary); }

  ReplayRunResult Run() { return RunReplayUseCase(rq_, deps_, observer_, stop_); }

  FakeClock clock_;
  FakeQueueClient sqs_;
  FakeObjectStore records_, audit_;
  FakeLambdaApi lambda_;
  ReplayRunDeps deps_;
  ReplayRunRequest rq_;
  ReplayObserver observer_;
  std::atomic<bool> stop_{false};
  std::atomic<int> invocations_{0};
  bool fixed_ = false;
};

TEST_F(LambdaRecordsRunTest, EachRecordsRequestPayloadIsInvokedOnceAndARerunSendsNothing) {
  Records(6, "ok");
  fixed_ = true;
  Guarded(1);
  ReplayRunResult r = Run();
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_EQ(r.end, ReplayEnd::kDone);
  EXPECT_EQ(r.buckets.selected, 6u);
  EXPECT_EQ(r.buckets.sent, 6u);
  EXPECT_EQ(r.buckets.Sum(), r.buckets.selected);
  std::vector<std::string> payloads;
  for (const InvokeRequest& rq : lambda_.invocations()) {
    payloads.push_back(rq.payload);
    EXPECT_EQ(rq.function_name, kFnArn) << "the record's functionArn";
    EXPECT_EQ(rq.qualifier, "") << "its $LATEST is the function itself";
  }
  ASSERT_EQ(payloads.size(), 6u);
  EXPECT_NE(std::find(payloads.begin(), payloads.end(), R"({ "n": 0, "t": "ok" })"), payloads.end())
      << "requestPayload's exact text";
  EXPECT_FALSE(r.audit.empty());
  EXPECT_EQ(records_.Keys().size(), 6u) << "Lambda's bucket is only read";

  ReplayRunResult again = Run();
  ASSERT_TRUE(again.error.ok()) << again.error.ToString();
  EXPECT_EQ(again.buckets.already_replayed, 6u);
  EXPECT_EQ(lambda_.invocations().size(), 6u) << "the rerun sent nothing";
}

TEST_F(LambdaRecordsRunTest, TheBugStillThereIsStoppedByTheCanary) {
  Records(10, "bug");
  Guarded(1);
  ReplayRunResult r = Run();
  EXPECT_EQ(r.end, ReplayEnd::kRefailed) << r.error.ToString();
  EXPECT_EQ(lambda_.invocations().size(), 1u) << "only the canary reached the still-failing function";
  EXPECT_EQ(r.buckets.failed, 1u);
  EXPECT_EQ(r.buckets.Sum(), r.buckets.selected);
}

TEST_F(LambdaRecordsRunTest, AnAsynchronousReFailureIsFoundAsANewRecordInTheBucketAndStopsTheRamp) {
  Records(2, "fine");
  Records(20, "bug");
  lambda_.SetInvokeHandler(CanaryPasses([this](const InvokeRequest& rq) { return Handle(rq); }));
  Guarded(2);
  rq_.plan.max_refailures = 0;
  ReplayRunResult r = Run();
  EXPECT_EQ(r.end, ReplayEnd::kRefailed) << r.error.ToString();
  ASSERT_TRUE(r.guard.has_value());
  ASSERT_FALSE(r.guard->status.refailures.empty());
  for (const RefailedMessage& m : r.guard->status.refailures) {
    EXPECT_EQ(m.new_message_id.rfind("lambda-request:new-", 0), 0u) << m.new_message_id;
    EXPECT_EQ(m.dlq.rfind("s3://fails/aws/lambda/async/orders/", 0), 0u) << m.dlq;
  }
  EXPECT_LT(lambda_.invocations().size(), 22u) << "the ramp stopped before the end";
  EXPECT_EQ(r.buckets.Sum(), r.buckets.selected);
}

TEST_F(LambdaRecordsRunTest, ADestinationTheCanaryCannotWatchIsRefusedNamingIt) {
  Records(3, "ok");
  lambda_.SetEventInvokeConfig("orders", {.maximum_retry_attempts = std::nullopt,
                                          .maximum_event_age_seconds = std::nullopt,
                                          .on_failure_destination = "arn:aws:sns:us-east-1:123456789012:alerts",
                                          .on_success_destination = ""});
  Guarded(1);
  ReplayRunResult r = Run();
  EXPECT_EQ(r.end, ReplayEnd::kBadInput);
  EXPECT_NE(r.error.message().find("sends its failed events to arn:aws:sns:us-east-1:123456789012:alerts (OnFailure "
                                   "destination), which a canary cannot watch"),
            std::string::npos)
      << r.error.ToString();
  EXPECT_TRUE(lambda_.invocations().empty());
}

TEST_F(LambdaRecordsRunTest, WithoutTheAuditLocationOrToOriginNothingIsReadAndWhatIsNotARecordIsCounted) {
  Records(2, "ok");
  rq_.audit_to.clear();
  ReplayRunResult no_audit = Run();
  EXPECT_EQ(no_audit.end, ReplayEnd::kBadInput);
  EXPECT_NE(no_audit.error.message().find("the audit record and the record of what was sent need"), std::string::npos)
      << no_audit.error.ToString();
  rq_.audit_to = "s3://ops/replays";
  rq_.to_origin = false;
  rq_.to_queue = "q";
  EXPECT_EQ(Run().end, ReplayEnd::kBadInput);
  EXPECT_TRUE(lambda_.invocations().empty());

  rq_.to_origin = true;
  rq_.to_queue.clear();
  records_.Insert(RecordKey("orders", clock_.Now(), "junk"), "{\"truncated\":");
  ReplayRunResult r = Run();
  EXPECT_EQ(r.end, ReplayEnd::kSkippedInput) << r.error.ToString();
  EXPECT_EQ(r.buckets.sent, 2u);
  ASSERT_TRUE(r.scan.has_value());
  EXPECT_EQ(r.scan->skipped_objects, 1u);
}

TEST_F(LambdaRecordsRunTest, WhereFailuresGoUnreadableRefusesACanaryButNotAPlainRun) {
  Records(3, "ok");
  lambda_.Deny("GetFunctionEventInvokeConfig");
  Guarded(1);
  ReplayRunResult guarded = Run();
  EXPECT_EQ(guarded.end, ReplayEnd::kBadInput);
  EXPECT_NE(guarded.error.message().find("allow lambda:GetFunctionEventInvokeConfig, or replay without a canary"),
            std::string::npos)
      << guarded.error.ToString();
  EXPECT_TRUE(lambda_.invocations().empty());

  rq_.plan = {};
  ReplayRunResult plain = Run();
  ASSERT_TRUE(plain.error.ok()) << plain.error.ToString();
  EXPECT_EQ(plain.buckets.sent, 3u) << "a plain run does not need to know";
}

TEST_F(LambdaRecordsRunTest, ABucketThatCannotBeListedSendsNothingAndSaysWhy) {
  Records(3, "ok");
  records_.FailNextList(PermissionDenied("AccessDenied: s3:ListBucket on fails"));
  ReplayRunResult r = Run();
  EXPECT_EQ(r.end, ReplayEnd::kError);
  EXPECT_FALSE(r.reached_sending);
  EXPECT_NE(r.error.message().find("s3:ListBucket"), std::string::npos) << r.error.ToString();
  EXPECT_TRUE(lambda_.invocations().empty());
}

}  // namespace
}  // namespace dlq
