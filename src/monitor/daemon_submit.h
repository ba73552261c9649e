// DecideSubmit: whether a watched queue gets an archive run at this
// collection, and which one. A pure function of the queue's state and the
// time: no I/O, no locks, no clock. The Daemon reads the state under the
// queue's lock, asks, and applies the answer.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "archiver/selection_pass.h"
#include "common/clock.h"
#include "monitor/config.h"

namespace dlq {

// What the decision reads of one queue at one collection.
struct SubmitState {
  bool expiry_alarm = false;  // the expiry alarm is in ALARM
  bool depth_alarm = false;   // the depth alarm is in ALARM
  AlarmSettings::Action expiry_action = AlarmSettings::Action::kArchive;
  AlarmSettings::Action depth_action = AlarmSettings::Action::kNotify;
  Selection expiry_selection;
  Selection depth_selection;
  bool archive_requested = false;  // ArchiveNow, not yet submitted
  bool copy_due = false;           // a copy-action alarm entered ALARM, copy not yet submitted
  Selection copy_selection;
  bool queued = false;     // a run is submitted and not done
  bool has_store = false;  // the group has an object store
  bool more = false;       // the last run stopped at its budget
  std::optional<SystemTime> last_submit;
  int64_t visible = -1, not_visible = -1, delayed = -1;  // the last collection's counts
  bool destination_ok = true;                            // the group's destination check passed
  bool transitioned = false;                             // an alarm changed state at this collection
  bool learn_due = false;                                // a learning pass would make an unknown nearest expiry known
};

enum class SubmitVerdict {
  kNone,     // nothing to submit now
  kBlocked,  // a run is due but the destination check failed: count it as failed, receive nothing
  kRun,      // submit a run
};

struct SubmitDecision {
  SubmitVerdict verdict = SubmitVerdict::kNone;
  // For kRun and kBlocked:
  bool requested = false;  // the run is ArchiveNow's: all, deleting what is archived
  bool keep = false;       // a copy: archive and delete nothing
  bool learn = false;      // a learning pass (kRun only): receive each message once, keep every one, write nothing
  Selection selection;     // what the run takes
};

// Archive-action alarms in ALARM run on the transition, then on every sweep
// (sweep_interval after the last submission) or at once while the last run
// stopped at its budget, but not while the last collection saw the queue
// empty. ArchiveNow runs at the next collection. A copy runs once per
// transition into ALARM. Nothing is submitted while a run is queued or
// without a store; with a failed destination check a due run is kBlocked.
// When no run is due and the nearest expiry is unknown (learn_due), a
// learning pass runs instead (it writes nothing, so the destination check
// does not hold it back); any run that receives teaches the same.
SubmitDecision DecideSubmit(const SubmitState& s, SystemTime now, Duration sweep_interval);

}  // namespace dlq
