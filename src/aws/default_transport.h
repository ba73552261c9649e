// The HttpTransport a program's AWS clients (AwsServices) and its Lambda
// runtime client use. The library's definition (aws/default_transport.cc)
// builds what TransportSettings::client names: CurlTransport or
// SocketTransport (aws/http_client_choice.h). A program may define
// MakeDefaultTransport itself, in one of its own object files: the linker
// then takes that one and never pulls the library's, so the program links
// without CurlTransport (src/app/main_lambda.cc; see bench/lambda/README.md).
// Exactly one definition ends up in a program. libcurl itself is never
// linked: CurlTransport loads it when a run first needs it.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "aws/http.h"
#include "aws/http_client_choice.h"
#include "common/status.h"

namespace dlq {

struct TransportSettings {
  std::chrono::milliseconds connect_timeout{5000};
  // Whole-request default, used when HttpRequest::timeout is zero.
  std::chrono::milliseconds request_timeout{70000};
  std::string ca_bundle;                     // PEM file; empty means the system default
  HttpClient client = HttpClient::kBuiltin;  // the library's definition only (ChooseHttpClient)
  // The proxy variables libcurl takes for http and https URLs
  // (ProxyVariableFor), named in its connection errors; "" for none.
  std::string proxy_variable_http;
  std::string proxy_variable_https;
};

// kInvalidArgument for settings the transport cannot use.
Result<std::unique_ptr<HttpTransport>> MakeDefaultTransport(const TransportSettings& settings);

}  // namespace dlq
