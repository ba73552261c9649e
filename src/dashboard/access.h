// DashboardAccess: who may read message content and who may act on the
// dashboard (doc/dashboard.md). A request carries a token as
// "Authorization: Bearer TOKEN", compared in constant time. Without a write
// token every action is refused with 403, with a wrong or missing one 401;
// with a read token, content routes need it (or the write token), else 401.
// Every refusal is {"error": "..."}, counted
// (dlq_archive_dashboard_refusals_total, when a registry is given) and logged
// at most once per 10 s for reads and once per 10 s for actions, each line
// with the number held back.
//
// Thread-safety: every method may be called from many threads at once. The
// clock and the registry must outlive it.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/clock.h"
#include "common/log_throttle.h"
#include "server/http_message.h"
#include "server/metrics.h"

namespace dlq {

class DashboardAccess {
 public:
  // Empty tokens: no actions (write), open content routes (read). `registry`
  // may be null: refusals are then not counted.
  DashboardAccess(std::string read_token, std::string write_token, Clock& clock, metrics::Registry* registry);

  // Empty when the request may write; else the 401/403 response.
  std::optional<HttpServerResponse> RefuseWrite(const HttpServerRequest& request) const;
  // Empty when the request may read message content; else the 401 response.
  std::optional<HttpServerResponse> RefuseRead(const HttpServerRequest& request) const;
  // RefuseWrite or RefuseRead, as the request's route needs, from its head
  // alone (for HttpServer::CheckHeads: its body is never read).
  std::optional<HttpServerResponse> RefuseHead(const HttpServerRequest& head) const;
  // Routes whose answers hold message bodies, attributes or archive keys.
  static bool IsContentRoute(const HttpServerRequest& request);

 private:
  // Counts a refusal and logs it under `throttle`.
  void NoteRefusal(LogThrottle& throttle, std::string_view access, std::string_view event, std::string_view reason,
                   const HttpServerRequest& request) const;

  const std::string read_token_;
  const std::string write_token_;
  Clock& clock_;
  // One refusal counter per (access, reason), made once: WithLabels takes the
  // family's lock, and a client flooding refusals must not make each take it.
  std::map<std::pair<std::string_view, std::string_view>, metrics::Counter*> refusals_;
  mutable LogThrottle read_refusal_log_{std::chrono::seconds(10)};
  mutable LogThrottle write_refusal_log_{std::chrono::seconds(10)};
};

}  // namespace dlq
