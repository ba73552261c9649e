// The daemon's probe and scrape answers: liveness and readiness
// (/healthz, /readyz) and the route handlers that serve them, /metrics and
// plain JSON documents.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "common/clock.h"
#include "common/mutex.h"
#include "server/http_message.h"

namespace dlq {

namespace metrics {
class Registry;
}

// Liveness and readiness of the daemon, answered by /healthz and /readyz.
// Thread-safe. Holds a reference to `clock`, which must outlive it.
class HealthState {
 public:
  // Live while the last Heartbeat() (or construction) is at most
  // `max_heartbeat_age` old. Not ready until SetReady().
  HealthState(Clock& clock, std::chrono::seconds max_heartbeat_age);

  void Heartbeat();
  // First collection completed and the configuration is valid.
  void SetReady();
  void SetNotReady(std::string reason);

  bool live() const;
  bool ready() const;
  // 200 "ok" or 503 with the heartbeat's age.
  HttpServerResponse Liveness() const;
  // 200 "ready" or 503 with the reason.
  HttpServerResponse Readiness() const;

 private:
  Clock& clock_;
  const std::chrono::seconds max_age_;
  std::atomic<int64_t> last_heartbeat_ns_;  // steady clock
  mutable Mutex mu_;
  bool ready_ DLQ_GUARDED_BY(mu_) = false;
  std::string not_ready_reason_ DLQ_GUARDED_BY(mu_) = "first collection has not completed";
};

// Route handlers for the daemon; the referenced objects must outlive the server.
HttpRouteHandler MakeMetricsHandler(const metrics::Registry& registry);
HttpRouteHandler MakeHealthzHandler(const HealthState& health);
HttpRouteHandler MakeReadyzHandler(const HealthState& health);
// /api/queues: `body` returns the JSON document (the lead builds it).
HttpRouteHandler MakeJsonHandler(std::function<std::string()> body);

}  // namespace dlq
