// The built-in HTTP client's own CPU per request over loopback (issue 11).
// A forked child answers every request with a fixed 15 KiB reply (about an
// SQS receive of ten 1 KiB messages), after a pause of state.range(0) µs, as
// a server takes time to answer. getrusage(RUSAGE_SELF) excludes the child,
// so cpu_us_per_request is the client's alone: the head, send, the wait for
// the reply, recv and the response parse.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <string>
#include <thread>

#include "aws/socket_transport.h"

namespace dlq {
namespace {

constexpr size_t kReplyBody = size_t{15} * 1024;

// Serves one connection at a time until the listening socket is closed.
[[noreturn]] void ServeForever(int listener, std::chrono::microseconds pause) {
  const std::string reply =
      "HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: " + std::to_string(kReplyBody) +
      "\r\n\r\n" + std::string(kReplyBody, 'x');
  for (;;) {
    const int fd = ::accept(listener, nullptr, nullptr);
    if (fd < 0) ::_exit(0);
    std::string in;
    char buf[65536];
    for (;;) {
      const size_t head_end = in.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        size_t length = 0;
        if (size_t at = in.find("Content-Length: "); at != std::string::npos && at < head_end) {
          length = std::strtoul(in.c_str() + at + 16, nullptr, 10);
        }
        if (in.size() >= head_end + 4 + length) {
          in.erase(0, head_end + 4 + length);
          if (pause.count() > 0) std::this_thread::sleep_for(pause);
          if (::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(reply.size())) break;
          continue;
        }
      }
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      in.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
  }
}

double CpuSeconds(const rusage& u) {
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

void BM_SocketTransportRoundTrip(benchmark::State& state) {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listener, 8) != 0 || ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    state.SkipWithError("cannot listen on 127.0.0.1");
    return;
  }
  const pid_t child = ::fork();
  if (child == 0) ServeForever(listener, std::chrono::microseconds(state.range(0)));
  ::close(listener);

  auto transport = SocketTransport::Create(TransportSettings{});
  HttpRequest base;
  base.method = "POST";
  base.url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/";
  base.headers = {{"Content-Type", "application/x-amz-json-1.0"}, {"X-Amz-Target", "AmazonSQS.ReceiveMessage"}};
  base.body.assign(1024, 'b');

  rusage before{};
  rusage after{};
  ::getrusage(RUSAGE_SELF, &before);
  for (auto _ : state) {
    auto response = (*transport)->Send(base);
    if (!response.ok() || response->status != 200 || response->body.size() != kReplyBody) {
      state.SkipWithError("bad round trip");
      break;
    }
    benchmark::DoNotOptimize(response->body.data());
  }
  ::getrusage(RUSAGE_SELF, &after);
  transport->reset();  // closes the connection: the child's accept loop waits for the next
  ::kill(child, SIGTERM);
  ::waitpid(child, nullptr, 0);

  const auto n = static_cast<double>(state.iterations());
  state.counters["cpu_us_per_request"] = (CpuSeconds(after) - CpuSeconds(before)) * 1e6 / n;
  state.counters["voluntary_switches_per_request"] = static_cast<double>(after.ru_nvcsw - before.ru_nvcsw) / n;
}
BENCHMARK(BM_SocketTransportRoundTrip)->ArgName("server_pause_us")->Arg(0)->Arg(200)->UseRealTime();

void BM_PipeWakeRoundTrip(benchmark::State& state) {
  int to_child[2];
  int to_parent[2];
  if (::pipe2(to_child, O_CLOEXEC) != 0 || ::pipe2(to_parent, O_CLOEXEC) != 0) {
    state.SkipWithError("pipe2 failed");
    return;
  }
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(to_child[1]);  // else the parent's close would never end this loop
    ::close(to_parent[0]);
    const auto pause = std::chrono::microseconds(state.range(0));
    char c = 0;
    while (::read(to_child[0], &c, 1) == 1) {
      // Busy, not asleep: a server working on the request keeps its core.
      const auto until = std::chrono::steady_clock::now() + pause;
      while (std::chrono::steady_clock::now() < until) {
      }
      if (::write(to_parent[1], &c, 1) != 1) break;
    }
    ::_exit(0);
  }
  ::close(to_child[0]);
  ::close(to_parent[1]);

  rusage before{};
  rusage after{};
  ::getrusage(RUSAGE_SELF, &before);
  char c = 'x';
  for (auto _ : state) {
    if (::write(to_child[1], &c, 1) != 1 || ::read(to_parent[0], &c, 1) != 1) {
      state.SkipWithError("pipe round trip failed");
      break;
    }
  }
  ::getrusage(RUSAGE_SELF, &after);
  ::close(to_child[1]);  // the child's read() returns 0 and it exits
  ::waitpid(child, nullptr, 0);
  ::close(to_parent[0]);

  const auto n = static_cast<double>(state.iterations());
  state.counters["cpu_us_per_round_trip"] = (CpuSeconds(after) - CpuSeconds(before)) * 1e6 / n;
  state.counters["voluntary_switches_per_round_trip"] = static_cast<double>(after.ru_nvcsw - before.ru_nvcsw) / n;
}
BENCHMARK(BM_PipeWakeRoundTrip)->ArgName("server_pause_us")->Arg(0)->Arg(200)->UseRealTime();

}  // namespace
}  // namespace dlq
