// The requests and answers the daemon's HTTP server passes to and from its
// handlers, and the bytes of an answer on the wire (status line, headers,
// gzip when the client accepts it and it pays).
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "aws/http.h"

namespace dlq {

struct HttpServerRequest {
  std::string method;  // "GET", "HEAD", ...
  std::string path;    // without the query string
  std::string query;   // raw, without '?'
  HttpHeaders headers;
  std::string body;
  std::string remote_addr;
  // Set once the client has gone away or the server is stopping: work a
  // handler does for this request should end early. Never null while a
  // handler runs; owned by the server.
  const std::atomic<bool>* cancelled = nullptr;
};

struct HttpServerResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  HttpHeaders headers;  // extra headers
};

using HttpRouteHandler = std::function<HttpServerResponse(const HttpServerRequest&)>;
// Looks at a request's head (body empty) before its body is read; a response
// refuses the request (answered at once, then the connection is closed).
using HttpHeadCheck = std::function<std::optional<HttpServerResponse>(const HttpServerRequest&)>;

// {"error": message} with `status`.
HttpServerResponse JsonError(int status, std::string_view message);
// True when Accept-Encoding offers gzip with a non-zero q.
bool AcceptsGzip(const HttpHeaders& headers);
// The bytes of a whole answer: gzipped when the client accepts it, the
// type compresses and the body is at least 1 KiB; no body for HEAD.
std::string Serialize(const HttpServerResponse& response, bool head_only, bool keep_alive, bool accepts_gzip);

}  // namespace dlq
