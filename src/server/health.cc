#include "server/health.h"

#include <fmt/format.h>

#include "server/metrics.h"

namespace dlq {

HealthState::HealthState(Clock& clock, std::chrono::seconds max_heartbeat_age)
    : clock_(clock),
      max_age_(max_heartbeat_age),
      last_heartbeat_ns_(
          std::chrono::duration_cast<std::chrono::nanoseconds>(clock.SteadyNow().time_since_epoch()).count()) {}

void HealthState::Heartbeat() {
  last_heartbeat_ns_ =
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.SteadyNow().time_since_epoch()).count();
}

void HealthState::SetReady() {
  MutexLock lock(mu_);
  ready_ = true;
  not_ready_reason_.clear();
}

void HealthState::SetNotReady(std::string reason) {
  MutexLock lock(mu_);
  ready_ = false;
  not_ready_reason_ = std::move(reason);
}

bool HealthState::live() const {
  auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.SteadyNow().time_since_epoch()).count();
  return std::chrono::nanoseconds(now - last_heartbeat_ns_.load()) <= max_age_;
}

bool HealthState::ready() const {
  MutexLock lock(mu_);
  return ready_;
}

HttpServerResponse HealthState::Liveness() const {
  auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.SteadyNow().time_since_epoch()).count();
  auto age =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::nanoseconds(now - last_heartbeat_ns_.load()));
  HttpServerResponse response;
  if (live()) {
    response.body = "ok\n";
  } else {
    response.status = 503;
    response.body =
        fmt::format("process loop stalled: last heartbeat {}s ago (limit {}s)\n", age.count(), max_age_.count());
  }
  return response;
}

HttpServerResponse HealthState::Readiness() const {
  MutexLock lock(mu_);
  HttpServerResponse response;
  if (ready_) {
    response.body = "ready\n";
  } else {
    response.status = 503;
    response.body = "not ready: " + not_ready_reason_ + "\n";
  }
  return response;
}

HttpRouteHandler MakeMetricsHandler(const metrics::Registry& registry) {
  return [&registry](const HttpServerRequest&) {
    HttpServerResponse response;
    response.content_type = std::string(metrics::kContentType);
    response.body = registry.Render();
    return response;
  };
}

HttpRouteHandler MakeHealthzHandler(const HealthState& health) {
  return [&health](const HttpServerRequest&) { return health.Liveness(); };
}

HttpRouteHandler MakeReadyzHandler(const HealthState& health) {
  return [&health](const HttpServerRequest&) { return health.Readiness(); };
}

HttpRouteHandler MakeJsonHandler(std::function<std::string()> body) {
  return [body = std::move(body)](const HttpServerRequest&) {
    HttpServerResponse response;
    response.content_type = "application/json";
    response.body = body();
    return response;
  };
}

}  // namespace dlq
