// A TLS-terminating TCP proxy for tests: accepts TLS 1.2+ on 127.0.0.1 (port
// 0) with the given certificate and key (PEM files), and pipes the plaintext
// both ways, byte for byte, to a plain-TCP backend. With it a program's https
// path (handshake, verification, keep-alive) runs end to end against a
// stand-in that speaks only http. Counts completed and failed handshakes.
// Test-only; thread-safe; aborts the test program if it cannot start.
#pragma once

#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "unit/loopback_http_server.h"

namespace dlq::it {

class TlsProxy {
 public:
  TlsProxy(const std::string& cert_pem, const std::string& key_pem, std::string backend_host, int backend_port)
      : backend_host_(std::move(backend_host)), backend_port_(backend_port) {
    ctx_ = SSL_CTX_new(TLS_server_method());
    if (ctx_ == nullptr || SSL_CTX_use_certificate_chain_file(ctx_, cert_pem.c_str()) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx_, key_pem.c_str(), SSL_FILETYPE_PEM) != 1) {
      std::abort();
    }
    SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
    listen_fd_ = ListenOnLoopback(&port_);
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }
  ~TlsProxy() {
    stopped_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    acceptor_.join();
    std::vector<std::thread> workers;
    {
      std::lock_guard lock(mu_);
      for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
      workers.swap(workers_);
    }
    for (auto& t : workers) t.join();
    ::close(listen_fd_);
    SSL_CTX_free(ctx_);
  }
  TlsProxy(const TlsProxy&) = delete;
  TlsProxy& operator=(const TlsProxy&) = delete;

  int port() const { return port_; }
  int handshakes() const { return handshakes_; }
  int failed_handshakes() const { return failed_handshakes_; }

 private:
  void AcceptLoop() {
    for (;;) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      std::lock_guard lock(mu_);
      if (stopped_) {
        ::close(fd);
        return;
      }
      fds_.push_back(fd);
      workers_.emplace_back([this, fd] { Serve(fd); });
    }
  }

  int ConnectBackend() {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (::getaddrinfo(backend_host_.c_str(), std::to_string(backend_port_).c_str(), &hints, &found) != 0) return -1;
    int fd = -1;
    for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
      fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd >= 0 && ::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
        ::close(fd);
        fd = -1;
      }
    }
    ::freeaddrinfo(found);
    return fd;
  }

  void Serve(int client) {
    SSL* ssl = SSL_new(ctx_);
    SSL_set_fd(ssl, client);
    if (SSL_accept(ssl) != 1) {
      ++failed_handshakes_;
      ERR_clear_error();
    } else {
      ++handshakes_;
      if (int backend = ConnectBackend(); backend >= 0) {
        {
          std::lock_guard lock(mu_);
          fds_.push_back(backend);
        }
        Pump(ssl, client, backend);
        Forget(backend);
      }
    }
    SSL_free(ssl);
    Forget(client);
  }

  // Plaintext both ways until either side closes.
  static void Pump(SSL* ssl, int client, int backend) {
    char buf[16384];
    for (;;) {
      pollfd p[2] = {{client, POLLIN, 0}, {backend, POLLIN, 0}};
      if (SSL_pending(ssl) == 0 && ::poll(p, 2, -1) < 0) return;
      if (SSL_pending(ssl) > 0 || (p[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        const int n = SSL_read(ssl, buf, sizeof(buf));
        if (n <= 0 || !SendAll(backend, buf, static_cast<size_t>(n))) return;
      }
      if ((p[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        const ssize_t n = ::recv(backend, buf, sizeof(buf), 0);
        if (n <= 0 || SSL_write(ssl, buf, static_cast<int>(n)) != n) return;
      }
    }
  }

  static bool SendAll(int fd, const char* data, size_t size) {
    while (size > 0) {
      const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
      if (n <= 0) return false;
      data += n;
      size -= static_cast<size_t>(n);
    }
    return true;
  }

  void Forget(int fd) {
    std::lock_guard lock(mu_);
    std::erase(fds_, fd);
    ::close(fd);
  }

  std::string backend_host_;
  int backend_port_;
  SSL_CTX* ctx_ = nullptr;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopped_{false};
  std::atomic<int> handshakes_{0};
  std::atomic<int> failed_handshakes_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<int> fds_;              // guarded by mu_
  std::vector<std::thread> workers_;  // guarded by mu_
};

}  // namespace dlq::it
