#include "causes/cause.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/json_writer.h"

namespace dlq {
namespace {

constexpr char kGroup[] = "/aws/lambda/orders-consumer";
constexpr char kStream[] = "2024/05/01/[$LATEST]0f1e2d3c4b5a69788796a5b4c3d2e1f0";
constexpr char kRequest[] = "6bc28136-4f1a-4365-b021-0ce6b2e64ab0";
constexpr char kOtherRequest[] = "a1b2c3d4-0000-4111-8222-933344445555";

// Ten SQS message ids of one batch.
std::vector<std::string> BatchIds() {
  std::vector<std::string> ids;
  for (int i = 0; i < 10; ++i) ids.push_back("059f36b4-87a3-44ab-83d2-66197583" + std::to_string(1000 + i));
  return ids;
}

// Builds a stream's events one line at a time, 1 ms apart.
class Stream {
 public:
  explicit Stream(std::string stream = kStream, int64_t start_ms = 1'714'557'600'000)
      : stream_(std::move(stream)), now_(start_ms) {}
  Stream& Add(std::string message) {
    events_.push_back(LogEvent{kGroup, stream_, now_++, std::move(message) + "\n"});
    return *this;
  }
  Stream& Start(const std::string& request) { return Add("START RequestId: " + request + " Version: $LATEST"); }
  Stream& End(const std::string& request, int used_mb = 71) {
    Add("END RequestId: " + request);
    return Add("REPORT RequestId: " + request +
               "\tDuration: 812.10 ms\tBilled Duration: 813 ms\tMemory Size: 128 MB\t" +
               "Max Memory Used: " + std::to_string(used_mb) + " MB\t");
  }
  Stream& PythonInfo(const std::string& request, const std::string& text) {
    return Add("[INFO]\t2024-05-01T10:00:00.100Z\t" + request + "\t" + text);
  }
  Stream& NodeInfo(const std::string& request, const std::string& text) {
    return Add("2024-05-01T10:00:00.100Z\t" + request + "\tINFO\t" + text);
  }
  std::vector<LogEvent> events() const { return events_; }

 private:
  std::string stream_;
  int64_t now_;
  std::vector<LogEvent> events_;
};

bool ValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8SequenceLength(reinterpret_cast<const unsigned char*>(s.data() + i), s.size() - i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

TEST(CausesCause, BatchOfTenOneFailsWithAPartialBatchLine) {
  const std::vector<std::string> ids = BatchIds();
  Stream s;
  s.Start(kRequest);
  for (const std::string& id : ids) s.PythonInfo(kRequest, "Processing message " + id);
  s.Add(std::string("[ERROR]\t2024-05-01T10:00:00.200Z\t") + kRequest + "\tRecord " + ids[3] +
        " failed: KeyError 'customer_id'");
  s.PythonInfo(kRequest, "Reporting 1 batch item failure");
  s.End(kRequest);
  CauseFinder finder(s.events());

  CauseResult failed = finder.Find(ids[3]);
  ASSERT_EQ(failed.outcome, CauseOutcome::kFound);
  EXPECT_TRUE(failed.cause->batch_partial);
  EXPECT_EQ(failed.cause->message, "Record " + ids[3] + " failed: KeyError 'customer_id'");
  EXPECT_EQ(failed.cause->key, "Record <msg-id> failed: KeyError <str>");
  EXPECT_EQ(failed.cause->request_id, kRequest);
  EXPECT_EQ(failed.cause->log_group, kGroup);
  EXPECT_EQ(failed.cause->log_stream, kStream);

  // The other nine were processed by an invocation that failed only for ids[3].
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i == 3) continue;
    EXPECT_EQ(finder.Find(ids[i], ids).outcome, CauseOutcome::kNoError) << ids[i];
  }
  EXPECT_EQ(finder.Find(ids[3], ids).cause->key, failed.cause->key);
}

TEST(CausesCause, APartialFailureInStructuredLogsDoesNotSpreadToTheBatch) {
  const std::vector<std::string> ids = BatchIds();
  const std::string rid = kRequest;
  Stream s;
  s.Start(kRequest);
  for (const std::string& id : ids) {
    s.Add(R"json({"level":"INFO","message":"Processing record","function_request_id":")json" + rid +
          R"json(","sqs_message_id":")json" + id + R"json("})json");
  }
  s.Add(
      R"json({"level":"ERROR","message":"Record failed","function_request_id":")json" + rid +
      R"json(","sqs_message_id":")json" + ids[7] +
      R"json(","exception_name":"ValidationError","exception":"Traceback (most recent call last):\n  File \"/var/task/app.py\", line 8\nValidationError: sku ABC-123 unknown"})json");
  s.End(kRequest);
  CauseFinder finder(s.events());
  CauseResult failed = finder.Find(ids[7]);
  ASSERT_EQ(failed.outcome, CauseOutcome::kFound);
  EXPECT_TRUE(failed.cause->batch_partial);
  EXPECT_EQ(failed.cause->type, "ValidationError");
  EXPECT_EQ(failed.cause->message, "sku ABC-123 unknown");
  EXPECT_EQ(failed.cause->key, "ValidationError: sku ABC-<num> unknown");
  EXPECT_EQ(finder.Find(ids[0]).outcome, CauseOutcome::kNoError);  // no ids passed: the field tells
}

