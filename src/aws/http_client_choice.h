// Which HttpTransport the CLI and the daemon use (AwsServices), chosen from
// the environment:
// - DLQ_HTTP_CLIENT=curl: CurlTransport (libcurl).
// - DLQ_HTTP_CLIENT=builtin: SocketTransport (aws/socket_transport.h), our own
//   HTTP/1.1 client. It does not speak to proxies: proxy variables are ignored.
// - unset or empty: curl (see bench/drain/README.md for the figures that
//   decided it).
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

Result<HttpClient> ChooseHttpClient(const Environment& env);

}  // namespace dlq
