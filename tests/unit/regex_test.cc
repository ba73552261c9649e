#include "common/regex.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace dlq {
namespace {

Regex Compiled(std::string_view pattern) {
  Result<Regex> re = Regex::Compile(pattern);
  EXPECT_TRUE(re.ok()) << pattern << ": " << re.status().message();
  return std::move(re).value();
}

std::string ErrorOf(std::string_view pattern) {
  Result<Regex> re = Regex::Compile(pattern);
  EXPECT_FALSE(re.ok()) << pattern << " compiled";
  if (re.ok()) return "";
  EXPECT_EQ(re.status().code(), ErrorCode::kInvalidArgument);
  return re.status().message();
}

TEST(RegexTest, SearchFindsAMatchAnywhereAndFullMatchNeedsAllOfTheText) {
  Regex re = Compiled("order-[0-9]+");
  EXPECT_TRUE(re.Search("failed order-42 twice"));
  EXPECT_FALSE(re.Search("order-x"));
  EXPECT_FALSE(re.FullMatch("failed order-42"));
  EXPECT_TRUE(re.FullMatch("order-42"));
  EXPECT_EQ(re.pattern(), "order-[0-9]+");
}

// The syntax a user of the old ECMAScript engine relies on means the same in RE2.
TEST(RegexTest, CommonSyntaxKeepsItsEcmaScriptMeaning) {
  EXPECT_TRUE(Compiled(R"("status":\s*"failed")").Search(R"({"status":  "failed"})"));
  EXPECT_TRUE(Compiled(R"(\bid=\d{3}\b)").Search("x id=123 y"));
  EXPECT_FALSE(Compiled(R"(\bid=\d{3}\b)").Search("x id=1234 y"));
  EXPECT_TRUE(Compiled(R"(^\w+$)").Search("abc_1"));
  EXPECT_FALSE(Compiled("^b").Search("a\nb"));  // ^ and $ anchor the whole text, not lines
  EXPECT_FALSE(Compiled("a$").Search("a\nb"));
  EXPECT_FALSE(Compiled("a.b").Search("a\nb"));  // . does not match a line break
  EXPECT_TRUE(Compiled("<.+?>").Search("<a><b>"));
  EXPECT_TRUE(Compiled(R"(\/api\/v1\-x)").Search("/api/v1-x"));  // escaped punctuation is literal
  EXPECT_TRUE(Compiled("[[:digit:]]{2}").Search("a12"));
}

TEST(RegexTest, Re2SpellingsWork) {
  EXPECT_TRUE(Compiled("(?i)timeout").Search("TimeOut"));
  EXPECT_TRUE(Compiled("(?s)a.b").Search("a\nb"));
  EXPECT_TRUE(Compiled("(?m)^b$").Search("a\nb\nc"));
  EXPECT_TRUE(Compiled(R"(\x{e9})").Search("caf\xc3\xa9"));
  EXPECT_TRUE(Compiled(R"(\p{Greek}+)").Search("\xce\xb1\xce\xb2"));
  EXPECT_TRUE(Compiled(R"((?P<code>E[0-9]+))").Search("E42"));
  EXPECT_TRUE(Compiled(R"(\Q(?=a)\E)").Search("(?=a)"));  // quoted text is literal
}

TEST(RegexTest, DotMatchesOneUtf8CharacterNotOneByte) {
  EXPECT_TRUE(Compiled("^caf.$").Search("caf\xc3\xa9"));
  EXPECT_FALSE(Compiled("^caf..$").Search("caf\xc3\xa9"));
}

TEST(RegexTest, EachUnsupportedConstructIsNamedWithItsText) {
  struct Case {
    std::string pattern, expected;
  };
  for (const Case& c : std::vector<Case>{
           {R"((a)\1)", R"(backreferences (\1) are not supported; patterns use RE2 syntax (doc/querying.md))"},
           {R"((a)\9)", R"(backreferences (\9) are not supported)"},
           {R"((a)\18)", R"(backreferences (\1) are not supported)"},
           {R"((?P<n>a)\k<n>)", R"(backreferences (\k<n>) are not supported)"},
           {R"((?P<n>a)\k'n')", R"(backreferences (\k'n') are not supported)"},
           {R"((a)\g1)", R"(backreferences (\g1) are not supported)"},
           {R"((a)\g{1})", R"(backreferences (\g{1}) are not supported)"},
           {R"((?P<n>a)(?P=n))", R"(backreferences ((?P=n)) are not supported)"},
           {"a(?=b)", "lookahead assertions ((?=) are not supported"},
           {"a(?!b)", "lookahead assertions ((?!) are not supported"},
           {"(?<=a)b", "lookbehind assertions ((?<=) are not supported"},
           {"(?<!a)b", "lookbehind assertions ((?<!) are not supported"},
           {"(?>a+)b", "atomic groups ((?>) are not supported"},
           {"a*+b", "possessive quantifiers (*+) are not supported"},
           {"a++b", "possessive quantifiers (++) are not supported"},
           {"a?+b", "possessive quantifiers (?+) are not supported"},
           {"a{2,3}+b", "possessive quantifiers ({2,3}+) are not supported"},
           {"(a)?(?(1)b|c)", "conditionals ((?() are not supported"},
           {"a(?R)?b", "recursion and subroutine calls ((?R)) are not supported"},
           {"(a)(?1)", "recursion and subroutine calls ((?1)) are not supported"},
           {"(?<year>[0-9]{4})", "named groups ((?<year>) are not supported in this form (write (?P<name>...))"},
       }) {
    EXPECT_NE(ErrorOf(c.pattern).find(c.expected), std::string::npos)
        << c.pattern << " -> " << ErrorOf(c.pattern) << "\nexpected: " << c.expected;
  }
}

// What only looks like an unsupported construct (escaped, quoted or inside a
// class) is not named: RE2's own reason is given instead.
TEST(RegexTest, OtherErrorsCarryRe2sReason) {
  EXPECT_EQ(ErrorOf("(unclosed"),
            "not a valid regular expression (missing ): (unclosed); patterns use RE2 syntax (doc/querying.md)");
  EXPECT_EQ(ErrorOf(R"([(?=*+]()"),
            "not a valid regular expression (missing ): [(?=*+](); patterns use RE2 syntax (doc/querying.md)");
  EXPECT_EQ(ErrorOf(R"(\Q\1(?=\E()"),
            "not a valid regular expression (missing ): \\Q\\1(?=\\E(); patterns use RE2 syntax (doc/querying.md)");
  EXPECT_NE(ErrorOf(R"(\u0041)").find("invalid escape sequence: \\u"), std::string::npos);
  // \12 is octal in RE2 (a line feed), not a backreference.
  EXPECT_EQ(ErrorOf(R"((\12)").find("backreferences"), std::string::npos);
  EXPECT_TRUE(Compiled(R"(a\12b)").Search("a\nb"));
  EXPECT_NE(ErrorOf("a{1001}").find("invalid repetition size"), std::string::npos);
  EXPECT_NE(ErrorOf("\xff").find("invalid UTF-8"), std::string::npos);
}

// A short pattern whose compiled program would exceed kMaxMem is refused, not built.
TEST(RegexTest, APatternBeyondTheMemoryBudgetIsRefused) {
  std::string huge;
  for (int i = 0; i < 200; ++i) huge += R"(\pL{1000})";
  ASSERT_LT(huge.size(), Regex::kMaxPatternBytes);
  EXPECT_NE(ErrorOf(huge).find("not a valid regular expression (pattern too large"), std::string::npos)
      << ErrorOf(huge);
}

TEST(RegexTest, APatternLongerThanTheLimitIsRefusedUnparsed) {
  EXPECT_EQ(ErrorOf(std::string(Regex::kMaxPatternBytes + 1, '(')), "is longer than 16384 bytes");
  EXPECT_TRUE(Regex::Compile(std::string(Regex::kMaxPatternBytes, 'a')).ok());
}

// RE2 parses without recursion: nesting as deep as the length limit allows compiles.
TEST(RegexTest, DeeplyNestedPatternDoesNotExhaustTheStack) {
  std::string nested = std::string(8000, '(') + "a" + std::string(8000, ')');
  EXPECT_TRUE(Compiled(nested).Search("xa"));
}

// Copies share one compiled program; matching from many threads at once is
// safe (run under TSan by scripts/test) and gives every thread the right answer.
TEST(RegexTest, CopiesMatchFromManyThreadsAtOnce) {
  const Regex re = Compiled(R"("status":\s*"failed")");
  std::string hit = std::string(50000, 'x') + R"("status": "failed")";
  std::string miss = std::string(50000, 'x') + R"("status": "ok")";
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, copy = re] {
      for (int i = 0; i < 50; ++i) {
        if (!copy.Search(hit) || copy.Search(miss)) wrong.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace dlq
