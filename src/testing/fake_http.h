// A scriptable HttpTransport for tests: records every request, answers from
// a handler, and fails on command ("the 3rd call returns 503").
#pragma once

#include <functional>
#include <map>
#include <vector>

#include "aws/http.h"
#include "common/mutex.h"

namespace dlq {

class FakeHttpTransport final : public HttpTransport {
 public:
  using Handler = std::function<Result<HttpResponse>(const HttpRequest&)>;

  explicit FakeHttpTransport(Handler handler = nullptr) : handler_(std::move(handler)) {}

  void SetHandler(Handler h) {
    MutexLock lock(mu_);
    handler_ = std::move(h);
  }
  // The n-th call (1-based) returns `result` instead of calling the handler.
  void FailCall(int n, Result<HttpResponse> result) {
    MutexLock lock(mu_);
    overrides_.emplace(n, std::move(result));
  }

  // Records (and hands the handler) the request with a body_view copied
  // into `body`, so tests read what was sent in one place.
  Result<HttpResponse> Send(const HttpRequest& request) override {
    HttpRequest sent = request;
    if (sent.body_view) {
      sent.body.assign(*sent.body_view);
      sent.body_view.reset();
    }
    Handler h;
    {
      MutexLock lock(mu_);
      requests_.push_back(sent);
      int n = static_cast<int>(requests_.size());
      if (auto it = overrides_.find(n); it != overrides_.end()) return it->second;
      h = handler_;
    }
    if (!h) return Internal("FakeHttpTransport: no handler");
    return h(sent);
  }

  std::vector<HttpRequest> requests() const {
    MutexLock lock(mu_);
    return requests_;
  }
  int calls() const {
    MutexLock lock(mu_);
    return static_cast<int>(requests_.size());
  }

 private:
  mutable Mutex mu_;
  Handler handler_ DLQ_GUARDED_BY(mu_);
  std::map<int, Result<HttpResponse>> overrides_ DLQ_GUARDED_BY(mu_);
  std::vector<HttpRequest> requests_ DLQ_GUARDED_BY(mu_);
};

inline HttpResponse MakeResponse(int status, std::string body, HttpHeaders headers = {}) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}

}  // namespace dlq
