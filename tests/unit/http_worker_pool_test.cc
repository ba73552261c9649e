#include "server/http_worker_pool.h"

#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/mutex.h"

namespace dlq {
namespace {

HttpServerResponse Text(std::string body) {
  HttpServerResponse response;
  response.body = std::move(body);
  return response;
}

class HttpWorkerPoolTest : public ::testing::Test {
 protected:
  HttpWorkerPoolTest() {
    router_.Handle("GET", "/slow", [this](const HttpServerRequest& request) {
      MutexLock lock(mu_);
      ++slow_started_;
      cv_.NotifyAll();
      cv_.Wait(mu_, [&]() DLQ_REQUIRES(mu_) { return release_slow_ || request.cancelled->load(); });
      return Text("slow");
    });
    router_.Handle("GET", "/fast", [](const HttpServerRequest&) { return Text("fast"); });
  }
  ~HttpWorkerPoolTest() override { ReleaseSlow(); }  // a failed test must not leave a handler blocked

  static HttpJob Job(uint64_t conn, const std::string& path, HttpRouteHandler handler = {}) {
    HttpJob job{.conn = conn, .handler = std::move(handler), .keep_alive = true};
    job.request.method = "GET";
    job.request.path = path;
    job.cancelled = std::make_shared<std::atomic<bool>>(false);
    return job;
  }

  // Waits (at most 10 s) until `n` answers were left, and takes them.
  std::vector<HttpAnswer> AwaitAnswers(size_t n) {
    std::vector<HttpAnswer> answers;
    for (int i = 0; i < 1000 && answers.size() < n; ++i) {
      {
        MutexLock lock(mu_);
        cv_.WaitFor(mu_, std::chrono::milliseconds(10));
      }
      for (HttpAnswer& a : pool_.TakeAnswers()) answers.push_back(std::move(a));
    }
    return answers;
  }

  void AwaitSlowStarted(int n) {
    MutexLock lock(mu_);
    for (int i = 0; i < 1000 && slow_started_ < n; ++i) cv_.WaitFor(mu_, std::chrono::milliseconds(10));
    ASSERT_EQ(slow_started_, n);
  }

  void ReleaseSlow() {
    MutexLock lock(mu_);
    release_slow_ = true;
    cv_.NotifyAll();
  }

  void Woken() {
    MutexLock lock(mu_);
    ++wakes_;
    cv_.NotifyAll();
  }

  Mutex mu_;
  CondVar cv_;
  int slow_started_ DLQ_GUARDED_BY(mu_) = 0;
  bool release_slow_ DLQ_GUARDED_BY(mu_) = false;
  int wakes_ DLQ_GUARDED_BY(mu_) = 0;
  HttpRouter router_;
  HttpWorkerPool pool_{router_, 2, [this] { Woken(); }};
};

TEST_F(HttpWorkerPoolTest, AnswersAJobWithTheRoutersAnswerAndWakesTheIoThread) {
  pool_.Start(2);
  ASSERT_TRUE(pool_.Submit(Job(7, "/fast")));
  std::vector<HttpAnswer> answers = AwaitAnswers(1);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].conn, 7u);
  EXPECT_TRUE(answers[0].keep_alive);
  EXPECT_EQ(answers[0].bytes.rfind("HTTP/1.1 200", 0), 0u) << answers[0].bytes;
  EXPECT_NE(answers[0].bytes.find("\r\n\r\nfast"), std::string::npos) << answers[0].bytes;
  MutexLock lock(mu_);
  EXPECT_GE(wakes_, 1);
}

TEST_F(HttpWorkerPoolTest, AThrowingHandlerGets500) {
  pool_.Start(1);
  ASSERT_TRUE(pool_.Submit(
      Job(1, "/metrics", [](const HttpServerRequest&) -> HttpServerResponse { throw std::runtime_error("boom"); })));
  std::vector<HttpAnswer> answers = AwaitAnswers(1);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].bytes.rfind("HTTP/1.1 500", 0), 0u) << answers[0].bytes;
}

TEST_F(HttpWorkerPoolTest, EachQueueHoldsAtMostMaxQueuedJobs) {
  // Not started: the jobs stay queued.
  EXPECT_TRUE(pool_.Submit(Job(1, "/fast")));
  EXPECT_TRUE(pool_.Submit(Job(2, "/fast")));
  EXPECT_FALSE(pool_.Submit(Job(3, "/fast")));
  HttpRouteHandler metrics = [](const HttpServerRequest&) { return Text("metrics"); };
  EXPECT_TRUE(pool_.Submit(Job(4, "/metrics", metrics)));  // the priority lane has its own queue
  EXPECT_TRUE(pool_.Submit(Job(5, "/metrics", metrics)));
  EXPECT_FALSE(pool_.Submit(Job(6, "/metrics", metrics)));
  pool_.DropQueued();
  EXPECT_TRUE(pool_.Submit(Job(7, "/fast")));
}

TEST_F(HttpWorkerPoolTest, ThePriorityLaneAnswersWhileEveryWorkerIsBusy) {
  pool_.Start(1);
  ASSERT_TRUE(pool_.Submit(Job(1, "/slow")));
  AwaitSlowStarted(1);
  ASSERT_TRUE(pool_.Submit(Job(2, "/fast")));  // behind the slow one
  ASSERT_TRUE(pool_.Submit(Job(3, "/metrics", [](const HttpServerRequest&) { return Text("metrics"); })));
  std::vector<HttpAnswer> answers = AwaitAnswers(1);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].conn, 3u);
  ReleaseSlow();
  answers = AwaitAnswers(2);
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_EQ(answers[0].conn, 1u);
  EXPECT_EQ(answers[1].conn, 2u);
}

TEST_F(HttpWorkerPoolTest, StopsAfterTheJobInHandAndLeavesDroppedJobsUnanswered) {
  pool_.Start(1);
  HttpJob slow = Job(1, "/slow");
  std::shared_ptr<std::atomic<bool>> cancelled = slow.cancelled;
  ASSERT_TRUE(pool_.Submit(std::move(slow)));
  AwaitSlowStarted(1);
  ASSERT_TRUE(pool_.Submit(Job(2, "/fast")));
  EXPECT_FALSE(pool_.stopping());
  pool_.RequestStop();
  EXPECT_TRUE(pool_.stopping());
  pool_.DropQueued();
  cancelled->store(true);
  {
    MutexLock lock(mu_);
    cv_.NotifyAll();
  }
  pool_.Join();  // returns: the slow handler saw `cancelled`, and the dropped job was never taken
  std::deque<HttpAnswer> answers = pool_.TakeAnswers();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].conn, 1u);
}

}  // namespace
}  // namespace dlq
