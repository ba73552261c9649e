// Which HttpTransport the CLI and the daemon use (AwsServices), chosen from
// the environment:
// - DLQ_HTTP_CLIENT=builtin: SocketTransport (aws/socket_transport.h), our own
//   HTTP/1.1 client over kept-alive connections. It does not speak to
//   proxies: proxy variables are ignored.
// - DLQ_HTTP_CLIENT=curl: CurlTransport (libcurl), which honours
//   https_proxy / HTTPS_PROXY, http_proxy, all_proxy / ALL_PROXY and
//   no_proxy / NO_PROXY as curl does.
// - unset or empty: builtin, unless a proxy variable (kProxyVariables) is
//   set and not empty: then curl, so that a proxy the user configured is
//   used. bench/drain/README.md has the figures that decided the default.
// Any other value is kInvalidArgument naming the variable and the values it
// takes. The value is matched exactly (lower case). AwsServices checks the
// variable in every program, but the Lambda program's own MakeDefaultTransport
// (src/app/main_lambda.cc) always builds SocketTransport.
#pragma once

#include <string_view>

#include "aws/environment.h"
#include "common/status.h"

namespace dlq {

enum class HttpClient { kCurl, kBuiltin };

inline constexpr std::string_view kHttpClientEnv = "DLQ_HTTP_CLIENT";

// The variables libcurl reads for a proxy. Upper-case HTTP_PROXY is not one:
// curl ignores it (a CGI program's environment can set it from a request
// header), so with only HTTP_PROXY set both clients go direct.
inline constexpr std::string_view kProxyVariables[] = {"https_proxy", "HTTPS_PROXY", "http_proxy", "all_proxy",
                                                       "ALL_PROXY"};

Result<HttpClient> ChooseHttpClient(const Environment& env);

// The proxy variable libcurl takes for a URL of `scheme` ("https", or
// anything else for "http"), in curl's order, or "" when none is set (curl
// then connects directly): https_proxy, HTTPS_PROXY for https, only
// lower-case http_proxy for http; then all_proxy, ALL_PROXY. NO_PROXY may
// still exempt a host; this does not look at it.
std::string_view ProxyVariableFor(const Environment& env, std::string_view scheme);

// What ChooseHttpClient picks and why, for `doctor`: e.g. "libcurl, for the
// proxy in https_proxy (NO_PROXY applies)". The error when the choice fails.
Result<std::string> DescribeHttpClient(const Environment& env);

}  // namespace dlq
