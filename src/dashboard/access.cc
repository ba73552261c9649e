// Who may read and act on the dashboard (access.h).
#include "dashboard/access.h"

#include <optional>
#include <utility>

#include "common/crypto.h"
#include "common/log.h"
#include "common/strings.h"
#include "common/text.h"
#include "dashboard/request.h"
#include "dashboard/response.h"

namespace dlq {

using dashboard_internal::Error;
using dashboard_internal::Header;

DashboardAccess::DashboardAccess(std::string read_token, std::string write_token, Clock& clock,
                                 metrics::Registry* registry)
    : read_token_(std::move(read_token)), write_token_(std::move(write_token)), clock_(clock) {
  if (registry != nullptr) {
    metrics::CounterFamily& family = registry->AddCounter(
        "dlq_archive_dashboard_refusals_total",
        "Dashboard requests refused for want of a token, by access (read: message content, write: an action) "
        "and reason (no_token, wrong_token, actions_disabled).",
        {"access", "reason"});
    for (const auto& [access, reason] : {std::pair<std::string_view, std::string_view>{"read", "no_token"},
                                         {"read", "wrong_token"},
                                         {"write", "no_token"},
                                         {"write", "wrong_token"},
                                         {"write", "actions_disabled"}}) {
      refusals_[{access, reason}] = &family.WithLabels({std::string(access), std::string(reason)});
    }
  }
}

bool DashboardAccess::IsContentRoute(const HttpServerRequest& request) {
  const std::string& path = request.path;
  if (path == "/api/search" || StartsWith(path, "/api/messages/")) return true;
  // A replay's status names the messages that failed again.
  const bool get = request.method == "GET" || request.method == "HEAD";
  if (get && (path == "/api/replays" || StartsWith(path, "/api/replays/"))) return true;
  std::optional<QueuePath> qp = ParseQueuePath(path);
  return qp && (qp->view == "failures" || qp->view == "objects");
}

std::optional<HttpServerResponse> DashboardAccess::RefuseRead(const HttpServerRequest& request) const {
  if (read_token_.empty()) return std::nullopt;
  std::string_view auth = Header(request, "Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (auth.size() > kBearer.size() && IEquals(auth.substr(0, kBearer.size()), kBearer)) {
    std::string_view given = Trim(auth.substr(kBearer.size()));
    // Both comparisons always run: the time taken does not tell which token is set.
    const bool read = ConstantTimeEquals(given, read_token_);
    const bool write = !write_token_.empty() && ConstantTimeEquals(given, write_token_);
    if (read || write) return std::nullopt;
  }
  HttpServerResponse r =
      Error(401,
            "message content needs the dashboard's read token (or its write token) as 'Authorization: Bearer "
            "TOKEN'");
  r.headers.emplace_back("WWW-Authenticate", "Bearer");
  NoteRefusal(read_refusal_log_, "read", "dashboard_read_refused", auth.empty() ? "no_token" : "wrong_token", request);
  return r;
}

std::optional<HttpServerResponse> DashboardAccess::RefuseWrite(const HttpServerRequest& request) const {
  if (write_token_.empty()) {
    NoteRefusal(write_refusal_log_, "write", "dashboard_action_refused", "actions_disabled", request);
    return Error(403, "actions are disabled: this daemon has no dashboard.write_token configured");
  }
  std::string_view auth = Header(request, "Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (auth.size() <= kBearer.size() || !IEquals(auth.substr(0, kBearer.size()), kBearer) ||
      !ConstantTimeEquals(Trim(auth.substr(kBearer.size())), write_token_)) {
    HttpServerResponse r = Error(401, "this action needs the dashboard's write token as 'Authorization: Bearer TOKEN'");
    r.headers.emplace_back("WWW-Authenticate", "Bearer");
    NoteRefusal(write_refusal_log_, "write", "dashboard_action_refused", auth.empty() ? "no_token" : "wrong_token",
                request);
    return r;
  }
  return std::nullopt;
}

std::optional<HttpServerResponse> DashboardAccess::RefuseHead(const HttpServerRequest& head) const {
  const bool get = head.method == "GET" || head.method == "HEAD";
  if (!get && StartsWith(head.path, "/api/")) return RefuseWrite(head);  // every action needs the write token
  if (IsContentRoute(head)) return RefuseRead(head);
  return std::nullopt;
}

void DashboardAccess::NoteRefusal(LogThrottle& throttle, std::string_view access, std::string_view event,
                                  std::string_view reason, const HttpServerRequest& request) const {
  if (auto it = refusals_.find({access, reason}); it != refusals_.end()) it->second->Inc();
  // One line per 10 s at most: a client probing for a token cannot flood the log.
  int64_t suppressed = 0;
  if (!throttle.Admit(clock_.SteadyNow(), &suppressed)) return;
  Log().Log(LogLevel::kWarn, event,
            {{"path", OneLinePreview(request.path, 120)},
             {"client", request.remote_addr},
             {"reason", reason},
             {"suppressed_since_last", suppressed}});
}

}  // namespace dlq
