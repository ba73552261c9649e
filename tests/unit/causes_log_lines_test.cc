#include <gtest/gtest.h>

#include <string>

#include "causes/log_lines.h"

namespace dlq {
namespace {

constexpr char kRequestId[] = "6bc28136-4f1a-4365-b021-0ce6b2e64ab0";

const LogError& ErrorOf(const LogLine& line) {
  static const LogError kNone{"<no error>", "", "", ErrorOrigin::kLogged};
  return line.error ? *line.error : kNone;
}

TEST(CausesLogLines, ReadsInvocationMarkers) {
  LogLine start = ParseLogLine("START RequestId: 6bc28136-4f1a-4365-b021-0ce6b2e64ab0 Version: $LATEST\n");
  EXPECT_EQ(start.marker, InvocationMarker::kStart);
  EXPECT_EQ(start.request_id, kRequestId);
  EXPECT_FALSE(start.error);

  LogLine end = ParseLogLine("END RequestId: 6bc28136-4f1a-4365-b021-0ce6b2e64ab0\n");
  EXPECT_EQ(end.marker, InvocationMarker::kEnd);
  EXPECT_EQ(end.request_id, kRequestId);

  LogLine report = ParseLogLine(
      "REPORT RequestId: 6bc28136-4f1a-4365-b021-0ce6b2e64ab0\tDuration: 1021.44 ms\tBilled Duration: 1022 ms\t"
      "Memory Size: 128 MB\tMax Memory Used: 71 MB\tInit Duration: 233.10 ms\t\n");
  EXPECT_EQ(report.marker, InvocationMarker::kReport);
  EXPECT_EQ(report.request_id, kRequestId);
  EXPECT_EQ(report.memory_size_mb, 128);
  EXPECT_EQ(report.max_memory_used_mb, 71);
  EXPECT_FALSE(report.error);
}

TEST(CausesLogLines, ReportWithStatusTimeoutOrErrorTypeIsAPlatformError) {
  LogLine timeout = ParseLogLine(
      "REPORT RequestId: 6bc28136-4f1a-4365-b021-0ce6b2e64ab0\tDuration: 3000.00 ms\tBilled Duration: 3000 ms\t"
      "Memory Size: 128 MB\tMax Memory Used: 60 MB\tStatus: timeout");
  EXPECT_EQ(ErrorOf(timeout).type, "Task timed out");
  EXPECT_EQ(ErrorOf(timeout).origin, ErrorOrigin::kPlatform);

  LogLine oom = ParseLogLine(
      "REPORT RequestId: 6bc28136-4f1a-4365-b021-0ce6b2e64ab0\tDuration: 812.10 ms\tBilled Duration: 813 ms\t"
      "Memory Size: 128 MB\tMax Memory Used: 128 MB\tStatus: error\tError Type: Runtime.OutOfMemory");
  EXPECT_EQ(ErrorOf(oom).type, "Runtime.OutOfMemory");
  EXPECT_EQ(oom.max_memory_used_mb, 128);
}

TEST(CausesLogLines, ReadsJsonPlatformRecords) {
  LogLine start = ParseLogLine(
      R"json({"time":"2024-05-01T10:00:00.000Z","type":"platform.start","record":{"requestId":"6bc28136-4f1a-4365-b021-0ce6b2e64ab0","version":"$LATEST"}})json");
  EXPECT_EQ(start.marker, InvocationMarker::kStart);
  EXPECT_EQ(start.request_id, kRequestId);

  LogLine report = ParseLogLine(
      R"json({"time":"2024-05-01T10:00:03.010Z","type":"platform.report","record":{"requestId":"6bc28136-4f1a-4365-b021-0ce6b2e64ab0","metrics":{"durationMs":812.1,"billedDurationMs":813,"memorySizeMB":256,"maxMemoryUsedMB":256},"status":"success"}})json");
  EXPECT_EQ(report.marker, InvocationMarker::kReport);
  EXPECT_EQ(report.memory_size_mb, 256);
  EXPECT_EQ(report.max_memory_used_mb, 256);
  EXPECT_FALSE(report.error);

  LogLine timeout = ParseLogLine(
      R"json({"time":"2024-05-01T10:00:03.001Z","type":"platform.runtimeDone","record":{"requestId":"6bc28136-4f1a-4365-b021-0ce6b2e64ab0","status":"timeout","metrics":{"durationMs":3000.0,"producedBytes":0}}})json");
  EXPECT_EQ(timeout.request_id, kRequestId);
  EXPECT_EQ(ErrorOf(timeout).type, "Task timed out");
  EXPECT_EQ(ErrorOf(timeout).message, "Task timed out after 3.00 seconds");
  EXPECT_EQ(ErrorOf(timeout).origin, ErrorOrigin::kPlatform);

  LogLine failed = ParseLogLine(
      R"json({"time":"2024-05-01T10:00:01.500Z","type":"platform.runtimeDone","record":{"requestId":"6bc28136-4f1a-4365-b021-0ce6b2e64ab0","status":"error","errorType":"Runtime.ExitError"}})json");
  EXPECT_EQ(ErrorOf(failed).type, "Runtime.ExitError");

  LogLine ok = ParseLogLine(
      R"json({"time":"2024-05-01T10:00:01.500Z","type":"platform.runtimeDone","record":{"requestId":"6bc28136-4f1a-4365-b021-0ce6b2e64ab0","status":"success"}})json");
  EXPECT_FALSE(ok.error);
}

TEST(CausesLogLines, ReadsPythonApplicationLines) {
  LogLine info = ParseLogLine(
      "[INFO]\t2024-05-01T10:00:00.123Z\t6bc28136-4f1a-4365-b021-0ce6b2e64ab0\tProcessing message "
      "059f36b4-87a3-44ab-83d2-661975830a7d\n");
  EXPECT_EQ(info.level, LineLevel::kInfo);
  EXPECT_EQ(info.request_id, kRequestId);
  EXPECT_FALSE(info.error);

  LogLine error = ParseLogLine(
      "[ERROR]\t2024-05-01T10:00:00.200Z\t6bc28136-4f1a-4365-b021-0ce6b2e64ab0\tcould not charge order 42\n");
  EXPECT_EQ(error.level, LineLevel::kError);
  EXPECT_EQ(error.request_id, kRequestId);
  EXPECT_EQ(ErrorOf(error).type, "");
  EXPECT_EQ(ErrorOf(error).message, "could not charge order 42");
  EXPECT_EQ(ErrorOf(error).origin, ErrorOrigin::kLogged);

  // logger.exception: the traceback's last line names the exception.
  LogLine exception = ParseLogLine(
      "[ERROR]\t2024-05-01T10:00:00.300Z\t6bc28136-4f1a-4365-b021-0ce6b2e64ab0\tfailed\n"
      "Traceback (most recent call last):\n  File \"/var/task/app.py\", line 12, in handler\n"
      "    charge(order)\nKeyError: 'customer_id'\n");
  EXPECT_EQ(ErrorOf(exception).type, "KeyError");
  EXPECT_EQ(ErrorOf(exception).message, "'customer_id'");
  EXPECT_NE(ErrorOf(exception).stack.find("line 12, in handler"), std::string::npos);
}

TEST(CausesLogLines, ReadsPythonUncaughtError) {
  // awslambdaric writes the lines joined by '\r' on stdout, by '\n' through the telemetry fd.
  for (const char* sep : {"\r", "\n"}) {
    const std::string text = std::string("[ERROR] ValueError: invalid literal for int() with base 10: 'abc'") + sep +
                             "Traceback (most recent call last):" + sep +
                             "\xC2\xA0\xC2\xA0"
                             "File \"/var/task/app.py\", line 9, in handler" +
                             sep +
                             "\xC2\xA0\xC2\xA0\xC2\xA0\xC2\xA0"
                             "qty = int(body[\"qty\"])\n";
    LogLine line = ParseLogLine(text);
    EXPECT_EQ(line.level, LineLevel::kError);
    EXPECT_TRUE(line.request_id.empty());  // the uncaught-error line names no request id
    EXPECT_EQ(ErrorOf(line).type, "ValueError");
    EXPECT_EQ(ErrorOf(line).message, "invalid literal for int() with base 10: 'abc'");
    EXPECT_EQ(ErrorOf(line).origin, ErrorOrigin::kUncaught);
    EXPECT_EQ(ErrorOf(line).stack.rfind("Traceback (most recent call last):\n", 0), 0u) << ErrorOf(line).stack;
    EXPECT_NE(ErrorOf(line).stack.find("line 9, in handler"), std::string::npos);
  }
  LogLine import = ParseLogLine(
      "[ERROR] Runtime.ImportModuleError: Unable to import module 'app': No module named 'requests'\r"
      "Traceback (most recent call last):");
  EXPECT_EQ(ErrorOf(import).type, "Runtime.ImportModuleError");
}

TEST(CausesLogLines, ReadsNodeApplicationLinesAndInvokeError) {
  LogLine info =
      ParseLogLine("2024-05-01T10:00:00.562Z\t6bc28136-4f1a-4365-b021-0ce6b2e64ab0\tINFO\tprocessing 10 records\n");
  EXPECT_EQ(info.level, LineLevel::kInfo);
  EXPECT_EQ(info.request_id, kRequestId);
  EXPECT_FALSE(info.error);

  LogLine invoke = ParseLogLine(
      "2024-05-01T10:00:00.900Z\t6bc28136-4f1a-4365-b021-0ce6b2e64ab0\tERROR\tInvoke Error \t"
      R"json({"errorType":"Error","errorMessage":"boom","stack":["Error: boom","    at Runtime.handler (file:///var/task/index.mjs:4:9)"]})json"
      "\n");
  EXPECT_EQ(invoke.request_id, kRequestId);
  EXPECT_EQ(ErrorOf(invoke).type, "Error");
  EXPECT_EQ(ErrorOf(invoke).message, "boom");
  EXPECT_EQ(ErrorOf(invoke).stack, "Error: boom\n    at Runtime.handler (file:///var/task/index.mjs:4:9)");
  EXPECT_EQ(ErrorOf(invoke).origin, ErrorOrigin::kUncaught);

  LogLine uncaught = ParseLogLine(
      "2024-05-01T10:00:00.900Z\tundefined\tERROR\tUncaught Exception \t"
      R"json({"errorType":"TypeError","errorMessage":"Cannot read properties of undefined (reading 'id')","stack":["TypeError: Cannot read properties of undefined (reading 'id')"]})json");
  EXPECT_TRUE(uncaught.request_id.empty());
  EXPECT_EQ(ErrorOf(uncaught).type, "TypeError");
  EXPECT_EQ(ErrorOf(uncaught).origin, ErrorOrigin::kUncaught);

  // console.error(err) writes its stack; '\r' stands for line breaks on stdout.
  LogLine logged = ParseLogLine(
      "2024-05-01T10:00:00.950Z\t6bc28136-4f1a-4365-b021-0ce6b2e64ab0\tERROR\tRangeError: qty out of range\r"
      "    at process (/var/task/index.js:12:11)\r    at Runtime.handler (/var/task/index.js:30:5)");
  EXPECT_EQ(ErrorOf(logged).type, "RangeError");
  EXPECT_EQ(ErrorOf(logged).message, "qty out of range");
  EXPECT_EQ(ErrorOf(logged).origin, ErrorOrigin::kLogged);
}

TEST(CausesLogLines, ReadsJavaLog4j2LinesAndErrors) {
  LogLine info = ParseLogLine("2024-05-01 10:00:00 6bc28136-4f1a-4365-b021-0ce6b2e64ab0 INFO  Handler - received 3\n");
  EXPECT_EQ(info.level, LineLevel::kInfo);
  EXPECT_EQ(info.request_id, kRequestId);

  LogLine error = ParseLogLine(
      "2024-05-01 10:00:01 6bc28136-4f1a-4365-b021-0ce6b2e64ab0 ERROR Handler - payment failed\n"
      "java.lang.IllegalStateException: card declined for order 42\n"
      "\tat example.Handler.charge(Handler.java:57)\n\tat example.Handler.handleRequest(Handler.java:31)\n");
  EXPECT_EQ(error.level, LineLevel::kError);
  EXPECT_EQ(error.request_id, kRequestId);
  EXPECT_EQ(ErrorOf(error).type, "java.lang.IllegalStateException");
  EXPECT_EQ(ErrorOf(error).message, "card declined for order 42");
  EXPECT_EQ(ErrorOf(error).stack.rfind("java.lang.IllegalStateException", 0), 0u);

  // The runtime's record of an uncaught exception (java-exceptions.html).
  LogLine uncaught = ParseLogLine(
      R"json({"errorMessage":"An error occurred during JSON parsing","errorType":"java.lang.RuntimeException","stackTrace":[],"cause":{"errorMessage":"x"}})json");
  EXPECT_EQ(uncaught.level, LineLevel::kError);
  EXPECT_EQ(ErrorOf(uncaught).type, "java.lang.RuntimeException");
  EXPECT_EQ(ErrorOf(uncaught).message, "An error occurred during JSON parsing");
  EXPECT_EQ(ErrorOf(uncaught).origin, ErrorOrigin::kUncaught);

  // e.printStackTrace() on stderr: no prefix, no level.
  LogLine plain =
      ParseLogLine("java.lang.RuntimeException: upstream returned 503\n\tat example.Client.call(Client.java:88)\n");
  EXPECT_EQ(plain.level, LineLevel::kError);
  EXPECT_EQ(ErrorOf(plain).type, "java.lang.RuntimeException");
  EXPECT_EQ(ErrorOf(plain).message, "upstream returned 503");
}

TEST(CausesLogLines, ReadsPlatformFailureLines) {
  LogLine timeout =
      ParseLogLine("2024-05-01T10:00:03.021Z 6bc28136-4f1a-4365-b021-0ce6b2e64ab0 Task timed out after 3.00 seconds\n");
  EXPECT_EQ(timeout.request_id, kRequestId);
  EXPECT_EQ(ErrorOf(timeout).type, "Task timed out");
  EXPECT_EQ(ErrorOf(timeout).message, "Task timed out after 3.00 seconds");
  EXPECT_EQ(ErrorOf(timeout).origin, ErrorOrigin::kPlatform);

  LogLine exited = ParseLogLine(
      "RequestId: 6bc28136-4f1a-4365-b021-0ce6b2e64ab0 Error: Runtime exited with error: signal: killed\n"
      "Runtime.ExitError\n");
  EXPECT_EQ(exited.request_id, kRequestId);
  EXPECT_EQ(ErrorOf(exited).type, "Runtime.ExitError");
  EXPECT_EQ(ErrorOf(exited).message, "Runtime exited with error: signal: killed");

  LogLine alone = ParseLogLine("Runtime.ExitError\n");
  EXPECT_EQ(ErrorOf(alone).type, "Runtime.ExitError");
  EXPECT_EQ(ErrorOf(alone).origin, ErrorOrigin::kPlatform);
}

TEST(CausesLogLines, ReadsLambdaJsonApplicationRecords) {
  LogLine info = ParseLogLine(
      R"json({"timestamp":"2024-05-01T10:00:00.100Z","level":"INFO","requestId":"6bc28136-4f1a-4365-b021-0ce6b2e64ab0","message":"processing"})json");
  EXPECT_EQ(info.level, LineLevel::kInfo);
  EXPECT_EQ(info.request_id, kRequestId);
  EXPECT_FALSE(info.error);

  // Python's logger.exception in JSON format (awslambdaric JsonFormatter).
  LogLine logged = ParseLogLine(
      R"json({"timestamp":"2024-05-01T10:00:00.200Z","level":"ERROR","message":"charge failed","logger":"root","stackTrace":["  File \"/var/task/app.py\", line 9, in handler\n"],"errorType":"KeyError","errorMessage":"'customer_id'","requestId":"6bc28136-4f1a-4365-b021-0ce6b2e64ab0","location":"/var/task/app.py:handler:9"})json");
  EXPECT_EQ(ErrorOf(logged).type, "KeyError");
  EXPECT_EQ(ErrorOf(logged).message, "'customer_id'");
  EXPECT_EQ(ErrorOf(logged).origin, ErrorOrigin::kLogged);
  EXPECT_NE(ErrorOf(logged).stack.find("line 9"), std::string::npos);

