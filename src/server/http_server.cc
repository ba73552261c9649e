#include "server/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <exception>
#include <optional>

#include "common/strings.h"
#include "server/host_policy.h"
#include "server/http_connection.h"
#include "server/http_connection_table.h"
#include "server/http_request_reader.h"
#include "server/http_worker_pool.h"

namespace dlq {
namespace {

using Phase = HttpConnectionPhase;

bool SetNonBlocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

std::string PeerAddress(const sockaddr_storage& addr) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (addr.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&addr)->sin_addr, buf, sizeof(buf));
  } else if (addr.ss_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr, buf, sizeof(buf));
  }
  return buf;
}

// A non-blocking socket listening on host:port (host may be an IPv6 literal
// in brackets), or an error naming host:port.
Result<int> Listen(const std::string& listen_host, int listen_port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(listen_port);
  std::string host = listen_host;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0)
    return Unavailable(fmt::format("http server: cannot listen on {}:{}: {}", HostForUrl(listen_host), listen_port,
                                   ::gai_strerror(rc)));
  int listen_fd = -1;
  int error = 0;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      error = errno;
      continue;
    }
    // SO_REUSEADDR only: a restart may bind over TIME_WAIT, but a second
    // process on the same port fails loudly.
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    // A deep accept queue (the kernel caps it at net.core.somaxconn):
    // clients wait there while every connection slot is answering,
    // instead of having their SYN dropped and retried a second later.
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0 && SetNonBlocking(fd)) {
      listen_fd = fd;
      break;
    }
    error = errno;
    ::close(fd);
  }
  ::freeaddrinfo(found);
  if (listen_fd < 0) {
    return Unavailable(fmt::format("http server: cannot listen on {}:{}{}", HostForUrl(listen_host), listen_port,
                                   error != 0 ? std::string(": ") + std::strerror(error) : std::string()));
  }
  return listen_fd;
}

// The port the socket `fd` is bound to.
int BoundPort(int fd) {
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  return bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                     : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

}  // namespace

// The I/O thread: the poll loop over the listener and the connections, and
// each connection's way from its request's bytes to its answer's. The
// connections (and their eviction) are in HttpConnectionTable, the workers
// in HttpWorkerPool.
class HttpServer::Loop {
 public:
  Loop(const HttpRouter& router, const HttpServerOptions& options)
      : router_(router),
        options_(options),
        clock_(options.clock != nullptr ? *options.clock : DefaultClock()),
        reader_(router, options),
        conns_(clock_, options.max_connections),
        pool_(router, options.max_queued, [this] { Wake(); }) {}

  ~Loop() {
    if (listen_fd_ >= 0) ::close(listen_fd_);
    if (wake_fd_ >= 0) ::close(wake_fd_);
  }

