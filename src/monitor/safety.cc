#include "monitor/safety.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace dlq {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kCloudWatchExtraDelay = 120;  // seconds after a period closes before its datapoint is usable

double Secs(std::chrono::seconds s) {
  return static_cast<double>(s.count());
}

std::string Num(double v) {
  if (std::isinf(v)) return v > 0 ? "unbounded" : "-unbounded";
  return fmt::format("{:.0f} s", v);
}

// "is archived 1h (3600 s) before it expires" / "can expire 4d (345721 s) before it is archived".
std::string MarginText(double margin) {
  if (std::isinf(margin)) return margin > 0 ? "is archived long before it expires" : "is never archived in time";
  if (margin >= 0) return fmt::format("is archived {} before it expires", FormatSpan(margin));
  return fmt::format("can expire {} before it is archived", FormatSpan(-margin));
}

double EffectiveSourceRetention(const QueueSafetyInput& in) {
  return in.source_retention.count() > 0 ? Secs(in.source_retention) : Secs(kSqsMaxRetention);
}

double MetricDelay(const QueueSafetyInput& in) {
  if (in.metric_delay.count() >= 0) return Secs(in.metric_delay);
  return in.age_source == AgeSource::kCloudWatchAge ? Secs(in.expiry_alarm.period) + kCloudWatchExtraDelay : 0;
}

}  // namespace

std::vector<DelayTerm> DetectionDelayTerms(const QueueSafetyInput& in) {
  const AlarmSpec& a = in.expiry_alarm;
  const double alarm_delay = a.datapoints_to_alarm * Secs(a.period);
  const DelayTerm alarm{alarm_delay, fmt::format("{} x {} s alarm periods", a.datapoints_to_alarm, a.period.count())};
  const DelayTerm metric{MetricDelay(in), "metric delay"};
  if (in.age_source == AgeSource::kCloudWatchAge) return {alarm, metric};
  const DelayTerm look = in.sweep_interval.count() > 0 ? DelayTerm{Secs(in.sweep_interval), "sweep interval"} : alarm;
  return {look, {Secs(in.collection_interval), "collection interval"}, metric};
}

std::string DetectionDelayText(const QueueSafetyInput& in) {
  double total = 0;
  std::string terms;
  for (const DelayTerm& t : DetectionDelayTerms(in)) {
    total += t.seconds;
    if (!terms.empty()) terms += " + ";
    terms += fmt::format("{} {}", Num(t.seconds), t.what);
  }
  return fmt::format("{} ({})", Num(total), terms);
}

namespace {

// Time from "the message's age reached the threshold" to "an archive run starts".
double DetectionDelay(const QueueSafetyInput& in) {
  double total = 0;
  for (const DelayTerm& t : DetectionDelayTerms(in)) total += t.seconds;
  return total;
}

// Time an archive run needs to reach a message with `depth` messages ahead;
// +inf when runs stop before the queue is drained.
double DrainTime(const QueueSafetyInput& in) {
  const double by_rate = static_cast<double>(in.depth) / in.drain_rate;
  if (in.max_messages_per_run <= 0 || in.depth <= in.max_messages_per_run) return by_rate;
  const bool reruns = in.sweep_interval.count() > 0 || in.rerun_while_alarm;
  if (!reruns) return kInf;
  const double cadence = in.sweep_interval.count() > 0 ? Secs(in.sweep_interval) : Secs(in.expiry_alarm.period);
  const double runs = std::ceil(static_cast<double>(in.depth) / static_cast<double>(in.max_messages_per_run));
  return std::max(by_rate, (runs - 1) * cadence);
}

}  // namespace

std::string DrainTimeText(const QueueSafetyInput& in) {
  return fmt::format("{} ({} messages, {}, at {:.0f} msg/s, {})", Num(DrainTime(in)), in.depth, in.depth_source,
                     in.drain_rate, in.drain_rate_source);
}

std::string FormatSpan(double v) {
  if (std::isinf(v)) return v > 0 ? "unbounded" : "-unbounded";
  if (std::isnan(v)) return "unknown";
  const double rounded = std::round(v);
  const bool negative = rounded < 0;
  auto total = static_cast<int64_t>(std::fabs(rounded));
  if (total < 60) return fmt::format("{:.0f} s", rounded);
  static constexpr std::pair<int64_t, const char*> kUnits[] = {{86400, "d"}, {3600, "h"}, {60, "m"}, {1, "s"}};
  std::string parts;
  int shown = 0;
  int64_t rest = total;
  for (const auto& [size, unit] : kUnits) {
    int64_t n = rest / size;
    rest %= size;
    if (shown == 0 && n == 0) continue;
    if (shown > 0 && n == 0) break;  // "14d", not "14d 0h"
    if (!parts.empty()) parts += ' ';
    parts += fmt::format("{}{}", n, unit);
    if (++shown == 2) break;
  }
  return fmt::format("{}{} ({:.0f} s)", negative ? "-" : "", parts, rounded);
}

