#include "common/json_writer.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <limits>
#include <string>

namespace dlq {
namespace {

std::string Quoted(std::string_view s) {
  std::string out;
  AppendJsonString(out, s);
  return out;
}

TEST(JsonEscape, EscapesQuotesBackslashesAndControlBytes) {
  EXPECT_EQ(Quoted("plain"), "\"plain\"");
  EXPECT_EQ(Quoted("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(Quoted("\n\r\t\b\f"), "\"\\n\\r\\t\\b\\f\"");
  EXPECT_EQ(Quoted(std::string("\x01\x1f\x00", 3)), "\"\\u0001\\u001f\\u0000\"");
  EXPECT_EQ(Quoted("\x7f/"), "\"\x7f/\"");  // DEL and '/' need no escape
}

TEST(JsonEscape, KeepsValidUtf8AsIs) {
  const std::string text = "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80";  // é € 😀
  EXPECT_EQ(Quoted(text), "\"" + text + "\"");
  std::string out = "prefix";
  EXPECT_TRUE(AppendJsonEscaped(out, text));
  EXPECT_EQ(out, "prefix" + text);
}

TEST(JsonEscape, InvalidUtf8FailsTheLosslessEscaperAndLeavesOutputUnchanged) {
  for (std::string bad : {std::string("\xC3"), std::string("\xC0\xAF"), std::string("\xED\xA0\x80"),
                          std::string("\xF4\x90\x80\x80"), std::string("\xFF"), std::string("abc\x80"),
                          std::string(40, 'a') + "\xFF"}) {  // a clean prefix is taken back too
    std::string out = "keep";
    EXPECT_FALSE(AppendJsonEscaped(out, bad)) << bad;
    EXPECT_EQ(out, "keep");
  }
}

TEST(JsonEscape, InvalidUtf8BecomesReplacementCharacterPerByte) {
  EXPECT_EQ(Quoted("a\xFF"
                   "b"),
            "\"a\xEF\xBF\xBD"
            "b\"");
  EXPECT_EQ(Quoted("\xC0\xAF"), "\"\xEF\xBF\xBD\xEF\xBF\xBD\"");  // overlong '/': two bad bytes
  EXPECT_EQ(Quoted("\xE2\x82"), "\"\xEF\xBF\xBD\xEF\xBF\xBD\"");  // truncated sequence
  EXPECT_EQ(Quoted("ok\"\xFF"), "\"ok\\\"\xEF\xBF\xBD\"");        // escapes still applied
}

// Long strings take the 16- and 8-byte block paths; every offset of a
// special byte must be found.
TEST(JsonEscape, FindsSpecialBytesAtEveryOffsetOfLongRuns) {
  for (size_t len : {7u, 8u, 15u, 16u, 17u, 40u}) {
    for (size_t at = 0; at < len; ++at) {
      std::string s(len, 'x');
      s[at] = '"';
      std::string expect = s.substr(0, at) + "\\\"" + s.substr(at + 1);
      EXPECT_EQ(Quoted(s), "\"" + expect + "\"") << len << " " << at;
      s[at] = '\xFF';
      expect = s.substr(0, at) + "\xEF\xBF\xBD" + s.substr(at + 1);
      EXPECT_EQ(Quoted(s), "\"" + expect + "\"") << len << " " << at;
      s[at] = '\x1f';
      expect = s.substr(0, at) + "\\u001f" + s.substr(at + 1);
      EXPECT_EQ(Quoted(s), "\"" + expect + "\"") << len << " " << at;
    }
  }
}

TEST(Utf8SequenceLength, FollowsRfc3629) {
  auto len = [](std::string_view s) {
    return Utf8SequenceLength(reinterpret_cast<const unsigned char*>(s.data()), s.size());
  };
  EXPECT_EQ(len("a"), 1u);
  EXPECT_EQ(len("\xC3\xA9"), 2u);
  EXPECT_EQ(len("\xE2\x82\xAC"), 3u);
  EXPECT_EQ(len("\xF0\x9F\x98\x80"), 4u);
  EXPECT_EQ(len("\xC1\xBF"), 0u);          // overlong
  EXPECT_EQ(len("\xE0\x9F\xBF"), 0u);      // overlong
  EXPECT_EQ(len("\xED\xA0\x80"), 0u);      // surrogate
  EXPECT_EQ(len("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(len("\xF0\x9F\x98"), 0u);      // truncated
  EXPECT_EQ(len("\x80"), 0u);              // lone continuation byte
}

TEST(JsonWriter, PlacesCommasAndColons) {
  JsonWriter w;
  w.BeginObject();
  w.Key("a").Int(1);
  w.Key("b").BeginArray().String("x").Bool(true).Null().BeginObject().EndObject().BeginArray().EndArray().EndArray();
  w.Key("c").BeginObject().Key("d").Uint(18446744073709551615u).Key("e").Int(-5).EndObject();
  w.Key("f").Raw("1.50");
  w.EndObject();
  EXPECT_EQ(w.text(), R"({"a":1,"b":["x",true,null,{},[]],"c":{"d":18446744073709551615,"e":-5},"f":1.50})");
}

TEST(JsonWriter, EmptyContainers) {
  JsonWriter w;
  w.BeginObject().Key("list").BeginArray().EndArray().Key("map").BeginObject().EndObject().EndObject();
  EXPECT_EQ(w.Take(), R"({"list":[],"map":{}})");
  EXPECT_EQ(w.text(), "");
}

TEST(JsonWriter, DoublesAreShortestAndNonFiniteIsNull) {
  JsonWriter w;
  w.BeginArray().Double(0.5).Double(3).Double(-1e21).Double(0.1);
  w.Double(std::numeric_limits<double>::infinity()).Double(-std::numeric_limits<double>::infinity());
  w.Double(std::nan("")).EndArray();
  EXPECT_EQ(w.text(), "[0.5,3,-1e+21,0.1,null,null,null]");
}

TEST(JsonWriter, KeysAndStringsAreEscaped) {
  JsonWriter w;
  w.BeginObject().Key("k\"ey").String("line\nbreak\xFF").EndObject();
  EXPECT_EQ(w.text(), "{\"k\\\"ey\":\"line\\nbreak\xEF\xBF\xBD\"}");
}

TEST(JsonWriter, OptionalStringIsNullWhenAbsent) {
  JsonWriter w;
  w.BeginArray().OptionalString(std::nullopt).OptionalString("x").EndArray();
  EXPECT_EQ(w.text(), R"([null,"x"])");
}

TEST(JsonWriter, AppendsToACallersString) {
  std::string out = "prefix ";
  {
    JsonWriter w(out);
    w.BeginObject().Key("ok").Bool(false).EndObject();
  }
  EXPECT_EQ(out, R"(prefix {"ok":false})");
}

TEST(JsonWriter, OutputParsesAsJson) {
  JsonWriter w;
  w.BeginObject();
  for (int i = 0; i < 50; ++i) {
    w.Key("k" + std::to_string(i)).BeginArray();
    for (int j = 0; j < i % 4; ++j) w.String(std::string(static_cast<size_t>(j), '\x01'));
    w.EndArray();
  }
  w.EndObject();
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(w.text()).get(doc), simdjson::SUCCESS) << w.text();
  simdjson::dom::array arr;
  ASSERT_EQ(doc["k3"].get_array().get(arr), simdjson::SUCCESS);
  EXPECT_EQ(arr.size(), 3u);
}

}  // namespace
}  // namespace dlq
