#include "replay/redrive_setup.h"

#include <fmt/format.h>

#include <algorithm>

#include "sqs/queue_info.h"

namespace dlq {
namespace {

// Each destination's window and DLQ: a destination without a DLQ stops the run before anything is sent.
Result<std::vector<DestinationWindow>> ReadWindows(const GuardInputs& in) {
  std::vector<DestinationWindow> windows;
  for (const std::string& url : in.destinations) {
    auto w = ReadProcessingWindow(*in.sqs, url, in.region);
    if (!w.ok() && w.status().code() == ErrorCode::kFailedPrecondition) {
      return FailedPrecondition(
          fmt::format("{}; a canary cannot tell whether the fix works there: give the queue a RedrivePolicy, or "
                      "replay without a canary ({})",
                      w.status().message(), in.terms.no_canary));
    }
    if (!w.ok()) return w.status();
    windows.push_back(std::move(*w));
  }
  return windows;
}

// A function origin's window and the DLQ its re-failures land in.
Result<DestinationWindow> FunctionOriginWindow(const GuardInputs& in, const ReplayTarget& f) {
  if (f.dlq_arn.empty()) {
    return FailedPrecondition(fmt::format(
        "function {} has no DeadLetterConfig, so its asynchronous re-failures land nowhere a canary can see: give it "
        "a dead-letter queue, or replay without a canary ({})",
        f.name.empty() ? f.url : f.name, in.terms.no_canary));
  }
  auto dlq = ResolveQueue(*in.sqs, f.dlq_arn, in.region);
  if (!dlq.ok()) return dlq.status().WithContext(fmt::format("the DeadLetterConfig target of function {}", f.name));
  DestinationWindow w;
  w.queue_url = f.url;
  w.dlq_arn = f.dlq_arn;
  w.dlq_url = dlq->url;
  w.window = FunctionWindow(f.timeout_seconds);
  return w;
}

}  // namespace

std::chrono::milliseconds FunctionWindow(int timeout_seconds) {
  using std::chrono::milliseconds;
  const milliseconds runs = std::chrono::seconds(3 * std::max(timeout_seconds, 3));
  const milliseconds base = runs + std::chrono::minutes(3);
  return base + std::max<milliseconds>(std::chrono::seconds(10), base / 10);
}

Result<std::unique_ptr<GuardedRedrive>> PrepareGuard(const RedrivePlan& plan, const GuardInputs& in) {
  if (in.destinations.empty() && in.origins.empty()) {
    return FailedPrecondition(fmt::format(
        "a canary needs the destination before anything is sent, and it cannot be told yet (messages without "
        "DeadLetterQueueSourceArn and no single redrive source); use {}, or {}",
        in.terms.to_queue, in.terms.no_canary));
  }
  auto g = std::make_unique<GuardedRedrive>();
  DLQ_ASSIGN_OR_RETURN(g->windows, ReadWindows(in));
  bool functions = false;
  for (const ReplayTarget& origin : in.origins) {
    if (origin.kind != TargetKind::kFunction) continue;
    functions = true;
    DLQ_ASSIGN_OR_RETURN(DestinationWindow w, FunctionOriginWindow(in, origin));
    g->windows.push_back(std::move(w));
  }
  std::chrono::milliseconds window{0};
  std::vector<std::string> dlqs;  // the live form looks at the DLQ it reads itself (LiveReplayOptions::guard)
  for (const DestinationWindow& w : g->windows) {
    window = std::max(window, w.window);
    if (w.dlq_url != in.live_dlq && std::find(dlqs.begin(), dlqs.end(), w.dlq_url) == dlqs.end()) {
      dlqs.push_back(w.dlq_url);
    }
  }
  g->backlog = std::make_unique<SqsBacklogProbe>(*in.sqs, in.destinations);
  DLQ_ASSIGN_OR_RETURN(BacklogSample start, g->backlog->Sample());
  if (!dlqs.empty()) {
    DLQ_ASSIGN_OR_RETURN(g->refailures, SqsRefailureProbe::Start(*in.sqs, *in.clock, dlqs));
  }
  g->options = MakeRedriveOptions(plan, in.selection, window, start.visible);
  g->options.stop = in.stop;
  g->options.synchronous_canary = functions;
  g->guard = std::make_unique<RedriveGuard>(g->options, in.selection, *in.clock, *g->backlog, g->refailures.get());
  return g;
}

Result<std::unique_ptr<GuardedRedrive>> PrepareBackpressure(const RedrivePlan& plan, const GuardInputs& in) {
  if (in.destinations.empty() && in.origins.empty()) {
    return FailedPrecondition(
        fmt::format("{} needs the destination before anything is sent, and it cannot be told yet (messages without "
                    "DeadLetterQueueSourceArn and no single redrive source); use {}",
                    in.terms.max_backlog, in.terms.to_queue));
  }
  auto g = std::make_unique<GuardedRedrive>();
  g->backlog = std::make_unique<SqsBacklogProbe>(*in.sqs, in.destinations);
  g->options = MakeBackpressureOptions(plan);
  g->options.stop = in.stop;
  g->guard = std::make_unique<RedriveGuard>(g->options, in.selection, *in.clock, *g->backlog, nullptr);
  return g;
}

RedriveAudit GuardAudit(const RedriveStatus& s, const RedriveOptions& o) {
  RedriveAudit a;
  a.canary = o.canary;
  for (double f : o.ramp) a.ramp.push_back(f * 100);
  a.window_s = std::chrono::duration<double>(o.window).count();
  a.outcome = std::string(RedrivePhaseName(s.phase));
  a.refailed = s.refailures.size();
  a.dlq_receives = s.dlq_receives;
  a.paused_s = std::chrono::duration<double>(s.paused_for).count();
  return a;
}

std::vector<FailedAgainMessage> FailedAgainOf(const RedriveStatus& s) {
  std::vector<FailedAgainMessage> out;
  for (const RefailedMessage& r : s.refailures) {
    out.push_back({r.message_id, r.new_message_id, r.destination, r.dlq, r.found_at});
  }
  return out;
}

}  // namespace dlq
