// HttpWorkerPool: the threads that answer HttpServer's requests. `threads`
// workers take jobs from the ordinary queue; one more thread takes the
// priority routes' jobs (/metrics) from a queue of its own, so that they
// never wait behind the others. Each queue holds at most max_queued jobs.
// A finished job's answer is serialised on the worker and left for the I/O
// thread (TakeAnswers), which `wake` is called to tell.
//
// Thread-safety: every method may be called from any thread; Start and Join
// from one thread at a time. Handlers run concurrently and must be
// thread-safe. After RequestStop the workers finish the jobs still queued
// (DropQueued empties the queues) and end; Join waits for them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "server/http_message.h"
#include "server/http_router.h"

namespace dlq {

struct HttpJob {
  uint64_t conn = 0;
  HttpRouteHandler handler;  // a priority route's (priority queue); empty: HttpRouter::Dispatch
  HttpServerRequest request;
  bool head_only = false;
  bool keep_alive = false;
  bool gzip = false;
  std::shared_ptr<std::atomic<bool>> cancelled;  // request.cancelled points here while the job runs
};

struct HttpAnswer {
  uint64_t conn = 0;
  std::string bytes;  // the serialised response
  bool keep_alive = false;
};

class HttpWorkerPool {
 public:
  // `router` must outlive the pool; `wake` is called on a worker thread
  // after each answer is left.
  HttpWorkerPool(const HttpRouter& router, size_t max_queued, std::function<void()> wake);
  ~HttpWorkerPool();  // RequestStop()s and Join()s
  HttpWorkerPool(const HttpWorkerPool&) = delete;
  HttpWorkerPool& operator=(const HttpWorkerPool&) = delete;

  // Starts `threads` workers and the priority thread.
  void Start(int threads);
  // Queues `job` (on the priority queue when it has a handler); false, and
  // `job` dropped, when that queue holds max_queued jobs already.
  bool Submit(HttpJob job);
  // The answers finished since the last call, in the order they finished.
  std::deque<HttpAnswer> TakeAnswers();
  // Drops the jobs not started yet.
  void DropQueued();
  void RequestStop();
  bool stopping() const;
  // Waits for every thread to end (after RequestStop).
  void Join();

 private:
  void Work(bool priority);

  const HttpRouter& router_;
  const size_t max_queued_;
  const std::function<void()> wake_;
  std::vector<std::thread> threads_;
  mutable Mutex mu_;
  CondVar jobs_cv_;
  CondVar priority_cv_;
  std::deque<HttpJob> jobs_ DLQ_GUARDED_BY(mu_);
  std::deque<HttpJob> priority_jobs_ DLQ_GUARDED_BY(mu_);  // for the priority thread
  std::deque<HttpAnswer> answers_ DLQ_GUARDED_BY(mu_);
  bool stopping_ DLQ_GUARDED_BY(mu_) = false;
};

}  // namespace dlq
