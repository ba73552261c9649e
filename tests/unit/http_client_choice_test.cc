// DLQ_HTTP_CLIENT: which HttpTransport the CLI and the daemon build
// (aws/http_client_choice.h), through MakeDefaultTransport and AwsServices.
#include "aws/http_client_choice.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "app/services.h"
#include "aws/curl_transport.h"
#include "aws/default_transport.h"
#include "aws/socket_transport.h"
#include "testing/fake_clock.h"

namespace dlq {
namespace {

TEST(HttpClientChoiceTest, UnsetOrEmptyIsBuiltin) {
  MapEnvironment env;
  auto unset = ChooseHttpClient(env);
  ASSERT_TRUE(unset.ok()) << unset.status().ToString();
  EXPECT_EQ(*unset, HttpClient::kBuiltin);
  env.Set("DLQ_HTTP_CLIENT", "");
  auto empty = ChooseHttpClient(env);
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_EQ(*empty, HttpClient::kBuiltin);
}

TEST(HttpClientChoiceTest, AProxyVariableMakesTheDefaultCurl) {
  for (const char* proxy : {"HTTPS_PROXY", "https_proxy", "http_proxy", "ALL_PROXY", "all_proxy"}) {
    MapEnvironment env{{proxy, "http://proxy.internal:3128"}};
    auto chosen = ChooseHttpClient(env);
    ASSERT_TRUE(chosen.ok()) << proxy << ": " << chosen.status().ToString();
    EXPECT_EQ(*chosen, HttpClient::kCurl) << proxy;
    env.Set("DLQ_HTTP_CLIENT", "");  // empty is the default too
    ASSERT_TRUE(ChooseHttpClient(env).ok());
    EXPECT_EQ(*ChooseHttpClient(env), HttpClient::kCurl) << proxy;
  }
  // An empty proxy variable is no proxy; NO_PROXY alone names none; curl
  // ignores upper-case HTTP_PROXY, so it would go direct too.
  MapEnvironment empty{{"HTTPS_PROXY", ""}, {"NO_PROXY", "*"}};
  MapEnvironment upper_http{{"HTTP_PROXY", "http://proxy.internal:3128"}};
  for (const MapEnvironment* none : {&empty, &upper_http}) {
    ASSERT_TRUE(ChooseHttpClient(*none).ok());
    EXPECT_EQ(*ChooseHttpClient(*none), HttpClient::kBuiltin);
  }
}

TEST(HttpClientChoiceTest, NamedClientsAreTaken) {
  MapEnvironment curl{{"DLQ_HTTP_CLIENT", "curl"}};
  MapEnvironment builtin{{"DLQ_HTTP_CLIENT", "builtin"}};
  ASSERT_TRUE(ChooseHttpClient(curl).ok());
  ASSERT_TRUE(ChooseHttpClient(builtin).ok());
  EXPECT_EQ(*ChooseHttpClient(curl), HttpClient::kCurl);
  EXPECT_EQ(*ChooseHttpClient(builtin), HttpClient::kBuiltin);
}

// curl's order: http takes only lower-case http_proxy, https either case,
// then all_proxy, ALL_PROXY; empty values are unset.
TEST(HttpClientChoiceTest, ProxyVariableForFollowsCurlsOrderPerScheme) {
  MapEnvironment none;
  EXPECT_EQ(ProxyVariableFor(none, "http"), "");
  EXPECT_EQ(ProxyVariableFor(none, "https"), "");
  MapEnvironment https_only{{"HTTPS_PROXY", "http://p:1"}};
  EXPECT_EQ(ProxyVariableFor(https_only, "https"), "HTTPS_PROXY");
  EXPECT_EQ(ProxyVariableFor(https_only, "http"), "") << "an http endpoint goes direct";
  MapEnvironment upper_http{{"HTTP_PROXY", "http://p:1"}};
  EXPECT_EQ(ProxyVariableFor(upper_http, "http"), "") << "curl ignores HTTP_PROXY";
  MapEnvironment both{{"https_proxy", "http://a:1"}, {"HTTPS_PROXY", "http://b:1"}, {"all_proxy", "http://c:1"}};
  EXPECT_EQ(ProxyVariableFor(both, "https"), "https_proxy");
  EXPECT_EQ(ProxyVariableFor(both, "http"), "all_proxy");
  MapEnvironment all_upper{{"ALL_PROXY", "http://c:1"}, {"http_proxy", ""}};
  EXPECT_EQ(ProxyVariableFor(all_upper, "http"), "ALL_PROXY") << "an empty http_proxy is unset";
  EXPECT_EQ(ProxyVariableFor(all_upper, "https"), "ALL_PROXY");
}

TEST(HttpClientChoiceTest, ProxyVariablesDoNotChangeAnExplicitChoice) {
  MapEnvironment builtin{{"DLQ_HTTP_CLIENT", "builtin"}, {"HTTPS_PROXY", "http://proxy:3128"}};
  auto chosen = ChooseHttpClient(builtin);
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  EXPECT_EQ(*chosen, HttpClient::kBuiltin);
  MapEnvironment curl{{"DLQ_HTTP_CLIENT", "curl"}, {"https_proxy", "http://proxy:3128"}};
  ASSERT_TRUE(ChooseHttpClient(curl).ok());
  EXPECT_EQ(*ChooseHttpClient(curl), HttpClient::kCurl);
}

TEST(HttpClientChoiceTest, AnyOtherValueIsInvalidAndNamesTheChoices) {
  for (const char* bad : {"socket", "Curl", "BUILTIN", " curl", "curl ", "libcurl"}) {
    MapEnvironment env{{"DLQ_HTTP_CLIENT", bad}};
    auto chosen = ChooseHttpClient(env);
    ASSERT_FALSE(chosen.ok()) << bad;
    EXPECT_EQ(chosen.status().code(), ErrorCode::kInvalidArgument) << bad;
    EXPECT_EQ(chosen.status().message(),
              "DLQ_HTTP_CLIENT='" + std::string(bad) +
                  "' is not an HTTP client: use curl or builtin (or unset it for the default)");
  }
}

TEST(HttpClientChoiceTest, DescribeSaysWhichClientAndWhy) {
  MapEnvironment none;
  EXPECT_EQ(*DescribeHttpClient(none), "built-in HTTP/1.1 client (no proxy variable set)");
  MapEnvironment proxied{{"https_proxy", "http://proxy:3128"}};
  EXPECT_EQ(*DescribeHttpClient(proxied), "libcurl, for the proxy in https_proxy (NO_PROXY applies)");
  MapEnvironment forced{{"DLQ_HTTP_CLIENT", "builtin"}, {"ALL_PROXY", "http://proxy:3128"}};
  EXPECT_EQ(*DescribeHttpClient(forced), "built-in HTTP/1.1 client (DLQ_HTTP_CLIENT=builtin: ALL_PROXY is ignored)");
  MapEnvironment curl{{"DLQ_HTTP_CLIENT", "curl"}};
  EXPECT_EQ(*DescribeHttpClient(curl), "libcurl (DLQ_HTTP_CLIENT=curl)");
  MapEnvironment bad{{"DLQ_HTTP_CLIENT", "wget"}};
  EXPECT_EQ(DescribeHttpClient(bad).status().code(), ErrorCode::kInvalidArgument);
}

TEST(HttpClientChoiceTest, MakeDefaultTransportBuildsTheNamedClient) {
  TransportSettings settings;
  auto by_default = MakeDefaultTransport(settings);
  ASSERT_TRUE(by_default.ok()) << by_default.status().ToString();
  EXPECT_NE(dynamic_cast<SocketTransport*>(by_default->get()), nullptr);
  settings.client = HttpClient::kCurl;
  auto curl = MakeDefaultTransport(settings);
  ASSERT_TRUE(curl.ok()) << curl.status().ToString();
  EXPECT_NE(dynamic_cast<CurlTransport*>(curl->get()), nullptr);
  settings.client = HttpClient::kBuiltin;
  auto builtin = MakeDefaultTransport(settings);
  ASSERT_TRUE(builtin.ok()) << builtin.status().ToString();
  EXPECT_NE(dynamic_cast<SocketTransport*>(builtin->get()), nullptr);
  // The builtin client's own checks apply.
  settings.connect_timeout = std::chrono::milliseconds(0);
  auto bad = MakeDefaultTransport(settings);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
}

class ServicesTransportTest : public ::testing::Test {
 protected:
  // AwsServices over a clean environment plus DLQ_HTTP_CLIENT when given.
  Result<std::unique_ptr<AwsServices>> Create(std::optional<std::string> http_client) {
    MapEnvironment env{{"AWS_CONFIG_FILE", "/nonexistent/dlq-config"},
                       {"AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/dlq-credentials"}};
    if (http_client) env.Set("DLQ_HTTP_CLIENT", *http_client);
    if (proxy_) env.Set("HTTPS_PROXY", *proxy_);
    ServicesOptions options;
    options.client.region = "us-east-1";
    options.client.endpoint_url = "http://127.0.0.1:1";
    return AwsServices::Create(options, env, clock_);
  }
  FakeClock clock_;
  std::optional<std::string> proxy_;
};

TEST_F(ServicesTransportTest, AwsServicesUsesTheChosenClient) {
  auto by_default = Create(std::nullopt);
  ASSERT_TRUE(by_default.ok()) << by_default.status().ToString();
  EXPECT_NE(dynamic_cast<SocketTransport*>(&(*by_default)->transport()), nullptr);
  auto curl = Create("curl");
  ASSERT_TRUE(curl.ok()) << curl.status().ToString();
  EXPECT_NE(dynamic_cast<CurlTransport*>(&(*curl)->transport()), nullptr);
  auto builtin = Create("builtin");
  ASSERT_TRUE(builtin.ok()) << builtin.status().ToString();
  EXPECT_NE(dynamic_cast<SocketTransport*>(&(*builtin)->transport()), nullptr);
}

TEST_F(ServicesTransportTest, AProxyInTheEnvironmentGetsCurl) {
  proxy_ = "http://127.0.0.1:3128";
  auto with_proxy = Create(std::nullopt);
  ASSERT_TRUE(with_proxy.ok()) << with_proxy.status().ToString();
  EXPECT_NE(dynamic_cast<CurlTransport*>(&(*with_proxy)->transport()), nullptr);
}

TEST_F(ServicesTransportTest, AnUnknownClientFailsAwsServices) {
  auto bad = Create("wget");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("DLQ_HTTP_CLIENT='wget'"), std::string::npos) << bad.status().ToString();
}

}  // namespace
}  // namespace dlq