  // Binds and listens; the bound port, or an error naming host:port.
  Result<int> Bind() {
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) return Unavailable(fmt::format("http server: eventfd: {}", std::strerror(errno)));
    Result<int> listening = Listen(options_.host, options_.port);
    if (!listening.ok()) return listening.status();
    listen_fd_ = *listening;
    return BoundPort(listen_fd_);
  }

  void Start() {
    io_ = std::thread([this] { Run(); });
    pool_.Start(options_.threads);
  }

  void Stop() {
    pool_.RequestStop();
    Wake();
    if (io_.joinable()) io_.join();
    pool_.Join();
  }

 private:
  void Wake() {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
  }

  SteadyTime Now() const { return clock_.SteadyNow(); }

  void Run() {
    std::optional<SteadyTime> stop_deadline;
    std::vector<pollfd> fds;
    std::vector<uint64_t> ids;
    for (;;) {
      if (pool_.stopping() && !stop_deadline) {
        stop_deadline = Now() + options_.stop_grace;
        BeginStop();
      }
      if (stop_deadline && (conns_.empty() || Now() >= *stop_deadline)) break;

      const SteadyTime next = PollSet(stop_deadline, fds, ids);
      auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Now()).count();
      int rc = ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<int64_t>(wait + 1, 0, 1000)));
      if (rc < 0 && errno != EINTR) break;
      for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        if (fds[i].fd == wake_fd_) {
          uint64_t n;
          while (::read(wake_fd_, &n, sizeof(n)) > 0) {
          }
          TakeAnswers();
        } else if (fds[i].fd == listen_fd_ && ids[i] == 0) {
          Accept();
        } else {
          OnEvent(ids[i], fds[i].revents);
        }
      }
      ExpireDeadlines();
    }
    conns_.CloseAll();
    if (listen_fd_ >= 0) {
      ::close(listen_fd_);
      listen_fd_ = -1;
    }
  }

  // Fills `fds` (and the connection ids beside them, 0 for the wake and
  // listening sockets) with what to poll for; the time to wake up by.
  SteadyTime PollSet(const std::optional<SteadyTime>& stop_deadline, std::vector<pollfd>& fds,
                     std::vector<uint64_t>& ids) const {
    fds.clear();
    ids.clear();
    fds.push_back({.fd = wake_fd_, .events = POLLIN, .revents = 0});
    ids.push_back(0);
    if (listen_fd_ >= 0 && !stop_deadline && Now() >= accept_paused_until_ && conns_.HasRoom()) {
      fds.push_back({.fd = listen_fd_, .events = POLLIN, .revents = 0});
      ids.push_back(0);
    }
    SteadyTime next = Now() + std::chrono::seconds(1);
    const bool full = conns_.full();
    if (Now() < accept_paused_until_) next = std::min(next, accept_paused_until_);
    if (stop_deadline) next = std::min(next, *stop_deadline);
    for (const auto& [id, c] : conns_) {
      short events = 0;
      switch (c.phase) {
        case Phase::kReading: events = static_cast<short>(POLLIN | (c.out_pos < c.out.size() ? POLLOUT : 0)); break;
        case Phase::kWorking: events = c.peer_closed ? 0 : POLLRDHUP; break;
        case Phase::kWriting: events = POLLOUT; break;
        case Phase::kLingering: events = POLLIN; break;
      }
      if (c.phase != Phase::kWorking) next = std::min(next, c.deadline);
      // Full: wake when a silent connection's grace ends and it may make room.
      if (full && c.phase == Phase::kReading && c.in.empty() && c.served == 0) {
        next = std::min(next, c.accepted_at + HttpConnectionTable::kFirstBytesGrace);
      }
      fds.push_back({.fd = c.fd, .events = events, .revents = 0});
      ids.push_back(id);
    }
    return next;
  }

  // Stop accepting; cancel requests in flight; close connections that have
  // nothing to answer.
  void BeginStop() {
    if (listen_fd_ >= 0) {
      ::close(listen_fd_);
      listen_fd_ = -1;
    }
    pool_.DropQueued();  // never started: their connections close below
    conns_.CloseWhere([](HttpConnection& c) {
      c.cancelled->store(true);
      return c.phase != Phase::kWorking && c.phase != Phase::kWriting;
    });
  }

  void Accept() {
    for (;;) {
      // Full: take the next one only into a slot freed for it; otherwise it
      // waits in the accept queue until a connection ends.
      if (conns_.full() && !conns_.FreeASlot([this](uint64_t id) { return ReadAndAdvance(id); })) return;
      sockaddr_storage addr{};
      socklen_t len = sizeof(addr);
      int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        // Out of descriptors (EMFILE, ENFILE, ENOBUFS): the listening socket
        // stays readable, so pause accepting instead of spinning on it.
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) {
          accept_paused_until_ = Now() + std::chrono::milliseconds(100);
        }
        return;
      }
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      std::string remote_addr = PeerAddress(addr);
      const SteadyTime accepted_at = Now();
      const uint64_t id = conns_.Add(fd, std::move(remote_addr), accepted_at, accepted_at + options_.request_timeout);
      // Most clients send their request with the connection: answer it (or
      // queue it) now, before later arrivals compete for its slot.
      ReadAndAdvance(id);
    }
  }

  // Reads what the connection has and answers or queues a request it
  // completes. False when the connection was closed (peer gone or failed,
  // or it stopped sending before its request was complete).
  bool ReadAndAdvance(uint64_t id) {
    HttpConnection& c = *conns_.Find(id);
    const HttpConnection::ReadResult read = c.Receive(clock_, options_.request_timeout, options_.max_head_bytes);
    if (read == HttpConnection::ReadResult::kFailed) {
      conns_.Close(id);
      return false;
    }
    // A half-close (nc, socat, probe agents) ends the client's sending, not
    // its interest in the answer: a complete request is still answered.
    if (read == HttpConnection::ReadResult::kPeerDone) c.peer_closed = true;
    Advance(id, c);
    const HttpConnection* after = conns_.Find(id);
    if (after == nullptr) return false;
    if (after->phase == Phase::kReading && after->peer_closed) {
      conns_.Close(id);  // nothing more will come to complete the request
      return false;
    }
    return true;
  }

  void OnEvent(uint64_t id, short revents) {
    HttpConnection* found = conns_.Find(id);
    if (found == nullptr) return;
    HttpConnection& c = *found;
    if (revents & (POLLERR | POLLNVAL)) {
      c.cancelled->store(true);
      conns_.Close(id);
      return;
    }
    switch (c.phase) {
      case Phase::kReading:
        if ((revents & POLLOUT) && !c.Flush()) return conns_.Close(id);
        if (revents & (POLLIN | POLLHUP)) ReadAndAdvance(id);
        return;
      case Phase::kWorking:
        if (revents & (POLLRDHUP | POLLHUP)) {
          c.cancelled->store(true);  // the client went away (or half-closed): the handler may stop early
          c.peer_closed = true;
          if (revents & POLLHUP) conns_.Close(id);
        }
        return;
      case Phase::kWriting:
        if (!c.Flush()) return conns_.Close(id);
        if (c.out_pos == c.out.size()) Written(id, c);
        return;
      case Phase::kLingering:
        if (!c.Discard()) conns_.Close(id);
        return;
    }
  }

  // Parses what has arrived and hands a complete request on.
  void Advance(uint64_t id, HttpConnection& c) {
    HttpRequestReader::Step step = reader_.Next(c);
    switch (step.kind) {
      case HttpRequestReader::Step::Kind::kWait: return;
      case HttpRequestReader::Step::Kind::kFailed: return conns_.Close(id);
      case HttpRequestReader::Step::Kind::kRefused:
        return Answer(id, c, step.refusal, step.head_only, /*keep_alive=*/false);
      case HttpRequestReader::Step::Kind::kRequest: return Route(id, c, std::move(step.request), step.keep_alive);
    }
  }

  // Answers a probe here, else queues the request for the workers (a
  // priority route's for the priority thread), else answers 503.
  void Route(uint64_t id, HttpConnection& c, HttpServerRequest request, bool keep_alive) {
    const bool head_only = request.method == "HEAD";
    const bool gzip = AcceptsGzip(request.headers);
    HttpRouteHandler priority;
    if (request.method == "GET" || head_only) {
      priority = router_.Priority(request.path);
      if (HttpRouteHandler probe = router_.Probe(request.path)) {
        request.cancelled = c.cancelled.get();
        HttpServerResponse response;
        try {
          response = probe(request);
        } catch (const std::exception&) {
          response = JsonError(500, "internal error while answering the probe");
        }
        return Answer(id, c, response, head_only, keep_alive, gzip);
      }
    }
    if (pool_.Submit(HttpJob{.conn = id,
                             .handler = priority,
                             .request = std::move(request),
                             .head_only = head_only,
                             .keep_alive = keep_alive,
                             .gzip = gzip,
                             .cancelled = c.cancelled})) {
      c.phase = Phase::kWorking;
      return;
    }
    HttpServerResponse busy = JsonError(503, "every worker is busy; retry shortly");
    busy.headers.emplace_back("Retry-After", "1");
    Answer(id, c, busy, head_only, false);
  }

  void Answer(uint64_t id, HttpConnection& c, const HttpServerResponse& response, bool head_only, bool keep_alive,
              bool gzip = false) {
    c.out.append(Serialize(response, head_only, keep_alive, gzip));
    StartWriting(id, c, keep_alive);
  }

  void StartWriting(uint64_t id, HttpConnection& c, bool keep_alive) {
    c.phase = Phase::kWriting;
    c.close_after_write = !keep_alive;
    c.deadline = Now() + options_.write_timeout;
    if (!c.Flush()) return conns_.Close(id);
    if (c.out_pos == c.out.size()) Written(id, c);
  }

  // After an answer is written: the lingering close, or the next request.
  void Written(uint64_t id, HttpConnection& c) {
    c.out.clear();
    c.out_pos = 0;
    ++c.served;
    if (c.close_after_write || c.peer_closed) {
      // Let the client read the answer before the close: a close with unread
      // input would reset the connection and could destroy it in flight.
      ::shutdown(c.fd, SHUT_WR);
      c.phase = Phase::kLingering;
      c.deadline = Now() + std::chrono::seconds(1);
      return;
    }
    c.phase = Phase::kReading;
    c.cancelled = std::make_shared<std::atomic<bool>>(false);
    c.deadline = Now() + (c.in.empty() ? options_.keep_alive_timeout : options_.request_timeout);
    Advance(id, c);
  }

  // Starts writing the answers the workers finished.
  void TakeAnswers() {
    std::deque<HttpAnswer> answers = pool_.TakeAnswers();
    for (HttpAnswer& answer : answers) {
      HttpConnection* c = conns_.Find(answer.conn);
      if (c == nullptr) continue;  // the client went away
      c->out.append(answer.bytes);
      StartWriting(answer.conn, *c, answer.keep_alive && !c->peer_closed);
    }
  }

  void ExpireDeadlines() {
    const SteadyTime now = Now();
    conns_.CloseWhere([&](HttpConnection& c) { return c.phase != Phase::kWorking && now >= c.deadline; });
  }

  const HttpRouter& router_;
  const HttpServerOptions& options_;
  Clock& clock_;
  const HttpRequestReader reader_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  std::thread io_;
  // I/O thread only.
  HttpConnectionTable conns_;
  SteadyTime accept_paused_until_{};
  // Shared with the workers (thread-safe).
  HttpWorkerPool pool_;
};