  // The runtime's uncaught error in JSON format: no "message" field.
  LogLine uncaught = ParseLogLine(
      R"json({"timestamp":"2024-05-01T10:00:00.300Z","level":"ERROR","errorMessage":"bad qty","errorType":"ValueError","requestId":"6bc28136-4f1a-4365-b021-0ce6b2e64ab0","stackTrace":["  File \"/var/task/app.py\", line 3\n"]})json");
  EXPECT_EQ(ErrorOf(uncaught).origin, ErrorOrigin::kUncaught);
  EXPECT_EQ(ErrorOf(uncaught).type, "ValueError");

  // Node's console.error(err) in JSON format: the error object is the message.
  LogLine node = ParseLogLine(
      R"json({"timestamp":"2024-05-01T10:00:00.400Z","level":"ERROR","requestId":"6bc28136-4f1a-4365-b021-0ce6b2e64ab0","message":{"errorType":"Error","errorMessage":"boom","stackTrace":["Error: boom","    at handler (/var/task/index.js:3:9)"]}})json");
  EXPECT_EQ(ErrorOf(node).type, "Error");
  EXPECT_EQ(ErrorOf(node).message, "boom");
  EXPECT_EQ(ErrorOf(node).stack, "Error: boom\n    at handler (/var/task/index.js:3:9)");

  // A WARN record with an error object is no failure.
  LogLine warn = ParseLogLine(
      R"json({"timestamp":"2024-05-01T10:00:00.500Z","level":"WARN","requestId":"6bc28136-4f1a-4365-b021-0ce6b2e64ab0","message":{"errorType":"Error","errorMessage":"retrying"}})json");
  EXPECT_EQ(warn.level, LineLevel::kWarn);
  EXPECT_FALSE(warn.error);
}

