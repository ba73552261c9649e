#include "lambda/handler.h"

#include <fmt/format.h>

#include <optional>

#include "archiver/drainer.h"
#include "causes/archived_causes.h"
#include "common/clock.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/strings.h"
#include "common/time_util.h"

namespace dlq {
namespace {

// The cause lookup after a queue's drain.
struct CausesOutcome {
  // "" (causes off, or nothing archived), looked_up, skipped_deadline,
  // skipped_denied (auto, after a denial), skipped_other_account, error.
  std::string state;
  size_t looked_up = 0;
  size_t found = 0;
  int filter_calls = 0;
  std::string error;
};

struct QueueOutcome {
  std::string queue;   // as named
  std::string result;  // done, stopped, incomplete, failed, not_started, unresolved
  DrainResult drain;
  std::string error;
  bool work_left = false;
  std::optional<QueueInfo> info;  // when resolved
  QueueClient* sqs = nullptr;     // its account's client, when resolved
  CausesOutcome causes;
};

void WriteCausesJson(JsonWriter& w, const CausesOutcome& c) {
  w.Key("causes").BeginObject().Key("state").String(c.state);
  w.Key("looked_up").Uint(c.looked_up).Key("found").Uint(c.found).Key("filter_calls").Int(c.filter_calls);
  w.Key("error");
  if (c.error.empty()) {
    w.Null();
  } else {
    w.String(c.error);
  }
  w.EndObject();
}

void WriteQueueJson(JsonWriter& w, const QueueOutcome& q) {
  const DrainStats& s = q.drain.stats;
  w.BeginObject().Key("queue").String(q.queue).Key("result").String(q.result);
  w.Key("archived").Uint(s.archived).Key("deleted").Uint(s.deleted).Key("released").Uint(s.released);
  w.Key("delete_failures").Uint(s.delete_failures).Key("duplicates").Uint(s.duplicates);
  w.Key("received_again").Uint(s.received_again).Key("objects").Uint(s.objects);
  // ApproximateNumberOfMessages as last seen; null when never read (failed or not started).
  w.Key("remaining");
  if (s.approximate_remaining < 0) {
    w.Null();
  } else {
    w.Int(s.approximate_remaining);
  }
  w.Key("drained").Bool(q.drain.drained);
  w.Key("elapsed_ms").Int(q.drain.elapsed.count()).Key("error");
  if (q.error.empty()) {
    w.Null();
  } else {
    w.String(q.error);
  }
  if (!q.causes.state.empty()) WriteCausesJson(w, q.causes);
  w.EndObject();
}

// The summary's first fields, shared by the skipped and the full answer.
void WriteEventHead(JsonWriter& w, const LambdaEvent& ev) {
  w.BeginObject().Key("event").String(LambdaEventKindName(ev.kind));
  if (!ev.alarm_name.empty()) w.Key("alarm").String(ev.alarm_name).Key("state").String(ev.alarm_state);
  w.Key("hop").Int(ev.hop);
}

}  // namespace

Status AwsFunctionInvoker::InvokeAsync(const std::string& payload) {
  AwsRequest req;
  req.operation = "Invoke";
  req.resource = "function " + function_name_;
  req.method = "POST";
  req.path = fmt::format("/2015-03-31/functions/{}/invocations", UriEncode(function_name_));
  req.headers.emplace_back("X-Amz-Invocation-Type", "Event");
  req.headers.emplace_back("Content-Type", "application/json");
  req.body = payload;
  auto resp = client_.Call(req);
  if (!resp.ok()) return resp.status();
  if (resp->status != 202)
    return Unavailable(fmt::format("Invoke {}: HTTP {} (expected 202)", function_name_, resp->status));
  return Status::Ok();
}

std::vector<NamedLogGroup> LambdaCauses::NamedFor(const std::string& queue) const {
  std::vector<NamedLogGroup> out;
  for (const auto& [for_queue, group] : consumer_logs) {
    if (for_queue.empty() || for_queue == queue) out.push_back({group, "DLQ_ARCHIVE_CONSUMER_LOGS"});
  }
  return out;
}

std::string QueueAccount(std::string_view name_or_url) {
  if (!StartsWith(name_or_url, "http://") && !StartsWith(name_or_url, "https://")) return "";
  auto url = ParseUrl(name_or_url);
  if (!url.ok()) return "";
  auto parts = Split(url->path, '/');  // "", ACCOUNT, NAME
  if (parts.size() < 3) return "";
  return std::string(parts[1]);
}

std::string EmfLine(const std::string& metrics_namespace, const std::string& queue, uint64_t archived, uint64_t failed,
                    std::chrono::milliseconds duration, SystemTime now) {
  JsonWriter w;
  w.BeginObject().Key("_aws").BeginObject().Key("Timestamp").Int(ToUnixMillis(now));
  w.Key("CloudWatchMetrics").BeginArray().BeginObject().Key("Namespace").String(metrics_namespace);
  w.Key("Dimensions").BeginArray().BeginArray().String("Queue").EndArray().EndArray();
  w.Key("Metrics").BeginArray();
  w.BeginObject().Key("Name").String("Archived").Key("Unit").String("Count").EndObject();
  w.BeginObject().Key("Name").String("Failed").Key("Unit").String("Count").EndObject();
  w.BeginObject().Key("Name").String("Duration").Key("Unit").String("Milliseconds").EndObject();
  w.EndArray().EndObject().EndArray().EndObject();
  w.Key("Queue").String(queue).Key("Archived").Uint(archived).Key("Failed").Uint(failed);
  w.Key("Duration").Int(duration.count()).EndObject();
  return w.Take();
}

namespace {

ArchiveContext ContextFor(const QueueInfo& info, const LambdaConfig& config) {
  ArchiveContext ctx;
  ctx.queue = info.name;
  ctx.queue_url = info.url;
  ctx.region = info.region;
  ctx.account_id = info.account_id;
  ctx.archiver_version = DLQ_VERSION;
  ctx.host = config.host;
  ctx.fifo = info.fifo;
  ctx.retention = info.retention;
  return ctx;
}

// Names the queue's result after its drain (qo.drain).
void SetResult(QueueOutcome& qo) {
  const DrainResult& r = qo.drain;
  if (!r.status.ok()) {
    qo.result = "failed";
    qo.error = r.status.ToString();
  } else if (r.stopped) {
    qo.result = "stopped";
    qo.work_left = true;
  } else if (r.incomplete) {
    qo.result = "incomplete";
    qo.error = r.incomplete_reason;
    qo.work_left = true;
  } else {
    qo.result = "done";
  }
}

// Resolves and drains one queue until it is done or the clock reaches
// stop_at, and emits its metric line. A queue that cannot be resolved is
// "failed" with no drain.
QueueOutcome DrainQueue(const std::string& name, SystemTime stop_at, const DrainOptions& drain,
                        const LambdaConfig& config, LambdaDeps& deps) {
  Clock& clock = *deps.clock;
  QueueOutcome qo;
  qo.queue = name;
  auto sqs = deps.sqs_for(QueueAccount(name));
  Result<QueueInfo> info = sqs.ok() ? ResolveQueue(**sqs, name, deps.region) : Result<QueueInfo>(sqs.status());
  if (!info.ok()) {
    qo.result = "failed";
    qo.error = info.status().ToString();
    return qo;
  }
  qo.info = *info;
  qo.sqs = *sqs;
  QueueDrainer drainer(**sqs, *deps.store, clock, *info, drain, ContextFor(*info, config));
  // Stops receiving at stop_at, seen within 10 ms of the clock's time.
  RunWatched(
      clock, std::chrono::milliseconds(10), [&] { qo.drain = drainer.Run(); },
      [&] {
        if (clock.Now() < stop_at) return true;
        drainer.RequestStop();
        return false;
      });
  SetResult(qo);
  const DrainResult& r = qo.drain;
  const DrainStats& s = r.stats;
  uint64_t failed_count = s.delete_failures + s.corrupt + (r.status.ok() ? 0 : s.released);
  if (deps.emit_metric) {
    deps.emit_metric(EmfLine(config.metrics_namespace, info->name, s.archived, failed_count, r.elapsed, clock.Now()));
  }
  return qo;
}

// Looks up the causes of what the queue's drain archived (doc/causes.md),
// unless causes are off, nothing was archived or too little time is left.
// `denied`: an access denial turned causes: auto off for this invocation.
void LookUpCauses(QueueOutcome& qo, SystemTime deadline, const LambdaConfig& config, LambdaDeps& deps, bool& denied) {
  const LambdaCauses& c = config.causes;
  if (c.mode == LambdaCauses::Mode::kOff || deps.logs == nullptr || deps.lambda_api == nullptr || !qo.info ||
      qo.sqs == nullptr || qo.drain.keys.empty()) {
    return;
  }
  CausesOutcome& out = qo.causes;
  Clock& clock = *deps.clock;
  if (!QueueAccount(qo.queue).empty()) {
    // Its consumers and their logs are in another account: the function's
    // own Logs and Lambda clients cannot see them.
    out.state = "skipped_other_account";
    return;
  }
  if (denied) {
    out.state = "skipped_denied";
    return;
  }
  if (deadline - clock.Now() < c.min_time_left) {
    out.state = "skipped_deadline";
    Log().Log(LogLevel::kInfo, "lambda.causes_skipped",
              {{"queue", qo.info->name},
               {"reason", fmt::format("less than {} ms left before the deadline; stats --causes looks them up later",
                                      c.min_time_left.count())}});
    return;
  }
  ArchivedCausesRequest request;
  request.dlq = *qo.info;
  request.archive_prefix = config.drain.prefix;
  request.keys = qo.drain.keys;
  request.named_log_groups = c.NamedFor(qo.info->name);
  request.samples = c.samples;
  request.max_filter_calls = c.max_filter_calls;
  ArchivedCausesCache cache;
  const ArchivedCausesResult r = LookUpArchivedCauses(
      request, cache, ArchivedCausesClients{*deps.store, *qo.sqs, *deps.lambda_api, *deps.logs, clock, {}, {}});
  out.state = "looked_up";
  out.looked_up = r.explain.records.size();
  out.found = r.found;
  out.filter_calls = r.explain.calls.filter_log_events;
  if (!r.sidecar.ok()) {
    out.state = "error";
    out.error = "reading the kept causes: " + r.sidecar.ToString();
  } else if (!r.kept.ok()) {
    out.state = "error";
    out.error = "keeping the causes: " + r.kept.ToString();
  }
  Log().Log(out.error.empty() ? LogLevel::kInfo : LogLevel::kWarn, "lambda.causes_looked_up",
            {{"queue", qo.info->name},
             {"messages_read", static_cast<uint64_t>(r.messages_read)},
             {"looked_up", static_cast<uint64_t>(out.looked_up)},
             {"found", static_cast<uint64_t>(out.found)},
             {"calls", DescribeExplainCalls(r.explain)},
             {"kept_in", r.kept_in},
             {"error", out.error}});
  if (r.denial.empty()) return;
  if (c.mode == LambdaCauses::Mode::kAuto) {
    denied = true;
    Log().Log(LogLevel::kWarn, "lambda.causes_off",
              {{"queue", qo.info->name},
               {"reason", r.denial},
               {"note",
                "DLQ_ARCHIVE_CAUSES=auto stops the lookups for the rest of this invocation; grant the stack's "
                "LookUpCauses statements (doc/deployment.md), or set DLQ_ARCHIVE_CAUSES=off"}});
  } else {
    Log().Log(LogLevel::kWarn, "lambda.causes_denied", {{"queue", qo.info->name}, {"reason", r.denial}});
  }
}

// Hands the queues with work left to the next invocation: "none", "invoked",
// "schedule" (no invoker), "hop_limit" or "failed".
std::string FollowUp(const std::vector<std::string>& remaining, const LambdaEvent& ev, const LambdaConfig& config,
                     LambdaDeps& deps) {
  if (remaining.empty()) return "none";
  if (deps.invoker == nullptr) return "schedule";
  if (ev.hop + 1 > config.max_hops) return "hop_limit";
  if (Status st = deps.invoker->InvokeAsync(BuildDirectInvokePayload(remaining, ev.policy, ev.hop + 1)); !st.ok()) {
    Log().Log(LogLevel::kWarn, "lambda.follow_up_failed", {{"error", st.ToString()}});
    return "failed";
  }
  return "invoked";
}

}  // namespace

LambdaOutcome HandleLambdaEvent(std::string_view event_json, SystemTime deadline, const LambdaConfig& config,
                                LambdaDeps& deps) {
  auto parsed = ParseLambdaEvent(event_json);
  if (!parsed.ok()) return {false, parsed.status().message(), "DlqArchive.InvalidEvent"};
  const LambdaEvent& ev = *parsed;
  Clock& clock = *deps.clock;

  if (!ev.ShouldArchive()) {
    JsonWriter w;
    WriteEventHead(w, ev);
    w.Key("complete").Bool(true).Key("skipped").String("alarm state is not ALARM");
    w.Key("queues").BeginArray().EndArray().EndObject();
    return {true, w.Take(), ""};
  }

  std::vector<std::string> names = ev.queues.empty() ? config.queues : ev.queues;
  if (names.empty()) {
    return {false,
            fmt::format("{} event names no queue and DLQ_ARCHIVE_QUEUES is empty: set DLQ_ARCHIVE_QUEUES or pass "
                        "\"queues\"",
                        LambdaEventKindName(ev.kind)),
            "DlqArchive.NoQueues"};
  }
  DrainOptions drain = config.drain;
  if (ev.policy) {
    drain.selection = ev.policy->selection;
    drain.max_messages = ev.policy->max_messages;
  }

  SystemTime start = clock.Now();
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - start);
  auto margin = std::min(config.deadline_margin, std::max(left / 2, std::chrono::milliseconds(0)));
  SystemTime stop_at = deadline - margin;

