#include <gtest/gtest.h>

#include "common/crypto.h"
#include "common/strings.h"
#include "common/time_util.h"

namespace dlq {
namespace {

TEST(Crypto, Md5AndSha256MatchKnownVectors) {
  EXPECT_EQ(Md5Hex(""), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(Md5Hex("The quick brown fox jumps over the lazy dog"), "9e107d9d372bb6826bd81d3542a419d6");
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Crypto, Base64RoundTripsAndRejectsGarbage) {
  for (const std::string& s :
       std::vector<std::string>{"", "f", "fo", "foo", "foob", "fooba", "foobar", std::string("\0\xff\x80", 3)}) {
    auto enc = Base64Encode(s);
    auto dec = Base64Decode(enc);
    ASSERT_TRUE(dec.has_value()) << enc;
    EXPECT_EQ(*dec, s);
  }
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_FALSE(Base64Decode("Zm9").has_value());
  EXPECT_FALSE(Base64Decode("Zm=v").has_value());
  EXPECT_FALSE(Base64Decode("Zm9v!A==").has_value());
}

TEST(TimeUtil, FormatsAndParsesIso8601) {
  auto t = FromUnixMillis(1757507400123);  // 2025-09-10T12:30:00.123Z
  EXPECT_EQ(FormatIso8601(t), "2025-09-10T12:30:00.123Z");
  EXPECT_EQ(FormatAmzDate(t), "20250910T123000Z");
  EXPECT_EQ(FormatAmzDay(t), "20250910");
  auto p = ParseIso8601("2025-09-10T12:30:00.123Z");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(ToUnixMillis(*p), 1757507400123);
  auto off = ParseIso8601("2025-09-10T14:30:00+02:00");
  ASSERT_TRUE(off.has_value());
  EXPECT_EQ(ToUnixSeconds(*off), 1757507400);
  EXPECT_FALSE(ParseIso8601("2025-13-10T12:30:00Z").has_value());
  EXPECT_FALSE(ParseIso8601("yesterday").has_value());
}

TEST(TimeUtil, ParsesDurations) {
  EXPECT_EQ(ParseDuration("90s")->count(), 90);
  EXPECT_EQ(ParseDuration("4d")->count(), 345600);
  EXPECT_EQ(ParseDuration("1h30m")->count(), 5400);
  EXPECT_EQ(ParseDuration("345600")->count(), 345600);
  EXPECT_FALSE(ParseDuration("").has_value());
  EXPECT_FALSE(ParseDuration("5x").has_value());
  EXPECT_FALSE(ParseDuration("1h30").has_value());
  EXPECT_EQ(FormatDuration(std::chrono::seconds(5400)), "1h30m");
}

TEST(Strings, ParseInt64TakesTheWholeStringOrNothing) {
  EXPECT_EQ(ParseInt64("345600"), 345600);
  EXPECT_EQ(ParseInt64("-12"), -12);
  EXPECT_EQ(ParseInt64("9223372036854775807"), INT64_MAX);
  for (const char* bad : {"", " 1", "1 ", "12abc", "+5", "1.5", "9223372036854775808", "0x10", "-"}) {
    EXPECT_EQ(ParseInt64(bad), std::nullopt) << bad;
  }
}

TEST(Strings, UriEncodeKeepsUnreservedOnly) {
  EXPECT_EQ(UriEncode("a b/c~_-.é"), "a%20b%2Fc~_-.%C3%A9");
  EXPECT_EQ(UriEncode("a b/c", false), "a%20b/c");
  EXPECT_EQ(UriDecode("a%20b%2Fc%zz%"), "a b/c%zz%");
}

}  // namespace
}  // namespace dlq
