// The hostile-input suite (issue 28): a real `dlq-archive run` on a stand-in,
// with a file:// archive holding 1 MiB bodies, attacked the way a careless
// neighbour or an attacker would. Each case has a bound on the daemon's CPU,
// memory or time, read from /proc (the daemon is a child process).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "archive/gzip.h"
#include "archive/record.h"
#include "daemon_process.h"
#include "harness.h"
#include "unit/raw_http_client.h"

namespace dlq::it {
namespace {

namespace fs = std::filesystem;
using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

// utime + stime of `pid`, in seconds.
double CpuSeconds(const std::string& pid) {
  std::string stat = ReadFile("/proc/" + pid + "/stat");
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream in(stat.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// A /proc/PID/status field in kB (VmRSS: resident now, VmHWM: its peak), in MiB.
double StatusMiB(const std::string& pid, const std::string& field) {
  std::ifstream in("/proc/" + pid + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) / 1024.0;
  }
  return -1;
}
double RssMiB(const std::string& pid) {
  return StatusMiB(pid, "VmRSS");
}

int Connect(int port) {
  return ConnectLoopback(port);
}

// Status code and body of a GET through curl (curl exits non-zero on a timeout: code 0).
struct Answer {
  int status = 0;
  std::string body;
  double seconds = 0;
};
Answer Curl(int port, const std::string& path, const std::string& extra = "", int max_s = 10) {
  const auto start = Steady::now();
  auto r = RunShell("curl -s -g --max-time " + std::to_string(max_s) + " -o /dev/stdout -w '\\n%{http_code}' " + extra +
                        " 'http://127.0.0.1:" + std::to_string(port) + path + "'",
                    false);
  Answer a;
  a.seconds = std::chrono::duration<double>(Steady::now() - start).count();
  size_t nl = r.out.rfind('\n');
  if (nl == std::string::npos) return a;
  a.status = std::atoi(r.out.c_str() + nl + 1);
  a.body = r.out.substr(0, nl);
  return a;
}

// One archive object (gzip of JSON lines) for `queue`, as the archiver names it.
void WriteObject(const std::string& root, const std::string& queue, const std::string& name, const std::string& lines) {
  const std::string dir = root + "/dlq-archive/" + queue + "/20260101";
  fs::create_directories(dir);
  auto gz = GzipCompress(lines, 1);
  ASSERT_TRUE(gz.ok());
  std::ofstream(dir + "/" + queue + "-000000-" + name + ".json.gz", std::ios::binary) << *gz;
}

std::string RecordLine(const std::string& queue, const std::string& id, const std::string& body) {
  ArchiveRecord r;
  r.queue = queue;
  r.queue_url = "http://127.0.0.1/000000000000/" + queue;
  r.region = "us-east-1";
  r.account_id = "000000000000";
  r.message_id = id;
  r.body = body;
  r.md5_of_body = "00000000000000000000000000000000";
  r.sent_at = SystemTime(std::chrono::seconds(1767225600));
  r.expires_at = *r.sent_at + std::chrono::hours(96);
  r.archived_at = *r.sent_at + std::chrono::hours(1);
  std::string out;
  AppendRecordJson(r, out);
  return out;
}

class DaemonHostileTest : public ::testing::Test {
 protected:
  void Start(const StandIn& standin, const std::string& dashboard_yaml) {
    base_ = UniqueName("hostile");
    queue_ = base_ + "-dlq";
    auto svc = Services(standin);
    ASSERT_TRUE(svc);
    ASSERT_TRUE(svc->sqs().CreateQueue(queue_, {}).ok());
    dir_ = "/tmp/" + base_;
    fs::create_directories(dir_ + "/archive");
    fs::create_directories(dir_ + "/d");
    // Bodies of 1 MiB: the SQS maximum.
    WriteObject(dir_ + "/archive", queue_, "big",
                RecordLine(queue_, "m-ab", std::string(1 << 20, 'a')) +
                    RecordLine(queue_, "m-dots", std::string((1 << 20) - 1, '.') + "!") +
                    RecordLine(queue_, "m-known", "payment declined for order 4711"));
    port_ = FreePort();
    ASSERT_GT(port_, 0);
    WriteFile(dir_ + "/d.yaml", "listen: 127.0.0.1:" + std::to_string(port_) + "\ncollection_interval: 1s\n" +
                                    dashboard_yaml + "defaults:\n  destination: file://" + dir_ +
                                    "/archive\ngroups:\n  - name: hostile\n    endpoint_url: " + standin.endpoint() +
                                    "\n    queues: [" + queue_ + "]\n");
    daemon_ = std::make_unique<BackgroundDaemon>(standin, dir_ + "/d", dir_ + "/d.yaml");
    for (int i = 0; i < 100; ++i) {
      if (Curl(port_, "/readyz").status == 200) break;
      std::this_thread::sleep_for(milliseconds(200));
    }
    ASSERT_EQ(Curl(port_, "/readyz").status, 200) << daemon_->Log();
    pid_ = daemon_->Pid();
    ASSERT_FALSE(pid_.empty());
  }
  void TearDown() override {
    if (daemon_) daemon_->Stop();
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  std::string base_, queue_, dir_, pid_;
  int port_ = 0;
  std::unique_ptr<BackgroundDaemon> daemon_;
};

TEST_F(DaemonHostileTest, RegexBombsOnMiBBodiesAreAnsweredInUnderASecondOfCpu) {
  DLQ_REQUIRE_STAND_IN("fauxqs", standin);
  Start(standin, "");
  struct Case {
    const char* re;  // URL-encoded
    int status;
    const char* expect;  // in the body
  };
  const Case cases[] = {
      {"(a%7Cb)*c", 200, "\"count\":1,"},  // the 'c' of "declined", not the 1 MiB of a's
      {".*zzz", 200, "\"count\":0,"},
      {"(.%7C%5Cs)*zzz", 200, "\"count\":0,"},
      {"%5E(.%2B)%2B!%24", 200, "\"message_id\":\"m-dots\""},
      {"(a)%5C1", 400, "backreference"},
      {"a(%3F%3Db)", 400, "look"},
  };
  for (const Case& c : cases) {
    const double cpu_before = CpuSeconds(pid_);
    Answer a = Curl(port_, "/api/search?queue=" + queue_ + "&re=" + c.re);
    const double cpu = CpuSeconds(pid_) - cpu_before;
    EXPECT_EQ(a.status, c.status) << c.re << ": " << a.body.substr(0, 300);
    EXPECT_NE(a.body.find(c.expect), std::string::npos) << c.re << ": " << a.body.substr(0, 300);
    if (c.status == 200) {
      EXPECT_NE(a.body.find("\"complete\":true"), std::string::npos) << c.re;
    }
    EXPECT_LT(cpu, 1.0) << c.re;
    std::fprintf(stderr, "regex %-22s -> HTTP %d in %.3f s, daemon CPU %.3f s\n", c.re, a.status, a.seconds, cpu);
  }
  EXPECT_EQ(daemon_->Stop(), "0\n") << daemon_->Log();
}

TEST_F(DaemonHostileTest, SlowlorisLeavesHealthzAnsweringAndSigtermExitsWithinItsBound) {
  DLQ_REQUIRE_STAND_IN("fauxqs", standin);
  Start(standin, "");
  std::atomic<bool> stop{false};
  std::vector<std::thread> attackers;
  for (int t = 0; t < 4; ++t) {
    attackers.emplace_back([&, t] {
      // 16 connections each, a header line every 3 s, reconnecting when cut off.
      std::vector<int> fds;
      while (!stop) {
        while (fds.size() < 16) {
          int fd = Connect(port_);
          if (fd < 0) break;
          ::send(fd, "GET /api/overview HTTP/1.1\r\n", 28, MSG_NOSIGNAL);
          fds.push_back(fd);
        }
        for (int i = 0; i < 30 && !stop; ++i) std::this_thread::sleep_for(milliseconds(100));
        for (auto it = fds.begin(); it != fds.end();) {
          std::string line = "X-Slow-" + std::to_string(t) + ": v\r\n";
          if (::send(*it, line.data(), line.size(), MSG_NOSIGNAL) <= 0) {
            ::close(*it);
            it = fds.erase(it);
          } else {
            ++it;
          }
        }
      }
      for (int fd : fds) ::close(fd);
    });
  }
  std::this_thread::sleep_for(milliseconds(500));
  double worst = 0;
  for (int i = 0; i < 10; ++i) {
    Answer h = Curl(port_, "/healthz", "", 2);
    EXPECT_EQ(h.status, 200) << i;
    worst = std::max(worst, h.seconds);
    std::this_thread::sleep_for(milliseconds(500));
  }
  EXPECT_LT(worst, 1.0);
  std::fprintf(stderr, "slowloris (64 connections): worst /healthz %.3f s\n", worst);
  // SIGTERM during the attack.
  const auto start = Steady::now();
  EXPECT_EQ(daemon_->Stop(), "0\n") << daemon_->Log();
  const double took = std::chrono::duration<double>(Steady::now() - start).count();
  EXPECT_LT(took, 5.0);
  std::fprintf(stderr, "SIGTERM during slowloris: exited in %.2f s\n", took);
  stop = true;
  for (std::thread& t : attackers) t.join();
}

TEST_F(DaemonHostileTest, AHeaderFloodIsRefusedAndLeavesRssFlat) {
  DLQ_REQUIRE_STAND_IN("fauxqs", standin);
  Start(standin, "");
  const double before = RssMiB(pid_);
  for (int c = 0; c < 8; ++c) {
    int fd = Connect(port_);
    ASSERT_GE(fd, 0);
    std::string chunk = "GET /healthz HTTP/1.1\r\n";
    const std::string big(4096, 'a');
    for (int i = 0; i < 50000; ++i) {
      std::string line = "X-Flood-" + std::to_string(i) + ": " + big + "\r\n";
      if (::send(fd, (i == 0 ? chunk + line : line).data(), (i == 0 ? chunk + line : line).size(), MSG_NOSIGNAL) <= 0)
        break;
    }
    ::close(fd);
  }
  const double after = RssMiB(pid_);
  EXPECT_LT(after - before, 5.0) << before << " -> " << after;
  EXPECT_EQ(Curl(port_, "/healthz").status, 200);
  std::fprintf(stderr, "header flood (8 x 50,000 x 4 KB): RSS %.1f -> %.1f MiB\n", before, after);
}

// A 300 KB object holding one valid 200 MB line, and five gzip bombs of
// 1 GiB each, searched over HTTP: the daemon stays within its per-request
// budget (dashboard.request_memory, 64 MiB) and reports what it skipped.
TEST_F(DaemonHostileTest, GzipBombsAndAGiantLineThroughTheApiStayWithinTheBudget) {
  DLQ_REQUIRE_STAND_IN("fauxqs", standin);
  Start(standin, "");
  std::string line = RecordLine(queue_, "m-huge", std::string(size_t{200} << 20, 'z'));
  auto giant = GzipCompress(line, 9);
  line = std::string();
  ASSERT_TRUE(giant.ok());
  EXPECT_LT(giant->size(), 400000u);
  const std::string dir = dir_ + "/archive/dlq-archive/" + queue_ + "/20260101";
  std::ofstream(dir + "/" + queue_ + "-000001-giant.json.gz", std::ios::binary) << *giant;
  // 64 gzip members of 16 MiB each: 1 GiB decompressed from ~1 MB.
  std::string member = GzipCompress(std::string(size_t{16} << 20, 'z'), 9).value();
  std::string bomb;
  for (int i = 0; i < 64; ++i) bomb += member;
  for (int i = 0; i < 5; ++i) {
    std::ofstream(dir + "/" + queue_ + "-00000" + std::to_string(2 + i) + "-bomb.json.gz", std::ios::binary) << bomb;
  }
  const double rss_before = RssMiB(pid_), peak_before = StatusMiB(pid_, "VmHWM");
  const double cpu_before = CpuSeconds(pid_);
  Answer a = Curl(port_, "/api/search?queue=" + queue_ + "&q=payment", "", 60);
  const double peak = StatusMiB(pid_, "VmHWM");
  EXPECT_EQ(a.status, 200) << a.body.substr(0, 300);
  EXPECT_NE(a.body.find("\"message_id\":\"m-known\""), std::string::npos) << a.body.substr(0, 300);
  EXPECT_EQ(a.body.find("\"skipped_lines\":0,"), std::string::npos) << a.body.substr(0, 600);
  // The daemon's normal footprint is ~20 MiB; one request may add its 64 MiB budget.
  EXPECT_LT(peak - rss_before, 64 + 16) << "peak " << peak << " MiB, from " << rss_before;
  std::fprintf(stderr,
               "giant line + five 1 GiB gzip bombs via /api/search: HTTP %d in %.2f s, daemon CPU %.2f s, RSS %.1f MiB "
               "before, peak %.1f MiB (peak before %.1f)\n",
               a.status, a.seconds, CpuSeconds(pid_) - cpu_before, rss_before, peak, peak_before);
}

TEST_F(DaemonHostileTest, ARebindingHostIsRefusedAndReadsNeedTheReadToken) {
  DLQ_REQUIRE_STAND_IN("fauxqs", standin);
  const std::string token = "read-token-" + RandomHex(12);
  Start(standin, "dashboard:\n  read_token: " + token + "\n  hosts: [dlq.example.com]\n");
  const std::string message = "/api/messages/m-known?queue=" + queue_;
  Answer rebound = Curl(port_, message, "-H 'Host: attacker.rebind.example' -H 'Authorization: Bearer " + token + "'");
  EXPECT_EQ(rebound.status, 421);
  EXPECT_EQ(rebound.body.find("payment declined"), std::string::npos);
  EXPECT_NE(rebound.body.find("\"error\""), std::string::npos) << rebound.body;
  for (const std::string& path : {message, "/api/search?queue=" + queue_ + "&q=payment",
                                  "/api/queues/" + queue_ + "/failures", "/api/queues/" + queue_ + "/objects"}) {
    Answer no_token = Curl(port_, path);
    EXPECT_EQ(no_token.status, 401) << path;
    EXPECT_EQ(no_token.body.find("payment declined"), std::string::npos) << path;
    EXPECT_EQ(Curl(port_, path, "-H 'Authorization: Bearer wrong-token-000000'").status, 401) << path;
    EXPECT_EQ(Curl(port_, path, "-H 'Authorization: Bearer " + token + "'").status, 200) << path;
  }
  EXPECT_NE(Curl(port_, message, "-H 'Authorization: Bearer " + token + "' -H 'Host: dlq.example.com'")
                .body.find("payment declined"),
            std::string::npos);
  // Counts, metrics and probes stay open.
  for (const char* path : {"/api/overview", "/api/queues", "/metrics", "/healthz", "/readyz", "/"}) {
    EXPECT_EQ(Curl(port_, path).status, 200) << path;
  }
  EXPECT_EQ(daemon_->Log().find(token), std::string::npos);
}

TEST_F(DaemonHostileTest, AnUnprotectedListenerOffLoopbackIsWarnedAbout) {
  DLQ_REQUIRE_STAND_IN("fauxqs", standin);
  const std::string dir = "/tmp/" + UniqueName("hostile-check");
  fs::create_directories(dir);
  const std::string queue = UniqueName("hostile-check") + "-dlq";
  auto svc = Services(standin);
  ASSERT_TRUE(svc);
  ASSERT_TRUE(svc->sqs().CreateQueue(queue, {}).ok());
  const std::string groups = "defaults:\n  destination: file://" + dir +
                             "\ngroups:\n  - name: g\n    endpoint_url: " + standin.endpoint() + "\n    queues: [" +
                             queue + "]\n";
  WriteFile(dir + "/open.yaml", "listen: 0.0.0.0:0\n" + groups);
  auto open = RunShell(standin.ShellEnv() + DLQ_BINARY + " check --config " + dir + "/open.yaml");
  EXPECT_TRUE(Has(open.out, "WARNING: listen 0.0.0.0:0 is not loopback and dashboard.read_token is not set"))
      << open.out;
  auto json = RunShell(standin.ShellEnv() + DLQ_BINARY + " check --output json --config " + dir + "/open.yaml", false);
  EXPECT_TRUE(Has(json.out, R"("listener":{"address":"0.0.0.0:0","loopback":false,"read_token":false)")) << json.out;
  // With a read token, or on loopback, there is nothing to warn about.
  WriteFile(dir + "/token.yaml", "listen: 0.0.0.0:0\ndashboard: { read_token: read-token-0123456789 }\n" + groups);
  auto token = RunShell(standin.ShellEnv() + DLQ_BINARY + " check --config " + dir + "/token.yaml");
  EXPECT_FALSE(Has(token.out, "read_token is not set")) << token.out;
  EXPECT_FALSE(Has(token.out, "read-token-0123456789")) << token.out;
  WriteFile(dir + "/local.yaml", "listen: 127.0.0.1:0\n" + groups);
  EXPECT_FALSE(Has(RunShell(standin.ShellEnv() + DLQ_BINARY + " check --config " + dir + "/local.yaml").out,
                   "read_token is not set"));
  fs::remove_all(dir);
}

// Issue 38: 127 clients at once, each posting a 1 MiB body to
// /api/replay without the token. Each is refused from its head and closed;
// the daemon's peak RSS grows by far less than the bodies (it grew 30 -> 249 MiB
// before), the log gets one line, and /metrics counts every refusal.
TEST_F(DaemonHostileTest, BodiesWithoutTheTokenAreNeverReadAndRefusalsCannotFloodTheLog) {
  DLQ_REQUIRE_STAND_IN("fauxqs", standin);
  Start(standin, "dashboard:\n  write_token: write-token-" + RandomHex(12) + "\n");
  const double peak_before = StatusMiB(pid_, "VmHWM");
  const std::string head =
      "POST /api/replay HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: "
      "1048576\r\n\r\n";
  const std::string body(1 << 20, 'x');
  std::atomic<int> refused{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 127; ++i) {
    clients.emplace_back([&] {
      int fd = Connect(port_);
      if (fd < 0) return;
      timeval tv{.tv_sec = 10, .tv_usec = 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
      (void)::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
      (void)::send(fd, body.data(), body.size(), MSG_NOSIGNAL);  // fails once the daemon has closed
      char buf[512];
      ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n > 12 && std::string(buf, 12) == "HTTP/1.1 401") ++refused;
      ::close(fd);
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(refused.load(), 127);
  const double peak_after = StatusMiB(pid_, "VmHWM");
  // The bodies would take 127 MiB at once (the old listener read them all);
  // the heads take at most 8 MiB (0.3 MiB measured; ASan's allocator keeps
  // freed memory in quarantine and measured 16 MiB).
  EXPECT_LT(peak_after - peak_before, 32.0) << peak_before << " -> " << peak_after << " MiB";
  std::fprintf(stderr, "127 x 1 MiB bodies without the token: peak RSS %.1f -> %.1f MiB\n", peak_before, peak_after);
  Answer metrics = Curl(port_, "/metrics");
  EXPECT_NE(metrics.body.find(R"(dlq_archive_dashboard_refusals_total{access="write",reason="no_token"} 127)"),
            std::string::npos)
      << metrics.body.substr(0, 2000);
  const std::string log = daemon_->Log();
  size_t lines = 0;
  for (size_t at = log.find("dashboard_action_refused"); at != std::string::npos;
       at = log.find("dashboard_action_refused", at + 1)) {
    ++lines;
  }
  EXPECT_GE(lines, 1u);
  EXPECT_LE(lines, 2u) << log;  // one per 10 s
}

// nc, socat and probe agents half-close after their request.
TEST_F(DaemonHostileTest, HalfClosedProbesAndScrapesAreAnswered) {
  DLQ_REQUIRE_STAND_IN("fauxqs", standin);
  Start(standin, "");
  int answered = 0;
  for (int i = 0; i < 50; ++i) {
    for (const char* request : {"GET /healthz HTTP/1.0\r\n\r\n", "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"}) {
      int fd = Connect(port_);
      ASSERT_GE(fd, 0);
      timeval tv{.tv_sec = 5, .tv_usec = 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
      (void)::send(fd, request, std::strlen(request), MSG_NOSIGNAL);
      ::shutdown(fd, SHUT_WR);
      char buf[64];
      ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      answered += n > 12 && std::string(buf, 12) == "HTTP/1.1 200" ? 1 : 0;
      ::close(fd);
    }
  }
  EXPECT_EQ(answered, 100);
}

}  // namespace
}  // namespace dlq::it