TEST(CausesLogLines, ReadsPowertoolsPythonRecords) {
  LogLine line = ParseLogLine(
      R"json({"level":"ERROR","location":"record_handler:21","message":"Failed processing record","timestamp":"2024-05-01 10:00:00,250+0000","service":"orders","cold_start":false,"function_name":"orders-consumer","function_memory_size":"128","function_arn":"arn:aws:lambda:eu-west-1:123456789012:function:orders-consumer","function_request_id":"6bc28136-4f1a-4365-b021-0ce6b2e64ab0","correlation_id":"c0ffee00-1111-2222-3333-444455556666","exception":"Traceback (most recent call last):\n  File \"/var/task/app.py\", line 21, in record_handler\n    raise ValueError(\"qty must be positive\")\nValueError: qty must be positive","exception_name":"ValueError","xray_trace_id":"1-6632123f-1a2b3c4d5e6f708192a3b4c5","sqs_message_id":"059f36b4-87a3-44ab-83d2-661975830a7d"})json");
  EXPECT_EQ(line.level, LineLevel::kError);
  EXPECT_EQ(line.request_id, kRequestId);
  EXPECT_EQ(line.trace_id, "1-6632123f-1a2b3c4d5e6f708192a3b4c5");
  EXPECT_EQ(line.correlation_id, "c0ffee00-1111-2222-3333-444455556666");
  EXPECT_EQ(line.message_id, "059f36b4-87a3-44ab-83d2-661975830a7d");
  EXPECT_EQ(ErrorOf(line).type, "ValueError");
  EXPECT_EQ(ErrorOf(line).message, "qty must be positive");
  EXPECT_EQ(ErrorOf(line).stack.rfind("Traceback (most recent call last):", 0), 0u);
}

