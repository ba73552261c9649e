#include "server/http_worker_pool.h"

#include <exception>
#include <utility>

namespace dlq {

HttpWorkerPool::HttpWorkerPool(const HttpRouter& router, size_t max_queued, std::function<void()> wake)
    : router_(router), max_queued_(max_queued), wake_(std::move(wake)) {}

HttpWorkerPool::~HttpWorkerPool() {
  RequestStop();
  Join();
}

void HttpWorkerPool::Start(int threads) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(/*priority=*/false); });
  threads_.emplace_back([this] { Work(/*priority=*/true); });
}

bool HttpWorkerPool::Submit(HttpJob job) {
  const bool priority = static_cast<bool>(job.handler);
  {
    MutexLock lock(mu_);
    std::deque<HttpJob>& queue = priority ? priority_jobs_ : jobs_;
    if (queue.size() >= max_queued_) return false;
    queue.push_back(std::move(job));
  }
  (priority ? priority_cv_ : jobs_cv_).NotifyOne();
  return true;
}

std::deque<HttpAnswer> HttpWorkerPool::TakeAnswers() {
  std::deque<HttpAnswer> answers;
  MutexLock lock(mu_);
  answers.swap(answers_);
  return answers;
}

void HttpWorkerPool::DropQueued() {
  MutexLock lock(mu_);
  jobs_.clear();
  priority_jobs_.clear();
}

void HttpWorkerPool::RequestStop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  jobs_cv_.NotifyAll();
  priority_cv_.NotifyAll();
}

bool HttpWorkerPool::stopping() const {
  MutexLock lock(mu_);
  return stopping_;
}

void HttpWorkerPool::Join() {
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void HttpWorkerPool::Work(bool priority) {
  CondVar& cv = priority ? priority_cv_ : jobs_cv_;
  for (;;) {
    HttpJob job;
    {
      MutexLock lock(mu_);
      std::deque<HttpJob>& queue = priority ? priority_jobs_ : jobs_;
      cv.Wait(mu_, [&]() DLQ_REQUIRES(mu_) { return stopping_ || !queue.empty(); });
      if (queue.empty()) return;  // stopping
      job = std::move(queue.front());
      queue.pop_front();
    }
    job.request.cancelled = job.cancelled.get();
    HttpServerResponse response;
    try {
      response = job.handler ? job.handler(job.request) : router_.Dispatch(job.request);
    } catch (const std::exception& e) {
      response = JsonError(500, "internal error while answering the request");
    }
    HttpAnswer answer{.conn = job.conn,
                      .bytes = Serialize(response, job.head_only, job.keep_alive, job.gzip),
                      .keep_alive = job.keep_alive};
    {
      MutexLock lock(mu_);
      answers_.push_back(std::move(answer));
    }
    wake_();
  }
}

}  // namespace dlq