TEST(CausesCause, BatchOfTenAllGetTheUncaughtErrorOfTheirInvocation) {
  const std::vector<std::string> ids = BatchIds();
  Stream s;
  s.Start(kRequest);
  for (const std::string& id : ids) s.NodeInfo(kRequest, "processing " + id);
  s.Add(
      std::string("2024-05-01T10:00:00.900Z\t") + kRequest +
      "\tERROR\tInvoke Error \t"
      R"json({"errorType":"Error","errorMessage":"stock service returned 503","stack":["Error: stock service returned 503","    at reserve (/var/task/index.mjs:14:11)"]})json");
  s.End(kRequest);
  CauseFinder finder(s.events());
  for (const std::string& id : ids) {
    CauseResult r = finder.Find(id);
    ASSERT_EQ(r.outcome, CauseOutcome::kFound) << id;
    EXPECT_FALSE(r.cause->batch_partial);
    EXPECT_EQ(r.cause->type, "Error");
    EXPECT_EQ(r.cause->message, "stock service returned 503");
    EXPECT_EQ(r.cause->key, "Error: stock service returned <num>");
    EXPECT_EQ(r.cause->stack, "Error: stock service returned 503\n    at reserve (/var/task/index.mjs:14:11)");
    EXPECT_EQ(r.cause->request_id, kRequest);
  }
}

TEST(CausesCause, ALineNamingTheMessageBeatsTheInvocationsUncaughtError) {
  const std::vector<std::string> ids = BatchIds();
  Stream s;
  s.Start(kRequest);
  for (const std::string& id : ids) s.PythonInfo(kRequest, "Processing message " + id);
  s.Add(std::string("[ERROR]\t2024-05-01T10:00:00.200Z\t") + kRequest + "\tbad payload in " + ids[3]);
  s.Add(
      "[ERROR] RuntimeError: 1 of 10 records failed\rTraceback (most recent call last):\r  File \"/var/task/app.py\"");
  s.End(kRequest);
  CauseFinder finder(s.events());
  CauseResult own = finder.Find(ids[3]);
  ASSERT_EQ(own.outcome, CauseOutcome::kFound);
  EXPECT_TRUE(own.cause->batch_partial);
  EXPECT_EQ(own.cause->message, "bad payload in " + ids[3]);
  CauseResult other = finder.Find(ids[4]);
  ASSERT_EQ(other.outcome, CauseOutcome::kFound);
  EXPECT_FALSE(other.cause->batch_partial);
  EXPECT_EQ(other.cause->type, "RuntimeError");
}

TEST(CausesCause, ALineWithoutARequestIdBelongsToItsStartEndBracket) {
  const std::string id = BatchIds()[0];
  Stream s;
  s.Start(kOtherRequest).Add("print: got " + BatchIds()[1]).End(kOtherRequest);
  s.Start(kRequest);
  s.Add("got message " + id);  // print(): no prefix, no request id
  s.Add(
      "[ERROR] ValueError: quantity must be positive, got -3\nTraceback (most recent call last):\n"
      "  File \"/var/task/app.py\", line 9, in handler\n    raise ValueError(...)");
  s.End(kRequest);
  s.Start(kOtherRequest).Add("idle").End(kOtherRequest);
  CauseResult r = FindCause(id, s.events());
  ASSERT_EQ(r.outcome, CauseOutcome::kFound);
  EXPECT_EQ(r.cause->type, "ValueError");
  EXPECT_EQ(r.cause->message, "quantity must be positive, got -3");
  EXPECT_EQ(r.cause->key, "ValueError: quantity must be positive, got <num>");
  EXPECT_EQ(r.cause->request_id, kRequest);  // the bracket's
  EXPECT_NE(r.cause->stack.find("line 9, in handler"), std::string::npos);
  // The message in the other invocation: that one did not fail.
  EXPECT_EQ(FindCause(BatchIds()[1], s.events()).outcome, CauseOutcome::kNoError);
}

