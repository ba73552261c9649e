#include "server/http_server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "common/json_writer.h"
#include "common/strings.h"
#include "server/metrics.h"

namespace dlq {
namespace {

std::string HostForUrl(const std::string& host) {
  return host.find(':') != std::string::npos && !host.starts_with("[") ? "[" + host + "]" : host;
}

}  // namespace

Status HttpServerOptions::Validate() const {
  if (host.empty()) return InvalidArgument("http server: host is empty");
  if (port < 0 || port > 65535) return InvalidArgument(fmt::format("http server: port {} out of range 0-65535", port));
  if (threads < 1 || threads > 256)
    return InvalidArgument(fmt::format("http server: threads {} out of range 1-256", threads));
  if (read_timeout.count() <= 0 || write_timeout.count() <= 0 || keep_alive_timeout.count() <= 0) {
    return InvalidArgument("http server: timeouts must be positive");
  }
  if (max_requests_per_connection < 1)
    return InvalidArgument("http server: max_requests_per_connection must be at least 1");
  return Status::Ok();
}

HttpServer::HttpServer(HttpServerOptions options) : options_(std::move(options)) {}

HttpServer::~HttpServer() {
  Stop();
}

void HttpServer::Handle(const std::string& path, HttpRouteHandler handler) {
  Handle("GET", path, std::move(handler));
}

void HttpServer::Handle(const std::string& method, const std::string& path, HttpRouteHandler handler) {
  MutexLock lock(routes_mu_);
  routes_[path][method] = std::move(handler);
}

void HttpServer::HandlePrefix(const std::string& method, const std::string& prefix, HttpRouteHandler handler) {
  MutexLock lock(routes_mu_);
  prefix_routes_[prefix][method] = std::move(handler);
}

HttpServerResponse HttpServer::Dispatch(const HttpServerRequest& request) const {
  HttpRouteHandler handler;
  std::string allow;
  {
    MutexLock lock(routes_mu_);
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
      HttpServerResponse not_found;
      not_found.status = 404;
      not_found.body = "not found\n";
      return not_found;
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
    HttpServerResponse not_allowed;
    not_allowed.status = 405;
    not_allowed.body = "method not allowed\n";
    not_allowed.headers.emplace_back("Allow", allow);
    return not_allowed;
  }
  return handler(request);
}

namespace {

// cpp-httplib 0.11 (Debian 12) compresses a response with brotli whenever the
// client accepts "br", at brotli's default quality 11: about 150 ms of CPU for
// a 375 KB JSON document (a browser's dashboard poll), against 5 ms for gzip.
// It decides from the request's Accept-Encoding after the handler returns, so
// the handler leaves gzip as the only offer (or nothing). The Request is the
// server's own non-const object, handed to handlers as const.
void LimitCompression(const httplib::Request& req) {
  auto& headers = const_cast<httplib::Request&>(req).headers;
  for (auto it = headers.begin(); it != headers.end(); ++it) {
    if (!IEquals(it->first, "Accept-Encoding")) continue;
    it->second = it->second.find("gzip") != std::string::npos ? "gzip" : "identity";
  }
}

// RFC 9112 6.3: a request with neither Content-Length nor Transfer-Encoding
// has no body. cpp-httplib 0.11 would instead read a POST's body until the
// client closes, and answer an empty 400 when the read times out (curl -X
// POST without data, for one), so such a request is given Content-Length: 0.
void NoLengthMeansNoBody(const httplib::Request& req) {
  if (req.has_header("Content-Length") || req.has_header("Transfer-Encoding")) return;
  const_cast<httplib::Request&>(req).headers.emplace("Content-Length", "0");
}

// An error answer without a body is the server's own, given before any route
// ran (a bad request line or header, a body over the limit): it gets the
// API's JSON error shape instead of an empty body.
void ExplainServerError(httplib::Response& res) {
  if (!res.body.empty()) return;  // a route's own answer
  const char* what = res.status == 413   ? "the request body is larger than the server accepts (1 MiB)"
                     : res.status == 414 ? "the request line is too long"
                     : res.status == 404 ? "not found"
                                         : "malformed request line or headers";
  res.set_content(JsonWriter().BeginObject().Key("error").String(what).EndObject().Take(), "application/json");
}

}  // namespace

Status HttpServer::Start() {
  DLQ_RETURN_IF_ERROR(options_.Validate());
  MutexLock lock(lifecycle_mu_);
  if (server_) return FailedPrecondition(fmt::format("http server already running on port {}", port_.load()));
  auto server = std::make_unique<httplib::Server>();
  // SO_REUSEADDR only (httplib's default is SO_REUSEPORT): a restart may bind
  // over TIME_WAIT, but a second process on the same port fails loudly.
  server->set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  const int threads = options_.threads;
  server->new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  server->set_read_timeout(options_.read_timeout);
  server->set_write_timeout(options_.write_timeout);
  server->set_keep_alive_timeout(options_.keep_alive_timeout.count());
  server->set_keep_alive_max_count(options_.max_requests_per_connection);
  server->set_payload_max_length(1 << 20);
  server->set_pre_routing_handler([](const httplib::Request& req, httplib::Response&) {
    NoLengthMeansNoBody(req);
    return httplib::Server::HandlerResponse::Unhandled;
  });
  server->set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
    ExplainServerError(res);
    return httplib::Server::HandlerResponse::Unhandled;
  }));

  auto serve = [this](const httplib::Request& req, httplib::Response& res) {
    LimitCompression(req);
    HttpServerRequest request;
    request.method = req.method;
    request.path = req.path;
    if (size_t q = req.target.find('?'); q != std::string::npos) request.query = req.target.substr(q + 1);
    for (const auto& [name, value] : req.headers) request.headers.emplace_back(name, value);
    request.body = req.body;
    request.remote_addr = req.remote_addr;
    HttpServerResponse response = Dispatch(request);
    res.status = response.status;
    for (const auto& [name, value] : response.headers) res.set_header(name, value);
    res.set_content(response.body, response.content_type);
  };
  const std::string all_paths = ".*";
  server->Get(all_paths, serve);  // also serves HEAD
  server->Post(all_paths, serve);
  server->Put(all_paths, serve);
  server->Patch(all_paths, serve);
  server->Delete(all_paths, serve);
  server->Options(all_paths, serve);

  int bound = 0;
  errno = 0;
  if (options_.port == 0) {
    bound = server->bind_to_any_port(options_.host);
    if (bound <= 0) bound = 0;
  } else if (server->bind_to_port(options_.host, options_.port)) {
    bound = options_.port;
  }
  if (bound == 0) {
    const int error = errno;
    return Unavailable(fmt::format("http server: cannot listen on {}:{}{}", HostForUrl(options_.host), options_.port,
                                   error != 0 ? std::string(": ") + std::strerror(error) : std::string()));
  }
  port_ = bound;
  httplib::Server* raw = server.get();
  thread_ = std::thread([raw] { raw->listen_after_bind(); });
  server_ = std::move(server);
  return Status::Ok();
}

