#include "aws/socket_transport.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <iterator>
#include <memory>

#include "aws/http_response_parser.h"
#include "common/strings.h"

namespace dlq {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr size_t kMaxIdlePerEndpoint = 16;      // kept-alive connections per scheme://host:port
constexpr size_t kMaxHead = size_t{64} * 1024;  // a response's status line and headers
constexpr size_t kReadChunk = size_t{64} * 1024;
constexpr std::chrono::milliseconds kCheckIdleAfter{1000};
constexpr size_t kCoalesceBody = size_t{64} * 1024;  // bodies up to this size are copied behind the head
constexpr auto kCancelCheck = std::chrono::milliseconds(50);

std::string DescribeTarget(const HttpRequest& request, const Url& url) {
  return fmt::format("{} {}://{}{}", request.method, url.scheme, url.Authority(), url.path);
}

std::string Errno(int e) {
  return std::strerror(e);  // NOLINT(concurrency-mt-unsafe): glibc's is thread-safe for known codes
}

// The oldest OpenSSL error queued on this thread, or `fallback`; clears the queue.
std::string TlsError(std::string_view fallback) {
  const unsigned long e = ERR_get_error();  // NOLINT(google-runtime-int): OpenSSL's type
  ERR_clear_error();
  if (e == 0) return std::string(fallback);
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

// Waits until `fd` is ready for `events`. kUnavailable at the deadline,
// kCancelled as soon as *cancel is seen true (checked every 50 ms).
Status WaitReady(int fd, short events, SteadyClock::time_point deadline, const std::atomic<bool>* cancel) {
  for (;;) {
    if (cancel != nullptr && cancel->load()) return Cancelled("cancelled");
    const auto now = SteadyClock::now();
    if (now >= deadline) return Unavailable("timed out");
    auto wait = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
    if (cancel != nullptr) wait = std::min<std::chrono::milliseconds>(wait, kCancelCheck);
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(wait.count(), INT_MAX)));
    if (r > 0) return Status::Ok();
    if (r < 0 && errno != EINTR) return Unavailable("poll: " + Errno(errno));
  }
}

// A BIO over a non-blocking socket that sends with MSG_NOSIGNAL: OpenSSL's
// own socket BIO uses write(), which raises SIGPIPE on a reset connection.
int BioWrite(BIO* bio, const char* data, int size) {
  BIO_clear_retry_flags(bio);
  const int fd = *static_cast<const int*>(BIO_get_data(bio));
  const ssize_t n = ::send(fd, data, static_cast<size_t>(size), MSG_NOSIGNAL);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_write(bio);
  return static_cast<int>(n);
}

int BioRead(BIO* bio, char* data, int size) {
  BIO_clear_retry_flags(bio);
  const int fd = *static_cast<const int*>(BIO_get_data(bio));
  const ssize_t n = ::recv(fd, data, static_cast<size_t>(size), 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_read(bio);
  return static_cast<int>(n);
}

long BioCtrl(BIO*, int cmd, long, void*) {  // NOLINT(google-runtime-int): OpenSSL's signature
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

int BioCreate(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

// Made once, kept for the life of the process.
const BIO_METHOD* SocketBioMethod() {
  static const BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "dlq socket");
    if (m == nullptr) return static_cast<BIO_METHOD*>(nullptr);
    BIO_meth_set_write(m, BioWrite);
    BIO_meth_set_read(m, BioRead);
    BIO_meth_set_ctrl(m, BioCtrl);
    BIO_meth_set_create(m, BioCreate);
    return m;
  }();
  return method;
}

// The host without IPv6 brackets, and whether it is an IP literal.
std::pair<std::string, bool> BareHost(const std::string& host) {
  std::string bare = host;
  if (bare.size() >= 2 && bare.front() == '[' && bare.back() == ']') bare = bare.substr(1, bare.size() - 2);
  unsigned char addr[sizeof(in6_addr)];
  const bool ip = ::inet_pton(AF_INET, bare.c_str(), addr) == 1 || ::inet_pton(AF_INET6, bare.c_str(), addr) == 1;
  return {bare, ip};
}

}  // namespace

