#include "common/log.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdio>
#include <cstdlib>
#include <limits>

#include "common/log_throttle.h"

namespace dlq {
namespace {

TEST(Log, JsonLinesAreValidJsonWithEscapedFields) {
  std::string line = RenderJsonLogLine(
      LogLevel::kWarn, "archive.retry",
      {{"queue", "orders-dlq"}, {"body", "a \"quoted\"\nline\x01"}, {"attempt", 3}, {"ratio", 0.5}, {"final", false}});
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(line).get(doc), simdjson::SUCCESS) << line;
  EXPECT_EQ(std::string_view(doc["level"]), "warn");
  EXPECT_EQ(std::string_view(doc["event"]), "archive.retry");
  EXPECT_EQ(std::string_view(doc["body"]), "a \"quoted\"\nline\x01");
  EXPECT_EQ(int64_t(doc["attempt"]), 3);
  EXPECT_EQ(bool(doc["final"]), false);
}

TEST(Log, InvalidUtf8InAFieldBecomesReplacementCharactersAndTheLineStaysValidJson) {
  std::string line = RenderJsonLogLine(LogLevel::kError, "bad\xC3",
                                       {{"body", "ok\xFF\xFE end"}, {"nan", std::numeric_limits<double>::quiet_NaN()}});
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(line).get(doc), simdjson::SUCCESS) << line;  // simdjson rejects invalid UTF-8
  EXPECT_EQ(std::string_view(doc["event"]), "bad\xEF\xBF\xBD");
  EXPECT_EQ(std::string_view(doc["body"]), "ok\xEF\xBF\xBD\xEF\xBF\xBD end");
  EXPECT_TRUE(doc["nan"].is_null());
}

TEST(Log, JsonLineKeepsFieldOrderAndNumberForms) {
  std::string line = RenderJsonLogLine(LogLevel::kInfo, "e", {{"a", 1}, {"b", 2.5}, {"c", true}, {"d", "x"}});
  size_t ts_end = line.find("\",\"level\"");
  ASSERT_NE(ts_end, std::string::npos) << line;
  EXPECT_EQ(line.substr(0, 7), "{\"ts\":\"");
  EXPECT_EQ(line.substr(ts_end), R"(","level":"info","event":"e","a":1,"b":2.5,"c":true,"d":"x"})");
}

// What a StreamLogger in `format` writes for one event whose fields hold
// terminal escape sequences.
std::string LoggedHostileLine(LogFormat format) {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  {
    StreamLogger logger(f, format, LogLevel::kInfo);
    logger.Log(LogLevel::kWarn, "archive.object",
               {{"key", "k\x1b]0;owned\x07\x1b[2J"},
                {"error",
                 "csi\xC2\x9b"
                 "31m del\x7f"}});
  }
  std::fclose(f);
  std::string out(buf, len);
  std::free(buf);
  return out;
}

TEST(Log, StreamLinesNeverCarryRawControlsToTheTerminal) {
  const std::string text = LoggedHostileLine(LogFormat::kText);
  EXPECT_NE(text.find("key=k\\x1b]0;owned\\x07\\x1b[2J"), std::string::npos) << text;
  EXPECT_NE(text.find("csi\\u009b31m del\\x7f"), std::string::npos) << text;
  const std::string json = LoggedHostileLine(LogFormat::kJson);
  EXPECT_NE(json.find(R"("error":"csi\u009b31m del\u007f")"), std::string::npos) << json;
  for (const std::string& line : {text, json}) {
    ASSERT_TRUE(line.ends_with("\n")) << line;
    for (size_t i = 0; i + 1 < line.size(); ++i) {
      auto c = static_cast<unsigned char>(line[i]);
      EXPECT_FALSE(c < 0x20 || c == 0x7F || (c == 0xC2 && static_cast<unsigned char>(line[i + 1]) <= 0x9F))
          << "byte " << int(c) << " at " << i << " in " << line;
    }
  }
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  EXPECT_EQ(std::string_view(doc["key"]), "k\x1b]0;owned\x07\x1b[2J");
}

TEST(Log, CapturingLoggerRecordsEvents) {
  CapturingLogger logger;
  logger.Log(LogLevel::kInfo, "hello", {{"k", "v"}});
  ASSERT_EQ(logger.entries().size(), 1u);
  EXPECT_TRUE(logger.Contains("\"k\":\"v\""));
  EXPECT_FALSE(logger.Contains("secret"));
}

TEST(Log, ParsesLevels) {
  LogLevel l;
  ASSERT_TRUE(ParseLogLevel("debug", l));
  EXPECT_EQ(l, LogLevel::kDebug);
  EXPECT_FALSE(ParseLogLevel("loud", l));
}

TEST(LogThrottleTest, OneLinePerIntervalAndTheNextSaysHowManyWereHeldBack) {
  LogThrottle throttle(std::chrono::seconds(10));
  const std::chrono::steady_clock::time_point t0{std::chrono::seconds(1000)};
  int64_t suppressed = -1;
  ASSERT_TRUE(throttle.Admit(t0, &suppressed));  // the first line
  EXPECT_EQ(suppressed, 0);
  for (int i = 1; i <= 9; ++i) EXPECT_FALSE(throttle.Admit(t0 + std::chrono::seconds(i), &suppressed)) << i;
  ASSERT_TRUE(throttle.Admit(t0 + std::chrono::seconds(10), &suppressed));
  EXPECT_EQ(suppressed, 9);
  EXPECT_FALSE(throttle.Admit(t0 + std::chrono::seconds(19), &suppressed));
  ASSERT_TRUE(throttle.Admit(t0 + std::chrono::seconds(25), &suppressed));
  EXPECT_EQ(suppressed, 1);  // counted from the last line written
}

}  // namespace
}  // namespace dlq
