#include "app/replay_redrive.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

#include "common/text.h"
#include "common/time_util.h"

namespace dlq {
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
  std::vector<std::string> watched;  // where re-failures are looked for
  for (const DestinationWindow& w : g.windows) {
    if (std::find(watched.begin(), watched.end(), w.dlq_url) == watched.end()) watched.push_back(w.dlq_url);
    if (w.window != o.window || !from.empty()) continue;
    from = w.basis.empty() ? fmt::format(
                                 " (from {}: maxReceiveCount {} x VisibilityTimeout {} s + DelaySeconds {} s, "
                                 "plus margin)",
                                 w.queue_url, w.max_receive_count, w.visibility_timeout.count(), w.delay.count())
                           : fmt::format(" (from {})", w.basis);
  }
  std::string line =
      fmt::format("the real run is guarded: canary {}, ramp {} %, window {:.0f} s{}, backlog bound {}", o.canary,
                  RampText(o), std::chrono::duration<double>(o.window).count(), from, o.max_backlog);
  if (!watched.empty()) line += fmt::format("; re-failures looked for in {}", fmt::join(watched, ", "));
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

std::string BreachText(const RedriveStatus& s, const std::string& why, int64_t not_sent, bool live) {
  std::string out = fmt::format("stopped: {}\n", TerminalSafe(why));
  std::string rest = not_sent < 0 ? "the rest" : fmt::format("{}", not_sent);
  out += fmt::format("stopped: sent {}, re-failed {}, not sent {} (still in {})\n", s.sent, s.refailures.size(), rest,
                     live ? "the DLQ" : "the archive");
  for (const RefailedMessage& r : s.refailures) {
    out += fmt::format("failed again: {} -> {} in {} at {}\n", TerminalSafe(r.message_id),
                       TerminalSafe(r.new_message_id), TerminalSafe(r.dlq), FormatIso8601(r.found_at));
  }
  return out;
}

}  // namespace dlq
