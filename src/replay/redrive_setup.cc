#include "replay/redrive_setup.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

#include "replay/lambda_records.h"
#include "replay/origins.h"
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

// Where a function origin's re-failures land, each with the function's
// window: its DeadLetterConfig target and its OnFailure destination. An SQS
// queue is watched by receiving (SqsRefailureProbe), an S3 bucket by reading
// Lambda's records under the function's prefix (LambdaRecordProbe). Any other
// place (an SNS topic, a function, a bus) cannot be watched, so the run is
// refused: a re-failure sent there would go unseen.
Result<std::vector<DestinationWindow>> FunctionSinks(const GuardInputs& in, const ReplayTarget& f) {
  const std::string name = f.name.empty() ? f.url : f.name;
  if (!f.invoke_config_error.empty()) {
    return FailedPrecondition(fmt::format(
        "where function {} sends its failed events cannot be read ({}), and a canary must watch there: allow "
        "lambda:GetFunctionEventInvokeConfig, or replay without a canary ({})",
        name, f.invoke_config_error, in.terms.no_canary));
  }
  const int retries = f.max_retry_attempts.value_or(2);
  const std::string basis = fmt::format("function {}: {} tries x timeout {} s + Lambda's backoff, plus margin", name,
                                        1 + retries, std::max(f.timeout_seconds, 3));
  std::vector<DestinationWindow> sinks;
  for (const std::string* arn : {&f.dlq_arn, &f.on_failure_arn}) {
    if (arn->empty()) continue;
    const bool dead_letter = arn == &f.dlq_arn;
    const std::optional<ArnParts> parts = ParseArn(*arn);
    DestinationWindow w;
    w.queue_url = f.url;
    w.dlq_arn = *arn;
    w.window = FunctionWindow(f.timeout_seconds, retries);
    w.basis = basis;
    if (parts && parts->service == "sqs") {
      auto dlq = ResolveQueue(*in.sqs, *arn, in.region);
      if (!dlq.ok()) {
        return dlq.status().WithContext(fmt::format(
            "the {} of function {}", dead_letter ? "DeadLetterConfig target" : "OnFailure destination", name));
      }
      w.dlq_url = dlq->url;
    } else if (parts && parts->service == "s3" && !dead_letter && in.open_store) {
      w.records_bucket = parts->resource;
      w.records_function = f.name;
      w.dlq_url = fmt::format("s3://{}/{}", parts->resource, LambdaRecordsPrefix(f.name));
    } else {
      return FailedPrecondition(fmt::format(
          "function {} sends its failed events to {} ({}), which a canary cannot watch (an SQS queue or an S3 "
          "bucket it can): a re-failure would go unseen; replay without a canary ({})",
          name, *arn, dead_letter ? "DeadLetterConfig" : "OnFailure destination", in.terms.no_canary));
    }
    sinks.push_back(std::move(w));
  }
  if (sinks.empty()) {
    return FailedPrecondition(fmt::format(
        "function {} has neither a DeadLetterConfig nor an OnFailure destination, so its asynchronous re-failures "
        "land nowhere a canary can see: give it a dead-letter queue or an SQS or S3 on-failure destination, or "
        "replay without a canary ({})",
        name, in.terms.no_canary));
  }
  return sinks;
}

// The probes of `windows`' DLQs (the live form's own DLQ left out: it looks
// there itself) and of their S3 record buckets; null when there is none.
Result<std::unique_ptr<RefailureProbe>> MakeRefailureProbe(const GuardInputs& in, GuardedRedrive& g) {
  std::vector<std::string> dlqs;
  std::map<std::string, std::vector<std::string>> buckets;  // bucket -> functions
  for (const DestinationWindow& w : g.windows) {
    if (!w.records_bucket.empty()) {
      std::vector<std::string>& functions = buckets[w.records_bucket];
      if (std::find(functions.begin(), functions.end(), w.records_function) == functions.end()) {
        functions.push_back(w.records_function);
      }
    } else if (w.dlq_url != in.live_dlq && std::find(dlqs.begin(), dlqs.end(), w.dlq_url) == dlqs.end()) {
      dlqs.push_back(w.dlq_url);
    }
  }
  std::vector<std::unique_ptr<RefailureProbe>> probes;
  if (!dlqs.empty()) {
    DLQ_ASSIGN_OR_RETURN(std::unique_ptr<SqsRefailureProbe> sqs, SqsRefailureProbe::Start(*in.sqs, *in.clock, dlqs));
    probes.push_back(std::move(sqs));
  }
  for (auto& [bucket, functions] : buckets) {
    DLQ_ASSIGN_OR_RETURN(Destination at, ParseDestination("s3://" + bucket));
    auto store = in.open_store(at);
    if (!store.ok()) return store.status().WithContext("opening the on-failure bucket s3://" + bucket);
    g.buckets.push_back(*store);
    probes.push_back(std::make_unique<LambdaRecordProbe>(**store, bucket, *in.clock, std::move(functions)));
  }
  if (probes.empty()) return std::unique_ptr<RefailureProbe>();
  if (probes.size() == 1) return std::move(probes.front());
  return std::unique_ptr<RefailureProbe>(std::make_unique<RefailureProbes>(std::move(probes)));
}

}  // namespace

std::chrono::milliseconds FunctionWindow(int timeout_seconds, int retries) {
  using std::chrono::milliseconds;
  retries = std::clamp(retries, 0, 2);
  const milliseconds runs = std::chrono::seconds((1 + retries) * std::max(timeout_seconds, 3));
  const milliseconds backoff = std::chrono::minutes(retries == 0 ? 0 : retries == 1 ? 1 : 3);
  const milliseconds base = runs + backoff;
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
    DLQ_ASSIGN_OR_RETURN(std::vector<DestinationWindow> sinks, FunctionSinks(in, origin));
    for (DestinationWindow& w : sinks) g->windows.push_back(std::move(w));
  }
  std::chrono::milliseconds window{0};
  for (const DestinationWindow& w : g->windows) window = std::max(window, w.window);
  g->backlog = std::make_unique<SqsBacklogProbe>(*in.sqs, in.destinations);
  DLQ_ASSIGN_OR_RETURN(BacklogSample start, g->backlog->Sample());
  DLQ_ASSIGN_OR_RETURN(g->refailures, MakeRefailureProbe(in, *g));
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
