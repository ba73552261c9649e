// HttplibTransport: an HttpTransport over cpp-httplib's client, for programs
// that must not link libcurl (the Lambda program, src/app/main_lambda.cc).
// http and https; for https the peer certificate and host name are always
// verified (OpenSSL), against `ca_bundle` when set.
//
// Thread-safe: each Send takes an idle connection to the request's
// scheme://host:port from a pool, or opens one, and returns it afterwards
// (keep-alive: repeated calls to one endpoint reuse warm connections; at most
// 16 idle ones are kept per endpoint). Methods: GET, HEAD, PUT, POST, DELETE;
// a header with a line break is kInvalidArgument. cpp-httplib adds Host,
// Accept, User-Agent and Content-Length when absent (unsigned, which SigV4
// allows). The request target is sent exactly as given (already encoded and
// signed). cpp-httplib 0.11 percent-decodes response header values: a value
// with %XX comes back decoded. None of the headers dlq-archive reads (ETag,
// Content-Length, Content-Range, x-amz-*, Retry-After, Lambda-Runtime-*)
// carries one. Bodies
// are passed through untouched (no compression either way). Timeouts: the
// connect timeout, then the request's timeout (or the default) bounds each
// read and write on the socket. Cancellation (HttpRequest::cancel) is checked
// every 50 ms while a request is in flight; a cancelled request's connection
// is shut down and it returns kCancelled. Connection failures and timeouts
// are kUnavailable; messages name the method, scheme, host and path, never
// the query string or headers. The transport must outlive every Send.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "aws/default_transport.h"
#include "aws/http.h"
#include "common/mutex.h"
#include "common/status.h"

namespace dlq {

class HttplibTransport final : public HttpTransport {
 public:
  // kInvalidArgument for non-positive timeouts or a CA bundle that is not a readable file.
  static Result<std::unique_ptr<HttplibTransport>> Create(const TransportSettings& settings);
  ~HttplibTransport() override;
  HttplibTransport(const HttplibTransport&) = delete;
  HttplibTransport& operator=(const HttplibTransport&) = delete;

  Result<HttpResponse> Send(const HttpRequest& request) override;

 private:
  struct Connection;
  explicit HttplibTransport(TransportSettings settings);
  void WatchCancellations();

  TransportSettings settings_;
  Mutex mu_;
  CondVar changed_;
  bool stopping_ DLQ_GUARDED_BY(mu_) = false;
  std::map<std::string, std::vector<std::unique_ptr<Connection>>> idle_ DLQ_GUARDED_BY(mu_);  // by scheme://host:port
  std::vector<std::pair<Connection*, const std::atomic<bool>*>> cancellable_ DLQ_GUARDED_BY(mu_);
  std::thread watcher_;  // started on the first request with a cancel flag
};

}  // namespace dlq
