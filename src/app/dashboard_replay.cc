#include "app/dashboard_replay.h"

#include <memory>
#include <string_view>

#include "app/redrive_flags.h"
#include "app/replay_render.h"
#include "replay/redrive_guard.h"
#include "replay/replay_run.h"

namespace dlq {

ReplayProgress ToDashboardProgress(const RedriveStatus& s) {
  ReplayProgress p;
  p.phase = std::string(RedrivePhaseName(s.phase));
  p.reason = s.reason;
  p.step = s.step;
  p.steps = s.steps;
  p.total = s.total;
  p.sent = s.sent;
  p.refailed = s.refailed;
  p.dlq_receives = s.dlq_receives;
  p.backlog = s.backlog;
  p.backlog_age = s.backlog_age;
  p.paused_for = s.paused_for;
  p.refailures.reserve(s.refailures.size());
  for (const RefailedMessage& r : s.refailures) {
    p.refailures.push_back({.message_id = r.message_id,
                            .new_message_id = r.new_message_id,
                            .destination = r.destination,
                            .dlq = r.dlq,
                            .found_at = r.found_at});
  }
  return p;
}

DashboardReplayFn MakeDashboardReplay(Clock& clock) {
  return [&clock](const QueueArchiveAccess& access, const DashboardReplaySelection& what, const std::string& actor,
                  const ReplayJobControl& control) -> DashboardReplayResult {
    DashboardReplayResult result;
    auto refuse = [&result](const Status& st) {
      result.exit_code = ReplayExitCode(ReplayEnd::kBadInput);
      result.errors = ReplayErrorLine(st.message());
      return result;
    };
    FilterFlags flags;
    flags.queues = {access.queue.name};
    flags.ids = what.ids;
    flags.fingerprint = what.fingerprint;
    for (const std::string& field : what.fingerprint_options.fields) {
      if (!flags.fingerprint_fields.empty()) flags.fingerprint_fields += ",";
      flags.fingerprint_fields += field;
    }
    auto filter = BuildFilter(flags, clock.Now());
    if (!filter.ok()) return refuse(filter.status());
    if (Status st = filter->CompileRegex(); !st.ok()) return refuse(st);
    auto plan = ParseRedriveFlags(RedriveFlags{}, /*to_source=*/true);  // the guarded defaults (also to origin)
    if (!plan.ok()) return refuse(plan.status());
    ReplayRunRequest rq;
    rq.from = access.destination;
    rq.filter = std::move(*filter);
    rq.dry_run = what.dry_run;
    rq.max_dry_run_entries = 1000;  // the summary lists these; every one is counted
    rq.to_source = !what.to_origin;
    rq.to_origin = what.to_origin;
    rq.function = what.function;
    rq.plan = std::move(*plan);
    ReplayRunDeps deps;
    deps.sqs = access.clients.sqs;
    ObjectStore* store = access.clients.store;
    deps.open_store = [store](const Destination&) -> Result<std::shared_ptr<ObjectStore>> {
      if (store == nullptr) return FailedPrecondition("the queue's group has no archive store");
      return std::shared_ptr<ObjectStore>(store, [](ObjectStore*) {});  // the group's store, lent to the run
    };
    deps.caller_arn = [actor]() -> Result<std::string> { return actor; };
    deps.region = access.queue.region.empty() ? access.clients.default_region : access.queue.region;
    deps.clock = &clock;
    deps.lambda = access.clients.lambda;
    deps.sns = access.clients.sns;
    deps.events = access.clients.events;
    deps.http = access.clients.http;
    ReplayRendering rendering;
    rendering.list_would_send = false;  // counted per destination below
    TextSink sink{[&result](std::string_view s) { result.output += s; },
                  [&result](std::string_view s) { result.errors += s; }};
    ReplayTextObserver observer(rq, rendering, sink, nullptr, clock);
    if (control.report) {
      observer.on_guard = [report = control.report](const RedriveStatus& s) { report(ToDashboardProgress(s)); };
    }
    const std::atomic<bool> never{false};
    const ReplayRunResult run = RunReplayUseCase(rq, deps, observer, control.stop != nullptr ? *control.stop : never);
    for (const auto& [destination, n] : run.would_send_by_destination) result.destinations[destination] += n;
    result.exit_code = RenderReplayResult(rendering, run, sink);
    result.summary = run.reached_sending ? ReplayResultJson(run, result.exit_code) : "";
    return result;
  };
}

}  // namespace dlq