struct SocketTransport::Connection {
  int fd = -1;
  SSL* ssl = nullptr;  // https only

  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() {
    if (ssl != nullptr) SSL_free(ssl);  // frees the BIO too; no close_notify: the socket just closes
    if (fd >= 0) ::close(fd);
  }

  // Waits for whatever a TLS call asked for (SSL_ERROR_WANT_READ / WRITE).
  Status WaitTls(int err, SteadyClock::time_point deadline, const std::atomic<bool>* cancel) const {
    return WaitReady(fd, err == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN, deadline, cancel);
  }

  // Sends all of `data`. *reset is set when the peer had closed the connection.
  Status WriteAll(std::string_view data, SteadyClock::time_point deadline, const std::atomic<bool>* cancel,
                  bool* reset) const {
    while (!data.empty()) {
      const int chunk = static_cast<int>(std::min<size_t>(data.size(), INT_MAX));
      if (ssl != nullptr) {
        ERR_clear_error();
        errno = 0;
        const int n = SSL_write(ssl, data.data(), chunk);
        if (n > 0) {
          data.remove_prefix(static_cast<size_t>(n));
          continue;
        }
        const int err = SSL_get_error(ssl, n);
        if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
          DLQ_RETURN_IF_ERROR(WaitTls(err, deadline, cancel));
          continue;
        }
        if (err == SSL_ERROR_SYSCALL && (errno == EPIPE || errno == ECONNRESET)) {
          *reset = true;
          return Unavailable("send: " + Errno(errno));
        }
        return Unavailable("TLS send: " + TlsError("connection lost"));
      }
      const ssize_t n = ::send(fd, data.data(), static_cast<size_t>(chunk), MSG_NOSIGNAL);
      if (n >= 0) {
        data.remove_prefix(static_cast<size_t>(n));
      } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        DLQ_RETURN_IF_ERROR(WaitReady(fd, POLLOUT, deadline, cancel));
      } else if (errno != EINTR) {
        *reset = errno == EPIPE || errno == ECONNRESET;
        return Unavailable("send: " + Errno(errno));
      }
    }
    return Status::Ok();
  }

  // Appends what arrives next (at most 64 KiB) to `buf`; 0 at the end of the
  // stream. *reset is set when the peer reset the connection. Reads land in
  // `scratch` first: growing `buf` by 64 KiB would zero-fill it on every call.
  Result<size_t> ReadSome(std::string& buf, SteadyClock::time_point deadline, const std::atomic<bool>* cancel,
                          bool* reset) {
    if (!scratch) scratch = std::make_unique_for_overwrite<char[]>(kReadChunk);
    for (;;) {
      if (ssl != nullptr) {
        ERR_clear_error();
        errno = 0;
        const int n = SSL_read(ssl, scratch.get(), static_cast<int>(kReadChunk));
        if (n > 0) {
          buf.append(scratch.get(), static_cast<size_t>(n));
          return static_cast<size_t>(n);
        }
        const int err = SSL_get_error(ssl, n);
        if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
          DLQ_RETURN_IF_ERROR(WaitTls(err, deadline, cancel));
          continue;
        }
        if (err == SSL_ERROR_ZERO_RETURN) return size_t{0};  // also an EOF without close_notify
        if (err == SSL_ERROR_SYSCALL && errno == ECONNRESET) {
          *reset = true;
          return Unavailable("receive: " + Errno(errno));
        }
        return Unavailable("TLS receive: " + TlsError("connection lost"));
      }
      const ssize_t n = ::recv(fd, scratch.get(), kReadChunk, 0);
      if (n >= 0) {
        buf.append(scratch.get(), static_cast<size_t>(n));
        return static_cast<size_t>(n);
      }
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        DLQ_RETURN_IF_ERROR(WaitReady(fd, POLLIN, deadline, cancel));
      } else if (errno != EINTR) {
        *reset = errno == ECONNRESET;
        return Unavailable("receive: " + Errno(errno));
      }
    }
  }

  std::unique_ptr<char[]> scratch;     // kReadChunk bytes, made on the first read
  SteadyClock::time_point idle_since;  // when it last went back to the pool
};

