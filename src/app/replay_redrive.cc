#include "app/replay_redrive.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "common/text.h"
#include "common/time_util.h"

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
                      "replay without a canary (--no-canary)",
                      w.status().message()));
    }
    if (!w.ok()) return w.status();
    windows.push_back(std::move(*w));
  }
  return windows;
}

}  // namespace

Result<std::unique_ptr<GuardedRedrive>> PrepareGuard(const RedrivePlan& plan, const GuardInputs& in) {
  if (in.destinations.empty()) {
    return FailedPrecondition(
        "a canary needs the destination before anything is sent, and it cannot be told yet (messages without "
        "DeadLetterQueueSourceArn and no single redrive source); use --to-queue, or --no-canary");
  }
  auto g = std::make_unique<GuardedRedrive>();
  DLQ_ASSIGN_OR_RETURN(g->windows, ReadWindows(in));
  std::chrono::milliseconds window{0};
  std::vector<std::string> dlqs;  // the live form looks at the DLQ it reads itself (LiveReplayOptions::guard)
  for (const DestinationWindow& w : g->windows) {
    window = std::max(window, w.window);
    if (w.dlq_url != in.live_dlq) dlqs.push_back(w.dlq_url);
  }
  g->backlog = std::make_unique<SqsBacklogProbe>(*in.sqs, in.destinations);
  DLQ_ASSIGN_OR_RETURN(BacklogSample start, g->backlog->Sample());
  if (!dlqs.empty()) {
    DLQ_ASSIGN_OR_RETURN(g->refailures, SqsRefailureProbe::Start(*in.sqs, *in.clock, dlqs));
  }
  g->options = MakeRedriveOptions(plan, in.selection, window, start.visible);
  g->options.stop = in.stop;
  g->guard = std::make_unique<RedriveGuard>(g->options, in.selection, *in.clock, *g->backlog, g->refailures.get());
  return g;
}

Result<std::unique_ptr<GuardedRedrive>> PrepareBackpressure(const RedrivePlan& plan, const GuardInputs& in) {
  if (in.destinations.empty()) {
    return FailedPrecondition(
        "--max-backlog needs the destination before anything is sent, and it cannot be told yet (messages without "
        "DeadLetterQueueSourceArn and no single redrive source); use --to-queue");
  }
  auto g = std::make_unique<GuardedRedrive>();
  g->backlog = std::make_unique<SqsBacklogProbe>(*in.sqs, in.destinations);
  g->options = MakeBackpressureOptions(plan);
  g->options.stop = in.stop;
  g->guard = std::make_unique<RedriveGuard>(g->options, in.selection, *in.clock, *g->backlog, nullptr);
  return g;
}

namespace {

std::string RampText(const RedriveOptions& o) {
  std::string ramp;
  for (double f : o.ramp) ramp += fmt::format("{}{:g}", ramp.empty() ? "" : ",", f * 100);
  return ramp;
}

}  // namespace

std::string BacklogBoundText(const RedriveOptions& o) {
  std::vector<std::string> parts;
  if (o.max_backlog > 0)
    parts.push_back(fmt::format("{} visible messages (resumes at {})", o.max_backlog, o.max_backlog / 2));
  if (o.max_backlog_age > std::chrono::seconds(0)) {
    parts.push_back(fmt::format("oldest message {} s", o.max_backlog_age.count()));
  }
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::string GuardPlanLine(const GuardedRedrive& g) {
  const RedriveOptions& o = g.options;
  if (o.BackpressureOnly()) {
    return fmt::format("the real run has no canary; it pauses while the destination's backlog is over its bound: {}",
                       BacklogBoundText(o));
  }
  std::string from;
  for (const DestinationWindow& w : g.windows) {
    if (w.window != o.window) continue;
    from = fmt::format(" (from {}: maxReceiveCount {} x VisibilityTimeout {} s + DelaySeconds {} s, plus margin)",
                       w.queue_url, w.max_receive_count, w.visibility_timeout.count(), w.delay.count());
    break;
  }
  std::string line =
      fmt::format("the real run is guarded: canary {}, ramp {} %, window {:.0f} s{}, backlog bound {}", o.canary,
                  RampText(o), std::chrono::duration<double>(o.window).count(), from, o.max_backlog);
  if (o.check < o.window) {
    line += fmt::format(
        "; --check {:.0f} s is shorter than the window: a step's re-failures can come back after the next step was "
        "sent, so more messages reach a consumer that still fails, and the breach is found in a later step",
        std::chrono::duration<double>(o.check).count());
  }
  return line;
}

std::string GuardSummary(const RedriveStatus& s, const RedriveOptions& o) {
  if (o.BackpressureOnly()) {
    return fmt::format("backlog bound: {}; paused {:.1f} s", BacklogBoundText(o),
                       std::chrono::duration<double>(s.paused_for).count());
  }
  // What was sent in each step, not what was planned: a run stopped in its
  // canary, or with less selected than the canary, says so.
  const uint64_t canary_sent = s.sent_per_step.empty() ? 0 : s.sent_per_step.front();
  int steps_sent = 0;
  for (size_t i = 1; i < s.sent_per_step.size(); ++i) steps_sent += s.sent_per_step[i] > 0 ? 1 : 0;
  return fmt::format(
      "guard: {}: canary sent {} (planned {}), ramp {} % ({} of {} steps sent), window {:.0f} s, re-failed {}, {} "
      "DLQ messages received to look, paused {:.1f} s",
      RedrivePhaseName(s.phase), canary_sent, o.canary, RampText(o), steps_sent, s.steps,
      std::chrono::duration<double>(o.window).count(), s.refailed, s.dlq_receives,
      std::chrono::duration<double>(s.paused_for).count());
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

void PrintBreach(const RedriveStatus& s, const std::string& why, int64_t not_sent, bool live, std::FILE* err) {
  std::fprintf(err, "stopped: %s\n", TerminalSafe(why).c_str());
  std::string rest = not_sent < 0 ? "the rest" : fmt::format("{}", not_sent);
  std::fprintf(err, "stopped: sent %llu, re-failed %zu, not sent %s (still in %s)\n",
               static_cast<unsigned long long>(s.sent), s.refailures.size(), rest.c_str(),
               live ? "the DLQ" : "the archive");
  for (const RefailedMessage& r : s.refailures) {
    std::fprintf(err, "failed again: %s -> %s in %s at %s\n", TerminalSafe(r.message_id).c_str(),
                 TerminalSafe(r.new_message_id).c_str(), TerminalSafe(r.dlq).c_str(),
                 FormatIso8601(r.found_at).c_str());
  }
}

}  // namespace dlq
