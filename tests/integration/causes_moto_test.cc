// Why messages failed, end to end against moto: a source queue whose
// RedrivePolicy names a DLQ, messages that fail into it (received past
// maxReceiveCount) and are archived to a file:// archive, a Lambda consumer
// (function and event source mapping, which moto keeps without running) whose
// log group /aws/lambda/NAME holds lines written with PutLogEvents in the
// Python and Node.js plain-text formats, Lambda's JSON log format and
// Powertools' JSON; a consumer that does not log message ids; and a service
// named by --logs. `stats --causes` finds the causes written, keeps them in
// the archive's _causes/, and `show` and `search --cause` read them back.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/json_writer.h"
#include "daemon_process.h"
#include "harness.h"
#include "moto_fixtures.h"

namespace dlq::it {
namespace {

namespace fs = std::filesystem;

std::string Dlq(const StandIn& s, const std::string& args) {
  return s.ShellEnv() + DLQ_BINARY + " --endpoint-url " + s.endpoint() + " " + args;
}

// Receives every message of `source` past its maxReceiveCount (1) with its
// 1 s visibility timeout, so SQS (moto) moves them all to the DLQ.
void FailIntoDlq(AwsServices& svc, const std::string& source) {
  ReceiveOptions ro;
  ro.max_messages = 10;
  for (int round = 0; round < 2; ++round) {
    for (int n = 0; n < 3; ++n) ASSERT_TRUE(svc.sqs().ReceiveMessages(source, ro).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  }
  ASSERT_TRUE(svc.sqs().ReceiveMessages(source, ro).ok());  // the receive that moves them
}

// A Lambda function (kept by moto, never run) and its event source mapping on `source_arn`.
void AddLambdaConsumer(AwsClient& lambda_aws, const std::string& function, const std::string& runtime,
                       const std::string& handler, const std::string& role_arn, const std::string& source_arn) {
  JsonWriter fn;
  fn.BeginObject().Key("FunctionName").String(function).Key("Runtime").String(runtime);
  fn.Key("Role").String(role_arn).Key("Handler").String(handler);
  fn.Key("Code").BeginObject().Key("ZipFile").String(ZipBase64()).EndObject().Key("Timeout").Int(30).EndObject();
  LambdaCall(lambda_aws, "POST", "/2015-03-31/functions", fn.Take());
  JsonWriter esm;
  esm.BeginObject().Key("EventSourceArn").String(source_arn).Key("FunctionName").String(function);
  esm.Key("BatchSize").Int(10).EndObject();
  LambdaCall(lambda_aws, "POST", "/2015-03-31/event-source-mappings/", esm.Take());
}

TEST(CausesMotoTest, StatsFindsTheCausesTheConsumersLoggedAndShowPrintsThem) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  AwsClient logs_aws(svc->settings().Endpoint("logs"), svc->transport(), svc->credentials(), DefaultClock());
  AwsClient lambda_aws(svc->settings().Endpoint("lambda"), svc->transport(), svc->credentials(), DefaultClock());
  const std::string base = UniqueName("causes-it");
  const std::string function = base + "-worker", group = "/aws/lambda/" + function;
  const std::string service_group = "/ecs/" + base + "-svc";

  // The source queue fails every message into the DLQ on its second receive.
  auto dlq = svc->sqs().CreateQueue(base + "-dlq", {});
  ASSERT_TRUE(dlq.ok()) << dlq.status().ToString();
  const std::string dlq_arn = QueueArn(*svc, *dlq);
  auto source = svc->sqs().CreateQueue(
      base, {{"VisibilityTimeout", "1"},
             {"RedrivePolicy", fmt::format(R"j({{"deadLetterTargetArn":"{}","maxReceiveCount":"1"}})j", dlq_arn)}});
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  const std::string source_arn = QueueArn(*svc, *source);

  // Six messages of six body shapes (six failure groups).
  std::vector<std::string> ids;
  const char* fields[] = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot"};
  for (int i = 0; i < 6; ++i) {
    SendEntry e;
    e.body = fmt::format(R"j({{"{}":{}}})j", fields[i], 100 + i);
    auto sent = svc->sqs().SendMessage(*source, e);
    ASSERT_TRUE(sent.ok()) << sent.status().ToString();
    ids.push_back(sent->message_id);
  }
  FailIntoDlq(*svc, *source);

  // The Lambda consumer.
  const std::string role_arn = CreateRole(*svc, moto.endpoint(), base + "-role");
  ASSERT_FALSE(role_arn.empty());
  AddLambdaConsumer(lambda_aws, function, "python3.12", "app.handler", role_arn, source_arn);

  // Its logs: one invocation per message, one format each.
  const int64_t t = NowMs() - 30'000;
  const std::string s1 = "2026/01/05/[$LATEST]" + RandomHex(8), s2 = "2026/01/05/[$LATEST]" + RandomHex(8);
  const std::string s3 = "2026/01/05/[$LATEST]" + RandomHex(8), s4 = "2026/01/05/[$LATEST]" + RandomHex(8);
  const std::string s5 = "2026/01/05/[$LATEST]" + RandomHex(8);
  WriteLogs(
      logs_aws, group,
      {// Python, plain text: the runtime's uncaught error.
       {s1, t, "START RequestId: 11111111-aaaa-4000-8000-000000000001 Version: $LATEST"},
       {s1, t + 1, "[INFO]\t2026-01-05T10:00:00.001Z\t11111111-aaaa-4000-8000-000000000001\tprocessing " + ids[0]},
       {s1, t + 2,
        "[ERROR] KeyError: 'sku'\nTraceback (most recent call last):\n  File \"/var/task/app.py\", line 7, in handler"},
       {s1, t + 3, "END RequestId: 11111111-aaaa-4000-8000-000000000001"},
       // Node.js, plain text: Invoke Error.
       {s2, t + 10, "START RequestId: 22222222-aaaa-4000-8000-000000000002 Version: $LATEST"},
       {s2, t + 11, "2026-01-05T10:00:00.011Z\t22222222-aaaa-4000-8000-000000000002\tINFO\tprocessing " + ids[1]},
       {s2, t + 12,
        "2026-01-05T10:00:00.012Z\t22222222-aaaa-4000-8000-000000000002\tERROR\tInvoke Error \t"
        R"j({"errorType":"TypeError","errorMessage":"Cannot read properties of undefined (reading 'id')",)j"
        R"j("stack":["TypeError: Cannot read properties of undefined (reading 'id')","    at handler (/var/task/index.mjs:3:20)"]})j"},
       {s2, t + 13, "END RequestId: 22222222-aaaa-4000-8000-000000000002"},
       // Lambda's JSON log format.
       {s3, t + 20,
        R"j({"time":"2026-01-05T10:00:00.020Z","type":"platform.start","record":{"requestId":"33333333-aaaa-4000-8000-000000000003","version":"$LATEST"}})j"},
       {s3, t + 21,
        R"j({"timestamp":"2026-01-05T10:00:00.021Z","level":"INFO","requestId":"33333333-aaaa-4000-8000-000000000003","message":"processing )j" +
            ids[2] + R"j("})j"},
       {s3, t + 22,
        R"j({"timestamp":"2026-01-05T10:00:00.022Z","level":"ERROR","errorType":"ValueError","errorMessage":"quantity -3 is negative","requestId":"33333333-aaaa-4000-8000-000000000003","stackTrace":["  File \"/var/task/app.py\", line 3, in handler\n"]})j"},
       // Powertools (Python) structured logs with the message id field.
       {s4, t + 30, "START RequestId: 44444444-aaaa-4000-8000-000000000004 Version: $LATEST"},
       {s4, t + 31,
        R"j({"level":"INFO","location":"handler:12","message":"Processing record","timestamp":"2026-01-05 10:00:00,031+0000","service":"orders","function_request_id":"44444444-aaaa-4000-8000-000000000004","sqs_message_id":")j" +
            ids[3] + R"j("})j"},
       {s4, t + 32,
        R"j({"level":"ERROR","location":"handler:20","message":"Payment declined","timestamp":"2026-01-05 10:00:00,032+0000","service":"orders","function_request_id":"44444444-aaaa-4000-8000-000000000004","exception_name":"PaymentDeclined","exception":"Traceback (most recent call last):\n  File \"/var/task/app.py\", line 20\nPaymentDeclined: card ending 4242 declined"})j"},
       {s4, t + 33, "END RequestId: 44444444-aaaa-4000-8000-000000000004"},
       // A consumer that fails without naming the message (ids[4]).
       {s5, t + 40, "START RequestId: 55555555-aaaa-4000-8000-000000000005 Version: $LATEST"},
       {s5, t + 41, "[ERROR] RuntimeError: database unavailable\nTraceback (most recent call last):"},
       {s5, t + 42, "END RequestId: 55555555-aaaa-4000-8000-000000000005"}});
  // A service's own JSON logs, named by --logs (ids[5]).
  WriteLogs(logs_aws, service_group,
            {{"orders/task/1", t + 50,
              R"j({"level":"error","msg":"handler failed","messageId":")j" + ids[5] +
                  R"j(","error":{"name":"InventoryError","message":"no stock for item 77"},"trace_id":"t-1"})j"}});

  // Archive the DLQ.
  const fs::path dir = fs::temp_directory_path() / base;
  fs::create_directories(dir);
  auto archived =
      RunShell(Dlq(moto, "archive --queue " + base + "-dlq --to file://" + dir.string() + " --progress never"));
  ASSERT_EQ(archived.exit_code, 0) << archived.out;
  auto count = RunShell(Dlq(moto, "search --from file://" + dir.string() + " --output count"), false);
  ASSERT_EQ(count.out, "6\n") << "the six messages were not all dead-lettered and archived";

  auto stats = RunShell(Dlq(moto, "stats --from file://" + dir.string() + " --group-by fingerprint --output json " +
                                      "--causes --logs " + service_group + " 2>" + (dir / "stats.err").string()),
                        false);
  std::string err_text = RunShell("cat " + (dir / "stats.err").string()).out;
  ASSERT_EQ(stats.exit_code, 0) << stats.out << err_text;
  EXPECT_NE(err_text.find("logs " + group + ": function " + function + " (event source mapping"), std::string::npos)
      << err_text;
  EXPECT_NE(err_text.find("logs " + service_group + ": named by --logs"), std::string::npos) << err_text;
  EXPECT_NE(err_text.find("causes: 6 messages sampled, 6 looked up"), std::string::npos) << err_text;
  EXPECT_NE(err_text.find("FilterLogEvents "), std::string::npos) << err_text;

  // Each group's cause as written.
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(stats.out).get(doc), simdjson::SUCCESS) << stats.out;
  std::map<std::string, std::string> cause_of_example;  // example id -> "Type: message" or "(none: status)"
  for (simdjson::dom::element g : doc["groups"].get_array()) {
    const std::string id{std::string_view(g["example_id"])};
    simdjson::dom::element c;
    ASSERT_EQ(g["cause"].get(c), simdjson::SUCCESS) << stats.out;
    std::string_view absence;
    if (c["absence"].get(absence) == simdjson::SUCCESS) {
      cause_of_example[id] = fmt::format("(none: {})", absence);
    } else {
      cause_of_example[id] = fmt::format("{}: {}", std::string_view(c["type"]), std::string_view(c["message"]));
    }
  }
  EXPECT_EQ(cause_of_example[ids[0]], "KeyError: 'sku'");
  EXPECT_EQ(cause_of_example[ids[1]], "TypeError: Cannot read properties of undefined (reading 'id')");
  EXPECT_EQ(cause_of_example[ids[2]], "ValueError: quantity -3 is negative");
  EXPECT_EQ(cause_of_example[ids[3]], "PaymentDeclined: card ending 4242 declined");
  EXPECT_EQ(cause_of_example[ids[4]], "(none: not_mentioned)");
  EXPECT_EQ(cause_of_example[ids[5]], "InventoryError: no stock for item 77");

  // Kept in the archive: show answers from it, and says why none was found for ids[4].
  auto shown = RunShell(Dlq(moto, "show " + ids[3] + " --from file://" + dir.string()), false);
  ASSERT_EQ(shown.exit_code, 0) << shown.out;
  EXPECT_NE(shown.out.find("PaymentDeclined: card ending 4242 declined"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find(group), std::string::npos);
  EXPECT_NE(shown.out.find("44444444-aaaa-4000-8000-000000000004"), std::string::npos);
  EXPECT_NE(shown.out.find("log lines:"), std::string::npos);
  auto absent = RunShell(Dlq(moto, "show " + ids[4] + " --from file://" + dir.string()), false);
  ASSERT_EQ(absent.exit_code, 0) << absent.out;
  EXPECT_NE(absent.out.find("none found (not_mentioned)"), std::string::npos) << absent.out;
  EXPECT_NE(absent.out.find("no log line in " + group + " mentions " + ids[4]), std::string::npos) << absent.out;
  EXPECT_NE(absent.out.find("the consumer may not log the SQS message id"), std::string::npos);

  auto found = RunShell(Dlq(moto, "search --from file://" + dir.string() + " --cause 'payment' --output ids"), false);
  EXPECT_EQ(found.out, ids[3] + "\n");

  // A second run looks nothing up: every answer is kept.
  auto again = RunShell(Dlq(moto, "stats --from file://" + dir.string() +
                                      " --group-by fingerprint --output json --causes --logs " + service_group +
                                      " 2>&1 >/dev/null"));
  EXPECT_NE(again.out.find("6 already kept; 0 calls"), std::string::npos) << again.out;
  // ls and the scan see only the archive's objects, not _causes/.
  EXPECT_TRUE(fs::exists(dir / "dlq-archive" / "_causes" / (base + "-dlq")));
  auto listed = RunShell(Dlq(moto, "ls --from file://" + dir.string()), false);
  EXPECT_EQ(listed.out.find("_causes"), std::string::npos) << listed.out;
  fs::remove_all(dir);
}

