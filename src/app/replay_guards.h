// The guard for a replay where one flag touches many messages (doc/replay.md,
// "Guards"): an archive replay with no filter needs --all. (A selection over
// several DLQs into one queue: replay/dlq_span.h.)
#pragma once

#include "common/status.h"
#include "query/filter.h"

namespace dlq {

// kInvalidArgument naming --all when an archive replay (`archive_form`) that
// is not a dry run has an empty filter and `all` is not set. OK otherwise.
Status CheckFilterNotEmpty(bool archive_form, bool dry_run, bool all, const Filter& filter);

}  // namespace dlq
