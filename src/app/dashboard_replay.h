// The dashboard's replay action over the `replay` command's engine: the
// selected archived messages of one queue (by id, or every message of one
// failure group) go back to their source queues, or with the selection's
// to_origin back where each came from, through RunReplayUseCase (--from the
// group's destination --id ... or --fingerprint ID, --to-source or
// --to-origin [--function NAME] with the group's Lambda, SNS, EventBridge and
// HTTP clients, --dry-run when asked),
// which resolves every destination before sending and writes the same audit
// record to {prefix}/_audit/ of the archive. A replay that sends takes the
// guarded defaults of --to-source (a canary, then the ramp: doc/replay.md)
// and reports each status of its guard through the control's `report`; it
// stops, as on a signal, once the control's stop flag is set. Thread-safe:
// each call runs its own replay on the caller's thread.
#pragma once

#include "common/clock.h"
#include "dashboard/dashboard.h"

namespace dlq {

struct RedriveStatus;

// `clock` must outlive the function.
DashboardReplayFn MakeDashboardReplay(Clock& clock);

// A guard's status as the dashboard shows it (the phase by its name).
ReplayProgress ToDashboardProgress(const RedriveStatus& status);

}  // namespace dlq
