#include "query/json_path.h"

#include <gtest/gtest.h>

namespace dlq {
namespace {

std::optional<std::string> At(std::string_view path, std::string_view json) {
  Result<JsonPath> p = JsonPath::Parse(path);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? p->Lookup(json) : std::nullopt;
}

TEST(JsonPathTest, LooksUpNestedKeysIndexesAndQuotedKeys) {
  const std::string doc =
      R"({"error":{"type":"Timeout","codes":[500,503]},"key with space":{"a.b":"x"},"e":"\u00e9\n"})";
  EXPECT_EQ(At("$.error.type", doc), "Timeout");
  EXPECT_EQ(At("$.error.codes[1]", doc), "503");
  EXPECT_EQ(At("$[\"key with space\"]['a.b']", doc), "x");
  EXPECT_EQ(At("$.e", doc), "\xC3\xA9\n");  // unescaped
  EXPECT_EQ(At("$.error.codes[2]", doc), std::nullopt);
  EXPECT_EQ(At("$.missing", doc), std::nullopt);
  EXPECT_EQ(At("$.error.type.deeper", doc), std::nullopt);
  EXPECT_EQ(At("$.error[0]", doc), std::nullopt);  // not an array
}

TEST(JsonPathTest, ScalarsAsLiteralTextAndContainersMinified) {
  const std::string doc = R"({"n":1.50,"i":-7,"big":18446744073709551615,"t":true,"f":false,"z":null,
                             "o":{ "a" : [ 1, 2 ] , "b":"c" }})";
  EXPECT_EQ(At("$.n", doc), "1.50");
  EXPECT_EQ(At("$.i", doc), "-7");
  EXPECT_EQ(At("$.big", doc), "18446744073709551615");
  EXPECT_EQ(At("$.t", doc), "true");
  EXPECT_EQ(At("$.f", doc), "false");
  EXPECT_EQ(At("$.z", doc), "null");
  EXPECT_EQ(At("$.o", doc), R"({"a":[1,2],"b":"c"})");
  EXPECT_EQ(At("$", "42 "), "42");
  EXPECT_EQ(At("$", "\"s\""), "s");
}

TEST(JsonPathTest, InvalidJsonIsAbsent) {
  EXPECT_EQ(At("$.a", R"({"a":1)"), std::nullopt);
  EXPECT_EQ(At("$.a", R"({"a":1} trailing)"), std::nullopt);
  EXPECT_EQ(At("$.a", "not json"), std::nullopt);
  EXPECT_EQ(At("$.a", ""), std::nullopt);
}

TEST(JsonPathTest, KeyWithEscapesInTheDocumentMatchesItsUnescapedName) {
  EXPECT_EQ(At("$[\"a\\\"b\"]", R"({"a\"b":1})"), "1");
  EXPECT_EQ(At("$.\xC3\xA9t\xC3\xA9", R"({"\u00e9t\u00e9":"summer"})"), "summer");
}

TEST(JsonPathTest, RejectsMalformedPathsWithTheOffset) {
  struct Case {
    std::string path;
    std::string reason;
  };
  for (const Case& c : std::vector<Case>{{"", "must start with '$'"},
                                         {"a.b", "must start with '$'"},
                                         {"$.", "empty name after '.' at offset 2"},
                                         {"$..a", "empty name after '.' at offset 2"},
                                         {"$[", "an index must be a non-negative integer"},
                                         {"$[-1]", "an index must be a non-negative integer"},
                                         {"$[1", "expected ']' at offset 3"},
                                         {"$[\"a]", "unterminated quoted key"},
                                         {"$[\"a\\n\"]", "bad escape"},
                                         {"$a", "unexpected character 'a' at offset 1"},
                                         {"$.a=1", "unexpected character '='"},
                                         {"$[99999999999999999999999]", "non-negative integer"}}) {
    Result<JsonPath> p = JsonPath::Parse(c.path);
    ASSERT_FALSE(p.ok()) << c.path;
    EXPECT_EQ(p.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(p.status().message().find(c.reason), std::string::npos) << c.path << ": " << p.status().message();
  }
}

TEST(JsonPathTest, ParsePrefixStopsAtEqualsOutsideQuotes) {
  size_t consumed = 0;
  Result<JsonPath> p = JsonPath::ParsePrefix("$[\"a=b\"].c=v=w", consumed);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->text(), "$[\"a=b\"].c");
  EXPECT_EQ(consumed, 10u);
  EXPECT_EQ(p->Lookup(R"({"a=b":{"c":"v=w"}})"), "v=w");
}

}  // namespace
}  // namespace dlq