// The daemon looks causes up for what it archives: a DLQ fed by a source
// whose Lambda consumer logs in Java's plain text (log4j2) and reports a
// partial batch failure, and a service named by consumer_logs: (its own JSON
// logs). The daemon archives to S3 on its expiry alarm, then its cause worker
// keeps the answers in _causes/, where `stats` reads them.
TEST(CausesMotoTest, TheDaemonLooksUpWhatItArchivesAndKeepsTheAnswers) {
  DLQ_REQUIRE_STAND_IN("moto", moto);
  auto svc = Services(moto);
  ASSERT_TRUE(svc);
  AwsClient logs_aws(svc->settings().Endpoint("logs"), svc->transport(), svc->credentials(), DefaultClock());
  AwsClient lambda_aws(svc->settings().Endpoint("lambda"), svc->transport(), svc->credentials(), DefaultClock());
  const std::string base = UniqueName("causes-daemon");
  const std::string function = base + "-worker", group = "/aws/lambda/" + function;
  const std::string service_group = "/ecs/" + base + "-svc";
  const std::string bucket = base + "-archive";
  ASSERT_TRUE(svc->s3_for(bucket).CreateBucket(bucket).ok());

  // A DLQ whose messages expire two minutes after they were sent, so its
  // expiry alarm (10 s) archives them at once.
  auto dlq = svc->sqs().CreateQueue(base + "-dlq", {{"MessageRetentionPeriod", "120"}});
  ASSERT_TRUE(dlq.ok()) << dlq.status().ToString();
  auto source = svc->sqs().CreateQueue(
      base, {{"VisibilityTimeout", "1"},
             {"RedrivePolicy",
              fmt::format(R"j({{"deadLetterTargetArn":"{}","maxReceiveCount":"1"}})j", QueueArn(*svc, *dlq))}});
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  const std::string source_arn = QueueArn(*svc, *source);

  // Four messages of four shapes: the consumer's logs must not be written
  // before their ids are known, so send first.
  std::vector<std::string> ids;
  const char* fields[] = {"order", "invoice", "refund", "receipt"};
  for (int i = 0; i < 4; ++i) {
    SendEntry e;
    e.body = fmt::format(R"j({{"{}":{}}})j", fields[i], 7 + i);
    auto sent = svc->sqs().SendMessage(*source, e);
    ASSERT_TRUE(sent.ok()) << sent.status().ToString();
    ids.push_back(sent->message_id);
  }
  const std::string role_arn = CreateRole(*svc, moto.endpoint(), base + "-role");
  ASSERT_FALSE(role_arn.empty());
  AddLambdaConsumer(lambda_aws, function, "java21", "example.Handler::handleRequest", role_arn, source_arn);

  const int64_t t = NowMs() - 20'000;
  const std::string ra = "6bc28136-4f1a-4365-b021-0ce6b2e64ab0", rb = "7cd39247-5a2b-4476-8132-1df7c3f75bc1";
  const std::string sa = "2026/11/29/[$LATEST]" + RandomHex(8), sb = "2026/11/29/[$LATEST]" + RandomHex(8);
  WriteLogs(logs_aws, group,
            {// Java (log4j2 plain text): ids[0] fails with an exception.
             {sa, t, "START RequestId: " + ra + " Version: $LATEST"},
             {sa, t + 1, "2026-11-29 10:00:00 " + ra + " INFO  Handler - processing " + ids[0]},
             {sa, t + 2,
              "2026-11-29 10:00:01 " + ra +
                  " ERROR Handler - payment failed\njava.lang.IllegalStateException: card declined for order 42\n"
                  "\tat example.Handler.charge(Handler.java:57)"},
             {sa, t + 3, "END RequestId: " + ra},
             // A batch of two (ids[1], ids[3]) where only ids[1] fails: a partial batch response.
             {sb, t + 10, "START RequestId: " + rb + " Version: $LATEST"},
             {sb, t + 11, "[INFO]\t2026-11-29T10:00:00.011Z\t" + rb + "\tProcessing message " + ids[1]},
             {sb, t + 12, "[INFO]\t2026-11-29T10:00:00.012Z\t" + rb + "\tProcessing message " + ids[3]},
             {sb, t + 13,
              "[ERROR]\t2026-11-29T10:00:00.013Z\t" + rb + "\tRecord " + ids[1] + " failed: KeyError 'customer_id'"},
             {sb, t + 14, "[INFO]\t2026-11-29T10:00:00.014Z\t" + rb + "\tReporting 1 batch item failure"},
             {sb, t + 15, "END RequestId: " + rb}});
  // The service named by consumer_logs: handles ids[2].
  WriteLogs(logs_aws, service_group,
            {{"orders/task/1", t + 20,
              R"j({"level":"error","msg":"handler failed","messageId":")j" + ids[2] +
                  R"j(","error":{"name":"InventoryError","message":"no stock for item 77"},"trace_id":"t-1"})j"}});

  // Every message fails into the DLQ (received past maxReceiveCount).
  FailIntoDlq(*svc, *source);

  const std::string dir = "/tmp/" + base;
  ASSERT_EQ(RunShell("mkdir -p " + dir).exit_code, 0);
  const int port = FreePort();
  ASSERT_GT(port, 0);
  const std::string config = dir + "/dlq-archive.yaml";
  WriteFile(config, fmt::format(R"(listen: 127.0.0.1:{}
collection_interval: 1s
sweep_interval: 2s
defaults:
  destination: s3://{}/dlq-archive
  visibility_timeout: 30s
  batch: {{ max_age: 1s }}
groups:
  - name: it
    endpoint_url: {}
    queues: [{}-dlq]
    causes: on
    consumer_logs: ["{}-dlq={}"]
    alarms:
      expiry: {{ threshold: 10s, period: 2s }}
      depth: {{ enabled: false }}
)",
                                port, bucket, moto.endpoint(), base, base, service_group));
  auto checked = RunShell(moto.ShellEnv() + DLQ_BINARY + " check --config " + config, false);
  EXPECT_NE(checked.out.find("logs " + group + ": function " + function), std::string::npos) << checked.out;
  EXPECT_NE(checked.out.find("logs " + service_group + ": named by consumer_logs"), std::string::npos) << checked.out;

  BackgroundDaemon daemon(moto, dir, config);
  const std::string metrics_url = "http://127.0.0.1:" + std::to_string(port) + "/metrics";
  const std::string found =
      fmt::format(R"(dlq_archive_cause_lookups_total{{queue="{}-dlq",region="us-east-1",status="found"}} 3)", base);
  const std::string no_error =
      fmt::format(R"(dlq_archive_cause_lookups_total{{queue="{}-dlq",region="us-east-1",status="no_error"}} 1)", base);
  std::string metrics = PollUntil(
      metrics_url, [&](const std::string& b) { return Has(b, found) && Has(b, no_error); }, 60);
  EXPECT_TRUE(Has(metrics, found) && Has(metrics, no_error)) << metrics << "\n--- log:\n" << daemon.Log();
  EXPECT_EQ(daemon.Stop(), "0\n") << daemon.Log();
  EXPECT_TRUE(Has(daemon.Log(), "causes_looked_up")) << daemon.Log();

  // The answers are kept in the archive: stats reads them, with no lookup.
  auto stats =
      RunShell(Dlq(moto, "stats --from s3://" + bucket + "/dlq-archive --group-by fingerprint --output json"), false);
  ASSERT_EQ(stats.exit_code, 0) << stats.out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(stats.out).get(doc), simdjson::SUCCESS) << stats.out;
  std::map<std::string, std::string> cause_of_example;
  for (simdjson::dom::element g : doc["groups"].get_array()) {
    const std::string id{std::string_view(g["example_id"])};
    simdjson::dom::element c;
    ASSERT_EQ(g["cause"].get(c), simdjson::SUCCESS) << stats.out;
    std::string_view absence;
    if (c["absence"].get(absence) == simdjson::SUCCESS) {
      cause_of_example[id] = fmt::format("(none: {})", absence);
    } else {
      cause_of_example[id] = fmt::format("{}: {}", std::string_view(c["type"]), std::string_view(c["message"]));
    }
  }
  EXPECT_EQ(cause_of_example[ids[0]], "java.lang.IllegalStateException: card declined for order 42") << stats.out;
  EXPECT_NE(cause_of_example[ids[1]].find("Record " + ids[1] + " failed: KeyError 'customer_id'"), std::string::npos)
      << stats.out;
  EXPECT_EQ(cause_of_example[ids[2]], "InventoryError: no stock for item 77") << stats.out;
  EXPECT_EQ(cause_of_example[ids[3]], "(none: no_error)") << stats.out;
  RunShell("rm -rf " + dir);
}

}  // namespace
}  // namespace dlq::it
