// The overview: what the dashboard's overview table shows of every watched
// queue (numbers, alarm states and why an expiry is unknown; no alarm
// reasons, no history). DaemonView::BuildOverview takes it as one snapshot; the
// dashboard serves it as JSON (/api/overview, OverviewJson) and renders its
// first rows into the page (dashboard/overview_html.h). A plain value: copy
// and share freely.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"

namespace dlq {

struct OverviewAlarm {
  std::string kind;   // "expiry" or "depth"
  std::string state;  // AlarmStateName: "OK", "ALARM", "INSUFFICIENT_DATA"
  bool operator==(const OverviewAlarm&) const = default;
};

struct OverviewLastRun {
  SystemTime time;  // whole milliseconds, as the JSON shows it
  uint64_t archived = 0;
  bool ok = true;
  bool operator==(const OverviewLastRun&) const = default;
};

struct OverviewQueue {
  std::string group, queue, region;
  bool fifo = false;
  int64_t retention_s = 0, source_retention_s = 0;       // source: the longest of the source queues', 0 if unknown
  int64_t visible = -1, not_visible = -1, delayed = -1;  // -1: not collected yet
  std::optional<SystemTime> nearest_expiry;              // whole milliseconds, as the JSON shows it
  std::string expiry_unknown;  // why nearest_expiry is only "any moment" (QueueStatus::expiry_unknown); "" when known
  bool collect_error = false;
  uint64_t archived = 0;
  bool running = false;
  bool failing = false;
  std::string error_code;  // the last failure's code while runs fail, else ""
  std::optional<OverviewLastRun> last_run;
  std::vector<OverviewAlarm> alarms;  // expiry first, then depth; either may be absent
  bool operator==(const OverviewQueue&) const = default;
};

struct OverviewGroup {
  std::string name;
  bool error = false;   // discovery or the destination check fails
  std::string problem;  // the error's text, or the group's warning; "" when none
  bool operator==(const OverviewGroup&) const = default;
};

struct Overview {
  std::vector<OverviewQueue> queues;  // in group order, then each group's queue order
  std::vector<OverviewGroup> groups;
  bool operator==(const Overview&) const = default;
};

// {"queues": [{"group", "queue", "region", "fifo", "retention_s",
// "source_retention_s", "visible", "not_visible", "delayed",
// "nearest_expiry": ISO 8601 | null, "expiry_unknown" (only when not ""),
// "collect_error": bool, "archived",
// "running", "failing", "error_code", "last_run": {"time", "archived", "ok"} |
// null, "alarms": [{"kind", "state"}]}], "groups": [{"name", "error": bool,
// "problem"}]} (doc/dashboard.md).
std::string OverviewJson(const Overview& overview);

}  // namespace dlq
