// HttpServer: the daemon's small HTTP endpoint (/metrics, /healthz, /readyz,
// /api/queues) over cpp-httplib, served from a background thread pool.
//
// Thread-safety: Handle, Start, Stop and port may be called from any thread;
// handlers run concurrently on the pool and must be thread-safe. Routes are
// exact path matches (the query string is ignored for matching), else the
// longest prefix route (HandlePrefix) that the path starts with; a route
// registered with Handle(path, ...) answers GET and HEAD (HEAD gets the
// headers without the body). Unknown paths get 404, other methods on a known
// path 405 with an Allow header. Stop() stops accepting, lets requests in
// flight finish and joins the threads; the server may be started again.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "aws/http.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"

namespace httplib {
class Server;
}

namespace dlq {

namespace metrics {
class Registry;
}

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

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // loopback only unless configured otherwise
  int port = 9464;                 // 0 = pick an ephemeral port
  int threads = 4;                 // request worker threads
  std::chrono::seconds read_timeout{5};
  std::chrono::seconds write_timeout{5};
  std::chrono::seconds keep_alive_timeout{2};  // bounds how long Stop() waits on idle connections
  // Requests served on one connection; 1: every answer says Connection: close
  // and the connection ends with it. cpp-httplib 0.11 waits for a kept-alive
  // connection's next request by polling it every 11 ms until
  // keep_alive_timeout: 2-10 ms of the daemon's CPU per idle second, which
  // a dashboard polling every collection interval (or a metrics scraper)
  // paid on every poll without ever reusing the connection
  // (bench/dashboard/README.md). Must be at least 1.
  size_t max_requests_per_connection = 1;
  Status Validate() const;
};

class HttpServer {
 public:
  explicit HttpServer(HttpServerOptions options = {});
  ~HttpServer();  // Stop()s
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // GET (and HEAD) route; replaces an existing one.
  void Handle(const std::string& path, HttpRouteHandler handler);
  // Route for any other method ("POST", ...); "GET" also enables HEAD.
  void Handle(const std::string& method, const std::string& path, HttpRouteHandler handler);
  // Route for every path that starts with `prefix` and has no exact route;
  // the handler reads request.path. "GET" also enables HEAD.
  void HandlePrefix(const std::string& method, const std::string& prefix, HttpRouteHandler handler);

  // Validates the options, binds and starts serving on a background thread.
  // Bind failure returns kUnavailable naming host:port; starting a running
  // server is kFailedPrecondition.
  Status Start();
  // Idempotent.
  void Stop();

  bool running() const;
  // The bound port (the ephemeral one for port 0); 0 when not running.
  int port() const;
  // "http://host:port" of the running server.
  std::string base_url() const;

 private:
  HttpServerResponse Dispatch(const HttpServerRequest& request) const;

  const HttpServerOptions options_;
  mutable Mutex routes_mu_;
  // path -> method -> handler
  std::map<std::string, std::map<std::string, HttpRouteHandler>> routes_ DLQ_GUARDED_BY(routes_mu_);
  std::map<std::string, std::map<std::string, HttpRouteHandler>> prefix_routes_ DLQ_GUARDED_BY(routes_mu_);
  Mutex lifecycle_mu_;  // serialises Start/Stop
  std::unique_ptr<httplib::Server> server_ DLQ_GUARDED_BY(lifecycle_mu_);
  std::thread thread_ DLQ_GUARDED_BY(lifecycle_mu_);
  std::atomic<int> port_{0};
};

// Liveness and readiness of the daemon, answered by /healthz and /readyz.
// Thread-safe. Holds a reference to `clock`, which must outlive it.
class HealthState {
 public:
  // Live while the last Heartbeat() (or construction) is at most
  // `max_heartbeat_age` old. Not ready until SetReady().
  HealthState(Clock& clock, std::chrono::seconds max_heartbeat_age);

  void Heartbeat();
  // First collection completed and the configuration is valid.
  void SetReady();
  void SetNotReady(std::string reason);

  bool live() const;
  bool ready() const;
  // 200 "ok" or 503 with the heartbeat's age.
  HttpServerResponse Liveness() const;
  // 200 "ready" or 503 with the reason.
  HttpServerResponse Readiness() const;

 private:
  Clock& clock_;
  const std::chrono::seconds max_age_;
  std::atomic<int64_t> last_heartbeat_ns_;  // steady clock
  mutable Mutex mu_;
  bool ready_ DLQ_GUARDED_BY(mu_) = false;
  std::string not_ready_reason_ DLQ_GUARDED_BY(mu_) = "first collection has not completed";
};

// Route handlers for the daemon; the referenced objects must outlive the server.
HttpRouteHandler MakeMetricsHandler(const metrics::Registry& registry);
HttpRouteHandler MakeHealthzHandler(const HealthState& health);
HttpRouteHandler MakeReadyzHandler(const HealthState& health);
// /api/queues: `body` returns the JSON document (the lead builds it).
HttpRouteHandler MakeJsonHandler(std::function<std::string()> body);

}  // namespace dlq
