#include "common/text.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

namespace dlq {
namespace {

// True when `s` holds no C0 control (but those in `allowed`), no DEL and no
// C1 control, and is valid UTF-8.
bool NothingReachesTheTerminal(std::string_view s, std::string_view allowed = "") {
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 || c == 0x7F) && allowed.find(static_cast<char>(c)) == std::string_view::npos) return false;
    if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9F) return false;
  }
  return true;
}

TEST(TerminalSafe, EscapesEveryC0ControlAndDel) {
  for (int c = 0; c < 0x20; ++c) {
    const std::string in = std::string("a") + static_cast<char>(c) + "b";
    const std::string expected = c == '\n'   ? "a\\nb"
                                 : c == '\t' ? "a\\tb"
                                 : c == '\r' ? "a\\rb"
                                             : fmt::format("a\\x{:02x}b", c);
    EXPECT_EQ(TerminalSafe(in), expected) << c;
  }
  EXPECT_EQ(TerminalSafe("a\x7f"
                         "b"),
            "a\\x7fb");
}

TEST(TerminalSafe, EscapesEveryC1ControlAsItsCodePoint) {
  for (int c = 0x80; c <= 0x9F; ++c) {
    const std::string in = std::string("a\xC2") + static_cast<char>(c) + "b";
    EXPECT_EQ(TerminalSafe(in), fmt::format("a\\u00{:02x}b", c)) << c;
  }
  EXPECT_EQ(TerminalSafe("\xC2\xA0"), "\xC2\xA0");  // U+00A0, the first character after C1, is kept
}

TEST(TerminalSafe, EscapesTheTitleAndClearScreenSequences) {
  const std::string hostile =
      "\x1b]0;owned\x07\x1b[2J\xC2\x9b"
      "31m";
  const std::string safe = TerminalSafe(hostile, TextLines::kMulti);
  EXPECT_EQ(safe, "\\x1b]0;owned\\x07\\x1b[2J\\u009b31m");
  EXPECT_TRUE(NothingReachesTheTerminal(safe));
}

TEST(TerminalSafe, MultiLineKeepsLineFeedsAndTabsButNotCarriageReturns) {
  EXPECT_EQ(TerminalSafe("line 1\n\tline 2\r\n", TextLines::kMulti), "line 1\n\tline 2\\r\n");
  EXPECT_EQ(TerminalSafe("line 1\n\tline 2\r\n"), "line 1\\n\\tline 2\\r\\n");
}

TEST(TerminalSafe, KeepsValidMultibyteUtf8) {
  const std::string text =
      "caf\xC3\xA9 \xE2\x82\xAC \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80 \xEF\xBF\xBF \xF4\x8F\xBF\xBF";
  EXPECT_EQ(TerminalSafe(text), text);
  EXPECT_EQ(TerminalSafe(text, TextLines::kMulti), text);
  EXPECT_EQ(TerminalSafe("plain ASCII with \\ and \"quotes\""), "plain ASCII with \\ and \"quotes\"");
  EXPECT_EQ(TerminalSafe(""), "");
}

TEST(TerminalSafe, ShowsEachInvalidByteAsHex) {
  EXPECT_EQ(TerminalSafe("a\xFF"
                         "b"),
            "a\\xffb");
  EXPECT_EQ(TerminalSafe("\x9b"), "\\x9b");  // a lone continuation byte (8-bit CSI)
  EXPECT_EQ(TerminalSafe("\xC3"), "\\xc3");  // truncated at the end
  EXPECT_EQ(TerminalSafe("\xE2\x82"
                         "x"),
            "\\xe2\\x82x");                                             // truncated before more text
  EXPECT_EQ(TerminalSafe("\xC0\x80"), "\\xc0\\x80");                    // overlong NUL
  EXPECT_EQ(TerminalSafe("\xC1\x9B"), "\\xc1\\x9b");                    // overlong ESC-like
  EXPECT_EQ(TerminalSafe("\xE0\x80\x9B"), "\\xe0\\x80\\x9b");           // overlong three-byte form
  EXPECT_EQ(TerminalSafe("\xED\xA0\x80"), "\\xed\\xa0\\x80");           // a UTF-16 surrogate
  EXPECT_EQ(TerminalSafe("\xF4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  EXPECT_EQ(TerminalSafe("\xF5\x80\x80\x80"), "\\xf5\\x80\\x80\\x80");  // no such lead byte
  EXPECT_EQ(TerminalSafe("\xC2\xC2\x9b"), "\\xc2\\u009b");              // a bad byte, then a real C1
}

TEST(TerminalSafe, EveryByteValueLeavesNothingForTheTerminal) {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  for (int c = 0x80; c < 0xA0; ++c) all += std::string("\xC2") + static_cast<char>(c);
  EXPECT_TRUE(NothingReachesTheTerminal(TerminalSafe(all)));
  EXPECT_TRUE(NothingReachesTheTerminal(TerminalSafe(all, TextLines::kMulti), "\n\t"));
}

TEST(OneLinePreview, ShowsControlsAsSpacesAndInvalidBytesAsHex) {
  EXPECT_EQ(OneLinePreview("a\x1b[2J\nb\xC2\x9b"
                           "c\xFF",
                           20),
            "a [2J b c\\xff");
  EXPECT_EQ(OneLinePreview("\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E", 2), "\xE6\x97\xA5…");
  EXPECT_EQ(OneLinePreview("ab\xFF\xFF", 3), "ab…");  // a "\xNN" is one character, cut whole
  EXPECT_EQ(OneLinePreview("abc", 3), "abc");
  EXPECT_EQ(OneLinePreview("abc", 0), "…");
}

}  // namespace
}  // namespace dlq