Status QueueSafetyInput::Validate() const {
  auto bad = [&](std::string what) {
    return InvalidArgument(fmt::format("safety input for queue {}: {}", queue, what));
  };
  if (dlq_retention.count() <= 0 || dlq_retention > kSqsMaxRetention) {
    return bad(fmt::format("dlq_retention {} s outside (0, {}]", dlq_retention.count(), kSqsMaxRetention.count()));
  }
  if (source_retention.count() < 0) return bad("source_retention is negative");
  if (!(drain_rate > 0) || !std::isfinite(drain_rate)) return bad(fmt::format("drain_rate {} must be > 0", drain_rate));
  if (depth < 0) return bad("depth is negative");
  if (sweep_interval.count() < 0 || collection_interval.count() < 0 || required_margin.count() < 0) {
    return bad("negative interval");
  }
  Status s = expiry_alarm.Validate();
  if (!s.ok()) return s.WithContext(fmt::format("safety input for queue {}", queue));
  return Status::Ok();
}

namespace {

// The ages that matter, in seconds.
struct AgeLimits {
  double dlq;        // the DLQ's retention
  double threshold;  // the expiry alarm's age threshold
  double source;     // the source queue's (its maximum when unknown)
};

// Adds the reasons that do not depend on timing; false when one of them
// means some message is never archived.
bool CheckStructure(const QueueSafetyInput& in, SafetyReport& rep) {
  bool structural_ok = true;
  if (!in.fifo && in.source_retention.count() == 0) {
    rep.reasons.push_back(fmt::format(
        "source queue retention unknown: assumed the SQS maximum {} s (its expiry clock started at SentTimestamp "
        "in the source queue)",
        kSqsMaxRetention.count()));
  }
  if (in.age_source == AgeSource::kCloudWatchAge && !in.archive_on_depth_alarm) {
    structural_ok = false;
    rep.reasons.push_back(
        "ApproximateAgeOfOldestMessage skips messages received 3 or more times, and no depth alarm starts the "
        "archiver: such messages are never archived");
  }
  if (!in.expiry_alarm_archives && !in.archive_on_depth_alarm) {
    structural_ok = false;
    rep.reasons.push_back(
        "no alarm has action archive: the expiry alarm only notifies or copies, so nothing deletes a message from the "
        "DLQ into the archive before it expires (a copy is made once per transition into ALARM; later arrivals are "
        "not copied)");
  }
  if (std::isinf(rep.drain_time_s)) {
    structural_ok = false;
    rep.reasons.push_back(fmt::format(
        "partial drain: a run archives at most {} messages but {} may be queued, and the archiver runs only on the "
        "transition into ALARM (an alarm that stays in ALARM is not signalled again)",
        in.max_messages_per_run, in.depth));
  }
  return structural_ok;
}

// The worst case: when a message is archived at the latest and when it
// expires, from the clock origin the queue type and the age source imply.
void SetWorstCase(const QueueSafetyInput& in, const AgeLimits& k, SafetyReport& rep) {
  const double r = k.dlq, t = k.threshold, src = k.source;
  const double work = rep.detection_delay_s + rep.drain_time_s;
  rep.worst_case_arrival_to_archive_s = std::max(t, 0.0) + work;
  if (in.fifo) {
    rep.earliest_expiry_after_arrival_s = r;
    rep.margin_s = r - rep.worst_case_arrival_to_archive_s;
    rep.clock_origin = "it reaches the DLQ (FIFO: the expiry clock restarts there)";
    rep.latest_archive_s = rep.worst_case_arrival_to_archive_s;
    rep.expires_s = r;
  } else if (in.age_source == AgeSource::kCloudWatchAge) {
    rep.earliest_expiry_after_arrival_s = std::max(0.0, r - src);
    rep.margin_s = rep.earliest_expiry_after_arrival_s - rep.worst_case_arrival_to_archive_s;
    rep.clock_origin = "it reaches the DLQ";
    rep.latest_archive_s = rep.worst_case_arrival_to_archive_s;
    rep.expires_s = rep.earliest_expiry_after_arrival_s;
    rep.reasons.push_back(fmt::format(
        "standard queue: expiry = SentTimestamp + {} s, but the CloudWatch age restarts on the move to the DLQ; a "
        "message that spent up to {} s in the source queue expires {} s after arriving, while the alarm fires only "
        "at DLQ age {} s",
        r, src, rep.earliest_expiry_after_arrival_s, t));
  } else {
    rep.earliest_expiry_after_arrival_s = std::max(0.0, r - src);
    rep.margin_s = r - std::max(t, src) - work;
    // The alarm and the expiry both count from SentTimestamp: compare there.
    rep.clock_origin = "its SentTimestamp";
    rep.latest_archive_s = std::max({t, src, 0.0}) + work;
    rep.expires_s = r;
  }
}

// Reasons about the threshold and the retentions themselves.
void CheckRetentions(const QueueSafetyInput& in, const AgeLimits& k, SafetyReport& rep) {
  const double r = k.dlq, t = k.threshold;
  const double work = rep.detection_delay_s + rep.drain_time_s;
  rep.reasons.push_back(fmt::format("detection delay {}; drain time {}", DetectionDelayText(in), DrainTimeText(in)));
  if (r - t < work && std::isfinite(work)) {
    rep.reasons.push_back(
        fmt::format("threshold {} s leaves {} s before expiry, less than detection delay {} s + drain time {} s", t,
                    r - t, rep.detection_delay_s, rep.drain_time_s));
  }
  RetentionAdvice advice = AdviseRetention(in);
  if (advice.needed) rep.reasons.push_back(advice.line);
}

}  // namespace