void HttpServer::Stop() {
  MutexLock lock(lifecycle_mu_);
  if (!server_) return;
  server_->stop();
  if (thread_.joinable()) thread_.join();
  server_.reset();
  port_ = 0;
}

bool HttpServer::running() const {
  return port_.load() != 0;
}

int HttpServer::port() const {
  return port_.load();
}

std::string HttpServer::base_url() const {
  return fmt::format("http://{}:{}", HostForUrl(options_.host), port_.load());
}

HealthState::HealthState(Clock& clock, std::chrono::seconds max_heartbeat_age)
    : clock_(clock),
      max_age_(max_heartbeat_age),
      last_heartbeat_ns_(
          std::chrono::duration_cast<std::chrono::nanoseconds>(clock.SteadyNow().time_since_epoch()).count()) {}

void HealthState::Heartbeat() {
  last_heartbeat_ns_ =
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.SteadyNow().time_since_epoch()).count();
}

void HealthState::SetReady() {
  MutexLock lock(mu_);
  ready_ = true;
  not_ready_reason_.clear();
}

void HealthState::SetNotReady(std::string reason) {
  MutexLock lock(mu_);
  ready_ = false;
  not_ready_reason_ = std::move(reason);
}

bool HealthState::live() const {
  auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.SteadyNow().time_since_epoch()).count();
  return std::chrono::nanoseconds(now - last_heartbeat_ns_.load()) <= max_age_;
}

bool HealthState::ready() const {
  MutexLock lock(mu_);
  return ready_;
}

HttpServerResponse HealthState::Liveness() const {
  auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.SteadyNow().time_since_epoch()).count();
  auto age =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::nanoseconds(now - last_heartbeat_ns_.load()));
  HttpServerResponse response;
  if (live()) {
    response.body = "ok\n";
  } else {
    response.status = 503;
    response.body =
        fmt::format("process loop stalled: last heartbeat {}s ago (limit {}s)\n", age.count(), max_age_.count());
  }
  return response;
}

HttpServerResponse HealthState::Readiness() const {
  MutexLock lock(mu_);
  HttpServerResponse response;
  if (ready_) {
    response.body = "ready\n";
  } else {
    response.status = 503;
    response.body = "not ready: " + not_ready_reason_ + "\n";
  }
  return response;
}

HttpRouteHandler MakeMetricsHandler(const metrics::Registry& registry) {
  return [&registry](const HttpServerRequest&) {
    HttpServerResponse response;
    response.content_type = std::string(metrics::kContentType);
    response.body = registry.Render();
    return response;
  };
}

HttpRouteHandler MakeHealthzHandler(const HealthState& health) {
  return [&health](const HttpServerRequest&) { return health.Liveness(); };
}

HttpRouteHandler MakeReadyzHandler(const HealthState& health) {
  return [&health](const HttpServerRequest&) { return health.Readiness(); };
}

HttpRouteHandler MakeJsonHandler(std::function<std::string()> body) {
  return [body = std::move(body)](const HttpServerRequest&) {
    HttpServerResponse response;
    response.content_type = "application/json";
    response.body = body();
    return response;
  };
}

}  // namespace dlq