TEST(CausesLogLines, ReadsPowertoolsTypeScriptAndJavaRecords) {
  LogLine ts = ParseLogLine(
      R"json({"level":"ERROR","message":"Record failed","timestamp":"2024-05-01T10:00:00.250Z","service":"orders","cold_start":true,"function_arn":"arn:aws:lambda:eu-west-1:123456789012:function:orders","function_memory_size":"128","function_name":"orders","function_request_id":"6bc28136-4f1a-4365-b021-0ce6b2e64ab0","sampling_rate":0,"xray_trace_id":"1-6632123f-1a2b3c4d5e6f708192a3b4c5","error":{"name":"InvalidOrderError","location":"/var/task/index.js:42","message":"order 42 has no lines","stack":"InvalidOrderError: order 42 has no lines\n    at process (/var/task/index.js:42:11)"}})json");
  EXPECT_EQ(ts.request_id, kRequestId);
  EXPECT_EQ(ErrorOf(ts).type, "InvalidOrderError");
  EXPECT_EQ(ErrorOf(ts).message, "order 42 has no lines");
  EXPECT_NE(ErrorOf(ts).stack.find("index.js:42:11"), std::string::npos);

  // Powertools Java's fields (from memory: not checked against its documentation).
  LogLine java = ParseLogLine(
      R"json({"level":"ERROR","message":"Unable to process","function_request_id":"6bc28136-4f1a-4365-b021-0ce6b2e64ab0","correlation_id":"abc","error":{"message":"timeout calling stock","name":"java.net.SocketTimeoutException","stack":"java.net.SocketTimeoutException: timeout calling stock\n\tat example.Stock.get(Stock.java:12)"}})json");
  EXPECT_EQ(ErrorOf(java).type, "java.net.SocketTimeoutException");
  EXPECT_EQ(java.correlation_id, "abc");
}

