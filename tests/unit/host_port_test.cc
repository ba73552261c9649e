// The one HOST:PORT parser (aws/http.h: SplitHostPort, ParsePort) and its two
// callers: URLs (ParseUrl, port 1..65535, optional) and the daemon's
// `listen:` (port 0..65535, required).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "aws/environment.h"
#include "aws/http.h"
#include "monitor/config.h"

namespace dlq {
namespace {

using ::testing::HasSubstr;

TEST(SplitHostPortTest, SplitsANameAndItsPort) {
  auto hp = SplitHostPort("example.com:8080");
  ASSERT_TRUE(hp.ok()) << hp.status().message();
  EXPECT_EQ(hp->host, "example.com");
  EXPECT_FALSE(hp->bracketed);
  EXPECT_EQ(hp->port, "8080");
}

TEST(SplitHostPortTest, IPv6LiteralsLoseTheirBrackets) {
  auto hp = SplitHostPort("[::1]:9464");
  ASSERT_TRUE(hp.ok()) << hp.status().message();
  EXPECT_EQ(hp->host, "::1");
  EXPECT_TRUE(hp->bracketed);
  EXPECT_EQ(hp->port, "9464");
  hp = SplitHostPort("[2001:db8::7]");
  ASSERT_TRUE(hp.ok()) << hp.status().message();
  EXPECT_EQ(hp->host, "2001:db8::7");
  EXPECT_FALSE(hp->port.has_value());
}

TEST(SplitHostPortTest, MissingPortIsNoColonAndEmptyPortIsAColonWithNothing) {
  auto hp = SplitHostPort("localhost");
  ASSERT_TRUE(hp.ok());
  EXPECT_FALSE(hp->port.has_value());
  hp = SplitHostPort("localhost:");
  ASSERT_TRUE(hp.ok());
  EXPECT_EQ(hp->port, "");
  hp = SplitHostPort(":8080");
  ASSERT_TRUE(hp.ok());
  EXPECT_EQ(hp->host, "");
  EXPECT_EQ(hp->port, "8080");
}

TEST(SplitHostPortTest, RejectsUnclosedBracketsTrailingTextAndBareIPv6) {
  EXPECT_THAT(SplitHostPort("[::1").status().message(), HasSubstr("no closing ']'"));
  EXPECT_THAT(SplitHostPort("[::1]x").status().message(), HasSubstr("not :PORT"));
  EXPECT_THAT(SplitHostPort("::1:80").status().message(), HasSubstr("more than one ':'"));
  EXPECT_EQ(SplitHostPort("a:b:c").status().code(), ErrorCode::kInvalidArgument);
}

TEST(ParsePortTest, AcceptsDecimalPortsInRangeOnly) {
  EXPECT_EQ(ParsePort("0", 0), 0);
  EXPECT_EQ(ParsePort("65535", 0), 65535);
  EXPECT_EQ(ParsePort("080", 1), 80);
  EXPECT_FALSE(ParsePort("0", 1));
  EXPECT_FALSE(ParsePort("65536", 0));
  EXPECT_FALSE(ParsePort("99999", 0));
  EXPECT_FALSE(ParsePort("100000", 0));
  EXPECT_FALSE(ParsePort("", 0));
  EXPECT_FALSE(ParsePort("-1", 0));
  EXPECT_FALSE(ParsePort("+80", 0));
  EXPECT_FALSE(ParsePort("8o", 0));
}

TEST(ParseUrlHostPortTest, KeepsIPv6BracketsInTheHost) {
  auto url = ParseUrl("http://[::1]:4566/q");
  ASSERT_TRUE(url.ok()) << url.status().message();
  EXPECT_EQ(url->host, "[::1]");
  EXPECT_EQ(url->port, 4566);
  EXPECT_EQ(url->Authority(), "[::1]:4566");
  url = ParseUrl("https://[fe80::1]/");
  ASSERT_TRUE(url.ok()) << url.status().message();
  EXPECT_EQ(url->host, "[fe80::1]");
  EXPECT_EQ(url->port, 0);
}

TEST(ParseUrlHostPortTest, MissingOrEmptyPortMeansTheSchemesDefault) {
  auto url = ParseUrl("https://sqs.us-east-1.amazonaws.com/123/q");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url->port, 0);
  url = ParseUrl("http://localhost:/x");
  ASSERT_TRUE(url.ok()) << url.status().message();
  EXPECT_EQ(url->host, "localhost");
  EXPECT_EQ(url->port, 0);
}

TEST(ParseUrlHostPortTest, PortMustBeIn1To65535) {
  EXPECT_TRUE(ParseUrl("http://h:1/").ok());
  EXPECT_TRUE(ParseUrl("http://h:65535/").ok());
  EXPECT_THAT(ParseUrl("http://h:0/").status().message(), HasSubstr("has a bad port"));
  EXPECT_THAT(ParseUrl("http://h:65536/").status().message(), HasSubstr("has a bad port"));
  EXPECT_THAT(ParseUrl("http://h:x/").status().message(), HasSubstr("has a bad port"));
  EXPECT_THAT(ParseUrl("http://[::1/").status().message(), HasSubstr("bad IPv6 host"));
  EXPECT_FALSE(ParseUrl("http://::1:80/").ok());
}

Result<MonitorConfig> WithListen(const std::string& listen) {
  return ParseMonitorConfig(
      "listen: '" + listen + "'\ndefaults:\n  destination: s3://b/p\ngroups:\n  - name: g\n    queues: [q]\n", "c.yaml",
      MapEnvironment());
}

TEST(ListenHostPortTest, AcceptsIPv6InBracketsAndPortZero) {
  auto c = WithListen("[::1]:0");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->listen_host, "::1");
  EXPECT_EQ(c->listen_port, 0);
  c = WithListen("10.0.0.1:65535");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->listen_port, 65535);
}

TEST(ListenHostPortTest, RequiresAPort) {
  for (const char* v : {"127.0.0.1", "[::1]", "nowhere"}) {
    EXPECT_THAT(WithListen(v).status().message(), HasSubstr("is not HOST:PORT (e.g. 127.0.0.1:9464, [::1]:9464)")) << v;
  }
  EXPECT_THAT(WithListen("127.0.0.1:").status().message(), HasSubstr("is not HOST:PORT with a port in 0..65535"));
  EXPECT_THAT(WithListen("[::1]:").status().message(), HasSubstr("is not HOST:PORT with a port in 0..65535"));
}

TEST(ListenHostPortTest, PortMustBeIn0To65535) {
  for (const char* v : {"127.0.0.1:65536", "127.0.0.1:-1", "[::1]:99999", "h:port"}) {
    EXPECT_THAT(WithListen(v).status().message(), HasSubstr("is not HOST:PORT with a port in 0..65535")) << v;
  }
  EXPECT_THAT(WithListen("::1:80").status().message(), HasSubstr("is not HOST:PORT (e.g."));
}

}  // namespace
}  // namespace dlq
