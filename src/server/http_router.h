// The daemon listener's routes: exact paths, then the longest prefix route
// the path starts with, per method ("GET" also answers HEAD); probe routes
// (answered on the I/O thread), priority routes (a thread of their own) and
// the head check that may refuse a request before its body is read. Unknown
// paths get 404, other methods on a known path 405 with an Allow header.
//
// Thread-safe: routes may be added while requests are resolved.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "common/mutex.h"
#include "server/http_message.h"

namespace dlq {

class HttpRouter {
 public:
  // Route for `method` ("GET" also enables HEAD); replaces an existing one.
  void Handle(const std::string& method, const std::string& path, HttpRouteHandler handler);
  // Route for every path that starts with `prefix` and has no exact route.
  void HandlePrefix(const std::string& method, const std::string& prefix, HttpRouteHandler handler);
  void HandleProbe(const std::string& path, HttpRouteHandler handler);
  void HandlePriority(const std::string& path, HttpRouteHandler handler);
  // Replaces the previous head check.
  void CheckHeads(HttpHeadCheck check);

  // The handler's answer, or the 404/405 answer.
  HttpServerResponse Dispatch(const HttpServerRequest& request) const;
  // The handler for the request's method and path, or the 404/405 answer.
  HttpRouteHandler Resolve(const HttpServerRequest& request, HttpServerResponse* refusal) const;
  // The probe (or priority) handler for `path`, or an empty function.
  HttpRouteHandler Probe(const std::string& path) const;
  HttpRouteHandler Priority(const std::string& path) const;
  // The head check's answer for `head`, if it refuses it (500 if it throws).
  std::optional<HttpServerResponse> CheckHead(const HttpServerRequest& head) const;

 private:
  mutable Mutex mu_;
  // path -> method -> handler
  std::map<std::string, std::map<std::string, HttpRouteHandler>> routes_ DLQ_GUARDED_BY(mu_);
  std::map<std::string, std::map<std::string, HttpRouteHandler>> prefix_routes_ DLQ_GUARDED_BY(mu_);
  std::map<std::string, HttpRouteHandler> probes_ DLQ_GUARDED_BY(mu_);
  std::map<std::string, HttpRouteHandler> priority_ DLQ_GUARDED_BY(mu_);
  HttpHeadCheck head_check_ DLQ_GUARDED_BY(mu_);
};

}  // namespace dlq
