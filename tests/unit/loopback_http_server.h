// A minimal HTTP/1.1 server on 127.0.0.1 (port 0) for transport tests: keeps
// connections alive, records the client's remote port, answers from a
// handler. Test-only; thread-safe. Unlike src/server/http_server.h it
// records each request's client port, which the connection-reuse tests need.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "aws/http.h"
#include "common/strings.h"

namespace dlq {

// A listening TCP socket on 127.0.0.1 at a free port (stored in *port), for
// test servers. Aborts the test program if it cannot listen.
inline int ListenOnLoopback(int* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd, 128) != 0) std::abort();
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

// A port on 127.0.0.1 where nothing listens (it did a moment ago): a connect
// there is refused at once.
inline int RefusingLoopbackPort() {
  int port = 0;
  ::close(ListenOnLoopback(&port));
  return port;
}

class LoopbackHttpServer {
 public:
  struct Request {
    std::string method;
    std::string target;  // path and query, as sent
    HttpHeaders headers;
    std::string body;
    int remote_port = 0;
  };
  struct Reply {
    int status = 200;
    HttpHeaders headers;
    std::string body;
  };
  using Handler = std::function<Reply(const Request&)>;

  explicit LoopbackHttpServer(Handler handler) : handler_(std::move(handler)) {
    listen_fd_ = ListenOnLoopback(&port_);
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }
  ~LoopbackHttpServer() { Stop(); }
  LoopbackHttpServer(const LoopbackHttpServer&) = delete;
  LoopbackHttpServer& operator=(const LoopbackHttpServer&) = delete;

  int port() const { return port_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Closes the listening socket and every connection, and joins all threads.
  void Stop() {
    if (stopped_.exchange(true)) return;
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    acceptor_.join();
    std::vector<std::thread> workers;
    {
      std::lock_guard lock(mu_);
      for (int fd : conn_fds_) ::shutdown(fd, SHUT_RDWR);
      workers.swap(workers_);
    }
    for (auto& t : workers) t.join();
  }

  std::vector<Request> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  void AcceptLoop() {
    while (!stopped_) {
      sockaddr_in peer{};
      socklen_t len = sizeof(peer);
      int fd = ::accept(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &len);
      if (fd < 0) return;
      std::lock_guard lock(mu_);
      if (stopped_) {
        ::close(fd);
        return;
      }
      conn_fds_.push_back(fd);
      int remote_port = ntohs(peer.sin_port);
      workers_.emplace_back([this, fd, remote_port] { Serve(fd, remote_port); });
    }
  }

  void Serve(int fd, int remote_port) {
    std::string buffer;
    char chunk[65536];
    while (true) {
      size_t head_end;
      while ((head_end = buffer.find("\r\n\r\n")) == std::string::npos) {
        ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
        if (n <= 0) return Close(fd);
        buffer.append(chunk, static_cast<size_t>(n));
      }
      Request request;
      request.remote_port = remote_port;
      std::vector<std::string_view> lines = Split(std::string_view(buffer).substr(0, head_end), '\n');
      std::vector<std::string_view> first = Split(Trim(lines[0]), ' ');
      if (first.size() < 2) return Close(fd);
      request.method = std::string(first[0]);
      request.target = std::string(first[1]);
      size_t content_length = 0;
      for (size_t i = 1; i < lines.size(); ++i) {
        std::string_view line = lines[i];
        size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        std::string name(Trim(line.substr(0, colon)));
        std::string value(Trim(line.substr(colon + 1)));
        if (IEquals(name, "content-length")) content_length = std::strtoull(value.c_str(), nullptr, 10);
        request.headers.emplace_back(std::move(name), std::move(value));
      }
      buffer.erase(0, head_end + 4);
      while (buffer.size() < content_length) {
        ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
        if (n <= 0) return Close(fd);
        buffer.append(chunk, static_cast<size_t>(n));
      }
      request.body = buffer.substr(0, content_length);
      buffer.erase(0, content_length);
      {
        std::lock_guard lock(mu_);
        requests_.push_back(request);
      }
      Reply reply = handler_(request);
      std::string out = "HTTP/1.1 " + std::to_string(reply.status) + " X\r\n";
      if (FindHeader(reply.headers, "content-length") == nullptr) {
        out += "Content-Length: " + std::to_string(reply.body.size()) + "\r\n";
      }
      for (const auto& [k, v] : reply.headers) out += k + ": " + v + "\r\n";
      out += "\r\n";
      if (request.method != "HEAD") out += reply.body;
      for (size_t sent = 0; sent < out.size();) {
        ssize_t n = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) return Close(fd);
        sent += static_cast<size_t>(n);
      }
    }
  }

  void Close(int fd) {
    std::lock_guard lock(mu_);
    std::erase(conn_fds_, fd);
    ::close(fd);
  }

  Handler handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopped_{false};
  std::thread acceptor_;
  mutable std::mutex mu_;
  std::vector<int> conn_fds_;         // guarded by mu_
  std::vector<std::thread> workers_;  // guarded by mu_
  std::vector<Request> requests_;     // guarded by mu_
};

// Helpers for tests that drive an HttpTransport against the server.

inline std::string HeaderOf(const HttpHeaders& headers, std::string_view name) {
  const std::string* v = FindHeader(headers, name);
  return v ? *v : std::string();
}

// Echoes method, target and body back, with the request's X-Echo header.
inline LoopbackHttpServer::Reply Echo(const LoopbackHttpServer::Request& r) {
  LoopbackHttpServer::Reply reply;
  reply.headers = {{"X-Method", r.method}, {"X-Target", r.target}, {"X-Echo", HeaderOf(r.headers, "X-Echo")}};
  reply.body = r.body;
  return reply;
}

inline HttpRequest MakeRequest(std::string method, std::string url, std::string body = "") {
  HttpRequest r;
  r.method = std::move(method);
  r.url = std::move(url);
  r.body = std::move(body);
  return r;
}

}  // namespace dlq
