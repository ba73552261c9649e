#include "monitor/alarm_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace dlq {
namespace {

using std::chrono::seconds;

MissingData ToMissing(AlarmSettings::MissingData m) {
  switch (m) {
    case AlarmSettings::MissingData::kBreaching: return MissingData::kBreaching;
    case AlarmSettings::MissingData::kNotBreaching: return MissingData::kNotBreaching;
    case AlarmSettings::MissingData::kIgnore: return MissingData::kIgnore;
    case AlarmSettings::MissingData::kMissing: break;
  }
  return MissingData::kMissing;
}

// When no threshold keeps every message safe (a message can reach the DLQ
// with less time left than detecting and draining it takes: check says so
// and how to fix the retention), the alarm still fires only when the nearest
// expiry comes within the archive window: the threshold of a queue whose
// messages arrive with their whole retention left, on the daemon's
// per-message expiry clock. A message arriving with less is archived as soon
// as it is seen; the rest stays for redrive.
// A CloudWatch age alarm (the stack's) restarts at the move, so there 1 s
// stays: alarm as soon as anything is queued.
double UnsafeQueueThreshold(const QueueSafetyInput& safety, const Status& why, std::string& source) {
  if (safety.age_source != AgeSource::kPerMessageExpiry) {
    source = "auto: no safe threshold (" + why.message() + "); using 1 s";
    return 1;
  }
  QueueSafetyInput in = safety;
  in.source_retention = seconds(1);
  auto derived = DeriveExpiryThreshold(in);
  if (!derived.ok()) {
    source = "auto: no threshold leaves time to archive (" + derived.status().message() + "); using 1 s";
    return 1;  // the retention is shorter than the archive window: everything is due at once
  }
  source = fmt::format(
      "auto: retention - (detection {:.0f} s + drain {:.0f} s + margin {:.0f} s) = {:.0f} s; not safe for every "
      "message: {}",
      derived->detection_delay_s, derived->drain_time_s,
      derived->archive_window_s - derived->detection_delay_s - derived->drain_time_s, derived->age_threshold_s,
      why.message());
  return derived->age_threshold_s;
}

}  // namespace

std::string SelectionText(const Selection& s) {
  switch (s.kind) {
    case SelectionKind::kAll: return "every message";
    case SelectionKind::kOlderThan:
      return fmt::format("the messages sent more than {} ago", FormatSpan(static_cast<double>(s.window.count())));
    case SelectionKind::kExpiringWithin:
      return fmt::format("the messages expiring within {}", FormatSpan(static_cast<double>(s.window.count())));
  }
  return "every message";
}

QueueSafetyInput SafetyInputFor(const MonitorConfig& config, const GroupConfig& group, const DiscoveredQueue& q,
                                const AlarmPlanOptions& options, const QueueLoad& load) {
  QueueSafetyInput in = DefaultSafetyInput(q.name, q.fifo, q.retention, q.MaxSourceRetention());
  const AlarmSettings& e = group.alarms.expiry;
  in.age_source = group.cloudwatch_age ? AgeSource::kCloudWatchAge : AgeSource::kPerMessageExpiry;
  in.collection_interval = config.collection_interval;
  in.sweep_interval = config.sweep_interval;
  in.rerun_while_alarm = true;
  in.archive_on_depth_alarm =
      group.alarms.depth.enabled && group.alarms.depth.action == AlarmSettings::Action::kArchive;
  in.expiry_alarm_archives = e.enabled && e.action == AlarmSettings::Action::kArchive;
  in.depth = load.depth ? std::max<int64_t>(0, *load.depth) : options.assumed_depth;
  in.drain_rate = options.assumed_drain_rate;
  in.depth_source = load.depth ? load.depth_source : "the daemon's assumed backlog";
  in.drain_rate_source = "the daemon's assumed rate";
  in.max_messages_per_run = static_cast<int64_t>(options.max_messages_per_run);
  in.required_margin = e.safety_margin;
  in.expiry_alarm = DefaultExpiryAlarm(q.name, 1);
  in.expiry_alarm.period = e.period;
  in.expiry_alarm.evaluation_periods = e.evaluation_periods;
  in.expiry_alarm.datapoints_to_alarm = e.datapoints_to_alarm;
  in.expiry_alarm.missing = ToMissing(e.treat_missing_data);
  if (group.cloudwatch_age) in.expiry_alarm.metric = "ApproximateAgeOfOldestMessage";
  return in;
}

QueueAlarmPlan PlanAlarms(const MonitorConfig& config, const GroupConfig& group, const DiscoveredQueue& q,
                          const AlarmPlanOptions& options, const QueueLoad& load) {
  QueueAlarmPlan plan;
  plan.safety = SafetyInputFor(config, group, q, options, load);
  const AlarmSettings& e = group.alarms.expiry;
  if (e.enabled) {
    AlarmSpec spec = plan.safety.expiry_alarm;
    if (e.threshold_auto) {
      auto derived = DeriveExpiryThreshold(plan.safety);
      if (derived.ok()) {
        spec.threshold = derived->age_threshold_s;
        plan.threshold_source =
            fmt::format("auto: retention - (detection {} + drain {} + margin {} s)", DetectionDelayText(plan.safety),
                        DrainTimeText(plan.safety), e.safety_margin.count());
      } else {
        spec.threshold = UnsafeQueueThreshold(plan.safety, derived.status(), plan.threshold_source);
      }
    } else {
      spec.threshold = e.threshold;
      plan.threshold_source = "configured";
    }
    plan.safety.expiry_alarm = spec;
    plan.expiry = spec;
  } else {
    // No expiry alarm: only the sweep's depth alarm can start the archiver.
    plan.safety.expiry_alarm.threshold = static_cast<double>(q.retention.count());
    plan.threshold_source = "disabled";
  }
  const AlarmSettings& d = group.alarms.depth;
  if (d.enabled) {
    AlarmSpec spec = DefaultDepthAlarm(q.name);
    spec.metric = "ApproximateNumberOfMessagesVisible";
    spec.period = d.period;
    spec.evaluation_periods = d.evaluation_periods;
    spec.datapoints_to_alarm = d.datapoints_to_alarm;
    spec.threshold = d.threshold;
    spec.missing = ToMissing(d.treat_missing_data);
    plan.depth = spec;
  }
  plan.expiry_action = e.action;
  plan.depth_action = d.action;
  if (group.policy_by_alarm) {
    // The expiry alarm fires when the nearest expiry is (retention - threshold)
    // away; one more sweep covers what comes due before the next run.
    const double retention = static_cast<double>(q.retention.count());
    const double lead = std::clamp(retention - plan.safety.expiry_alarm.threshold, 0.0, retention) +
                        static_cast<double>(config.sweep_interval.count());
    plan.expiry_selection = {SelectionKind::kExpiringWithin, seconds(static_cast<int64_t>(std::ceil(lead)))};
    plan.depth_selection = {SelectionKind::kAll, seconds(0)};
  } else {
    plan.expiry_selection = group.policy;
    plan.depth_selection = group.policy;
  }
  return plan;
}

}  // namespace dlq
