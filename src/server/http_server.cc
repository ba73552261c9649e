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
#include "server/http_request_parser.h"

namespace dlq {
namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

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

}  // namespace

// The I/O thread, the workers and the connections they share.
class HttpServer::Loop {
 public:
  Loop(const HttpRouter& router, const HttpServerOptions& options)
      : router_(router),
        options_(options),
        clock_(options.clock != nullptr ? *options.clock : DefaultClock()),
        limits_{.max_head_bytes = options.max_head_bytes,
                .max_headers = options.max_headers,
                .max_body_bytes = options.max_body_bytes},
        host_policy_{.listen_host = options.host, .allowed_hosts = options.allowed_hosts} {}

  ~Loop() {
    if (listen_fd_ >= 0) ::close(listen_fd_);
    if (wake_fd_ >= 0) ::close(wake_fd_);
  }

  // Binds and listens; the bound port, or an error naming host:port.
  Result<int> Bind() {
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) return Unavailable(fmt::format("http server: eventfd: {}", std::strerror(errno)));
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const std::string port = std::to_string(options_.port);
    std::string host = options_.host;
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
    if (rc != 0)
      return Unavailable(fmt::format("http server: cannot listen on {}:{}: {}", HostForUrl(options_.host),
                                     options_.port, ::gai_strerror(rc)));
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
        listen_fd_ = fd;
        break;
      }
      error = errno;
      ::close(fd);
    }
    ::freeaddrinfo(found);
    if (listen_fd_ < 0) {
      return Unavailable(fmt::format("http server: cannot listen on {}:{}{}", HostForUrl(options_.host), options_.port,
                                     error != 0 ? std::string(": ") + std::strerror(error) : std::string()));
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof(bound);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
    return bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                       : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  }

  void Start() {
    io_ = std::thread([this] { Run(); });
    for (int i = 0; i < options_.threads; ++i) workers_.emplace_back([this] { Work(/*priority=*/false); });
    workers_.emplace_back([this] { Work(/*priority=*/true); });
  }

  void Stop() {
    {
      MutexLock lock(mu_);
      stopping_ = true;
    }
    jobs_cv_.NotifyAll();
    priority_cv_.NotifyAll();
    Wake();
    if (io_.joinable()) io_.join();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
  }

 private:
  enum class Phase { kReading, kWorking, kWriting, kLingering };

  struct Connection {
    int fd = -1;
    uint64_t serial = 0;  // accept order
    std::string remote_addr;
    Phase phase = Phase::kReading;
    std::string in;
    size_t scanned = 0;   // bytes of `in` searched for the end of the head
    size_t newlines = 0;  // in in[0, scanned)
    std::optional<RequestHead> head;
    std::string out;
    size_t out_pos = 0;
    bool close_after_write = false;
    bool peer_closed = false;
    size_t served = 0;
    size_t discarded = 0;  // lingering
    SteadyTime accepted_at;
    SteadyTime deadline;
    std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
  };

  struct Job {
    uint64_t conn = 0;
    HttpRouteHandler handler;  // a priority route's; empty: Dispatch
    HttpServerRequest request;
    bool head_only = false;
    bool keep_alive = false;
    bool gzip = false;
    std::shared_ptr<std::atomic<bool>> cancelled;
  };
  struct Done {
    uint64_t conn = 0;
    std::string bytes;
    bool keep_alive = false;
  };

  void Wake() {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
  }

  SteadyTime Now() const { return clock_.SteadyNow(); }

  // A worker: takes jobs from the priority queue (`priority`) or the
  // ordinary one until Stop.
  void Work(bool priority) {
    std::deque<Job>& queue = priority ? priority_jobs_ : jobs_;
    CondVar& cv = priority ? priority_cv_ : jobs_cv_;
    for (;;) {
      Job job;
      {
        MutexLock lock(mu_);
        cv.Wait(mu_, [&]() DLQ_REQUIRES(mu_) { return stopping_ || !queue.empty(); });
        if (queue.empty()) return;  // stopping
        job = std::move(queue.front());
        queue.pop_front();
      }
      job.request.cancelled = job.cancelled.get();
      HttpServerResponse response;
      try {
        response = job.handler ? job.handler(job.request) : router_.Dispatch(job.request);
      } catch (const std::exception& e) {
        response = JsonError(500, "internal error while answering the request");
      }
      Done done{.conn = job.conn,
                .bytes = Serialize(response, job.head_only, job.keep_alive, job.gzip),
                .keep_alive = job.keep_alive};
      {
        MutexLock lock(mu_);
        done_.push_back(std::move(done));
      }
      Wake();
    }
  }

  void Run() {
    std::optional<SteadyTime> stop_deadline;
    std::vector<pollfd> fds;
    std::vector<uint64_t> ids;
    for (;;) {
      bool stopping;
      {
        MutexLock lock(mu_);
        stopping = stopping_;
      }
      if (stopping && !stop_deadline) {
        stop_deadline = Now() + options_.stop_grace;
        BeginStop();
      }
      if (stop_deadline && (conns_.empty() || Now() >= *stop_deadline)) break;

      fds.clear();
      ids.clear();
      fds.push_back({.fd = wake_fd_, .events = POLLIN, .revents = 0});
      ids.push_back(0);
      if (listen_fd_ >= 0 && !stop_deadline && Now() >= accept_paused_until_ && HasRoom()) {
        fds.push_back({.fd = listen_fd_, .events = POLLIN, .revents = 0});
        ids.push_back(0);
      }
      SteadyTime next = Now() + std::chrono::seconds(1);
      const bool full = conns_.size() >= options_.max_connections;
      if (Now() < accept_paused_until_) next = std::min(next, accept_paused_until_);
      if (stop_deadline) next = std::min(next, *stop_deadline);
      for (auto& [id, c] : conns_) {
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
          next = std::min(next, c.accepted_at + kFirstBytesGrace);
        }
        fds.push_back({.fd = c.fd, .events = events, .revents = 0});
        ids.push_back(id);
      }
      auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Now()).count();
      int rc = ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<int64_t>(wait + 1, 0, 1000)));
      if (rc < 0 && errno != EINTR) break;
      for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        if (fds[i].fd == wake_fd_) {
          uint64_t n;
          while (::read(wake_fd_, &n, sizeof(n)) > 0) {
          }
          TakeDone();
        } else if (fds[i].fd == listen_fd_ && ids[i] == 0) {
          Accept();
        } else {
          OnEvent(ids[i], fds[i].revents);
        }
      }
      ExpireDeadlines();
    }
    for (auto& [id, c] : conns_) ::close(c.fd);
    conns_.clear();
    if (listen_fd_ >= 0) {
      ::close(listen_fd_);
      listen_fd_ = -1;
    }
  }

  // Stop accepting; cancel requests in flight; close connections that have
  // nothing to answer.
  void BeginStop() {
    if (listen_fd_ >= 0) {
      ::close(listen_fd_);
      listen_fd_ = -1;
    }
    {
      MutexLock lock(mu_);
      jobs_.clear();  // never started: their connections close below
      priority_jobs_.clear();
    }
    for (auto it = conns_.begin(); it != conns_.end();) {
      Connection& c = it->second;
      c.cancelled->store(true);
      if (c.phase == Phase::kReading || c.phase == Phase::kLingering || !InFlight(it->first, c)) {
        ::close(c.fd);
        it = conns_.erase(it);
      } else {
        ++it;
      }
    }
  }

  bool InFlight(uint64_t /*id*/, const Connection& c) const {
    return c.phase == Phase::kWorking || c.phase == Phase::kWriting;
  }

  void Close(uint64_t id) {
    auto it = conns_.find(id);
    if (it == conns_.end()) return;
    ::close(it->second.fd);
    conns_.erase(it);
  }

  void Accept() {
    for (;;) {
      // Full: take the next one only into a slot freed for it; otherwise it
      // waits in the accept queue until a connection ends.
      if (conns_.size() >= options_.max_connections && !FreeASlot()) return;
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
      const uint64_t id = ++next_id_;
      Connection& c = conns_[id];
      c.fd = fd;
      c.serial = id;
      c.remote_addr = PeerAddress(addr);
      c.accepted_at = Now();
      c.deadline = c.accepted_at + options_.request_timeout;
      // Most clients send their request with the connection: answer it (or
      // queue it) now, before later arrivals compete for its slot.
      ReadAndAdvance(id);
    }
  }

  // When the listener is full, a connection that has sent nothing yet keeps
  // its slot this long: a client between its connect and its send is not a
  // slow client.
  static constexpr std::chrono::milliseconds kFirstBytesGrace{250};

  // Whether `c` may be ended to make room for a new connection: answered and
  // lingering, idle between two requests, part-way through sending one, or
  // silent for kFirstBytesGrace. Never while its request is being answered.
  bool Droppable(const Connection& c, SteadyTime now) const {
    if (c.phase == Phase::kLingering) return true;
    if (c.phase != Phase::kReading) return false;
    return !c.in.empty() || c.served > 0 || now - c.accepted_at >= kFirstBytesGrace;
  }

  // True when a new connection can be taken: a slot is free, or one is held
  // by a connection that may be dropped.
  bool HasRoom() const {
    if (conns_.size() < options_.max_connections) return true;
    const SteadyTime now = Now();
    return std::any_of(conns_.begin(), conns_.end(), [&](const auto& entry) { return Droppable(entry.second, now); });
  }

  // Ends one connection to make room: the oldest lingering one, else the
  // oldest droppable reader. A reader's socket is read first, and a request
  // that turns out complete is answered (or queued), not dropped. False
  // when none could go.
  bool FreeASlot() {
    for (auto& [id, c] : conns_) {  // map order = accept order
      if (c.phase != Phase::kLingering) continue;
      DrainAndClose(id);
      return true;
    }
    std::vector<uint64_t> readers;
    for (auto& [id, c] : conns_) {
      if (c.phase == Phase::kReading) readers.push_back(id);
    }
    for (uint64_t id : readers) {
      if (!ReadAndAdvance(id)) return true;  // it ended on its own
      const Connection& c = conns_.at(id);
      if (!Droppable(c, Now())) continue;  // its request was complete, or it just arrived
      if (c.phase == Phase::kLingering) {
        DrainAndClose(id);
      } else {
        Close(id);
      }
      return true;
    }
    return false;
  }

  // Closes a connection whose answer is written, after reading what the
  // client sent (a close over unread input would reset the connection and
  // could destroy the answer before the client reads it).
  void DrainAndClose(uint64_t id) {
    Connection& c = conns_.at(id);
    char buf[4096];
    for (int i = 0; i < 16 && ::recv(c.fd, buf, sizeof(buf), 0) > 0; ++i) {
    }
    Close(id);
  }

  // Reads what the connection has and answers or queues a request it
  // completes. False when the connection was closed (peer gone or failed,
  // or it stopped sending before its request was complete).
  bool ReadAndAdvance(uint64_t id) {
    Connection& c = conns_.at(id);
    const ReadResult read = Receive(c);
    if (read == ReadResult::kFailed) {
      Close(id);
      return false;
    }
    // A half-close (nc, socat, probe agents) ends the client's sending, not
    // its interest in the answer: a complete request is still answered.
    if (read == ReadResult::kPeerDone) c.peer_closed = true;
    Advance(id, c);
    auto it = conns_.find(id);
    if (it == conns_.end()) return false;
    if (it->second.phase == Phase::kReading && it->second.peer_closed) {
      Close(id);  // nothing more will come to complete the request
      return false;
    }
    return true;
  }

  void OnEvent(uint64_t id, short revents) {
    auto it = conns_.find(id);
    if (it == conns_.end()) return;
    Connection& c = it->second;
    if (revents & (POLLERR | POLLNVAL)) {
      c.cancelled->store(true);
      Close(id);
      return;
    }
    switch (c.phase) {
      case Phase::kReading:
        if ((revents & POLLOUT) && !Flush(c)) return Close(id);
        if (revents & (POLLIN | POLLHUP)) ReadAndAdvance(id);
        return;
      case Phase::kWorking:
        if (revents & (POLLRDHUP | POLLHUP)) {
          c.cancelled->store(true);  // the client went away (or half-closed): the handler may stop early
          c.peer_closed = true;
          if (revents & POLLHUP) Close(id);
        }
        return;
      case Phase::kWriting:
        if (!Flush(c)) return Close(id);
        if (c.out_pos == c.out.size()) Written(id, c);
        return;
      case Phase::kLingering: {
        char buf[4096];
        ssize_t n = ::recv(c.fd, buf, sizeof(buf), 0);
        if (n <= 0 || (c.discarded += static_cast<size_t>(n)) > (size_t{64} << 10)) Close(id);
        return;
      }
    }
  }

  enum class ReadResult { kOpen, kPeerDone, kFailed };

  // Reads what is there (the bytes before a half-close included).
  ReadResult Receive(Connection& c) {
    char buf[16 * 1024];
    for (int rounds = 0; rounds < 8; ++rounds) {
      ssize_t n = ::recv(c.fd, buf, sizeof(buf), 0);
      if (n > 0) {
        if (c.in.empty() && !c.head && c.served > 0) c.deadline = Now() + options_.request_timeout;
        c.in.append(buf, static_cast<size_t>(n));
        // A head is never held beyond its limit, nor a body beyond its length.
        size_t cap = c.head ? c.head->head_bytes + c.head->content_length : options_.max_head_bytes + 64;
        if (c.in.size() > cap + sizeof(buf)) return ReadResult::kOpen;
        continue;
      }
      if (n == 0) return ReadResult::kPeerDone;
      return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? ReadResult::kOpen : ReadResult::kFailed;
    }
    return ReadResult::kOpen;
  }

  // Sends pending bytes; false on a failed connection.
  bool Flush(Connection& c) {
    while (c.out_pos < c.out.size()) {
      ssize_t n = ::send(c.fd, c.out.data() + c.out_pos, c.out.size() - c.out_pos, MSG_NOSIGNAL);
      if (n > 0) {
        c.out_pos += static_cast<size_t>(n);
        continue;
      }
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
    }
    return true;
  }

  // True when `in` may now hold a whole head (or enough to refuse it).
  bool WorthParsing(Connection& c) const {
    bool end = false, bare_cr = false;
    // Only the bytes new since the last call (and the two before them, for
    // a line end split across reads): a client sending a byte at a time
    // costs O(head) in all, not O(head) per byte.
    size_t from = c.scanned >= 2 ? c.scanned - 2 : 0;
    for (size_t i = from; i < c.in.size(); ++i) {
      if (c.in[i] == '\r') {
        if (i + 1 < c.in.size() && c.in[i + 1] != '\n') bare_cr = true;  // refused early by the parser
        continue;
      }
      if (c.in[i] != '\n') continue;
      if (i >= c.scanned) ++c.newlines;
      if ((i >= 1 && c.in[i - 1] == '\n') || (i >= 2 && c.in[i - 1] == '\r' && c.in[i - 2] == '\n')) end = true;
    }
    c.scanned = c.in.size();
    return end || bare_cr || c.in.size() >= options_.max_head_bytes || c.newlines > options_.max_headers + 1;
  }

  // Parses what has arrived and hands a complete request on.
  void Advance(uint64_t id, Connection& c) {
    if (c.phase != Phase::kReading) return;
    if (!c.head) {
      if (c.in.empty() || !WorthParsing(c)) return;
      RequestHeadParse parsed = ParseRequestHead(c.in, limits_);
      if (parsed.state == RequestHeadParse::State::kRefused) {
        return Answer(id, c, JsonError(parsed.status, parsed.reason), /*head_only=*/false, /*keep_alive=*/false);
      }
      if (parsed.state == RequestHeadParse::State::kIncomplete) return;
      c.head = std::move(parsed.head);
      if (std::optional<HttpServerResponse> refused = Admit(c)) {
        // Answered before its body is read; the body is never held.
        const bool head_only = c.head->method == "HEAD";
        c.head.reset();
        c.in.clear();
        c.in.shrink_to_fit();
        return Answer(id, c, *refused, head_only, /*keep_alive=*/false);
      }
      const bool body_pending = c.in.size() < c.head->head_bytes + c.head->content_length;
      if (c.head->expect_continue && body_pending) {
        c.out += "HTTP/1.1 100 Continue\r\n\r\n";
        if (!Flush(c)) return Close(id);
      }
    }
    const size_t need = c.head->head_bytes + c.head->content_length;
    if (c.in.size() < need) return;
    HttpServerRequest request = RequestOf(c, std::move(c.head->headers));
    request.body = c.in.substr(c.head->head_bytes, c.head->content_length);
    const bool keep_alive = c.head->keep_alive && !c.peer_closed && c.served + 1 < options_.max_requests_per_connection;
    c.in.erase(0, need);
    c.scanned = 0;
    c.newlines = 0;
    c.head.reset();
    Route(id, c, std::move(request), keep_alive);
  }

  // The request as handlers see it, from the connection's parsed head and
  // `headers` (its body is added once it has arrived).
  static HttpServerRequest RequestOf(const Connection& c, HttpHeaders headers) {
    HttpServerRequest request;
    request.method = c.head->method;
    request.path = c.head->path;
    request.query = c.head->query;
    request.headers = std::move(headers);
    request.remote_addr = c.remote_addr;
    request.cancelled = c.cancelled.get();
    return request;
  }

  // Refuses a request from its head alone (body unread): a body on GET or
  // HEAD, a Host this server does not serve, a body for no route, or a head
  // the head check refuses. Probes pass (they get no Host check).
  std::optional<HttpServerResponse> Admit(const Connection& c) const {
    const RequestHead& head = *c.head;
    const bool get = head.method == "GET" || head.method == "HEAD";
    if (get && head.content_length > 0) return JsonError(400, "a GET or HEAD request carries no body");
    if (get && router_.Probe(head.path)) return std::nullopt;
    if (!host_policy_.Allows(FindHeader(head.headers, "Host"))) {
      return JsonError(
          421, options_.host_refused_hint.empty()
                   ? std::string("this server does not serve the host named in the Host header")
                   : "this server does not serve the host named in the Host header; " + options_.host_refused_hint);
    }
    const HttpServerRequest request = RequestOf(c, head.headers);
    if (head.content_length > 0) {
      HttpServerResponse refusal;
      if (!router_.Resolve(request, &refusal)) return refusal;
    }
    return router_.CheckHead(request);
  }

  void Route(uint64_t id, Connection& c, HttpServerRequest request, bool keep_alive) {
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
    bool queued = false;
    {
      MutexLock lock(mu_);
      std::deque<Job>& queue = priority ? priority_jobs_ : jobs_;
      if (queue.size() < options_.max_queued) {
        queue.push_back(Job{.conn = id,
                            .handler = priority,
                            .request = std::move(request),
                            .head_only = head_only,
                            .keep_alive = keep_alive,
                            .gzip = gzip,
                            .cancelled = c.cancelled});
        queued = true;
      }
    }
    if (queued) {
      c.phase = Phase::kWorking;
      (priority ? priority_cv_ : jobs_cv_).NotifyOne();
      return;
    }
    HttpServerResponse busy = JsonError(503, "every worker is busy; retry shortly");
    busy.headers.emplace_back("Retry-After", "1");
    Answer(id, c, busy, head_only, false);
  }

  void Answer(uint64_t id, Connection& c, const HttpServerResponse& response, bool head_only, bool keep_alive,
              bool gzip = false) {
    c.out.append(Serialize(response, head_only, keep_alive, gzip));
    StartWriting(id, c, keep_alive);
  }

  void StartWriting(uint64_t id, Connection& c, bool keep_alive) {
    c.phase = Phase::kWriting;
    c.close_after_write = !keep_alive;
    c.deadline = Now() + options_.write_timeout;
    if (!Flush(c)) return Close(id);
    if (c.out_pos == c.out.size()) Written(id, c);
  }

  void Written(uint64_t id, Connection& c) {
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

  void TakeDone() {
    std::deque<Done> done;
    {
      MutexLock lock(mu_);
      done.swap(done_);
    }
    for (Done& d : done) {
      auto it = conns_.find(d.conn);
      if (it == conns_.end()) continue;  // the client went away
      Connection& c = it->second;
      c.out.append(d.bytes);
      StartWriting(d.conn, c, d.keep_alive && !c.peer_closed);
    }
  }

  void ExpireDeadlines() {
    const SteadyTime now = Now();
    std::vector<uint64_t> expired;
    for (auto& [id, c] : conns_) {
      if (c.phase != Phase::kWorking && now >= c.deadline) expired.push_back(id);
    }
    for (uint64_t id : expired) Close(id);
  }

  const HttpRouter& router_;
  const HttpServerOptions& options_;
  Clock& clock_;
  const RequestHeadLimits limits_;
  const HostPolicy host_policy_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  std::thread io_;
  std::vector<std::thread> workers_;
  // I/O thread only.
  std::map<uint64_t, Connection> conns_;
  uint64_t next_id_ = 0;
  SteadyTime accept_paused_until_{};
  // Shared with the workers.
  Mutex mu_;
  CondVar jobs_cv_;
  CondVar priority_cv_;
  std::deque<Job> jobs_ DLQ_GUARDED_BY(mu_);
  std::deque<Job> priority_jobs_ DLQ_GUARDED_BY(mu_);  // for the priority thread
  std::deque<Done> done_ DLQ_GUARDED_BY(mu_);
  bool stopping_ DLQ_GUARDED_BY(mu_) = false;
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