TEST(CausesLogLines, ReadsAServicesOwnJsonLogs) {
  LogLine pino = ParseLogLine(
      R"json({"level":50,"time":1714557600250,"pid":7,"hostname":"orders-7d9f","messageId":"059f36b4-87a3-44ab-83d2-661975830a7d","traceId":"abc123","err":{"type":"Error","message":"connect ECONNREFUSED 10.0.0.5:5432","stack":"Error: connect ECONNREFUSED 10.0.0.5:5432\n    at TCPConnectWrap.afterConnect"},"msg":"message failed"})json");
  EXPECT_EQ(pino.level, LineLevel::kError);
  EXPECT_EQ(pino.message_id, "059f36b4-87a3-44ab-83d2-661975830a7d");
  EXPECT_EQ(pino.trace_id, "abc123");
  EXPECT_EQ(ErrorOf(pino).type, "Error");
  EXPECT_EQ(ErrorOf(pino).message, "connect ECONNREFUSED 10.0.0.5:5432");

  LogLine flat = ParseLogLine(
      R"json({"severity":"error","message_id":"m-1","error":"stock service unavailable","correlationId":"corr-9"})json");
  EXPECT_EQ(flat.level, LineLevel::kError);
  EXPECT_EQ(flat.message_id, "m-1");
  EXPECT_EQ(flat.correlation_id, "corr-9");
  EXPECT_EQ(ErrorOf(flat).type, "");
  EXPECT_EQ(ErrorOf(flat).message, "stock service unavailable");

  // Configurable field names.
  LogLineOptions options;
  options.message_id_fields = {"msg_ref"};
  options.level_fields = {"lvl_name"};
  LogLine custom = ParseLogLine(R"json({"lvl_name":"FATAL","msg_ref":"m-2","text":"gave up"})json", options);
  EXPECT_EQ(custom.level, LineLevel::kFatal);
  EXPECT_EQ(custom.message_id, "m-2");
  EXPECT_TRUE(custom.error);

  // A JSON body after Node's text prefix keeps the prefix's request id.
  LogLine prefixed = ParseLogLine(
      "2024-05-01T10:00:00.562Z\t6bc28136-4f1a-4365-b021-0ce6b2e64ab0\tINFO\t"
      R"json({"level":"error","messageId":"m-3","error":{"name":"ConflictError","message":"version 7 != 6"}})json");
  EXPECT_EQ(prefixed.request_id, kRequestId);
  EXPECT_EQ(prefixed.message_id, "m-3");
  EXPECT_EQ(ErrorOf(prefixed).type, "ConflictError");
}