namespace {

using Connection = SocketTransport::Connection;

// A TCP connection to host:port, non-blocking, within `deadline`.
Result<std::unique_ptr<Connection>> ConnectTcp(const std::string& host, int port, SteadyClock::time_point deadline,
                                               const std::atomic<bool>* cancel) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return Unavailable(fmt::format("cannot resolve host: {}", ::gai_strerror(rc)));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, ::freeaddrinfo);
  Status last = Unavailable("no address to connect to");
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    auto conn = std::make_unique<Connection>();
    conn->fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (conn->fd < 0) {
      last = Unavailable("socket: " + Errno(errno));
      continue;
    }
    if (::connect(conn->fd, a->ai_addr, a->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        last = Unavailable("connect: " + Errno(errno));
        continue;
      }
      if (Status s = WaitReady(conn->fd, POLLOUT, deadline, cancel); !s.ok()) {
        if (s.code() == ErrorCode::kCancelled) return s;
        last = Unavailable("connect: " + s.message());
        continue;
      }
      int err = 0;
      socklen_t len = sizeof(err);
      if (::getsockopt(conn->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      if (err != 0) {
        last = Unavailable("connect: " + Errno(err));
        continue;
      }
    }
    int one = 1;
    ::setsockopt(conn->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return conn;
  }
  return last;
}

Status Handshake(Connection& conn, SSL_CTX* ctx, const std::string& host, SteadyClock::time_point deadline,
                 const std::atomic<bool>* cancel) {
  ERR_clear_error();
  conn.ssl = SSL_new(ctx);
  if (conn.ssl == nullptr) return Unavailable("TLS: " + TlsError("SSL_new failed"));
  BIO* bio = BIO_new(SocketBioMethod());
  if (bio == nullptr) return Unavailable("TLS: " + TlsError("BIO_new failed"));
  BIO_set_data(bio, &conn.fd);      // the Connection outlives its SSL and so the BIO
  SSL_set_bio(conn.ssl, bio, bio);  // the SSL owns the BIO now
  const auto [bare, ip] = BareHost(host);
  if (ip) {
    if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(conn.ssl), bare.c_str()) != 1) {
      return Unavailable("TLS: cannot verify against IP address");
    }
  } else if (SSL_set_tlsext_host_name(conn.ssl, bare.c_str()) != 1 || SSL_set1_host(conn.ssl, bare.c_str()) != 1) {
    return Unavailable("TLS: " + TlsError("cannot set the host name"));
  }
  for (;;) {
    ERR_clear_error();
    const int r = SSL_connect(conn.ssl);
    if (r == 1) return Status::Ok();
    const int err = SSL_get_error(conn.ssl, r);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      DLQ_RETURN_IF_ERROR(conn.WaitTls(err, deadline, cancel));
      continue;
    }
    const long verify = SSL_get_verify_result(conn.ssl);  // NOLINT(google-runtime-int): OpenSSL's type
    if (verify != X509_V_OK) {
      ERR_clear_error();
      return Unavailable(fmt::format("TLS: peer certificate not verified: {}", X509_verify_cert_error_string(verify)));
    }
    return Unavailable("TLS handshake: " + TlsError("connection closed"));
  }
}

// Where the head ends: the offset past the blank line, and the head's length
// without it (npos when the blank line has not arrived yet).
std::pair<size_t, size_t> FindHeadEnd(std::string_view buf) {
  for (size_t nl = buf.find('\n'); nl != std::string_view::npos; nl = buf.find('\n', nl + 1)) {
    if (nl + 1 < buf.size() && buf[nl + 1] == '\n') return {nl + 2, nl + 1};
    if (nl + 2 < buf.size() && buf[nl + 1] == '\r' && buf[nl + 2] == '\n') return {nl + 3, nl + 1};
  }
  return {std::string_view::npos, 0};
}

struct Exchanged {
  HttpResponse response;
  bool keep_alive = false;
};

