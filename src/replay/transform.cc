#include "replay/transform.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "common/clock.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): <unistd.h> declares it only with _GNU_SOURCE

namespace dlq {
namespace {

// A child process keeps real time: its timeouts are on the real clock.
Clock& TimeoutClock() {
  return DefaultClock();
}

int RemainingMs(SteadyTime deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - TimeoutClock().SteadyNow());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

std::string Excerpt(std::string_view s) {
  constexpr size_t kMax = 120;
  std::string out(s.substr(0, kMax));
  if (s.size() > kMax) out += "...";
  return out;
}

}  // namespace

Result<std::unique_ptr<CommandTransform>> CommandTransform::Start(const std::string& command,
                                                                  std::chrono::milliseconds timeout,
                                                                  const std::string& name) {
  if (command.empty()) return InvalidArgument(fmt::format("{}: empty command", name));
  std::signal(SIGPIPE, SIG_IGN);
  int to_child[2], from_child[2];
  if (::pipe2(to_child, O_CLOEXEC) != 0) return InvalidArgument(fmt::format("{}: pipe: {}", name, strerror(errno)));
  if (::pipe2(from_child, O_CLOEXEC) != 0) {
    ::close(to_child[0]);
    ::close(to_child[1]);
    return InvalidArgument(fmt::format("{}: pipe: {}", name, strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
  std::string sh_c = "-c";
  std::string sh = "sh";
  std::string cmd = command;
  char* argv[] = {sh.data(), sh_c.data(), cmd.data(), nullptr};
  pid_t pid = 0;
  int rc = posix_spawn(&pid, "/bin/sh", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(to_child[0]);
  ::close(from_child[1]);
  if (rc != 0) {
    ::close(to_child[1]);
    ::close(from_child[0]);
    return InvalidArgument(fmt::format("{}: cannot start sh: {}", name, strerror(rc)));
  }
  return std::unique_ptr<CommandTransform>(
      new CommandTransform(command, name, timeout, pid, to_child[1], from_child[0]));
}

CommandTransform::CommandTransform(std::string command, std::string name, std::chrono::milliseconds timeout, pid_t pid,
                                   int in_fd, int out_fd)
    : command_(std::move(command)),
      name_(std::move(name)),
      timeout_(timeout),
      pid_(pid),
      in_fd_(in_fd),
      out_fd_(out_fd) {}

CommandTransform::~CommandTransform() {
  if (in_fd_ >= 0) ::close(in_fd_);
  auto deadline = TimeoutClock().SteadyNow() + timeout_;
  while (!reaped_) {
    pid_t r = ::waitpid(pid_, &wait_status_, WNOHANG);
    if (r == pid_ || (r < 0 && errno != EINTR)) break;
    if (TimeoutClock().SteadyNow() >= deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &wait_status_, 0);
      break;
    }
    TimeoutClock().SleepFor(std::chrono::milliseconds(5));
  }
  if (out_fd_ >= 0) ::close(out_fd_);
}

std::string CommandTransform::ExitDescription() {
  // The command has closed a pipe, so it is usually exiting: give its status
  // up to 200 ms to be reported, so the error can say how it ended.
  for (int i = 0; !reaped_ && i < 20; ++i) {
    pid_t r = ::waitpid(pid_, &wait_status_, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
    } else if (r < 0) {
      return "";
    } else {
      TimeoutClock().SleepFor(std::chrono::milliseconds(10));
    }
  }
  if (!reaped_) return "";
  if (WIFEXITED(wait_status_)) return fmt::format(" (it exited with status {})", WEXITSTATUS(wait_status_));
  if (WIFSIGNALED(wait_status_)) return fmt::format(" (it was killed by signal {})", WTERMSIG(wait_status_));
  return "";
}

Status CommandTransform::Fail(const std::string& what) {
  failed_ = true;
  return FailedPrecondition(fmt::format("{} '{}': {}", name_, Excerpt(command_), what));
}

Result<ArchiveRecord> CommandTransform::Apply(const ArchiveRecord& record) {
  if (failed_) return Fail("stopped after an earlier error");
  std::string line;
  AppendRecordJson(record, line);
  const SteadyTime deadline = TimeoutClock().SteadyNow() + timeout_;
  // Write the line and read one back, polling both ends so a command that
  // answers early (or not at all) cannot deadlock us.
  std::string_view to_write = line;
  size_t newline = pending_.find('\n');
  while (newline == std::string::npos || !to_write.empty()) {
    pollfd fds[2];
    int n = 0;
    int out_index = -1, in_index = -1;
    if (newline == std::string::npos) {
      fds[n] = {out_fd_, POLLIN, 0};
      out_index = n++;
    }
    if (!to_write.empty()) {
      fds[n] = {in_fd_, POLLOUT, 0};
      in_index = n++;
    }
    int ready = ::poll(fds, n, RemainingMs(deadline));
    if (ready < 0) {
      if (errno == EINTR) continue;
      return Fail(fmt::format("poll: {}", strerror(errno)));
    }
    if (ready == 0) {
      return Fail(fmt::format(
          "no output line for message {} within {} ms (a command must print one line per input line without "
          "buffering, e.g. jq -c --unbuffered)",
          record.message_id, timeout_.count()));
    }
    if (in_index >= 0 && fds[in_index].revents != 0) {
      ssize_t w = ::write(in_fd_, to_write.data(), std::min<size_t>(to_write.size(), 65536));
      if (w < 0 && errno != EINTR && errno != EAGAIN) {
        return Fail(fmt::format("it stopped reading its input before answering message {}{}", record.message_id,
                                ExitDescription()));
      }
      if (w > 0) to_write.remove_prefix(static_cast<size_t>(w));
    }
    if (out_index >= 0 && fds[out_index].revents != 0) {
      char buf[65536];
      ssize_t r = ::read(out_fd_, buf, sizeof(buf));
      if (r < 0 && errno != EINTR && errno != EAGAIN) return Fail(fmt::format("read: {}", strerror(errno)));
      if (r == 0) {
        return Fail(
            fmt::format("it closed its output before answering message {}{}", record.message_id, ExitDescription()));
      }
      if (r > 0) pending_.append(buf, static_cast<size_t>(r));
      newline = pending_.find('\n');
    }
  }
  std::string out = pending_.substr(0, newline);
  pending_.erase(0, newline + 1);
  auto parsed = ParseRecordJson(out);
  if (!parsed.ok()) {
    return Fail(fmt::format("its output for message {} is not an archive record ({}): {}", record.message_id,
                            parsed.status().message(), Excerpt(out)));
  }
  if (parsed->message_id != record.message_id) {
    return Fail(fmt::format("it changed message_id {} to {}; ids must be kept (checkpoints and the audit use them)",
                            record.message_id, parsed->message_id));
  }
  return std::move(parsed).value();
}

}  // namespace dlq
