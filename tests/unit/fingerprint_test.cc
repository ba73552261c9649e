#include "query/fingerprint.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>
#include <utility>
#include <vector>

namespace dlq {
namespace {

struct Case {
  std::string body;
  std::string fingerprint;
};

TEST(Fingerprint, MasksVariableTokensInText) {
  const std::vector<Case> cases = {
      {"order 123 failed: timeout", "order <num> failed: timeout"},
      {"retry -5 times, ratio 0.75, 1e-3 and 6.02E23", "retry <num> times, ratio <num>, <num> and <num>"},
      {"user 059f36b4-87a3-44ab-83d2-661975830a7d not found", "user <uuid> not found"},
      {"UUID 059F36B4-87A3-44AB-83D2-661975830A7D upper", "UUID <uuid> upper"},
      {"at 2025-09-10T12:30:00.123Z", "at <ts>"},
      {"at 2025-09-10T12:30:00Z.", "at <ts>."},
      {"at 2025-09-10T12:30:00+02:00 local", "at <ts> local"},
      {"at 2025-09-10 12:30:00,5 log", "at <ts> log"},
      {"day 2025-09-10 only", "day <ts> only"},
      {"at 2025-09-10T12:30 minutes", "at <ts> minutes"},
      {"epoch 1757507400 and millis 1757507400123", "epoch <ts> and millis <ts>"},
      {"small 999999999 is a number", "small <num> is a number"},
      {"far 9999999999 is a number", "far <num> is a number"},
      {"sha 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "sha <hex>"},
      {"addr 0x7ffd3a2c and 0XFF", "addr <hex> and <hex>"},
      {"instance i-0abc123def4567890 down", "instance i-<hex> down"},
      {"deadbeef is a word, cafe too", "deadbeef is a word, cafe too"},
      {"order123 and v2 and abc_42x", "order<num> and v<num> and abc_<num>x"},
      {"  lots \t of\n\n  space  ", "lots of space"},
      {"", ""},
      {"héllo 42 🎉", "héllo <num> 🎉"},
      {"1.2.3.4", "<num>.<num>"},
      {"HTTP 503: Service Unavailable", "HTTP <num>: Service Unavailable"},
  };
  for (const Case& c : cases) EXPECT_EQ(FingerprintBody(c.body), c.fingerprint) << c.body;
}

TEST(Fingerprint, GroupsMessagesThatDifferOnlyInVariableParts) {
  EXPECT_EQ(FingerprintBody("order 123 failed: timeout"), FingerprintBody("order 456 failed: timeout"));
  EXPECT_EQ(FingerprintBody("payment 7f3a9c2e41d06b85 declined at 2025-09-10T12:30:00Z"),
            FingerprintBody("payment 00aa11bb22cc33dd declined at 2026-01-01T00:00:00.999Z"));
  EXPECT_NE(FingerprintBody("order 123 failed: timeout"), FingerprintBody("order 123 failed: out of stock"));
}

TEST(Fingerprint, KeepsJsonKeysAndMasksValues) {
  const std::vector<Case> cases = {
      {R"({"order_id":123,"error":{"type":"Timeout","message":"after 30 s"}})",
       R"({"error":{"message":"after <num> s","type":"Timeout"},"order_id":<num>})"},
      {R"({"id":"059f36b4-87a3-44ab-83d2-661975830a7d","at":"2025-09-10T12:30:00Z","ts":1757507400123})",
       R"({"at":"<ts>","id":"<uuid>","ts":<ts>})"},
      {R"({"ok":false,"why":null,"ratio":0.5})", R"({"ok":false,"ratio":<num>,"why":null})"},
      {R"([1,2,3])", R"([<num>])"},
      {R"([])", R"([])"},
      {R"({"items":[{"sku":"A1","n":1},{"sku":"B2","n":2},"x"]})",
       R"({"items":[{"n":<num>,"sku":"A<num>"},{"n":<num>,"sku":"B<num>"},"x"]})"},
      {R"({"by_id":{"123":{"n":1},"456":{"n":2}}})", R"({"by_id":{"<num>":{"n":<num>}}})"},
      {"  {\"a\" : 1}\n", R"({"a":<num>})"},
      {R"({"s":"line\nbreak \"q\""})", R"({"s":"line break \"q\""})"},
  };
  for (const Case& c : cases) EXPECT_EQ(FingerprintBody(c.body), c.fingerprint) << c.body;
}

TEST(Fingerprint, JsonKeyOrderDoesNotMatter) {
  EXPECT_EQ(FingerprintBody(R"({"a":1,"b":"x"})"), FingerprintBody(R"({"b":"x","a":99})"));
  EXPECT_NE(FingerprintBody(R"({"a":1,"b":"x"})"), FingerprintBody(R"({"a":1,"c":"x"})"));
}

TEST(Fingerprint, InvalidJsonIsMaskedAsText) {
  EXPECT_EQ(FingerprintBody(R"({"a":1,)"), R"({"a":<num>,)");
  EXPECT_EQ(FingerprintBody("[not json 42"), "[not json <num>");
}

TEST(Fingerprint, DeepJsonIsCutAtSixteenLevels) {
  std::string deep(40, '[');
  deep += std::string(40, ']');
  std::string expected = std::string(16, '[') + "\xE2\x80\xA6" + std::string(16, ']');
  EXPECT_EQ(FingerprintBody(deep), expected);
}

TEST(Fingerprint, ArraysListAtMostEightShapes) {
  std::string body = "[";
  for (int i = 0; i < 20; ++i) body += (i ? "," : "") + std::string("{\"k") + char('a' + i) + "\":1}";
  body += "]";
  std::string fp = FingerprintBody(body);
  EXPECT_NE(fp.find("{\"kh\":<num>}"), std::string::npos) << fp;
  EXPECT_EQ(fp.find("{\"ki\":<num>}"), std::string::npos) << fp;
  EXPECT_TRUE(fp.ends_with(",\xE2\x80\xA6]")) << fp;
}

TEST(Fingerprint, LongShapesAreCappedButStayDistinct) {
  std::string a(5000, 'a'), b = a;
  b[4000] = 'b';
  std::string fa = FingerprintBody(a), fb = FingerprintBody(b);
  EXPECT_LE(fa.size(), kMaxFingerprintBytes);
  EXPECT_LE(fb.size(), kMaxFingerprintBytes);
  EXPECT_NE(fa, fb);
  EXPECT_EQ(fa.substr(0, 400), std::string(400, 'a'));
  EXPECT_NE(fa.find("\xE2\x80\xA6#"), std::string::npos);
  EXPECT_EQ(FingerprintBody(a), fa);  // deterministic
}

TEST(Fingerprint, CapNeverSplitsAUtf8Character) {
  for (std::string body : {std::string(), std::string("x")}) {  // the cut lands on a lead byte, then inside one
    for (int i = 0; i < 1000; ++i) body += "é";
    std::string fp = FingerprintBody(body);
    ASSERT_LE(fp.size(), kMaxFingerprintBytes);
    size_t cut = fp.find("\xE2\x80\xA6#");
    ASSERT_NE(cut, std::string::npos);
    EXPECT_EQ((cut - body.size() % 2) % 2, 0u) << body.size();  // whole two-byte characters only
    EXPECT_TRUE(simdjson::validate_utf8(fp.data(), fp.size()));
  }
}

TEST(Fingerprint, InvalidUtf8BecomesBase64) {
  std::string fp = FingerprintBody("bad \xff\xfe 42");
  EXPECT_EQ(fp, "base64:YmFkIP/+IDxudW0+");  // base64 of the masked text "bad \xff\xfe <num>"
  EXPECT_TRUE(simdjson::validate_utf8(fp.data(), fp.size()));
}

TEST(Fingerprint, CapKeyLeavesShortValidKeysAlone) {
  std::string key = "orders-dlq";
  CapKey(key, 16);
  EXPECT_EQ(key, "orders-dlq");
  std::string long_key(100, 'k');
  CapKey(long_key, 40);
  EXPECT_EQ(long_key.size(), 40u);
  EXPECT_TRUE(long_key.starts_with(std::string(20, 'k')));
}

TEST(Fingerprint, MaskedTextAppendsToExistingOutput) {
  std::string out = "prefix:";
  AppendMaskedText(" id 42 ", out);
  EXPECT_EQ(out, "prefix:id <num>");
}

}  // namespace
}  // namespace dlq
