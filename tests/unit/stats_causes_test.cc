// `stats`, `show` and `search` with causes: the sidecar's causes on each
// group (groups sharing a cause merged), `stats --causes` looking up a
// sample per group with fakes and keeping the answers, `show`'s cause
// section and `search --cause`.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>
#include <stdio.h>

#include <atomic>
#include <string>

#include "app/search_command.h"
#include "app/show_command.h"
#include "app/stats_command.h"
#include "archive/gzip.h"
#include "archive/key_layout.h"
#include "causes/sidecar.h"
#include "common/crypto.h"
#include "common/time_util.h"
#include "testing/fake_clock.h"
#include "testing/fake_lambda_api.h"
#include "testing/fake_logs.h"
#include "testing/fake_object_store.h"
#include "testing/fake_queue.h"
#include "unit/file_capture.h"

namespace dlq {
namespace {

const SystemTime kT = *ParseIso8601("2023-11-14T10:00:00Z");
constexpr char kGroup[] = "/aws/lambda/orders-worker";

class StatsCausesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dlq_url = *sqs_.CreateQueue("orders-dlq", {});
    const std::string dlq_arn = sqs_.GetQueueAttributes(dlq_url, {"QueueArn"})->at("QueueArn");
    const std::string source_url = *sqs_.CreateQueue(
        "orders", {{"RedrivePolicy", fmt::format(R"({{"deadLetterTargetArn":"{}","maxReceiveCount":2}})", dlq_arn)}});
    const std::string source_arn = sqs_.GetQueueAttributes(source_url, {"QueueArn"})->at("QueueArn");
    FunctionConfiguration f;
    f.function_name = "orders-worker";
    lambda_.AddFunction(f);
    lambda_.AddEventSourceMapping(
        {"esm-1", "arn:aws:lambda:us-east-1:123456789012:function:orders-worker", source_arn, "Enabled", {}, 10});
    logs_.AddGroup(kGroup, 30);

    ArchiveContext ctx;
    ctx.queue = "orders-dlq";
    ctx.queue_url = dlq_url;
    ctx.region = "us-east-1";
    ctx.account_id = "123456789012";
    std::string lines;
    // Two body shapes failing with one cause (3 + 2 messages), and a third shape nobody logged (2).
    const int64_t sent = ToUnixMillis(kT);
    for (int i = 0; i < 7; ++i) {
      Message m;
      m.message_id = fmt::format("{:08d}-0000-4000-8000-000000000000", i);
      m.body = i < 3   ? fmt::format(R"({{"sku":"S{}"}})", i)
               : i < 5 ? fmt::format(R"({{"item":{{"sku":"S{}"}}}})", i)
                       : fmt::format(R"({{"ping":{}}})", i);
      m.md5_of_body = Md5Hex(m.body);
      m.attributes["SentTimestamp"] = std::to_string(sent + i);
      m.attributes["DeadLetterQueueSourceArn"] = source_arn;
      AppendRecordJson(m, ctx, kT + std::chrono::minutes(5), lines);
      if (i < 5) {
        const std::string rid = fmt::format("req-{}", i), stream = "2023/11/14/[$LATEST]s" + std::to_string(i);
        const int64_t at = sent + 60'000 + i;
        logs_.AddEvent(kGroup, stream, at, fmt::format("START RequestId: {} Version: $LATEST\n", rid));
        logs_.AddEvent(kGroup, stream, at + 1, fmt::format("handling \x1b[31m{}\n", m.message_id));
        logs_.AddEvent(kGroup, stream, at + 2,
                       fmt::format("[ERROR] ValueError: bad sku 'S{}'\nTraceback (most recent call last):\n", i));
        logs_.AddEvent(kGroup, stream, at + 3, fmt::format("END RequestId: {}\n", rid));
      }
    }
    setup_calls_ = AllCalls();
    store_.Insert(KeyTemplate::Default().Render({"dlq-archive", "orders-dlq", "", "", kT, "00000000000000aa"}),
                  GzipCompress(lines, 1).value());
  }

  int RunStats(StatsCommandOptions o, std::string& out_text, std::string& err_text) {
    o.group_by = "fingerprint";
    o.output = o.output.empty() ? "json" : o.output;
    Capture out, err;
    std::atomic<bool> stop{false};
    ExplainClients clients{sqs_, lambda_, logs_, clock_};
    int rc = RunStatsCommand(o, store_, from_, clock_.Now(), false, stop, out.f(), err.f(), &clients);
    out_text = out.str();
    err_text = err.str();
    return rc;
  }

  // Calls made since SetUp.
  int Calls() const { return AllCalls() - setup_calls_; }
  int AllCalls() const {
    return logs_.filter_calls() + logs_.describe_calls() + lambda_.calls("ListEventSourceMappings") +
           lambda_.calls("GetFunctionConfiguration") +
           sqs_.calls(FakeQueueClient::Operation::kListDeadLetterSourceQueues) +
           sqs_.calls(FakeQueueClient::Operation::kGetQueueAttributes);
  }

  FakeClock clock_{kT + std::chrono::hours(1)};
  FakeQueueClient sqs_{clock_};
  FakeLambdaApi lambda_;
  FakeLogsClient logs_;
  FakeObjectStore store_;
  Destination from_ = ParseDestination("s3://bucket").value();
  int setup_calls_ = 0;
};

TEST_F(StatsCausesTest, WithoutKeptCausesTheOutputHasNoCauseColumns) {
  std::string out, err;
  StatsCommandOptions o;
  o.output = "table";
  ASSERT_EQ(RunStats(o, out, err), 0) << err;
  EXPECT_EQ(out.find("CAUSE"), std::string::npos) << out;
  EXPECT_EQ(out.find("FOUND"), std::string::npos);
  o.output = "json";
  ASSERT_EQ(RunStats(o, out, err), 0) << err;
  EXPECT_EQ(out.find("\"cause\""), std::string::npos) << out;
  EXPECT_EQ(Calls(), 0);
}

