#include "server/http_request_parser.h"

#include <gtest/gtest.h>

#include <string>

namespace dlq {
namespace {

using State = RequestHeadParse::State;

RequestHeadParse Parse(const std::string& text, RequestHeadLimits limits = {}) {
  return ParseRequestHead(text, limits);
}

TEST(HttpRequestParserTest, ParsesAHeadAndTellsWhereTheBodyStarts) {
  const std::string text =
      "POST /api/queues/a%2Db/archive?x=1&y=%20 HTTP/1.1\r\nHost: localhost:9464\r\nContent-Length: 4\r\n"
      "X-Empty:\r\n\r\nbody";
  RequestHeadParse p = Parse(text);
  ASSERT_EQ(p.state, State::kComplete) << p.reason;
  EXPECT_EQ(p.head.method, "POST");
  EXPECT_EQ(p.head.path, "/api/queues/a-b/archive");
  EXPECT_EQ(p.head.query, "x=1&y=%20");
  EXPECT_EQ(p.head.content_length, 4u);
  EXPECT_EQ(text.substr(p.head.head_bytes), "body");
  ASSERT_EQ(p.head.headers.size(), 3u);
  EXPECT_EQ(p.head.headers[0].second, "localhost:9464");
  EXPECT_EQ(p.head.headers[2].second, "");
  EXPECT_TRUE(p.head.keep_alive);
}

TEST(HttpRequestParserTest, IsIncompleteUntilTheBlankLineArrives) {
  const std::string text = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  for (size_t n = 0; n < text.size(); ++n) {
    EXPECT_EQ(Parse(text.substr(0, n)).state, State::kIncomplete) << n;
  }
  EXPECT_EQ(Parse(text).state, State::kComplete);
}

TEST(HttpRequestParserTest, AcceptsLfOnlyLinesAndLeadingEmptyLines) {
  RequestHeadParse p = Parse("\r\n\nGET /a HTTP/1.0\nHost: x\n\n");
  ASSERT_EQ(p.state, State::kComplete) << p.reason;
  EXPECT_EQ(p.head.path, "/a");
  EXPECT_FALSE(p.head.keep_alive);  // HTTP/1.0 without keep-alive
  EXPECT_TRUE(Parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").head.keep_alive);
  EXPECT_FALSE(Parse("GET / HTTP/1.1\r\nConnection: close\r\n\r\n").head.keep_alive);
}

TEST(HttpRequestParserTest, RefusesTwoHostFieldsWhateverTheirCase) {
  RequestHeadParse p = Parse("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nhost: evil.example\r\n\r\n");
  EXPECT_EQ(p.state, State::kRefused);
  EXPECT_EQ(p.status, 400);
  EXPECT_EQ(p.reason, "more than one Host field");
  EXPECT_EQ(Parse("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").state, State::kComplete);
}

TEST(HttpRequestParserTest, RefusesAHeadOverTheByteLimitBeforeItEnds) {
  RequestHeadLimits limits;
  limits.max_head_bytes = 1024;
  std::string text = "GET / HTTP/1.1\r\nX-Big: " + std::string(2000, 'a');  // no end in sight
  RequestHeadParse p = Parse(text, limits);
  EXPECT_EQ(p.state, State::kRefused);
  EXPECT_EQ(p.status, 431);
  EXPECT_NE(p.reason.find("1024"), std::string::npos) << p.reason;
}

TEST(HttpRequestParserTest, RefusesMoreHeaderFieldsThanTheLimit) {
  RequestHeadLimits limits;
  limits.max_headers = 3;
  std::string text = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 4; ++i) text += "X-" + std::to_string(i) + ": v\r\n";
  RequestHeadParse p = Parse(text, limits);  // refused before the blank line
  EXPECT_EQ(p.state, State::kRefused);
  EXPECT_EQ(p.status, 431);
}

TEST(HttpRequestParserTest, RefusesFramingThatAProxyCouldReadDifferently) {
  struct Case {
    std::string text;
    int status;
  };
  const Case cases[] = {
      {"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411},
      {"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 1 2\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 99999999999999\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n", 413},
      {"GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400},
      {"GET / HTTP/1.1\rHost: x\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nX: a\x01b\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nno colon\r\n\r\n", 400},
      {"GET / HTTP/2.0\r\n\r\n", 505},
      {"GET / FTP/1.0\r\n\r\n", 400},
      {"GET http://evil/ HTTP/1.1\r\n\r\n", 400},
      {"GET /a b HTTP/1.1\r\n\r\n", 400},
      {"GET /a%0 HTTP/1.1\r\n\r\n", 400},
      {"GET /a%00 HTTP/1.1\r\n\r\n", 400},
      {"GET /\x80 HTTP/1.1\r\n\r\n", 400},
      {"G(T / HTTP/1.1\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nExpect: something\r\n\r\n", 417},
  };
  for (const Case& c : cases) {
    RequestHeadParse p = Parse(c.text);
    EXPECT_EQ(p.state, State::kRefused) << c.text;
    EXPECT_EQ(p.status, c.status) << c.text << " -> " << p.reason;
    EXPECT_EQ(p.reason.find('\r'), std::string::npos);
  }
}

TEST(HttpRequestParserTest, NotesExpectContinue) {
  RequestHeadParse p = Parse("POST / HTTP/1.1\r\nContent-Length: 3\r\nExpect: 100-Continue\r\n\r\n");
  ASSERT_EQ(p.state, State::kComplete) << p.reason;
  EXPECT_TRUE(p.head.expect_continue);
}

TEST(HttpRequestParserTest, PercentDecodesThePathOnly) {
  std::string out;
  EXPECT_TRUE(PercentDecodePath("/a%2fb%41", out));
  EXPECT_EQ(out, "/a/bA");
  EXPECT_FALSE(PercentDecodePath("/%", out));
  EXPECT_FALSE(PercentDecodePath("/%4", out));
  EXPECT_FALSE(PercentDecodePath("/%zz", out));
  EXPECT_FALSE(PercentDecodePath("/%00", out));
}

}  // namespace
}  // namespace dlq
