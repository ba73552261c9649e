#include "monitor/daemon_submit.h"

namespace dlq {

SubmitDecision DecideSubmit(const SubmitState& s, SystemTime now, Duration sweep_interval) {
  using Action = AlarmSettings::Action;
  const bool archive_e = s.expiry_alarm && s.expiry_action == Action::kArchive;
  const bool archive_d = s.depth_alarm && s.depth_action == Action::kArchive;
  const bool requested = s.archive_requested;
  const bool archive = archive_e || archive_d || requested;
  // Archiving also writes the copy; a copy runs once per transition into ALARM.
  const bool copy = !archive && s.copy_due;
  SubmitDecision none;
  if (s.queued || !s.has_store) return none;
  if (!archive && !copy) {
    if (!s.learn_due) return none;
    SubmitDecision learn;
    learn.verdict = SubmitVerdict::kRun;
    learn.learn = true;
    learn.keep = true;
    learn.selection = Selection{};
    return learn;
  }
  const bool sweep_due = !s.last_submit || now - *s.last_submit >= sweep_interval;
  if (archive && !requested) {
    if (!s.transitioned && !sweep_due && !s.more) return none;
    // The last collection saw the queue empty: nothing to archive until it
    // fills again (the alarm returns to OK when its period completes).
    if (!s.transitioned && !s.more && s.visible == 0 && s.not_visible == 0 && s.delayed <= 0) return none;
  }
  SubmitDecision d;
  d.requested = requested;
  d.keep = !archive;
  if (requested) {
    d.selection = Selection{};  // all
  } else if (archive) {
    // A depth-alarm run (all, under policy auto) covers the expiry alarm's window.
    d.selection = archive_d ? s.depth_selection : s.expiry_selection;
  } else {
    d.selection = s.copy_selection;
  }
  if (!s.destination_ok) {
    // Receive nothing, but count the run that was due as failed so that it
    // shows (metrics, /api/queues, logs).
    if (!s.transitioned && !sweep_due) return none;
    d.verdict = SubmitVerdict::kBlocked;
    return d;
  }
  d.verdict = SubmitVerdict::kRun;
  return d;
}

}  // namespace dlq