Result<SafetyReport> AnalyzeQueueSafety(const QueueSafetyInput& in) {
  DLQ_RETURN_IF_ERROR(in.Validate());
  SafetyReport rep;
  rep.queue = in.queue;
  const AgeLimits k{Secs(in.dlq_retention), in.expiry_alarm.threshold, EffectiveSourceRetention(in)};
  rep.detection_delay_s = DetectionDelay(in);
  rep.drain_time_s = DrainTime(in);
  rep.required_margin_s = Secs(in.required_margin);
  const bool structural_ok = CheckStructure(in, rep);
  SetWorstCase(in, k, rep);
  CheckRetentions(in, k, rep);
  rep.safe = structural_ok && rep.margin_s >= rep.required_margin_s;
  rep.reasons.push_back(
      fmt::format("worst case, counted from {}: archived at the latest after {}, expires after {}; so a message {} "
                  "(required: at least {} before)",
                  rep.clock_origin, FormatSpan(rep.latest_archive_s), FormatSpan(rep.expires_s),
                  MarginText(rep.margin_s), FormatSpan(rep.required_margin_s)));
  return rep;
}

std::string SafetyReport::ToString() const {
  std::string out = fmt::format(
      "{}: {}: in the worst case a message {} (required: archived at least {} before "
      "it expires)\n",
      queue, safe ? "SAFE" : "UNSAFE", MarginText(margin_s), FormatSpan(required_margin_s));
  for (const std::string& r : reasons) out += fmt::format("  - {}\n", r);
  return out;
}

Result<ExpiryThresholdPlan> DeriveExpiryThreshold(const QueueSafetyInput& in) {
  DLQ_RETURN_IF_ERROR(in.Validate());
  ExpiryThresholdPlan plan;
  plan.detection_delay_s = DetectionDelay(in);
  plan.drain_time_s = DrainTime(in);
  if (std::isinf(plan.drain_time_s)) {
    return FailedPrecondition(
        fmt::format("queue {}: a partial drain ({} of {} messages per run) without re-runs has no safe threshold",
                    in.queue, in.max_messages_per_run, in.depth));
  }
  plan.archive_window_s = plan.detection_delay_s + plan.drain_time_s + Secs(in.required_margin);
  const double r = Secs(in.dlq_retention);
  const double src = EffectiveSourceRetention(in);
  double threshold = r - plan.archive_window_s;
  if (!in.fifo) {
    const double usable = r - src;  // earliest expiry after arrival
    if (usable < plan.archive_window_s) {
      return FailedPrecondition(fmt::format(
          "queue {}: a message can reach the DLQ {} s before expiry (retention {} s, source retention {} s), less "
          "than the {} s needed to detect, drain and keep the margin; set the DLQ retention to at least {} s",
          in.queue, std::max(usable, 0.0), r, src, plan.archive_window_s, src + plan.archive_window_s));
    }
    if (in.age_source == AgeSource::kCloudWatchAge) threshold = usable - plan.archive_window_s;
  }
  if (threshold <= 0) {
    return FailedPrecondition(fmt::format("queue {}: retention {} s is shorter than the {} s archive window", in.queue,
                                          r, plan.archive_window_s));
  }
  plan.age_threshold_s = std::floor(threshold);
  return plan;
}

