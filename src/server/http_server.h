// HttpServer: the daemon's HTTP/1.1 endpoint (/metrics, /healthz, /readyz,
// /api/..., the dashboard), built to face untrusted clients.
//
// One I/O thread owns every connection (non-blocking sockets, poll); complete
// requests go to a pool of `threads` workers. Slow or greedy clients cost a
// connection slot, never a worker: a request head and body must arrive within
// request_timeout, a head is at most max_head_bytes in max_headers fields
// (431), a body at most max_body_bytes (413), and at most max_connections are
// open. When full, the oldest connection still sending an incomplete request
// is dropped for the new one (what it has sent is read first: a complete
// request is answered, never dropped); when every connection is answering,
// new ones wait in the kernel's accept queue. Probe routes (HandleProbe) are
// answered on the I/O thread itself, so /healthz answers while every worker
// is busy; priority routes (HandlePriority, /metrics) have a thread and a
// queue of their own. Requests queued beyond max_queued get 503 with
// Retry-After. A complete request is answered even when the client has shut
// down its sending side (half-close). A Host check refuses two Host fields
// (400) and requests whose Host names neither an IP address (IPv6 in
// brackets), `localhost`, the listen host nor one of allowed_hosts (421), so
// a DNS-rebinding page cannot read it. A body is read only after the head
// passed the Host check, names a route that takes the method, and passed the
// head check (CheckHeads): a refused request is answered at once and closed,
// its body unread, so a client without a token holds no more than a head.
// GET and HEAD requests carry no body (400).
//
// Thread-safety: Handle*, Start, Stop and port may be called from any thread;
// handlers run concurrently on the pool and must be thread-safe, and should
// end early once request.cancelled is set (the client went away or Stop was
// called). Routes are exact path matches (the query string is ignored for
// matching), else the longest prefix route (HandlePrefix) that the path starts
// with; a route registered with Handle(path, ...) answers GET and HEAD (HEAD
// gets the headers without the body). Unknown paths get 404, other methods on
// a known path 405 with an Allow header. Stop() stops accepting, cancels the
// requests in flight, waits for their handlers to return (at most until they
// notice `cancelled`), answers them within stop_grace, and joins the threads;
// the server may be started again.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "server/http_message.h"
#include "server/http_router.h"

namespace dlq {

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // loopback only unless configured otherwise
  int port = 9464;                 // 0 = pick an ephemeral port
  int threads = 4;                 // request worker threads
  // Whole request (head and body), from its first byte (or the connection's
  // accept) to its last: a client slower than this is disconnected.
  std::chrono::seconds request_timeout{5};
  std::chrono::seconds write_timeout{5};       // whole answer, once it is ready
  std::chrono::seconds keep_alive_timeout{2};  // idle time allowed between two requests of a connection
  // How long Stop() lets answers in flight be written.
  std::chrono::milliseconds stop_grace{2000};
  // Requests served on one connection; 1: every answer says Connection: close
  // and the connection ends with it (a dashboard poll or a scrape opens a new
  // connection each time anyway). Must be at least 1.
  size_t max_requests_per_connection = 1;
  size_t max_connections = 128;
  size_t max_head_bytes = size_t{16} << 10;
  size_t max_headers = 64;
  size_t max_body_bytes = 1 << 20;
  size_t max_queued = 64;  // requests waiting for a worker; more get 503
  // Host names (besides IP literals, "localhost" and `host`) that requests
  // may name in their Host header; case-insensitive, without port. "*"
  // accepts every Host.
  std::vector<std::string> allowed_hosts;
  // Added to the 421 answer for a Host not served: how to allow it.
  std::string host_refused_hint;
  Clock* clock = nullptr;  // deadlines; null: DefaultClock()
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
  // GET/HEAD route answered on the I/O thread, before the worker queue and
  // without the Host check: for liveness and readiness probes. The handler
  // must be fast and must not block.
  void HandleProbe(const std::string& path, HttpRouteHandler handler);
  // GET/HEAD route served by a thread of its own, with its own queue of
  // max_queued, after the Host check: never behind the workers' queue (for
  // /metrics). The handler should be quick.
  void HandlePriority(const std::string& path, HttpRouteHandler handler);
  // Called on the I/O thread for every request but a probe, after the Host
  // check and before its body is read or it is queued; must be fast and must
  // not block. Replaces the previous check; call before Start.
  void CheckHeads(HttpHeadCheck check);

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
  class Loop;  // the I/O thread's state (http_server.cc)
  friend class Loop;

  const HttpServerOptions options_;
  HttpRouter router_;
  Mutex lifecycle_mu_;  // serialises Start/Stop
  std::unique_ptr<Loop> loop_ DLQ_GUARDED_BY(lifecycle_mu_);
  std::atomic<int> port_{0};
};

}  // namespace dlq
