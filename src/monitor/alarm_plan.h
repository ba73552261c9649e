// Alarm planning for one DLQ: the expiry and depth alarms a group's settings
// give it, what an alarm-started archive run selects, and the safety analysis
// input matching what the daemon does. Pure functions, shared by `run`
// (monitor/daemon.h) and `check`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "monitor/alarm.h"
#include "monitor/config.h"
#include "monitor/discovery.h"
#include "monitor/safety.h"

namespace dlq {

// What the plan assumes about the archiver (DaemonOptions carries the daemon's).
struct AlarmPlanOptions {
  uint64_t max_messages_per_run = 10000;  // budget of one archive slice
  // Backlog for auto thresholds (see DeriveExpiryThreshold) when the queue's
  // own depth is not known (QueueLoad).
  int64_t assumed_depth = 10000;
  double assumed_drain_rate = 5;
};

// What one queue holds, when known: an auto threshold's drain time is then
// that backlog's at the drain rate, as `check` derives it, instead of the
// assumed backlog's.
struct QueueLoad {
  std::optional<int64_t> depth;  // visible + in flight + delayed
  std::string depth_source;      // for people: "queued at the last collection"
};

// The alarms one DLQ gets under `group` (threshold_auto resolved with
// DeriveExpiryThreshold; when no threshold is safe for every message, the
// one that alarms when the nearest expiry comes within the archive window,
// and 1 s only when the retention is shorter than that window) and the
// safety analysis input matching what the daemon does. Pure; shared by `run`
// and `check`.
struct QueueAlarmPlan {
  std::optional<AlarmSpec> expiry;
  std::optional<AlarmSpec> depth;
  AlarmSettings::Action expiry_action = AlarmSettings::Action::kArchive;
  AlarmSettings::Action depth_action = AlarmSettings::Action::kNotify;
  // What a run started by the expiry alarm selects: with policy.select auto,
  // the messages expiring within retention - threshold + sweep_interval.
  Selection expiry_selection;
  Selection depth_selection;
  std::string threshold_source;  // how the expiry threshold was chosen, with numbers
  QueueSafetyInput safety;       // expiry_alarm = the expiry spec
};
// What a selection takes, for people: "every message", "the messages sent
// more than 1h (3600 s) ago", "the messages expiring within 2d (172800 s)".
std::string SelectionText(const Selection& s);

QueueSafetyInput SafetyInputFor(const MonitorConfig& config, const GroupConfig& group, const DiscoveredQueue& q,
                                const AlarmPlanOptions& options, const QueueLoad& load = {});
QueueAlarmPlan PlanAlarms(const MonitorConfig& config, const GroupConfig& group, const DiscoveredQueue& q,
                          const AlarmPlanOptions& options, const QueueLoad& load = {});

}  // namespace dlq
