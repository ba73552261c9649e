#include "server/http_router.h"

#include <exception>

namespace dlq {

void HttpRouter::Handle(const std::string& method, const std::string& path, HttpRouteHandler handler) {
  MutexLock lock(mu_);
  routes_[path][method] = std::move(handler);
}

void HttpRouter::HandlePrefix(const std::string& method, const std::string& prefix, HttpRouteHandler handler) {
  MutexLock lock(mu_);
  prefix_routes_[prefix][method] = std::move(handler);
}

void HttpRouter::HandleProbe(const std::string& path, HttpRouteHandler handler) {
  MutexLock lock(mu_);
  probes_[path] = std::move(handler);
}

void HttpRouter::HandlePriority(const std::string& path, HttpRouteHandler handler) {
  MutexLock lock(mu_);
  priority_[path] = std::move(handler);
}

void HttpRouter::CheckHeads(HttpHeadCheck check) {
  MutexLock lock(mu_);
  head_check_ = std::move(check);
}

HttpRouteHandler HttpRouter::Priority(const std::string& path) const {
  MutexLock lock(mu_);
  auto it = priority_.find(path);
  return it == priority_.end() ? HttpRouteHandler() : it->second;
}

std::optional<HttpServerResponse> HttpRouter::CheckHead(const HttpServerRequest& head) const {
  HttpHeadCheck check;
  {
    MutexLock lock(mu_);
    check = head_check_;
  }
  if (!check) return std::nullopt;
  try {
    return check(head);
  } catch (const std::exception&) {
    return JsonError(500, "internal error while checking the request");
  }
}

HttpRouteHandler HttpRouter::Probe(const std::string& path) const {
  MutexLock lock(mu_);
  auto it = probes_.find(path);
  return it == probes_.end() ? HttpRouteHandler() : it->second;
}

HttpServerResponse HttpRouter::Dispatch(const HttpServerRequest& request) const {
  HttpServerResponse refusal;
  HttpRouteHandler handler = Resolve(request, &refusal);
  if (!handler) return refusal;
  return handler(request);
}

HttpRouteHandler HttpRouter::Resolve(const HttpServerRequest& request, HttpServerResponse* refusal) const {
  HttpRouteHandler handler;
  std::string allow;
  {
    MutexLock lock(mu_);
    const std::map<std::string, HttpRouteHandler>* methods = nullptr;
    if (auto exact = routes_.find(request.path); exact != routes_.end()) {
      methods = &exact->second;
    } else {
      // The longest prefix: map order puts it last among the matches.
      for (const auto& [prefix, by_method] : prefix_routes_) {
        if (request.path.starts_with(prefix)) methods = &by_method;
      }
    }
    if (methods == nullptr) {
      *refusal = JsonError(404, "not found");
      return {};
    }
    const std::string& method = request.method == "HEAD" ? std::string("GET") : request.method;
    auto method_it = methods->find(method);
    if (method_it != methods->end()) {
      handler = method_it->second;
    } else {
      for (const auto& [m, h] : *methods) {
        if (!allow.empty()) allow += ", ";
        allow += m;
        if (m == "GET") allow += ", HEAD";
      }
    }
  }
  if (!handler) {
    *refusal = JsonError(405, "method not allowed");
    refusal->headers.emplace_back("Allow", allow);
  }
  return handler;
}

}  // namespace dlq