TEST(CausesCause, TimeoutIsACause) {
  const std::string id = BatchIds()[0];
  Stream s;
  s.Start(kRequest).NodeInfo(kRequest, "processing " + id);
  s.Add(std::string("2024-05-01T10:00:03.021Z ") + kRequest + " Task timed out after 3.00 seconds");
  s.End(kRequest);
  CauseResult r = FindCause(id, s.events());
  ASSERT_EQ(r.outcome, CauseOutcome::kFound);
  EXPECT_EQ(r.cause->type, "Task timed out");
  EXPECT_EQ(r.cause->key, "Task timed out: Task timed out after <num> seconds");
}

TEST(CausesCause, KilledAtTheMemoryLimitIsOutOfMemoryAndBelowItAnExit) {
  const std::string id = BatchIds()[0];
  for (int used : {128, 90}) {
    Stream s;
    s.Start(kRequest).PythonInfo(kRequest, "loading " + id);
    s.Add(std::string("RequestId: ") + kRequest + " Error: Runtime exited with error: signal: killed");
    s.Add("Runtime.ExitError");
    s.End(kRequest, used);
    CauseResult r = FindCause(id, s.events());
    ASSERT_EQ(r.outcome, CauseOutcome::kFound);
    if (used == 128) {
      EXPECT_EQ(r.cause->type, "Runtime.OutOfMemory");
      EXPECT_EQ(r.cause->message,
                "Max Memory Used: 128 MB of Memory Size: 128 MB (Runtime exited with error: signal: killed)");
    } else {
      EXPECT_EQ(r.cause->type, "Runtime.ExitError");
      EXPECT_EQ(r.cause->message, "Runtime exited with error: signal: killed");
    }
    EXPECT_EQ(r.cause->request_id, kRequest);
  }
}

TEST(CausesCause, LambdaJsonFormatUncaughtErrorBeatsRuntimeDone) {
  const std::string id = BatchIds()[0];
  const std::string rid = kRequest;
  Stream s;
  s.Add(R"json({"time":"2024-05-01T10:00:00.000Z","type":"platform.start","record":{"requestId":")json" + rid +
        R"json(","version":"$LATEST"}})json");
  s.Add(R"json({"timestamp":"2024-05-01T10:00:00.100Z","level":"INFO","requestId":")json" + rid +
        R"json(","message":"processing )json" + id + R"json("})json");
  s.Add(
      R"json({"timestamp":"2024-05-01T10:00:00.300Z","level":"ERROR","errorMessage":"bad qty","errorType":"ValueError","requestId":")json" +
      rid + R"json(","stackTrace":["  File \"/var/task/app.py\", line 3, in handler\n"]})json");
  s.Add(R"json({"time":"2024-05-01T10:00:00.310Z","type":"platform.runtimeDone","record":{"requestId":")json" + rid +
        R"json(","status":"error","errorType":"Runtime.Unknown"}})json");
  s.Add(
      R"json({"time":"2024-05-01T10:00:00.320Z","type":"platform.report","record":{"requestId":")json" + rid +
      R"json(","metrics":{"durationMs":310.0,"billedDurationMs":311,"memorySizeMB":128,"maxMemoryUsedMB":70},"status":"error"}})json");
  CauseResult r = FindCause(id, s.events());
  ASSERT_EQ(r.outcome, CauseOutcome::kFound);
  EXPECT_EQ(r.cause->type, "ValueError");
  EXPECT_EQ(r.cause->message, "bad qty");
  EXPECT_EQ(r.cause->request_id, rid);
}

