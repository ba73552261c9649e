// HTTP requests and responses, and the transport interface every AWS call
// goes through. Implementations must be thread-safe: many threads call Send
// concurrently.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace dlq {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// Returns the first header named `name` (case-insensitive), or nullptr.
const std::string* FindHeader(const HttpHeaders& headers, std::string_view name);
// Replaces every header named `name` (case-insensitive) with one value.
void SetHeader(HttpHeaders& headers, std::string_view name, std::string value);

// A parsed absolute URL. `path` is kept exactly as given (already encoded,
// "/" when empty); `query` is the raw text after '?', without the '?'.
struct Url {
  std::string scheme;  // "http" or "https"
  std::string host;    // without port; IPv6 literals keep their brackets
  int port = 0;        // 0 when not given
  std::string path = "/";
  std::string query;

  // host[:port], with the port only when it is not the scheme's default.
  std::string Authority() const;
  std::string ToString() const;
};
// kInvalidArgument for a URL that is not http(s)://AUTHORITY[PATH][?QUERY]
// with a port (when given) in 1..65535.
Result<Url> ParseUrl(std::string_view text);

// An authority split at its port: "HOST", "HOST:PORT", "[IPV6]" or
// "[IPV6]:PORT". The one HOST:PORT parser: URLs (ParseUrl) and the daemon's
// `listen:` setting both use it, each with its own port policy (ParsePort).
struct HostPort {
  std::string host;                 // as written; an IPv6 literal without its brackets
  bool bracketed = false;           // written as [IPV6]
  std::optional<std::string> port;  // the text after ':'; nullopt when there is no ':'
};
// kInvalidArgument naming what is wrong: a '[' without ']', text after ']'
// other than ":PORT", or a second ':' outside brackets (an IPv6 address
// needs them). The port text is not checked: see ParsePort.
Result<HostPort> SplitHostPort(std::string_view text);
// A port number: decimal digits only, in [min_port, 65535]; nullopt otherwise.
std::optional<int> ParsePort(std::string_view text, int min_port);

// A proxy (from https_proxy, http_proxy or all_proxy) answered `http_status`
// (>= 400) instead of forwarding the request to `target`: the same answer
// comes on every attempt, so the error is not retryable, and it says what to
// fix. Names no proxy URL (it may carry credentials).
Status ProxyRefused(std::string_view target, int http_status);

struct HttpRequest {
  std::string method = "GET";
  std::string url;  // absolute, already percent-encoded
  HttpHeaders headers;
  std::string body;
  // When set, sent instead of `body`: bytes the caller keeps alive until
  // Send returns (large uploads go out without a copy).
  std::optional<std::string_view> body_view;
  // Zero means the transport's default.
  std::chrono::milliseconds timeout{0};
  // When set and it turns true, the transfer is abandoned at once with
  // kCancelled (whatever the server did with the request). Not owned.
  const std::atomic<bool>* cancel = nullptr;

  std::string_view Body() const { return body_view ? *body_view : std::string_view(body); }
};

struct HttpResponse {
  int status = 0;
  HttpHeaders headers;
  std::string body;

  const std::string* Header(std::string_view name) const { return FindHeader(headers, name); }
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // Sends one request and returns the response, whatever its status code.
  // The request target is the URL's path and query byte for byte, as
  // signed: no dot segment is removed and nothing is re-encoded.
  // A non-OK Status means no response was received: kUnavailable for
  // connection failures and timeouts (retryable), kInvalidArgument for a
  // malformed request.
  virtual Result<HttpResponse> Send(const HttpRequest& request) = 0;
};

}  // namespace dlq
