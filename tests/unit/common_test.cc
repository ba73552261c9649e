#include <gtest/gtest.h>

#include <atomic>
#include <ctime>
#include <thread>
#include <vector>

#include "common/crypto.h"
#include "common/markup.h"
#include "common/strings.h"
#include "common/time_util.h"
#include "s3/xml_codec.h"

namespace dlq {
namespace {

TEST(Crypto, Md5AndSha256MatchKnownVectors) {
  EXPECT_EQ(Md5Hex(""), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(Md5Hex("The quick brown fox jumps over the lazy dog"), "9e107d9d372bb6826bd81d3542a419d6");
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

// RFC 4231 test cases 1, 2, 6 and 7 (keys shorter than, and longer than, the
// 64-byte block), a 64-byte key, and interleaving with the other digests,
// which share this thread's digest context.
TEST(Crypto, HmacSha256MatchesRfc4231) {
  auto hmac = [](std::string_view key, std::string_view data) { return HexEncode(HmacSha256(key, data)); };
  EXPECT_EQ(hmac(std::string(20, '\x0b'), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hmac("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  const std::string long_key(131, '\xaa');
  EXPECT_EQ(hmac(long_key, "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  EXPECT_EQ(hmac(long_key,
                 "This is a test using a larger than block-size key and a larger than block-size data. The key needs "
                 "to be hashed before being used by the HMAC algorithm."),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
  // A key of exactly one block is used as is; one byte more is hashed first,
  // so the two results differ.
  const std::string block_key(64, 'k');
  EXPECT_NE(hmac(block_key, "x"), hmac(block_key + "k", "x"));
  EXPECT_EQ(hmac(block_key, "x"), hmac(block_key, "x"));

  Md5Hasher hasher;
  hasher.Update("The quick brown fox ");
  EXPECT_EQ(hmac("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  hasher.Update("jumps over the lazy dog");
  EXPECT_EQ(HexEncode(hasher.Finish()), "9e107d9d372bb6826bd81d3542a419d6");
}

TEST(Crypto, DigestsAgreeAcrossThreads) {
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 500; ++i) {
        if (HexEncode(HmacSha256("Jefe", "what do ya want for nothing?")) !=
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" ||
            Md5Hex("The quick brown fox jumps over the lazy dog") != "9e107d9d372bb6826bd81d3542a419d6") {
          ++mismatches;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
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
  // '=' only as the last one or two characters of the whole text.
  for (const char* bad : {"A===", "====", "Zg==Zm9v", "Zm=vZm9v", "Zg=A", "=Zm9", "Zm9v\n", "Zm9v Zg=="}) {
    EXPECT_FALSE(Base64Decode(bad).has_value()) << bad;
  }
  EXPECT_EQ(Base64Decode("Zg=="), "f");
  EXPECT_EQ(Base64Decode("Zm8="), "fo");
  // Every byte value, at every length modulo 3.
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  for (size_t n = 0; n <= all.size(); n += 37)
    EXPECT_EQ(Base64Decode(Base64Encode(all.substr(0, n))), all.substr(0, n));
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

// ToCivilTime is arithmetic; gmtime_r is the reference it must agree with,
// across leap days, century years and instants before 1970.
TEST(TimeUtil, CivilTimeAgreesWithGmtime) {
  const int64_t starts[] = {-2208988800LL,  // 1900-01-01
                            -86400LL * 3,   // 1969-12-29
                            951782400LL,    // 2000-02-29
                            4107456000LL,   // 2100-02-28
                            1757507400LL};
  for (int64_t start : starts) {
    for (int64_t step = 0; step < 800; ++step) {
      const int64_t secs = start + step * 86399 + step % 7;  // walks the days and the hours
      for (int64_t millis : {int64_t{0}, int64_t{999}}) {
        const SystemTime t = FromUnixMillis(secs * 1000 + millis);
        const CivilTime c = ToCivilTime(t);
        const time_t tt = static_cast<time_t>(secs);
        std::tm tm{};
        gmtime_r(&tt, &tm);
        ASSERT_EQ(c.year, tm.tm_year + 1900) << secs;
        ASSERT_EQ(c.month, tm.tm_mon + 1) << secs;
        ASSERT_EQ(c.day, tm.tm_mday) << secs;
        ASSERT_EQ(c.hour, tm.tm_hour) << secs;
        ASSERT_EQ(c.minute, tm.tm_min) << secs;
        ASSERT_EQ(c.second, tm.tm_sec) << secs;
        ASSERT_EQ(c.millis, millis) << secs;
      }
    }
  }
  EXPECT_EQ(FormatAmzDate(FromUnixMillis(951782400000)), "20000229T000000Z");
  EXPECT_EQ(FormatAmzDay(FromUnixMillis(-1)), "19691231");
  EXPECT_EQ(FormatIso8601(FromUnixMillis(-1)), "1969-12-31T23:59:59.999Z");
}

TEST(Strings, CaseFoldingIsAsciiOnly) {
  EXPECT_EQ(ToLower("X-Amz-Date"), "x-amz-date");
  EXPECT_EQ(ToLower("\xC3\x89t\xC3\xA9"), "\xC3\x89t\xC3\xA9");  // UTF-8 bytes pass through unchanged
  EXPECT_TRUE(IEquals("Content-MD5", "content-md5"));
  EXPECT_FALSE(IEquals("Content-MD5", "content-md4"));
  EXPECT_FALSE(IEquals("[", "{"));  // differ by 0x20 but are not letters
  EXPECT_FALSE(IEquals("ab", "abc"));
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

TEST(Markup, EscapesTheFiveCharactersWithTheCallersApostrophe) {
  EXPECT_EQ(EscapeMarkup(R"(<a href="x">Tom & 'Jerry'</a>)", "&apos;"),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; &apos;Jerry&apos;&lt;/a&gt;");
  EXPECT_EQ(EscapeMarkup("it's", "&#39;"), "it&#39;s");
  EXPECT_EQ(EscapeMarkup("plain \xC3\xA9", "&apos;"), "plain \xC3\xA9");
  EXPECT_EQ(XmlEscape("a'b"), "a&apos;b");
}

}  // namespace
}  // namespace dlq
