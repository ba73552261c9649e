#include "credentials/credential_process.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/strings.h"
#include "credentials/provider_util.h"

namespace dlq {
namespace {

constexpr size_t kMaxProcessOutput = 1 << 20;

}  // namespace

Result<Credentials> RunCredentialProcess(const std::string& command, std::string_view profile) {
  std::string what = fmt::format("credential_process of profile {}", profile);
  if (Trim(command).empty()) return InvalidArgument(what + " is empty");
  std::fflush(nullptr);
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return Internal(fmt::format("{}: cannot start /bin/sh: {}", what, std::strerror(errno)));
  std::string out;
  char buf[4096];
  size_t n = 0;
  bool too_big = false;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) {
    if (out.size() + n > kMaxProcessOutput) {
      too_big = true;
      continue;  // drain so the child can exit
    }
    out.append(buf, n);
  }
  int status = ::pclose(pipe);
  if (status == -1) return Internal(fmt::format("{}: cannot wait for the process: {}", what, std::strerror(errno)));
  if (WIFSIGNALED(status)) {
    return Unauthenticated(fmt::format("{} was killed by signal {}", what, WTERMSIG(status)));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    int code = WEXITSTATUS(status);
    return Unauthenticated(fmt::format("{} exited with status {}{} (its output is not shown as it may hold secrets)",
                                       what, code, code == 127 ? ", command not found" : ""));
  }
  if (too_big) return Unauthenticated(fmt::format("{}: output is larger than 1 MiB", what));
  CredentialsJsonExtras extras;
  DLQ_ASSIGN_OR_RETURN(Credentials c, ParseCredentialsJson(out, "SessionToken", what, &extras));
  if (extras.version != 1) {
    return Unauthenticated(fmt::format("{}: output must have \"Version\": 1", what));
  }
  c.source = fmt::format("credential-process (profile {})", profile);
  return c;
}

}  // namespace dlq