TEST(CausesCause, AServicesLinesJoinByTraceAndCorrelationIds) {
  const std::string id = BatchIds()[0];
  Stream s("orders-service/ecs/7d9f");
  s.Add(R"json({"level":"info","messageId":")json" + id +
        R"json(","correlationId":"corr-1","traceId":"t-1","msg":"received"})json");
  s.Add(R"json({"level":"info","correlationId":"corr-2","msg":"other work"})json");
  s.Add(R"json({"level":"error","correlationId":"corr-2","err":{"type":"Error","message":"unrelated"}})json");
  s.Add(R"json({"level":50,"traceId":"t-1","err":{"type":"PgError","message":"deadlock detected on orders 42"}})json");
  CauseResult r = FindCause(id, s.events());
  ASSERT_EQ(r.outcome, CauseOutcome::kFound);
  EXPECT_EQ(r.cause->type, "PgError");
  EXPECT_EQ(r.cause->key, "PgError: deadlock detected on orders <num>");
  EXPECT_TRUE(r.cause->request_id.empty());
  EXPECT_FALSE(r.cause->batch_partial);
}

TEST(CausesCause, TheLatestFailedInvocationWins) {
  const std::string id = BatchIds()[0];
  Stream first("stream-a", 1'000);
  first.Start(kOtherRequest).PythonInfo(kOtherRequest, "got " + id);
  first.Add("[ERROR] ConnectionError: db unreachable").End(kOtherRequest);
  Stream second("stream-b", 5'000);
  second.Start(kRequest).PythonInfo(kRequest, "got " + id);
  second.Add("[ERROR] IntegrityError: duplicate key").End(kRequest);
  std::vector<LogEvent> events = second.events();
  for (const LogEvent& e : first.events()) events.push_back(e);
  std::reverse(events.begin(), events.end());  // any order
  CauseResult r = FindCause(id, events);
  ASSERT_EQ(r.outcome, CauseOutcome::kFound);
  EXPECT_EQ(r.cause->type, "IntegrityError");
  EXPECT_EQ(r.cause->log_stream, "stream-b");
}

TEST(CausesCause, SaysWhetherTheMessageWasMentionedAtAll) {
  Stream s;
  s.Start(kRequest).PythonInfo(kRequest, "processing something else").End(kRequest);
  EXPECT_EQ(FindCause(BatchIds()[0], s.events()).outcome, CauseOutcome::kNotMentioned);
  EXPECT_EQ(FindCause("", s.events()).outcome, CauseOutcome::kNotMentioned);
  EXPECT_EQ(FindCause(BatchIds()[0], {}).outcome, CauseOutcome::kNotMentioned);
  EXPECT_FALSE(FindCause(BatchIds()[0], s.events()).cause);
}

TEST(CausesCause, MaskingGroupsMessagesThatDifferInIdsAndNumbers) {
  const std::vector<std::string> ids = BatchIds();
  Stream s;
  s.Start(kRequest);
  s.Add(std::string("[ERROR]\t2024-05-01T10:00:00.200Z\t") + kRequest + "\tmessage " + ids[0] +
        ": order 1234 for customer 'alice' rejected at 2024-05-01T10:00:00Z (trace 9f86d081884c7d65)");
  s.Add(std::string("[ERROR]\t2024-05-01T10:00:00.300Z\t") + kRequest + "\tmessage " + ids[1] +
        ": order 98 for customer \"bob\" rejected at 2024-05-02T11:12:13Z (trace 00aa11bb22cc33dd)");
  s.End(kRequest);
  CauseFinder finder(s.events());
  const Cause a = *finder.Find(ids[0]).cause, b = *finder.Find(ids[1]).cause;
  EXPECT_NE(a.message, b.message);
  EXPECT_EQ(a.key, b.key);
  EXPECT_EQ(a.key, "message <msg-id>: order <num> for customer <str> rejected at <ts> (trace <hex>)");
  EXPECT_NE(CauseKey("ValueError", "bad qty", ""), CauseKey("TypeError", "bad qty", ""));
  EXPECT_EQ(CauseKey("KeyError", "'customer_id'", ""), "KeyError: <str>");
  EXPECT_EQ(CauseKey("", "can't reach 10.0.0.5", ""), "can't reach <num>.<num>");  // an apostrophe is no quote
  EXPECT_LE(CauseKey("E", std::string(5000, 'x'), "").size(), 512u);
}

TEST(CausesCause, StackAndContextLinesAreCappedOnUtf8Boundaries) {
  const std::string id = BatchIds()[0];
  Stream s;
  s.Start(kRequest);
  for (int i = 0; i < 40; ++i) s.PythonInfo(kRequest, "step " + std::to_string(i) + " " + std::string(400, 'e'));
  s.PythonInfo(kRequest, "processing " + id);
  std::string frames;
  for (int i = 0; i < 400; ++i) frames += "  File \"/var/task/módulo_é.py\", line " + std::to_string(i) + ", in f\n";
  s.Add("[ERROR] RecursionError: maximum recursion depth exceeded\nTraceback (most recent call last):\n" + frames);
  for (int i = 0; i < 40; ++i)
    s.PythonInfo(kRequest, "after " + std::to_string(i) + " " + std::string(301, '\xC3') + "x");
  s.End(kRequest);
  CauseResult r = FindCause(id, s.events());
  ASSERT_EQ(r.outcome, CauseOutcome::kFound);
  EXPECT_EQ(r.cause->type, "RecursionError");
  EXPECT_LE(r.cause->stack.size(), 8u * 1024);
  EXPECT_GT(r.cause->stack.size(), 8u * 1024 - 8);
  EXPECT_TRUE(ValidUtf8(r.cause->stack));
  EXPECT_TRUE(r.cause->stack.ends_with("\xE2\x80\xA6"));
  ASSERT_EQ(r.cause->context_lines.size(), 20u);
  bool error_shown = false;
  for (const std::string& line : r.cause->context_lines) {
    EXPECT_LE(line.size(), 300u);
    error_shown = error_shown || line.starts_with("[ERROR] RecursionError");
  }
  EXPECT_TRUE(error_shown);

  // Cuts fall between characters: "é" is two bytes.
  EXPECT_EQ(TruncateUtf8("ééé", 6), "ééé");
  EXPECT_EQ(TruncateUtf8("éééé", 6), "\xC3\xA9\xE2\x80\xA6");  // 2 + 3 bytes: the next "é" would not fit
  EXPECT_EQ(TruncateUtf8("abcdef", 5), "ab\xE2\x80\xA6");
  EXPECT_EQ(TruncateUtf8("abcdef", 2), "");
}

TEST(CausesCause, ContextLinesShowTheInvocationAroundTheError) {
  const std::string id = BatchIds()[0];
  Stream s;
  s.Start(kRequest).PythonInfo(kRequest, "processing " + id);
  s.Add("[ERROR] ValueError: bad\nTraceback (most recent call last):\n  File \"/var/task/app.py\", line 3");
  s.End(kRequest);
  s.Start(kOtherRequest).PythonInfo(kOtherRequest, "next invocation").End(kOtherRequest);
  CauseResult r = FindCause(id, s.events());
  ASSERT_EQ(r.outcome, CauseOutcome::kFound);
  const std::vector<std::string>& lines = r.cause->context_lines;
  ASSERT_EQ(lines.size(), 7u);  // START, INFO, the error's 3 lines, END, REPORT; not the next invocation
  EXPECT_TRUE(lines[0].starts_with("START RequestId: "));
  EXPECT_TRUE(lines[2].starts_with("[ERROR] ValueError: bad"));
  EXPECT_EQ(lines[3], "Traceback (most recent call last):");
  EXPECT_TRUE(lines[6].starts_with("REPORT RequestId: "));
  for (const std::string& line : lines) EXPECT_EQ(line.find("next invocation"), std::string::npos);
}

TEST(CausesCause, MalformedJsonLinesAreIgnoredSafely) {
  const std::string id = BatchIds()[0];
  Stream s;
  s.Start(kRequest);
  s.Add(R"json({"level":"ERROR","messageId":")json" + id + R"json(","message":"cut)json");
  s.Add(R"json({"level":"ERROR","messageId":")json" + id + R"json(","err":{"type":)json");
  s.Add("{\"messageId\":\"" + id + "\",\"level\":\"ERROR\",\"bad\":\"\xFF\xFE\"}");
  s.End(kRequest);
  CauseResult r = FindCause(id, s.events());
  // Mentioned (the text holds the id) but nothing parseable failed: the lines are text with no level.
  EXPECT_EQ(r.outcome, CauseOutcome::kNoError);
  EXPECT_FALSE(r.cause);
}

}  // namespace
}  // namespace dlq
