// The listener against slow, greedy and misdirected clients, over real
// loopback sockets (so these tests wait for real time where a deadline is
// what they check).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/http_server.h"
#include "unit/raw_http_client.h"

namespace dlq {
namespace {

using std::chrono::milliseconds;
using Steady = std::chrono::steady_clock;

int Connect(int port) {
  return ConnectLoopback(port);
}

bool SendAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Everything the server sends until it closes or `timeout` passes.
std::string ReadAll(int fd, milliseconds timeout = milliseconds(3000)) {
  std::string got;
  const auto until = Steady::now() + timeout;
  char buf[4096];
  while (Steady::now() < until) {
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    int left = static_cast<int>(std::chrono::duration_cast<milliseconds>(until - Steady::now()).count());
    if (::poll(&p, 1, std::max(left, 1)) <= 0) break;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

// One request on a new connection; the whole answer.
std::string Exchange(int port, const std::string& request, milliseconds timeout = milliseconds(3000)) {
  int fd = Connect(port);
  if (fd < 0) return "(connect failed)";
  SendAll(fd, request);
  std::string got = ReadAll(fd, timeout);
  ::close(fd);
  return got;
}

std::string Get(int port, const std::string& path, const std::string& host = "127.0.0.1") {
  return Exchange(port, "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
}

HttpServerOptions Options() {
  HttpServerOptions o;
  o.port = 0;
  o.threads = 2;
  o.request_timeout = std::chrono::seconds(1);
  o.keep_alive_timeout = std::chrono::seconds(1);
  return o;
}

HttpServerResponse Ok(const HttpServerRequest&) {
  return HttpServerResponse{.body = "ok"};
}

HttpServerResponse Alive(const HttpServerRequest&) {
  return HttpServerResponse{.body = "alive"};
}

// A handler that holds its worker until released (or cancelled).
class Gate {
 public:
  HttpServerResponse Hold(const HttpServerRequest& r) {
    std::unique_lock<std::mutex> lock(mu_);
    ++held_;
    cv_.notify_all();
    // The server sets `cancelled` without notifying: poll it.
    const auto until = Steady::now() + std::chrono::seconds(20);
    while (!open_ && !r.cancelled->load() && Steady::now() < until) cv_.wait_for(lock, milliseconds(10));
    if (r.cancelled->load()) ++cancelled_;
    return HttpServerResponse{.body = "held"};
  }
  void WaitHeld(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(5), [&] { return held_ >= n; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  int cancelled() {
    std::lock_guard<std::mutex> lock(mu_);
    return cancelled_;
  }
  // Polls the cancelled count until it reaches n or 3 s pass.
  bool WaitCancelled(int n) {
    for (int i = 0; i < 300 && cancelled() < n; ++i) std::this_thread::sleep_for(milliseconds(10));
    return cancelled() >= n;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int held_ = 0;
  int cancelled_ = 0;
  bool open_ = false;
};

// With threads = 1 and max_queued = 1: one GET /slow held by the worker
// (on `gate`) and one waiting in the queue, so the workers' queue is full
// until the destructor opens the gate.
class FullQueue {
 public:
  FullQueue(const HttpServer& server, Gate& gate) : gate_(gate) {
    const int port = server.port();
    first_ = std::thread([port] { Get(port, "/slow"); });
    gate.WaitHeld(1);
    second_ = std::thread([port] { Get(port, "/slow"); });  // waits in the queue
    std::this_thread::sleep_for(milliseconds(200));
  }
  ~FullQueue() {
    gate_.Open();
    first_.join();
    second_.join();
  }
  FullQueue(const FullQueue&) = delete;
  FullQueue& operator=(const FullQueue&) = delete;

 private:
  Gate& gate_;
  std::thread first_, second_;
};

TEST(HttpServerHostileTest, AHeaderFloodIsRefusedWith431AndNotBuffered) {
  HttpServer server(Options());
  server.Handle("/x", Ok);
  ASSERT_TRUE(server.Start().ok());
  int fd = Connect(server.port());
  ASSERT_GE(fd, 0);
  std::string head = "GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  const std::string big(4096, 'a');
  size_t sent = 0;
  for (int i = 0; i < 50000; ++i) {
    std::string line = "X-Flood-" + std::to_string(i) + ": " + big + "\r\n";
    if (!SendAll(fd, i == 0 ? head + line : line)) break;  // the server closed: it stopped reading long ago
    sent += line.size();
  }
  std::string got = ReadAll(fd);
  ::close(fd);
  EXPECT_LT(sent, size_t{50000} * 4096) << "the server kept reading the whole flood";
  // The refusal may be lost to a reset when the client kept sending; if it
  // arrived, it is a 431.
  if (!got.empty()) {
    EXPECT_EQ(got.rfind("HTTP/1.1 431", 0), 0u) << got.substr(0, 200);
  }
  // A well-behaved client is served at once afterwards.
  EXPECT_EQ(Get(server.port(), "/x").rfind("HTTP/1.1 200", 0), 0u);
}

// A bare CR is refused as soon as it arrives, sent a byte at a time, without
// waiting for a head that never ends.
TEST(HttpServerHostileTest, ABareCrIsRefusedBeforeTheHeadEnds) {
  HttpServer server(Options());
  server.Handle("/x", Ok);
  ASSERT_TRUE(server.Start().ok());
  int fd = Connect(server.port());
  ASSERT_GE(fd, 0);
  for (char c : std::string("GET /x HTTP/1.1\r\nHost: 127.0.0.1\rX-After: 1")) SendAll(fd, std::string(1, c));
  std::string got = ReadAll(fd, milliseconds(500));  // well under the 1 s request deadline
  ::close(fd);
  EXPECT_EQ(got.rfind("HTTP/1.1 400", 0), 0u) << got;
  EXPECT_NE(got.find("bare CR"), std::string::npos) << got;
}

TEST(HttpServerHostileTest, TooManyHeaderFieldsGet431) {
  HttpServerOptions o = Options();
  o.max_headers = 8;
  HttpServer server(o);
  server.Handle("/x", Ok);
  ASSERT_TRUE(server.Start().ok());
  std::string request = "GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (int i = 0; i < 9; ++i) request += "X-" + std::to_string(i) + ": v\r\n";
  std::string got = Exchange(server.port(), request + "\r\n");
  EXPECT_EQ(got.rfind("HTTP/1.1 431", 0), 0u) << got;
  EXPECT_NE(got.find("\"error\""), std::string::npos) << got;
}

TEST(HttpServerHostileTest, ASlowClientIsCutOffAtTheRequestDeadline) {
  HttpServer server(Options());  // request_timeout 1 s
  server.Handle("/x", Ok);
  ASSERT_TRUE(server.Start().ok());
  int fd = Connect(server.port());
  ASSERT_GE(fd, 0);
  const auto start = Steady::now();
  SendAll(fd, "GET /x HTTP/1.1\r\n");
  bool closed = false;
  for (int i = 0; i < 20 && !closed; ++i) {  // one header line every 300 ms: never idle long
    std::this_thread::sleep_for(milliseconds(300));
    closed = !SendAll(fd, "X-Slow-" + std::to_string(i) + ": v\r\n");
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    if (::poll(&p, 1, 0) > 0) {
      char c;
      closed = closed || ::recv(fd, &c, 1, 0) <= 0;
    }
  }
  ::close(fd);
  EXPECT_TRUE(closed);
  EXPECT_LT(Steady::now() - start, std::chrono::seconds(3));
}

TEST(HttpServerHostileTest, ProbesAnswerWhileEveryWorkerIsBusy) {
  HttpServerOptions o = Options();
  o.threads = 1;
  HttpServer server(o);
  Gate gate;
  server.Handle("/slow", [&](const HttpServerRequest& r) { return gate.Hold(r); });
  server.HandleProbe("/healthz", Alive);
  ASSERT_TRUE(server.Start().ok());
  std::thread slow([&] { Get(server.port(), "/slow"); });
  gate.WaitHeld(1);
  const auto start = Steady::now();
  std::string got = Get(server.port(), "/healthz", "attacker.example");  // probes skip the Host check
  EXPECT_LT(Steady::now() - start, milliseconds(1000));
  EXPECT_NE(got.find("alive"), std::string::npos) << got;
  gate.Open();
  slow.join();
}

TEST(HttpServerHostileTest, SlowClientsHoldNoWorker) {
  HttpServerOptions o = Options();
  o.threads = 1;
  o.request_timeout = std::chrono::seconds(30);
  HttpServer server(o);
  server.Handle("/x", Ok);
  ASSERT_TRUE(server.Start().ok());
  std::vector<int> slow;
  for (int i = 0; i < 8; ++i) {
    int fd = Connect(server.port());
    ASSERT_GE(fd, 0);
    SendAll(fd, "GET /x HTTP/1.1\r\nX-Half: ");
    slow.push_back(fd);
  }
  const auto start = Steady::now();
  EXPECT_EQ(Get(server.port(), "/x").rfind("HTTP/1.1 200", 0), 0u);
  EXPECT_LT(Steady::now() - start, milliseconds(1000));
  for (int fd : slow) ::close(fd);
}

TEST(HttpServerHostileTest, AFullListenerDropsTheOldestUnfinishedRequestForANewClient) {
  HttpServerOptions o = Options();
  o.max_connections = 4;
  o.request_timeout = std::chrono::seconds(30);
  HttpServer server(o);
  server.Handle("/x", Ok);
  ASSERT_TRUE(server.Start().ok());
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) {
    int fd = Connect(server.port());
    ASSERT_GE(fd, 0);
    SendAll(fd, "GET /x HTTP/1.1\r\n");
    idle.push_back(fd);
  }
  std::this_thread::sleep_for(milliseconds(100));  // all four accepted
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Get(server.port(), "/x").rfind("HTTP/1.1 200", 0), 0u) << i;
  // Room was made by dropping the oldest connection still sending its
  // request; the newest one is still open.
  auto dropped = [](int fd) {
    char c;
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    return ::poll(&p, 1, 100) > 0 && ::recv(fd, &c, 1, 0) <= 0;
  };
  EXPECT_TRUE(dropped(idle.front()));
  EXPECT_FALSE(dropped(idle.back()));
  for (int fd : idle) ::close(fd);
}

TEST(HttpServerHostileTest, AHandlerSeesCancelledWhenItsClientGoesAway) {
  HttpServer server(Options());
  Gate gate;
  server.Handle("/slow", [&](const HttpServerRequest& r) { return gate.Hold(r); });
  ASSERT_TRUE(server.Start().ok());
  int fd = Connect(server.port());
  ASSERT_GE(fd, 0);
  SendAll(fd, "GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  gate.WaitHeld(1);
  ::close(fd);
  EXPECT_TRUE(gate.WaitCancelled(1));
}

TEST(HttpServerHostileTest, StopCancelsHandlersInFlightAndReturnsPromptly) {
  HttpServer server(Options());
  Gate gate;
  server.Handle("/slow", [&](const HttpServerRequest& r) { return gate.Hold(r); });
  ASSERT_TRUE(server.Start().ok());
  std::vector<std::thread> clients;
  for (int i = 0; i < 2; ++i) clients.emplace_back([&] { Get(server.port(), "/slow"); });
  gate.WaitHeld(2);
  const auto start = Steady::now();
  server.Stop();
  EXPECT_LT(Steady::now() - start, std::chrono::seconds(3));
  EXPECT_EQ(gate.cancelled(), 2);
  for (std::thread& t : clients) t.join();
}

TEST(HttpServerHostileTest, RefusesHostsADnsRebindingPageWouldSend) {
  HttpServerOptions o = Options();
  o.allowed_hosts = {"dlq.example.com", ".internal.example"};
  o.host_refused_hint = "add the name to dashboard.hosts in the configuration to allow it";
  HttpServer server(o);
  server.Handle("/x", Ok);
  ASSERT_TRUE(server.Start().ok());
  const int port = server.port();
  for (const char* host : {"attacker.rebind.example", "attacker.rebind.example:9464", "localhost.evil", "",
                           "example.com", "internal.example.evil"}) {
    std::string got = Get(port, "/x", host);
    EXPECT_EQ(got.rfind("HTTP/1.1 421", 0), 0u) << host << ": " << got;
    EXPECT_NE(got.find("dashboard.hosts"), std::string::npos) << got;
    EXPECT_EQ(got.find("\r\n\r\nok"), std::string::npos) << got;
  }
  for (const char* host : {"127.0.0.1", "127.0.0.1:9464", "localhost", "LOCALHOST:1", "10.1.2.3:80", "[::1]:9464",
                           "dlq.example.com", "DLQ.example.com.", "a.internal.example"}) {
    EXPECT_EQ(Get(port, "/x", host).rfind("HTTP/1.1 200", 0), 0u) << host;
  }
  // HTTP/1.0 without a Host field comes from no browser.
  EXPECT_EQ(Exchange(port, "GET /x HTTP/1.0\r\n\r\n").rfind("HTTP/1.1 200", 0), 0u);
}

TEST(HttpServerHostileTest, AFullQueueGets503WithRetryAfter) {
  HttpServerOptions o = Options();
  o.threads = 1;
  o.max_queued = 1;
  HttpServer server(o);
  Gate gate;
  server.Handle("/slow", [&](const HttpServerRequest& r) { return gate.Hold(r); });
  ASSERT_TRUE(server.Start().ok());
  FullQueue full(server, gate);
  std::string third = Get(server.port(), "/slow");
  EXPECT_EQ(third.rfind("HTTP/1.1 503", 0), 0u) << third;
  EXPECT_NE(third.find("Retry-After: 1"), std::string::npos) << third;
}

TEST(HttpServerHostileTest, RefusesSmugglingShapesAndAnswersExpectContinue) {
  HttpServer server(Options());
  server.Handle("POST", "/echo",
                [](const HttpServerRequest& r) { return HttpServerResponse{.body = "[" + r.body + "]"}; });
  ASSERT_TRUE(server.Start().ok());
  const int port = server.port();
  EXPECT_EQ(
      Exchange(port,
               "POST /echo HTTP/1.1\r\nHost: x.x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
          .rfind("HTTP/1.1 4", 0),
      0u);
  EXPECT_EQ(Exchange(port, "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
                .rfind("HTTP/1.1 411", 0),
            0u);
  // Expect: 100-continue gets its interim answer before the body is sent.
  int fd = Connect(port);
  ASSERT_GE(fd, 0);
  SendAll(fd, "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  std::string interim = ReadAll(fd, milliseconds(500));
  EXPECT_EQ(interim, "HTTP/1.1 100 Continue\r\n\r\n");
  SendAll(fd, "hello");
  std::string got = ReadAll(fd);
  ::close(fd);
  EXPECT_NE(got.find("[hello]"), std::string::npos) << got;
}

// Out of file descriptors, accept fails while the listening socket stays
// readable: the server pauses accepting instead of spinning on it.
TEST(HttpServerHostileTest, RunningOutOfDescriptorsDoesNotSpin) {
  HttpServer server(Options());
  server.Handle("/x", Ok);
  ASSERT_TRUE(server.Start().ok());
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  // Use up the descriptors under a lowered limit.
  std::vector<int> fds;
  rlimit low = old;
  int probe = ::dup(0);
  low.rlim_cur = static_cast<rlim_t>(probe) + 16;
  ::close(probe);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  for (int fd; (fd = ::dup(0)) >= 0;) fds.push_back(fd);
  // Free a few for clients, then keep connecting: the server's accepts fail.
  for (int i = 0; i < 2 && !fds.empty(); ++i) {
    ::close(fds.back());
    fds.pop_back();
  }
  std::vector<int> clients;
  for (int i = 0; i < 2; ++i) {  // each takes the last free descriptors: the server's accept gets EMFILE
    int fd = Connect(server.port());
    if (fd >= 0) clients.push_back(fd);
  }
  ASSERT_FALSE(clients.empty());
  rusage before{}, after{};
  ::getrusage(RUSAGE_SELF, &before);
  std::this_thread::sleep_for(milliseconds(500));
  ::getrusage(RUSAGE_SELF, &after);
  auto cpu_us = [](const rusage& r) {
    return (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1000000L + r.ru_utime.tv_usec + r.ru_stime.tv_usec;
  };
  const long spent = cpu_us(after) - cpu_us(before);
  for (int fd : fds) ::close(fd);
  for (int fd : clients) ::close(fd);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &old), 0);
  EXPECT_LT(spent, 150000) << "CPU in 500 ms with the descriptors used up";
  // With descriptors back, it serves again.
  EXPECT_EQ(Get(server.port(), "/x").rfind("HTTP/1.1 200", 0), 0u);
}

// ---- Second round: probes answer under load, bodies wait for the token.

// nc, socat and some probe agents send the request and shut down their
// sending side at once: the FIN must not lose the request read with it.
TEST(HttpServerHostileTest, AHalfClosedClientStillGetsItsAnswer) {
  HttpServer server(Options());
  server.HandleProbe("/healthz", Alive);
  server.Handle("/metrics", [](const HttpServerRequest&) { return HttpServerResponse{.body = "# metrics"}; });
  ASSERT_TRUE(server.Start().ok());
  auto half_closed = [&](const std::string& request) {
    int fd = Connect(server.port());
    if (fd < 0) return std::string("(connect failed)");
    SendAll(fd, request);
    ::shutdown(fd, SHUT_WR);
    std::string got = ReadAll(fd);
    ::close(fd);
    return got;
  };
  int healthz = 0, metrics = 0;
  for (int i = 0; i < 200; ++i) {
    healthz += half_closed("GET /healthz HTTP/1.0\r\n\r\n").find("\r\n\r\nalive") != std::string::npos ? 1 : 0;
    metrics +=
        half_closed("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").find("\r\n\r\n# metrics") != std::string::npos
            ? 1
            : 0;
  }
  EXPECT_EQ(healthz, 200);
  EXPECT_EQ(metrics, 200);
  // A half-close before the request is complete: nothing more can come, the
  // connection is closed without an answer.
  EXPECT_EQ(half_closed("GET /healthz HTTP/1.1\r\nHost: 1"), "");
}

// More clients than connection slots, each with a complete request: each is
// answered (some wait in the accept queue), none is dropped to make room.
TEST(HttpServerHostileTest, ACompleteRequestIsNeverDroppedToMakeRoom) {
  HttpServerOptions o = Options();
  o.max_connections = 4;
  o.request_timeout = std::chrono::seconds(10);
  HttpServer server(o);
  server.Handle("/x", [](const HttpServerRequest&) {
    std::this_thread::sleep_for(milliseconds(2));
    return HttpServerResponse{.body = "ok"};
  });
  server.HandleProbe("/healthz", Alive);
  ASSERT_TRUE(server.Start().ok());
  std::atomic<int> answered{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 40; ++i) {
    clients.emplace_back([&, i] {
      for (int k = 0; k < 5; ++k) {
        const std::string got = i % 2 == 0 ? Get(server.port(), "/x") : Get(server.port(), "/healthz");
        answered += got.rfind("HTTP/1.1 200", 0) == 0 ? 1 : 0;
      }
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(answered.load(), 200);
}

// Clients that hold every slot with half-sent heads and reconnect the
// moment they are dropped: a probe still gets its answer within a second.
TEST(HttpServerHostileTest, ProbesAnswerWhileSlowClientsHoldEverySlot) {
  HttpServerOptions o = Options();
  o.max_connections = 8;
  o.request_timeout = std::chrono::seconds(30);
  HttpServer server(o);
  server.HandleProbe("/healthz", Alive);
  ASSERT_TRUE(server.Start().ok());
  std::atomic<bool> stop{false};
  std::vector<std::thread> slow;
  for (int i = 0; i < 32; ++i) {
    slow.emplace_back([&] {
      while (!stop.load()) {
        int fd = Connect(server.port());
        if (fd < 0) continue;
        SendAll(fd, "GET /healthz HTTP/1.1\r\nX-Half: ");
        while (!stop.load()) {  // until the server drops it
          pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
          if (::poll(&p, 1, 50) > 0) break;
        }
        ::close(fd);
      }
    });
  }
  std::this_thread::sleep_for(milliseconds(200));
  int answered = 0;
  for (int i = 0; i < 30; ++i) {
    const auto start = Steady::now();
    const std::string got = Get(server.port(), "/healthz");
    answered += got.find("\r\n\r\nalive") != std::string::npos && Steady::now() - start < milliseconds(1000) ? 1 : 0;
  }
  stop = true;
  for (std::thread& t : slow) t.join();
  EXPECT_EQ(answered, 30);
}

// /metrics (a priority route) is answered while every worker is busy and
// the workers' queue is full.
TEST(HttpServerHostileTest, APriorityRouteIsAnsweredWithTheWorkersQueueFull) {
  HttpServerOptions o = Options();
  o.threads = 1;
  o.max_queued = 1;
  HttpServer server(o);
  Gate gate;
  server.Handle("/slow", [&](const HttpServerRequest& r) { return gate.Hold(r); });
  server.HandlePriority("/metrics", [](const HttpServerRequest&) { return HttpServerResponse{.body = "# metrics"}; });
  ASSERT_TRUE(server.Start().ok());
  FullQueue full(server, gate);
  ASSERT_EQ(Get(server.port(), "/slow").rfind("HTTP/1.1 503", 0), 0u);  // the queue is full
  for (int i = 0; i < 5; ++i) {
    const auto start = Steady::now();
    std::string got = Get(server.port(), "/metrics");
    EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got;
    EXPECT_LT(Steady::now() - start, milliseconds(1000));
  }
  // The Host check still applies.
  EXPECT_EQ(Get(server.port(), "/metrics", "attacker.example").rfind("HTTP/1.1 421", 0), 0u);
}

// A request the head check refuses is answered from its head: the client
// has sent none of its 1 MiB body, and the connection is closed after.
TEST(HttpServerHostileTest, ARefusedHeadIsAnsweredBeforeItsBodyIsRead) {
  HttpServerOptions o = Options();
  o.max_body_bytes = size_t{2} << 20;
  HttpServer server(o);
  std::atomic<int> handled{0};
  server.Handle("POST", "/api/replay", [&](const HttpServerRequest& r) {
    ++handled;
    return HttpServerResponse{.body = std::to_string(r.body.size())};
  });
  server.CheckHeads([](const HttpServerRequest& head) -> std::optional<HttpServerResponse> {
    for (const auto& [name, value] : head.headers) {
      if (name == "Authorization" && value == "Bearer right") return std::nullopt;
    }
    return HttpServerResponse{.status = 401, .body = "no token"};
  });
  ASSERT_TRUE(server.Start().ok());
  const std::string head = "POST /api/replay HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1048576\r\n";
  int fd = Connect(server.port());
  ASSERT_GE(fd, 0);
  SendAll(fd, head + "\r\n");
  std::string got = ReadAll(fd, milliseconds(2000));  // until the server closes
  ::close(fd);
  EXPECT_EQ(got.rfind("HTTP/1.1 401", 0), 0u) << got;
  EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
  EXPECT_NE(got.find("\r\n\r\nno token"), std::string::npos) << got;
  // A body for a route that does not exist is not read either.
  EXPECT_EQ(Exchange(server.port(), "POST /nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1048576\r\n\r\n",
                     milliseconds(2000))
                .rfind("HTTP/1.1 404", 0),
            0u);
  EXPECT_EQ(handled.load(), 0);
  // With the token the body is read and handled.
  got = Exchange(server.port(), head + "Authorization: Bearer right\r\n\r\n" + std::string(1048576, 'x'));
  EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got.substr(0, 200);
  EXPECT_NE(got.find("\r\n\r\n1048576"), std::string::npos);
  EXPECT_EQ(handled.load(), 1);
}

TEST(HttpServerHostileTest, RefusesTwoHostFieldsAndABracketedHostThatIsNoIpv6Address) {
  HttpServer server(Options());
  server.Handle("/x", Ok);
  ASSERT_TRUE(server.Start().ok());
  const int port = server.port();
  std::string two = Exchange(port, "GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n");
  EXPECT_EQ(two.rfind("HTTP/1.1 400", 0), 0u) << two;
  EXPECT_NE(two.find("more than one Host field"), std::string::npos) << two;
  for (const char* host : {"[evil.com]", "[evil.com]:80", "[::1", "[::1]x", "[::1]:123456", "[]"}) {
    EXPECT_EQ(Get(port, "/x", host).rfind("HTTP/1.1 421", 0), 0u) << host;
  }
  for (const char* host : {"[::1]", "[::1]:9464", "[fe80::1]:80", "[2001:db8::7]"}) {
    EXPECT_EQ(Get(port, "/x", host).rfind("HTTP/1.1 200", 0), 0u) << host;
  }
}

}  // namespace
}  // namespace dlq