// Writes the request's head and body. *stale is set when the peer reset the
// connection.
Status SendRequest(Connection& conn, std::string_view head, std::string_view body, SteadyClock::time_point deadline,
                   const std::atomic<bool>* cancel, bool* stale) {
  bool reset = false;
  if (Status s = conn.WriteAll(head, deadline, cancel, &reset); !s.ok()) {
    *stale = reset;
    return s;
  }
  if (!body.empty()) {
    if (Status s = conn.WriteAll(body, deadline, cancel, &reset); !s.ok()) {
      *stale = reset;
      return s;
    }
  }
  return Status::Ok();
}

// Reads up to the final response's head, past any 1xx interim responses;
// what was read beyond it stays in `buf`. *stale is set when the peer closed
// or reset the connection before any byte of the response.
Result<ResponseHead> ReadFinalHead(Connection& conn, std::string_view method, std::string& buf,
                                   SteadyClock::time_point deadline, const std::atomic<bool>* cancel, bool* stale) {
  bool reset = false;
  ResponseHead parsed;
  for (;;) {  // 1xx interim responses come before the final one
    auto [end, head_len] = FindHeadEnd(buf);
    while (end == std::string_view::npos) {
      if (buf.size() > kMaxHead) return Unavailable("malformed HTTP response: head longer than 64 KiB");
      const bool first = buf.empty();
      auto n = conn.ReadSome(buf, deadline, cancel, &reset);
      if (!n.ok()) {
        *stale = first && reset;
        return n.status();
      }
      if (*n == 0) {
        *stale = first;
        return Unavailable(first ? "connection closed before a response"
                                 : "connection closed inside the response head");
      }
      std::tie(end, head_len) = FindHeadEnd(buf);
    }
    DLQ_ASSIGN_OR_RETURN(parsed, ParseResponseHead(std::string_view(buf).substr(0, head_len), method));
    buf.erase(0, end);
    if (parsed.status == 101) return Unavailable("unexpected protocol switch (HTTP 101)");
    if (parsed.status >= 200) return parsed;
  }
}

// Reads the body as the head frames it into `body_out`, starting with the
// bytes already in `buf`. Returns whether bytes came after the body (the
// connection's framing is off: do not reuse it).
Result<bool> ReadBody(Connection& conn, const ResponseHead& parsed, std::string& buf, std::string& body_out,
                      SteadyClock::time_point deadline, const std::atomic<bool>* cancel) {
  bool reset = false;
  bool leftover = false;
  switch (parsed.framing) {
    case ResponseHead::Framing::kNone: leftover = !buf.empty(); break;
    case ResponseHead::Framing::kLength: {
      const uint64_t want = parsed.content_length;
      if (buf.size() > want) {
        leftover = true;
        buf.resize(want);
      }
      body_out = std::move(buf);
      body_out.reserve(static_cast<size_t>(std::min<uint64_t>(want, uint64_t{64} << 20)));
      while (body_out.size() < want) {
        auto n = conn.ReadSome(body_out, deadline, cancel, &reset);
        if (!n.ok()) return n.status();
        if (*n == 0) {
          return Unavailable(fmt::format("connection closed after {} of {} body bytes", body_out.size(), want));
        }
        if (body_out.size() > want) {
          leftover = true;
          body_out.resize(want);
        }
      }
      break;
    }
    case ResponseHead::Framing::kChunked: {
      ChunkedDecoder decoder;
      DLQ_ASSIGN_OR_RETURN(size_t used, decoder.Feed(buf, body_out));
      leftover = used < buf.size();
      while (!decoder.done()) {
        buf.clear();
        auto n = conn.ReadSome(buf, deadline, cancel, &reset);
        if (!n.ok()) return n.status();
        if (*n == 0) return Unavailable("connection closed inside a chunked body");
        DLQ_ASSIGN_OR_RETURN(used, decoder.Feed(buf, body_out));
        leftover = used < buf.size();
      }
      break;
    }
    case ResponseHead::Framing::kUntilClose: {
      body_out = std::move(buf);
      for (;;) {
        auto n = conn.ReadSome(body_out, deadline, cancel, &reset);
        if (!n.ok()) return n.status();
        if (*n == 0) break;
      }
      break;
    }
  }
  return leftover;
}