Status HttpServerOptions::Validate() const {
  if (host.empty()) return InvalidArgument("http server: host is empty");
  if (port < 0 || port > 65535) return InvalidArgument(fmt::format("http server: port {} out of range 0-65535", port));
  if (threads < 1 || threads > 256)
    return InvalidArgument(fmt::format("http server: threads {} out of range 1-256", threads));
  if (request_timeout.count() <= 0 || write_timeout.count() <= 0 || keep_alive_timeout.count() <= 0 ||
      stop_grace.count() < 0) {
    return InvalidArgument("http server: timeouts must be positive");
  }
  if (max_requests_per_connection < 1)
    return InvalidArgument("http server: max_requests_per_connection must be at least 1");
  if (max_connections < 1 || max_connections > 65536)
    return InvalidArgument(fmt::format("http server: max_connections {} out of range 1-65536", max_connections));
  if (max_head_bytes < 256 || max_headers < 1 || max_queued < 1)
    return InvalidArgument("http server: max_head_bytes (>= 256), max_headers and max_queued must allow a request");
  return Status::Ok();
}

HttpServer::HttpServer(HttpServerOptions options) : options_(std::move(options)) {}

HttpServer::~HttpServer() {
  Stop();
}

void HttpServer::Handle(const std::string& path, HttpRouteHandler handler) {
  router_.Handle("GET", path, std::move(handler));
}

