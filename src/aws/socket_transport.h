// SocketTransport: an HttpTransport of its own, HTTP/1.1 over POSIX sockets
// and OpenSSL, for the Lambda program (src/app/main_lambda.cc). It exists for
// the cold start: unlike CurlTransport (libcurl's tree of 25 libraries) and
// cpp-httplib (a shared library that loads libssl, libcrypto, zlib and brotli
// with it), it needs nothing that Debian does not ship as a static archive,
// so the Lambda program links OpenSSL statically and its loader maps and
// relocates a handful of libraries (bench/lambda/README.md).
//
// Contract (the same as CurlTransport's where they overlap):
// - http and https (TLS 1.2 or later). For https the peer certificate chain
//   and the host name (or IP address) are always verified, against
//   `ca_bundle` when set, else OpenSSL's defaults (SSL_CERT_FILE /
//   SSL_CERT_DIR apply); SNI is sent for host names. The TLS context is made on the first https request, so a
//   program that only speaks http (the Runtime API) never initialises it.
// - Methods GET, HEAD, PUT, POST, DELETE; anything else, a header name that
//   is not a token or a value with a line break is kInvalidArgument. The
//   request target is sent exactly as given (already encoded and signed).
//   Host and Content-Length are added when absent (Content-Length for a
//   non-empty body and for PUT and POST); nothing else is added. Bodies are
//   passed through untouched both ways (no compression), response header
//   values exactly as received.
// - Keep-alive: each Send takes an idle connection to the request's
//   scheme://host:port from a pool, or opens one, and returns it afterwards
//   unless the response closes it; at most 16 idle ones per endpoint. An idle
//   connection the peer has closed is noticed before use and dropped; a
//   reused connection that fails before any byte of the response arrived is
//   replaced by a new one once (the peer closed it while idle).
// - Timeouts: connect_timeout bounds the TCP connect; the request's timeout
//   (or request_timeout) bounds the rest of the call as a whole (TLS
//   handshake, sending, the response). Name resolution (getaddrinfo) is
//   bounded by neither: the resolver's own timeouts apply.
// - Cancellation (HttpRequest::cancel) is checked at least every 50 ms while
//   the call waits on the socket; a cancelled call drops its connection and
//   returns kCancelled.
// - Connection failures, timeouts, TLS and verification failures and
//   malformed responses are kUnavailable; messages name the method, scheme,
//   host and path, never the query string, headers or body.
// Thread-safe; SIGPIPE is never raised (sends use MSG_NOSIGNAL, TLS too).
// The transport must outlive every Send.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "aws/default_transport.h"
#include "aws/http.h"
#include "common/mutex.h"
#include "common/status.h"

typedef struct ssl_ctx_st SSL_CTX;  // NOLINT: OpenSSL's own declaration

namespace dlq {

class SocketTransport final : public HttpTransport {
 public:
  // kInvalidArgument for non-positive timeouts or a CA bundle that is not a readable file.
  static Result<std::unique_ptr<SocketTransport>> Create(const TransportSettings& settings);
  ~SocketTransport() override;
  SocketTransport(const SocketTransport&) = delete;
  SocketTransport& operator=(const SocketTransport&) = delete;

  Result<HttpResponse> Send(const HttpRequest& request) override;

  struct Connection;  // one socket, with its TLS session for https

 private:
  explicit SocketTransport(TransportSettings settings);
  Result<SSL_CTX*> TlsContext();
  std::unique_ptr<Connection> TakeIdle(const std::string& key);
  void PutIdle(const std::string& key, std::unique_ptr<Connection> conn);

  const TransportSettings settings_;
  Mutex mu_;
  SSL_CTX* tls_ DLQ_GUARDED_BY(mu_) = nullptr;  // made on the first https request
  std::map<std::string, std::vector<std::unique_ptr<Connection>>> idle_ DLQ_GUARDED_BY(mu_);
};

}  // namespace dlq