// Sends the request on `conn` and reads its response. *stale is set when the
// peer closed or reset the connection before any byte of the response.
Result<Exchanged> Exchange(Connection& conn, std::string_view head, std::string_view body, std::string_view method,
                           SteadyClock::time_point deadline, const std::atomic<bool>* cancel, bool* stale) {
  DLQ_RETURN_IF_ERROR(SendRequest(conn, head, body, deadline, cancel, stale));
  // The answer cannot be there yet: wait for it rather than try a read that
  // would only fail with EAGAIN (one syscall fewer per request).
  if (conn.ssl == nullptr || SSL_pending(conn.ssl) == 0) {
    DLQ_RETURN_IF_ERROR(WaitReady(conn.fd, POLLIN, deadline, cancel));
  }
  std::string buf;
  DLQ_ASSIGN_OR_RETURN(ResponseHead parsed, ReadFinalHead(conn, method, buf, deadline, cancel, stale));
  Exchanged out;
  out.response.status = parsed.status;
  out.response.headers = std::move(parsed.headers);
  DLQ_ASSIGN_OR_RETURN(bool leftover, ReadBody(conn, parsed, buf, out.response.body, deadline, cancel));
  out.keep_alive = parsed.keep_alive && !leftover;
  return out;
}

// False when an idle connection has been closed by the peer (or has bytes
// nobody asked for): readable or in error while idle.
bool StillIdle(const Connection& conn) {
  pollfd p{conn.fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 0;
}

}  // namespace

Result<std::unique_ptr<SocketTransport>> SocketTransport::Create(const TransportSettings& settings) {
  if (settings.connect_timeout.count() <= 0 || settings.request_timeout.count() <= 0) {
    return InvalidArgument("HTTP timeouts must be positive");
  }
  if (!settings.ca_bundle.empty() && ::access(settings.ca_bundle.c_str(), R_OK) != 0) {
    return InvalidArgument(fmt::format("CA bundle {}: not a readable file", settings.ca_bundle));
  }
  return std::unique_ptr<SocketTransport>(new SocketTransport(settings));
}

SocketTransport::SocketTransport(TransportSettings settings) : settings_(std::move(settings)) {}

SocketTransport::~SocketTransport() {
  MutexLock lock(mu_);
  idle_.clear();
  if (tls_ != nullptr) SSL_CTX_free(tls_);
}

Result<SSL_CTX*> SocketTransport::TlsContext() {
  MutexLock lock(mu_);
  if (tls_ != nullptr) return tls_;
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) return Unavailable("TLS: " + TlsError("cannot make a TLS context"));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  const int loaded = settings_.ca_bundle.empty()
                         ? SSL_CTX_set_default_verify_paths(ctx)
                         : SSL_CTX_load_verify_locations(ctx, settings_.ca_bundle.c_str(), nullptr);
  if (loaded != 1) {
    std::string why = TlsError("no certificates");
    SSL_CTX_free(ctx);
    return Unavailable(fmt::format("TLS: cannot load CA certificates{}: {}",
                                   settings_.ca_bundle.empty() ? "" : " from " + settings_.ca_bundle, why));
  }
  tls_ = ctx;
  return tls_;
}

std::unique_ptr<SocketTransport::Connection> SocketTransport::TakeIdle(const std::string& key) {
  for (;;) {
    std::unique_ptr<Connection> conn;
    {
      MutexLock lock(mu_);
      auto it = idle_.find(key);
      if (it == idle_.end() || it->second.empty()) return nullptr;
      conn = std::move(it->second.back());
      it->second.pop_back();
    }
    // Checked outside the lock (it is a syscall), and only for a connection
    // idle for kCheckIdleAfter or more: servers close idle connections after
    // seconds. A connection closed sooner fails before any byte of the
    // response, and Send retries that once on a new connection.
    if (SteadyClock::now() - conn->idle_since < kCheckIdleAfter || StillIdle(*conn)) return conn;
  }
}