void HttpServer::Handle(const std::string& method, const std::string& path, HttpRouteHandler handler) {
  router_.Handle(method, path, std::move(handler));
}

void HttpServer::HandlePrefix(const std::string& method, const std::string& prefix, HttpRouteHandler handler) {
  router_.HandlePrefix(method, prefix, std::move(handler));
}

void HttpServer::HandleProbe(const std::string& path, HttpRouteHandler handler) {
  router_.HandleProbe(path, std::move(handler));
}

void HttpServer::HandlePriority(const std::string& path, HttpRouteHandler handler) {
  router_.HandlePriority(path, std::move(handler));
}

void HttpServer::CheckHeads(HttpHeadCheck check) {
  router_.CheckHeads(std::move(check));
}

Status HttpServer::Start() {
  DLQ_RETURN_IF_ERROR(options_.Validate());
  MutexLock lock(lifecycle_mu_);
  if (loop_) return FailedPrecondition(fmt::format("http server already running on port {}", port_.load()));
  auto loop = std::make_unique<Loop>(router_, options_);
  Result<int> bound = loop->Bind();
  if (!bound.ok()) return bound.status();
  port_ = *bound;
  loop->Start();
  loop_ = std::move(loop);
  return Status::Ok();
}

void HttpServer::Stop() {
  MutexLock lock(lifecycle_mu_);
  if (!loop_) return;
  loop_->Stop();
  loop_.reset();
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
}  // namespace dlq
