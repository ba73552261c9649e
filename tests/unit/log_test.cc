#include "common/log.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <limits>

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

}  // namespace
}  // namespace dlq
