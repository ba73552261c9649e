#include "testing/quiescence.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace dlq {
namespace {

// Real time between two looks at the threads (the kernel's thread states
// are not something anybody can notify).
constexpr std::chrono::microseconds kSettle{200};
constexpr std::chrono::microseconds kPoll{100};

struct TaskLook {
  long tid = 0;
  char state = '?';
  long long switches = 0;  // voluntary + involuntary context switches
  bool operator==(const TaskLook&) const = default;
};

long ThisThreadId() {
  return static_cast<long>(::syscall(SYS_gettid));
}

std::set<long> TaskIds() {
  std::set<long> ids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    try {
      ids.insert(std::stol(entry.path().filename().string()));
    } catch (const std::exception&) {
    }
  }
  return ids;
}

// The participants' states, by thread id; nullopt when a thread ended
// midway (something is still happening).
std::optional<std::vector<TaskLook>> LookAtTasks(const std::set<long>& outsiders) {
  std::vector<TaskLook> looks;
  for (long tid : TaskIds()) {
    if (outsiders.count(tid)) continue;
    std::ifstream status("/proc/self/task/" + std::to_string(tid) + "/status");
    if (!status) return std::nullopt;
    TaskLook look;
    look.tid = tid;
    int fields = 0;
    for (std::string line; std::getline(status, line);) {
      auto value = [&](std::string_view key) -> std::optional<std::string> {
        if (line.rfind(key, 0) != 0) return std::nullopt;
        size_t at = line.find_first_not_of(" \t", key.size());
        return at == std::string::npos ? std::string() : line.substr(at);
      };
      if (auto v = value("State:")) {
        look.state = v->empty() ? '?' : (*v)[0];
        ++fields;
      } else if (auto v = value("voluntary_ctxt_switches:")) {
        look.switches += std::stoll(*v);
        ++fields;
      } else if (auto v = value("nonvoluntary_ctxt_switches:")) {
        look.switches += std::stoll(*v);
        ++fields;
      }
    }
    if (fields != 3) return std::nullopt;
    looks.push_back(look);
    if (look.state != 'S') break;  // not all asleep: enough
  }
  return looks;
}

bool AllAsleep(const std::vector<TaskLook>& looks) {
  for (const TaskLook& t : looks) {
    if (t.state != 'S') return false;
  }
  return true;
}

}  // namespace

ThreadWatch::ThreadWatch() : outsiders_(TaskIds()) {
  outsiders_.erase(ThisThreadId());
}

bool ThreadWatch::Quiescent() const {
  std::set<long> outsiders = outsiders_;
  outsiders.insert(ThisThreadId());
  auto first = LookAtTasks(outsiders);
  if (!first || !AllAsleep(*first)) return false;
  std::this_thread::sleep_for(kSettle);  // lint: allow-raw-wait (kernel thread states cannot be waited on)
  auto second = LookAtTasks(outsiders);
  return second && *second == *first;
}

bool ThreadWatch::AwaitQuiescent(std::chrono::milliseconds timeout) const {
  const auto give_up = std::chrono::steady_clock::now() + timeout;  // lint: allow-raw-wait (real-time bound)
  while (!Quiescent()) {
    if (std::chrono::steady_clock::now() >= give_up) return false;  // lint: allow-raw-wait (real-time bound)
    std::this_thread::sleep_for(kPoll);  // lint: allow-raw-wait (kernel thread states cannot be waited on)
  }
  return true;
}

}  // namespace dlq
