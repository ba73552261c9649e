// The parts of what the Daemon keeps about one watched queue, one struct per
// concern. The Daemon holds them in its QueueState under the queue's mutex
// (each part but the identity is GUARDED_BY it); the JSON rendering
// (monitor/daemon_json.h) reads them while that mutex is held. Plain values:
// no locking or I/O of their own.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "archiver/drainer.h"
#include "common/clock.h"
#include "monitor/alarm.h"
#include "monitor/config.h"
#include "monitor/daemon.h"
#include "monitor/discovery.h"
#include "monitor/group_clients.h"
#include "monitor/queue_history.h"

namespace dlq {

// Which queue, and how it is archived: set at discovery (the retention also
// at each collection) by the control thread.
struct QueueIdentity {
  std::string group;
  DiscoveredQueue dq;
  GroupClients clients;
  DrainOptions drain;
  double expiry_threshold = 0;
};

// What the collections saw.
struct QueueObservation {
  int64_t visible = -1;
  int64_t not_visible = -1;
  int64_t delayed = -1;
  std::optional<SystemTime> last_empty;
  std::optional<SystemTime> nearest_expiry;  // conservative estimate
  // From the last complete archive run: started at run_start, saw every
  // queued message; seen_nearest is the nearest expiry among those left.
  std::optional<SystemTime> run_start;
  std::optional<SystemTime> seen_nearest;
  std::optional<SystemTime> oldest_sent;
  std::string collect_error;
  QueueHistory history;
};

// The queue's alarms and what they ask for.
struct QueueAlarms {
  std::unique_ptr<Alarm> expiry;  // may be null
  std::unique_ptr<Alarm> depth;   // may be null
  std::string spec_key;
  // Set by the plan at discovery.
  AlarmSettings::Action expiry_action = AlarmSettings::Action::kArchive;
  AlarmSettings::Action depth_action = AlarmSettings::Action::kNotify;
  Selection expiry_selection;
  Selection depth_selection;
  bool copy_due = false;     // a copy-action alarm entered ALARM, copy not yet submitted
  Selection copy_selection;  // what that copy takes
};

// The queue's archive runs.
struct QueueArchiveRuns {
  bool queued = false;  // submitted, not done
  bool more = false;    // last run stopped at its budget
  std::optional<SystemTime> last_submit;
  uint64_t runs = 0;
  uint64_t archived = 0;
  uint64_t failed_runs = 0;
  uint64_t consecutive_failures = 0;
  std::optional<ArchiveError> last_error;  // kept after a success
  bool requested = false;                  // ArchiveNow, not yet submitted
  std::string requested_by;                // who asked (for the audit record)
  std::optional<SystemTime> last_run_at;   // when the last run ended
  uint64_t last_run_archived = 0;
  bool last_run_ok = true;
};

}  // namespace dlq