  std::vector<QueueOutcome> outcomes;
  bool failed = false;
  bool causes_denied = false;
  for (const std::string& name : names) {
    if (failed || clock.Now() >= stop_at) {
      QueueOutcome qo;
      qo.queue = name;
      qo.result = "not_started";
      qo.work_left = !failed;
      outcomes.push_back(std::move(qo));
      continue;
    }
    outcomes.push_back(DrainQueue(name, stop_at, drain, config, deps));
    failed = outcomes.back().result == "failed";
    LookUpCauses(outcomes.back(), deadline, config, deps, causes_denied);
  }

  std::vector<std::string> remaining;
  for (const auto& q : outcomes) {
    if (q.work_left) remaining.push_back(q.queue);
  }
  const std::string follow_up = FollowUp(remaining, ev, config, deps);

  JsonWriter w;
  WriteEventHead(w, ev);
  w.Key("complete").Bool(remaining.empty() && !failed).Key("follow_up").String(follow_up);
  w.Key("destination").String(config.destination_uri).Key("queues").BeginArray();
  for (const QueueOutcome& q : outcomes) WriteQueueJson(w, q);
  w.EndArray().EndObject();
  if (failed) return {false, w.Take(), "DlqArchive.QueueFailed"};
  return {true, w.Take(), ""};
}

Status RunLambdaLoop(RuntimeClient& runtime, const std::function<LambdaOutcome(const Invocation&)>& handle,
                     const std::atomic<bool>& stop) {
  while (!stop) {
    auto inv = runtime.Next();
    if (!inv.ok()) return inv.status();
    LambdaOutcome outcome = handle(*inv);
    Status st = outcome.ok ? runtime.Respond(inv->request_id, outcome.body)
                           : runtime.ReportError(inv->request_id, outcome.error_type, outcome.body);
    if (!st.ok()) {
      // The invocation times out on Lambda's side; the next one may work.
      Log().Log(LogLevel::kError, "lambda.answer_failed", {{"request_id", inv->request_id}, {"error", st.ToString()}});
    }
  }
  return Status::Ok();
}

}  // namespace dlq
