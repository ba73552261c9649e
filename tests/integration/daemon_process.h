// Helpers for integration tests that run `dlq-archive run` as a process:
// a free loopback port, small file I/O, the daemon in the background
// (SIGTERM on Stop), and polling an HTTP endpoint with curl.
#pragma once

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include "harness.h"

namespace dlq::it {

// A loopback TCP port that was free a moment ago (0 on failure).
inline int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return 0;
  }
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

inline void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline bool Has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

// `dlq-archive run --config CONFIG EXTRA_ARGS` started in the background with
// the stand-in's environment; stderr goes to DIR/log. Stop() sends SIGTERM
// and returns the exit code ("0\n"), or "" when it did not exit in 10 s.
// Writes DIR/dlq-archive.yaml: a daemon on 127.0.0.1:PORT watching `queue` on
// the stand-in, archiving to s3://BUCKET/dlq-archive in 1 s batches, with
// `alarms` (YAML lines under `alarms:`). Returns its path.
inline std::string WriteOneQueueConfig(const StandIn& standin, const std::string& dir, int port,
                                       const std::string& bucket, const std::string& queue, const std::string& alarms) {
  const std::string config = dir + "/dlq-archive.yaml";
  WriteFile(config, fmt::format(R"(listen: 127.0.0.1:{}
collection_interval: 1s
sweep_interval: 2s
defaults:
  destination: s3://{}/dlq-archive
  visibility_timeout: 30s
  batch: {{ max_age: 1s }}
groups:
  - name: it
    endpoint_url: {}
    queues: [{}]
    alarms:
{})",
                                port, bucket, standin.endpoint(), queue, alarms));
  return config;
}

class BackgroundDaemon {
 public:
  BackgroundDaemon(const StandIn& stand_in, const std::string& dir, const std::string& config,
                   const std::string& extra_args = "")
      : dir_(dir) {
    RunShell(stand_in.ShellEnv() + "sh -c '" + DLQ_BINARY + " run --config " + config + " " + extra_args + " 2> " +
             dir + "/log & echo $! > " + dir + "/pid; wait $!; echo $? > " + dir + "/rc' > /dev/null 2>&1 &");
  }
  ~BackgroundDaemon() { Stop(); }
  BackgroundDaemon(const BackgroundDaemon&) = delete;
  BackgroundDaemon& operator=(const BackgroundDaemon&) = delete;

  // The daemon's pid ("" until the shell wrote it).
  std::string Pid() const {
    std::string pid;
    for (int i = 0; i < 50 && pid.empty(); ++i) {
      pid = ReadFile(dir_ + "/pid");
      if (pid.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    return pid;
  }
  // Sends `signal` (e.g. "HUP") to the daemon.
  void Signal(const std::string& signal) const {
    std::string pid = Pid();
    if (!pid.empty()) RunShell("kill -" + signal + " " + pid);
  }
  std::string Stop() {
    if (stopped_) return rc_;
    stopped_ = true;
    std::string pid = Pid();
    if (pid.empty()) return rc_;
    RunShell("kill -TERM " + pid);
    for (int i = 0; i < 100 && rc_.empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      rc_ = ReadFile(dir_ + "/rc");
    }
    return rc_;
  }
  std::string Log() const { return ReadFile(dir_ + "/log"); }

 private:
  std::string dir_;
  bool stopped_ = false;
  std::string rc_;
};

// Polls `url` until `done(body)` or the deadline; returns the last body.
inline std::string PollUntil(const std::string& url, const std::function<bool(const std::string&)>& done, int seconds) {
  std::string body;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    body = RunShell("curl -s --max-time 2 " + url, false).out;
    if (done(body)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  return body;
}

}  // namespace dlq::it