TEST_F(StatsCausesTest, CausesAreLookedUpKeptAndGroupsSharingACauseMerge) {
  std::string out, err;
  StatsCommandOptions o;
  o.causes.look_up = true;
  o.causes.samples = 2;
  ASSERT_EQ(RunStats(o, out, err), 0) << err;
  // Two samples in each of three groups: 4 found, 2 not mentioned; two FilterLogEvents per found one.
  EXPECT_NE(err.find("causes: 6 messages sampled, 6 looked up, 0 already kept"), std::string::npos) << err;
  EXPECT_NE(err.find("FilterLogEvents 10 (at most 200)"), std::string::npos) << err;
  EXPECT_NE(err.find("logs /aws/lambda/orders-worker: function orders-worker (event source mapping esm-1"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("6 answers kept in dlq-archive/_causes/orders-dlq/"), std::string::npos) << err;

  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(out);
  simdjson::dom::array groups = doc["groups"].get_array();
  ASSERT_EQ(groups.size(), 2u) << out;
  simdjson::dom::element merged = groups.at(0);
  EXPECT_EQ(int64_t(merged["count"]), 5);
  EXPECT_EQ(std::string_view(merged["cause"]["type"]), "ValueError");
  EXPECT_EQ(std::string_view(merged["cause"]["key"]), "ValueError: bad sku <str>");
  EXPECT_EQ(int64_t(merged["cause"]["found"]), 4);
  EXPECT_EQ(int64_t(merged["cause"]["answered"]), 4);
  EXPECT_EQ(merged["cause"]["merged_keys"].get_array().size(), 1u);
  simdjson::dom::element unknown = groups.at(1);
  EXPECT_EQ(int64_t(unknown["count"]), 2);
  EXPECT_EQ(std::string_view(unknown["cause"]["absence"]), "not_mentioned");
  EXPECT_NE(std::string_view(unknown["cause"]["reason"]).find("no log line in /aws/lambda/orders-worker mentions"),
            std::string_view::npos);

  // Read again from the sidecar: the same causes, no call; and --causes again looks nothing up.
  const int calls = AllCalls();
  StatsCommandOptions plain;
  plain.output = "table";
  std::string table;
  ASSERT_EQ(RunStats(plain, table, err), 0) << err;
  EXPECT_NE(table.find("FOUND"), std::string::npos) << table;
  EXPECT_NE(table.find("4/4"), std::string::npos) << table;
  EXPECT_NE(table.find("ValueError: bad sku <str>"), std::string::npos) << table;
  EXPECT_NE(table.find("(+1 group with the same cause)"), std::string::npos) << table;
  EXPECT_NE(table.find("(none: not_mentioned)"), std::string::npos) << table;
  EXPECT_EQ(AllCalls(), calls);
  std::string again;
  ASSERT_EQ(RunStats(o, again, err), 0) << err;
  EXPECT_NE(err.find("6 already kept; 0 calls"), std::string::npos) << err;
  EXPECT_EQ(AllCalls(), calls);
  EXPECT_EQ(again, out);
}

TEST_F(StatsCausesTest, ShowPrintsTheCauseWithItsLogLinesTerminalSafeAndSearchFindsByCause) {
  std::string out, err;
  StatsCommandOptions o;
  o.causes.look_up = true;
  ASSERT_EQ(RunStats(o, out, err), 0) << err;

  ShowCommandOptions show;
  show.message_id = "00000001-0000-4000-8000-000000000000";
  Capture shown, show_err;
  ASSERT_EQ(RunShowCommand(show, store_, from_, shown.f(), show_err.f()), 0) << show_err.str();
  const std::string text = shown.str();
  EXPECT_NE(text.find("\ncause:\n"), std::string::npos) << text;
  EXPECT_NE(text.find("ValueError: bad sku 'S1'"), std::string::npos) << text;
  EXPECT_NE(text.find(fmt::format("{:<26} {}\n", "  log group", kGroup)), std::string::npos) << text;
  EXPECT_NE(text.find(fmt::format("{:<26} req-1\n", "  request id")), std::string::npos) << text;
  EXPECT_NE(text.find("  log lines:\n    START RequestId: req-1"), std::string::npos) << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << "terminal escape reached the output";

  show.message_id = "00000005-0000-4000-8000-000000000000";
  Capture absent, absent_err;
  ASSERT_EQ(RunShowCommand(show, store_, from_, absent.f(), absent_err.f()), 0);
  EXPECT_NE(absent.str().find("none found (not_mentioned)"), std::string::npos) << absent.str();
  EXPECT_NE(absent.str().find("doc/causes.md"), std::string::npos);

  SearchCommandOptions search;
  search.output = "ids";
  search.cause = "BAD SKU";
  Capture ids, search_err;
  ASSERT_EQ(RunSearchCommand(search, store_, from_, kT, false, ids.f(), search_err.f()), 0) << search_err.str();
  // The default sample is 3 per group: 3 of the first shape, 2 of the second.
  EXPECT_EQ(ids.str(),
            "00000000-0000-4000-8000-000000000000\n00000001-0000-4000-8000-000000000000\n"
            "00000002-0000-4000-8000-000000000000\n00000003-0000-4000-8000-000000000000\n"
            "00000004-0000-4000-8000-000000000000\n");
  search.cause = "timeout";
  Capture none, none_err;
  ASSERT_EQ(RunSearchCommand(search, store_, from_, kT, false, none.f(), none_err.f()), 0);
  EXPECT_EQ(none.str(), "");
}

}  // namespace
}  // namespace dlq
