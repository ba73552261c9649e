// ParseResponseHead and ChunkedDecoder (SocketTransport's wire parsing):
// status line, header fields as received, every framing rule, and malformed
// input rejected as kUnavailable with a short quote.
#include "aws/http_response_parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace dlq {
namespace {

using ::testing::HasSubstr;
using Framing = ResponseHead::Framing;

TEST(ParseResponseHeadTest, ReadsStatusAndHeadersAsReceived) {
  auto head = ParseResponseHead(
      "HTTP/1.1 201 Created\r\nETag:  \"a%20b\" \r\nx-amz-request-id: R1\r\nContent-Length: 5\r\nEmpty:\r\n", "PUT");
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_EQ(head->status, 201);
  ASSERT_EQ(head->headers.size(), 4u);
  EXPECT_EQ(head->headers[0], (std::pair<std::string, std::string>{"ETag", "\"a%20b\""}));
  EXPECT_EQ(head->headers[1].first, "x-amz-request-id");
  EXPECT_EQ(head->headers[3], (std::pair<std::string, std::string>{"Empty", ""}));
  EXPECT_EQ(head->framing, Framing::kLength);
  EXPECT_EQ(head->content_length, 5u);
  EXPECT_TRUE(head->keep_alive);
}

TEST(ParseResponseHeadTest, AcceptsBareLineFeedsAndAStatusWithoutReason) {
  auto head = ParseResponseHead("HTTP/1.1 200\nContent-Length: 0\n", "GET");
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->framing, Framing::kLength);
  EXPECT_EQ(head->content_length, 0u);
}

TEST(ParseResponseHeadTest, FramingFollowsTheRules) {
  struct Case {
    std::string head;
    std::string method;
    Framing framing;
    bool keep_alive;
  };
  const Case cases[] = {
      {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n", "HEAD", Framing::kNone, true},
      {"HTTP/1.1 204 No Content\r\n", "DELETE", Framing::kNone, true},
      {"HTTP/1.1 304 Not Modified\r\n", "GET", Framing::kNone, true},
      {"HTTP/1.1 100 Continue\r\n", "PUT", Framing::kNone, true},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n", "GET", Framing::kChunked, true},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\n", "GET", Framing::kChunked, true},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n", "GET", Framing::kUntilClose, false},
      {"HTTP/1.1 200 OK\r\n", "GET", Framing::kUntilClose, false},
      {"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: keep-alive, Close\r\n", "GET", Framing::kLength, false},
      {"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n", "GET", Framing::kLength, false},
      {"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n", "GET", Framing::kLength, true},
  };
  for (const auto& c : cases) {
    auto head = ParseResponseHead(c.head, c.method);
    ASSERT_TRUE(head.ok()) << c.head << ": " << head.status().ToString();
    EXPECT_EQ(head->framing, c.framing) << c.method << " " << c.head;
    EXPECT_EQ(head->keep_alive, c.keep_alive) << c.method << " " << c.head;
  }
}

TEST(ParseResponseHeadTest, RejectsMalformedHeadsAsUnavailable) {
  const char* bad[] = {
      "",
      "HTTP/1.1",
      "HTTP/2 200 OK\r\n",
      "HTTP/1.2 200 OK\r\n",
      "HTTP/1.1 20x OK\r\n",
      "HTTP/1.1 099 Low\r\n",
      "HTTP/1.1 2000 OK\r\n",
      "ICY 200 OK\r\n",
      "HTTP/1.1 200 OK\r\nno colon here\r\n",
      "HTTP/1.1 200 OK\r\n: empty name\r\n",
      "HTTP/1.1 200 OK\r\nBad Name: x\r\n",
      "HTTP/1.1 200 OK\r\nA: b\r\n folded\r\n",
      "HTTP/1.1 200 OK\r\nA: b\r\n\r\nB: c\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 1 2\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n",
  };
  for (const char* text : bad) {
    auto head = ParseResponseHead(text, "GET");
    ASSERT_FALSE(head.ok()) << "accepted: " << text;
    EXPECT_EQ(head.status().code(), ErrorCode::kUnavailable) << text;
    EXPECT_THAT(head.status().message(), HasSubstr("malformed HTTP response")) << text;
  }
  auto quoted = ParseResponseHead("HTTP/1.1 200 OK\r\n" + std::string(500, 'z') + "\x01\r\n", "GET");
  ASSERT_FALSE(quoted.ok());
  EXPECT_LT(quoted.status().message().size(), 160u) << "quotes at most 64 bytes: " << quoted.status().message();
}

TEST(ChunkedDecoderTest, DecodesChunksWithExtensionsAndTrailersAndStopsAtTheEnd) {
  const std::string wire = "5;name=value\r\nhello\r\nA\r\n, chunked!\r\n0\r\nTrailer: t\r\n\r\nNEXT";
  ChunkedDecoder whole;
  std::string out;
  auto used = whole.Feed(wire, out);
  ASSERT_TRUE(used.ok()) << used.status().ToString();
  EXPECT_TRUE(whole.done());
  EXPECT_EQ(out, "hello, chunked!");
  EXPECT_EQ(wire.substr(*used), "NEXT") << "bytes after the body are left alone";

  // The same bytes one at a time.
  ChunkedDecoder bytewise;
  std::string out2;
  size_t consumed = 0;
  for (size_t i = 0; i < wire.size() && !bytewise.done(); ++i) {
    auto n = bytewise.Feed(std::string_view(wire).substr(i, 1), out2);
    ASSERT_TRUE(n.ok()) << i << ": " << n.status().ToString();
    consumed += *n;
  }
  EXPECT_TRUE(bytewise.done());
  EXPECT_EQ(out2, out);
  EXPECT_EQ(consumed, *used);
}

TEST(ChunkedDecoderTest, WaitsForMoreUntilTheLastChunk) {
  ChunkedDecoder d;
  std::string out;
  ASSERT_TRUE(d.Feed("3\r\nabc\r\n", out).ok());
  EXPECT_FALSE(d.done());
  ASSERT_TRUE(d.Feed("0\r\n", out).ok());
  EXPECT_FALSE(d.done()) << "the trailer section's blank line is still to come";
  ASSERT_TRUE(d.Feed("\n", out).ok());
  EXPECT_TRUE(d.done());
  EXPECT_EQ(out, "abc");
}

TEST(ChunkedDecoderTest, RejectsMalformedChunks) {
  const char* bad[] = {
      "x\r\n",                  // not hex
      "\r\n",                   // no size
      "3\r\nabcd\r\n",          // data longer than its size
      "11111111111111111\r\n",  // 17 digits
      "FFFFFFFFFFFFFFFF\r\n",   // above 2^62
      "-1\r\n",
  };
  for (const char* wire : bad) {
    ChunkedDecoder d;
    std::string out;
    auto r = d.Feed(wire, out);
    ASSERT_FALSE(r.ok()) << "accepted: " << wire;
    EXPECT_EQ(r.status().code(), ErrorCode::kUnavailable);
  }
  ChunkedDecoder long_line;
  std::string out;
  EXPECT_FALSE(long_line.Feed("1;" + std::string(5000, 'e'), out).ok()) << "a size line over 4 KiB";
  ChunkedDecoder long_trailer;
  EXPECT_FALSE(long_trailer.Feed("0\r\nT: " + std::string(5000, 't'), out).ok()) << "a trailer line over 4 KiB";
}

}  // namespace
}  // namespace dlq
