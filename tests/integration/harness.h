// Integration test helpers: the local stand-ins started by scripts/stand-ins
// (their .run/<name>.env files), running commands, and AWS services built
// from a stand-in's settings. Tests skip when a stand-in is not running,
// unless DLQ_REQUIRE_STAND_INS=1 (scripts/test sets it), where they fail.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "app/services.h"
#include "aws/environment.h"
#include "common/crypto.h"

namespace dlq::it {

inline std::string RepoRoot() {
  std::string testdata = DLQ_TESTDATA_DIR;  // <repo>/tests/testdata
  return testdata.substr(0, testdata.size() - std::string("/tests/testdata").size());
}

inline std::string RunDir() {
  const char* d = std::getenv("DLQ_RUN_DIR");
  return d ? d : RepoRoot() + "/.run";
}

struct StandIn {
  std::string name;
  std::map<std::string, std::string> env;  // AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ...
  std::string endpoint() const { return env.at("AWS_ENDPOINT_URL"); }
  // "export K=V; ..." for shell commands.
  std::string ShellEnv() const {
    std::string out;
    for (const auto& [k, v] : env) out += "export " + k + "='" + v + "'; ";
    return out;
  }
};

// Loads .run/<name>.env; returns false when the stand-in is not running.
inline bool LoadStandIn(const std::string& name, StandIn& out) {
  std::ifstream in(RunDir() + "/" + name + ".env");
  if (!in) return false;
  out.name = name;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("export ", 0) != 0) continue;
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string k = line.substr(7, eq - 7), v = line.substr(eq + 1);
    if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'')) v = v.substr(1, v.size() - 2);
    out.env[k] = v;
  }
  return out.env.count("AWS_ENDPOINT_URL") > 0;
}

#define DLQ_REQUIRE_STAND_IN(name, var)                                                             \
  ::dlq::it::StandIn var;                                                                           \
  if (!::dlq::it::LoadStandIn(name, var)) {                                                         \
    if (std::getenv("DLQ_REQUIRE_STAND_INS")) FAIL() << "stand-in " << name << " is not running";   \
    GTEST_SKIP() << "stand-in " << name << " not running (scripts/stand-ins start " << name << ")"; \
  }

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout (stderr is merged when merge_stderr)
};

inline CommandResult RunShell(const std::string& cmd, bool merge_stderr = true) {
  CommandResult r;
  std::string full = "(" + cmd + ")" + (merge_stderr ? " 2>&1" : "");
  FILE* p = popen(full.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// AWS services configured from a stand-in (endpoint, region, keys); the
// secret can be overridden to test rejection.
// `http_client` is DLQ_HTTP_CLIENT (empty: the default, builtin).
inline std::unique_ptr<AwsServices> Services(const StandIn& s, const std::string& secret_override = "",
                                             const std::string& http_client = "") {
  auto env = std::make_unique<MapEnvironment>();
  for (const auto& [k, v] : s.env) env->Set(k, v);
  if (!secret_override.empty()) env->Set("AWS_SECRET_ACCESS_KEY", secret_override);
  if (!http_client.empty()) env->Set("DLQ_HTTP_CLIENT", http_client);
  env->Set("AWS_CONFIG_FILE", "/nonexistent/config");
  env->Set("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials");
  ServicesOptions o;
  o.retry.max_attempts = 3;
  auto r = AwsServices::Create(o, *env, DefaultClock());
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  static std::vector<std::unique_ptr<MapEnvironment>> keep;  // must outlive the services
  keep.push_back(std::move(env));
  return r.ok() ? std::move(*r) : nullptr;
}

// Services on the stand-in `name`, shared; nullptr when it is not running
// (then a test failure when DLQ_REQUIRE_STAND_INS is set), for fixtures that
// skip rather than fail.
inline std::shared_ptr<AwsServices> StandInServices(const std::string& name) {
  StandIn s;
  if (!LoadStandIn(name, s)) {
    if (std::getenv("DLQ_REQUIRE_STAND_INS")) ADD_FAILURE() << "stand-in " << name << " is not running";
    return nullptr;
  }
  return Services(s);
}

inline std::string UniqueName(const std::string& base) {
  return base + "-" + RandomHex(4);
}

}  // namespace dlq::it