void SocketTransport::PutIdle(const std::string& key, std::unique_ptr<Connection> conn) {
  conn->idle_since = SteadyClock::now();
  MutexLock lock(mu_);
  auto& idle = idle_[key];
  if (idle.size() < kMaxIdlePerEndpoint) idle.push_back(std::move(conn));
}

Result<HttpResponse> SocketTransport::Send(const HttpRequest& request) {
  DLQ_ASSIGN_OR_RETURN(Url url, ParseUrl(request.url));
  const std::string target = DescribeTarget(request, url);
  if (url.scheme != "http" && url.scheme != "https") return InvalidArgument("unsupported URL scheme in " + target);
  static constexpr std::string_view kMethods[] = {"GET", "HEAD", "PUT", "POST", "DELETE"};
  if (std::find(std::begin(kMethods), std::end(kMethods), request.method) == std::end(kMethods)) {
    return InvalidArgument("unsupported HTTP method in " + target);
  }
  const std::string_view body = request.Body();
  std::string head =
      fmt::format("{} {}{}{} HTTP/1.1\r\n", request.method, url.path, url.query.empty() ? "" : "?", url.query);
  bool has_host = false;
  bool has_length = false;
  for (const auto& [name, value] : request.headers) {
    const bool token = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
      return c > 0x20 && c < 0x7f && c != ':' && c != '(' && c != ')' && c != ',' && c != '"';
    });
    if (!token || value.find_first_of("\r\n") != std::string::npos) {
      return InvalidArgument(fmt::format("header {} has a line break or a bad name in {}", name.substr(0, 64), target));
    }
    has_host = has_host || IEquals(name, "Host");
    has_length = has_length || IEquals(name, "Content-Length");
    fmt::format_to(std::back_inserter(head), "{}: {}\r\n", name, value);
  }
  if (!has_host) fmt::format_to(std::back_inserter(head), "Host: {}\r\n", url.Authority());
  if (!has_length && (!body.empty() || request.method == "PUT" || request.method == "POST")) {
    fmt::format_to(std::back_inserter(head), "Content-Length: {}\r\n", body.size());
  }
  head += "\r\n";
  // A small body goes out with the head, in one send (one TLS record).
  std::string_view rest = body;
  if (body.size() <= kCoalesceBody) {
    head.append(body);
    rest = {};
  }

  const bool tls = url.scheme == "https";
  const int port = url.port != 0 ? url.port : (tls ? 443 : 80);
  const std::string key = fmt::format("{}://{}:{}", url.scheme, url.host, port);
  const auto start = SteadyClock::now();
  const auto deadline = start + (request.timeout.count() > 0 ? request.timeout : settings_.request_timeout);
  const std::atomic<bool>* cancel = request.cancel;
  for (int attempt = 0;; ++attempt) {
    if (cancel != nullptr && cancel->load()) return Cancelled(target + ": cancelled");
    std::unique_ptr<Connection> conn = attempt == 0 ? TakeIdle(key) : nullptr;
    const bool reused = conn != nullptr;
    Status failed;
    if (!reused) {
      auto made =
          ConnectTcp(BareHost(url.host).first, port, std::min(deadline, start + settings_.connect_timeout), cancel);
      if (made.ok()) {
        conn = std::move(made).value();
        if (tls) {
          auto ctx = TlsContext();
          failed = ctx.ok() ? Handshake(*conn, *ctx, url.host, deadline, cancel) : ctx.status();
        }
      } else {
        failed = made.status();
      }
    }
    if (failed.ok()) {
      bool stale = false;
      auto got = Exchange(*conn, head, rest, request.method, deadline, cancel, &stale);
      if (got.ok()) {
        if (got->keep_alive) PutIdle(key, std::move(conn));
        return std::move(got->response);
      }
      if (reused && stale && attempt == 0) continue;  // closed by the peer while idle: once more on a new one
      failed = got.status();
    }
    if (failed.code() == ErrorCode::kCancelled) return Cancelled(target + ": cancelled");
    return Unavailable(fmt::format("{}: {} (HTTP transport)", target, failed.message()));
  }
}

}  // namespace dlq