TEST(CausesLogLines, ReadsALevelAmongTheFirstWordsOfOtherText) {
  LogLine line = ParseLogLine("worker-3 [ERROR] failed to handle 059f36b4-87a3-44ab-83d2-661975830a7d: bad input");
  EXPECT_EQ(line.level, LineLevel::kError);
  EXPECT_EQ(ErrorOf(line).message, "failed to handle 059f36b4-87a3-44ab-83d2-661975830a7d: bad input");

  // Lower-case words are prose, not levels.
  LogLine prose = ParseLogLine("error count is 0 for this batch");
  EXPECT_EQ(prose.level, LineLevel::kNone);
  EXPECT_FALSE(prose.error);
}

TEST(CausesLogLines, MalformedJsonIsReadAsTextSafely) {
  for (const char* text :
       {R"json({"level":"ERROR","message":"cut)json", "{", "{}", R"json({"type":"platform.report","record":7})json",
        R"json({"type":"platform.runtimeDone","record":{"status":"error","errorType":[1,2]}})json",
        R"json({"level":["ERROR"],"message":{"errorType":{}}})json", "[ERROR]\t\t", "[ERROR]", "\t\t\t",
        "RequestId: ", "START RequestId:", "REPORT RequestId: x Memory Size: 99999999999999999999 MB"}) {
    LogLine line = ParseLogLine(text);
    EXPECT_LE(line.memory_size_mb, int64_t{1'000'000'000'000}) << text;
    EXPECT_TRUE(line.request_id.empty() || line.request_id == "x") << text;
  }
  EXPECT_FALSE(ParseLogLine(R"json({"level":"ERROR","message":"cut)json").error);
  EXPECT_TRUE(ParseLogLine(R"json({"type":"platform.runtimeDone","record":{"status":"error","errorType":[1]}})json")
                  .request_id.empty());
  EXPECT_EQ(ParseLogLine("START RequestId:").marker, InvocationMarker::kNone);
  EXPECT_FALSE(ParseLogLine("").error);
}

TEST(CausesLogLines, ParsesLevelWords) {
  EXPECT_EQ(ParseLineLevel("warning"), LineLevel::kWarn);
  EXPECT_EQ(ParseLineLevel("CRITICAL"), LineLevel::kFatal);
  EXPECT_EQ(ParseLineLevel("50"), LineLevel::kError);
  EXPECT_EQ(ParseLineLevel(" Info "), LineLevel::kInfo);
  EXPECT_EQ(ParseLineLevel("errors"), LineLevel::kNone);
  EXPECT_EQ(ParseLineLevel(""), LineLevel::kNone);
}

}  // namespace
}  // namespace dlq
