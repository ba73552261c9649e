// Guards for replays where one flag touches many messages (doc/replay.md,
// "Guards"): an archive replay with no filter needs --all, and a --to-queue
// selection that spans several DLQs needs --all-queues. Pure functions of the
// options and of the selection's counts; the command prints what they return.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "common/status.h"
#include "query/filter.h"

namespace dlq {

// Selected messages per DLQ name (the record's `queue`), in name order.
using DlqCounts = std::map<std::string, uint64_t>;

// kInvalidArgument naming --all when an archive replay (`archive_form`) that
// is not a dry run has an empty filter and `all` is not set. OK otherwise.
Status CheckFilterNotEmpty(bool archive_form, bool dry_run, bool all, const Filter& filter);

// "2 dead-letter queues: orders-dlq (300), payments-dlq (120)"; the counts are
// of selected messages. Names are outside text: the caller makes them safe.
std::string DescribeDlqSpan(const DlqCounts& counts);

// kInvalidArgument naming the DLQs and --all-queues when a --to-queue replay
// (`fixed_destination`) that is not a dry run selects messages of more than
// one DLQ and `all_queues` is not set. OK otherwise.
Status CheckDlqSpan(const DlqCounts& counts, bool fixed_destination, bool dry_run, bool all_queues,
                    const std::string& destination);

}  // namespace dlq
