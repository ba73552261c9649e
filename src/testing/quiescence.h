// ThreadWatch: tells when the threads of a test have all blocked, from
// the kernel's view of them (/proc/self/task; Linux only). Test-only
// library dlq_testing.
//
// A watched thread counts as blocked while it sleeps in the kernel (a
// mutex, a condition variable, a join, a sleep). Quiescent() holds when
// every watched thread but the caller sleeps and none ran between two looks
// 200 us apart: from then on none moves until something outside them (the
// caller, a timeout) wakes one. A thread blocked on a real-time timeout
// counts as blocked too. Thread-safe.
#pragma once

#include <chrono>
#include <set>

namespace dlq {

class ThreadWatch {
 public:
  // Watches the calling thread and every thread created from now on;
  // threads that exist already (sanitizer and library background threads)
  // stay out.
  ThreadWatch();

  // Every watched thread other than the caller is blocked.
  bool Quiescent() const;
  // Waits (in real time, at most `timeout`) until Quiescent(); false when
  // the timeout came first.
  bool AwaitQuiescent(std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;

 private:
  std::set<long> outsiders_;  // thread ids not watched
};

}  // namespace dlq