RetentionAdvice AdviseRetention(const QueueSafetyInput& in) {
  RetentionAdvice a;
  a.current = in.dlq_retention;
  a.proposed = in.dlq_retention;
  a.source_known = in.source_retention.count() > 0;
  a.source = a.source_known ? in.source_retention : kSqsMaxRetention;
  if (in.fifo || !in.Validate().ok()) return a;
  const double margin = DetectionDelay(in) + DrainTime(in) + Secs(in.required_margin);
  if (!std::isfinite(margin)) return a;  // a partial drain without re-runs: no retention helps (reported apart)
  a.margin = std::chrono::seconds(static_cast<int64_t>(std::ceil(margin)));
  const std::chrono::seconds needed = a.source + a.margin;
  if (a.current >= needed) return a;
  a.needed = true;
  const std::string need = fmt::format("{} + the {} the expiry alarm needs (detection + drain + safety margin)",
                                       FormatSpan(Secs(a.source)), FormatSpan(Secs(a.margin)));
  if (needed <= kSqsMaxRetention) {
    a.fixable = true;
    constexpr int64_t kHour = 3600;
    a.proposed = std::min(kSqsMaxRetention, std::chrono::seconds((needed.count() + kHour - 1) / kHour * kHour));
    a.line = fmt::format(
        "the DLQ keeps messages no longer than its source, so a message can arrive with no time left; raise the "
        "DLQ's retention to {} (at most 14 days): retention {} < source {}",
        FormatSpan(Secs(a.proposed)), FormatSpan(Secs(a.current)), need);
    return a;
  }
  const std::string lower_to = FormatSpan(Secs(kSqsMaxRetention - a.margin));
  if (a.source_known) {
    a.line = fmt::format(
        "the DLQ keeps messages no longer than its source, so a message can arrive with no time left; even 14 days "
        "(the SQS maximum) cannot exceed source {}: lower the source's retention to at most {}",
        need, lower_to);
  } else {
    a.line = fmt::format(
        "the DLQ keeps messages no longer than its source, so a message can arrive with no time left; no source "
        "queue was found, so its retention is taken as 14 days (the SQS maximum), which no DLQ retention can "
        "exceed: give the sources a retention of at most {} and a RedrivePolicy naming this DLQ",
        lower_to);
  }
  return a;
}

AlarmSpec DefaultExpiryAlarm(const std::string& queue, double threshold_s) {
  AlarmSpec s;
  s.name = queue + "-expiry";
  s.metric = "AgeOnExpiryClock";
  s.statistic = Statistic::kMaximum;
  s.period = std::chrono::seconds(300);
  s.evaluation_periods = 1;
  s.datapoints_to_alarm = 1;
  s.threshold = threshold_s;
  s.comparison = Comparison::kGreaterThanOrEqualToThreshold;
  s.missing = MissingData::kBreaching;
  return s;
}

AlarmSpec DefaultDepthAlarm(const std::string& queue) {
  AlarmSpec s;
  s.name = queue + "-depth";
  s.metric = "ApproximateNumberOfMessagesVisible";
  s.statistic = Statistic::kMaximum;
  s.period = std::chrono::seconds(300);
  s.evaluation_periods = 3;
  s.datapoints_to_alarm = 3;
  s.threshold = 1;
  s.comparison = Comparison::kGreaterThanOrEqualToThreshold;
  s.missing = MissingData::kNotBreaching;
  return s;
}

QueueSafetyInput DefaultSafetyInput(const std::string& queue, bool fifo, std::chrono::seconds dlq_retention,
                                    std::chrono::seconds source_retention) {
  QueueSafetyInput in;
  in.queue = queue;
  in.fifo = fifo;
  in.dlq_retention = dlq_retention;
  in.source_retention = source_retention;
  in.age_source = AgeSource::kPerMessageExpiry;
  in.expiry_alarm = DefaultExpiryAlarm(queue, 1);  // placeholder so Validate() passes
  auto plan = DeriveExpiryThreshold(in);
  in.expiry_alarm.threshold = plan.ok() ? plan->age_threshold_s : 0;
  return in;
}

}  // namespace dlq
