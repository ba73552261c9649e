// The parts of what the Daemon keeps about one watched queue, one struct per
// concern. The Daemon holds them in its QueueState under the queue's mutex
// (each part but the identity is GUARDED_BY it); the JSON rendering
// (monitor/daemon_json.h) reads them while that mutex is held. Plain values:
// no locking or I/O of their own.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "archiver/drain_options.h"
#include "common/clock.h"
#include "monitor/alarm.h"
#include "monitor/arrival_ledger.h"
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
  // The expiry alarm's safety margin: a DLQ whose messages arrive with more
  // than this left (retention - longest source retention) is watched without
  // receiving until something nears expiry.
  std::chrono::seconds safety_margin{3600};
};

// What the collections saw.
struct QueueObservation {
  int64_t visible = -1;
  int64_t not_visible = -1;
  int64_t delayed = -1;
  std::optional<SystemTime> last_empty;
  std::optional<SystemTime> nearest_expiry;  // conservative estimate; nullopt: empty or unknown
  std::string expiry_unknown;                // why the nearest expiry is unknown ("" when known or empty)
  std::optional<SystemTime> oldest_sent;
  // What receive passes (learning passes and archive runs) saw, and when the
  // last complete one started: every message queued then is in the ledger.
  ArrivalLedger ledger;
  std::optional<SystemTime> learned_at;
  // The lowest message count seen since the last complete pass was
  // submitted: a count above it means messages the ledger does not know.
  int64_t pass_baseline = -1;
  int64_t submitted_count = -1;  // the count when the pass now running was submitted
  bool learn_due = false;        // a learning pass would make the expiry known
  bool learn_failed = false;     // the last learning pass failed: stay conservative
  uint64_t learning_passes = 0;
  std::string collect_error;
  QueueHistory history;
};

// The queue's alarms and what they ask for.
struct QueueAlarms {
  std::unique_ptr<Alarm> expiry;  // may be null
  std::unique_ptr<Alarm> depth;   // may be null
  std::string spec_key;
  // What the last alarm_configured line said: the specs less the expiry
  // threshold, and that threshold (a drift within kConfiguredThresholdTolerance
  // is not logged again).
  std::string logged_key;
  double logged_threshold = 0;
  // Set by the plan at discovery.
  AlarmSettings::Action expiry_action = AlarmSettings::Action::kArchive;
  AlarmSettings::Action depth_action = AlarmSettings::Action::kNotify;
  Selection expiry_selection;
  Selection depth_selection;
  bool copy_due = false;     // a copy-action alarm entered ALARM, copy not yet submitted
  Selection copy_selection;  // what that copy takes
};

// The queue's archive runs.
struct QueueArchiveRuns : ArchiveTotals {
  bool queued = false;  // submitted, not done
  bool more = false;    // last run stopped at its budget
  std::optional<SystemTime> last_submit;
  bool requested = false;    // ArchiveNow, not yet submitted
  std::string requested_by;  // who asked (for the audit record)
};

}  // namespace dlq
