// The guard for a replay where one destination takes the messages of many
// DLQs (doc/replay.md, "Guards"): a selection that spans several DLQs goes to
// one named queue only when the caller says so. Pure functions of the
// selection's counts.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "common/status.h"
#include "replay/replay_terms.h"

namespace dlq {

// Selected messages per DLQ name (the record's `queue`), in name order.
using DlqCounts = std::map<std::string, uint64_t>;

// "2 dead-letter queues: orders-dlq (300), payments-dlq (120)"; the counts are
// of selected messages. Names are outside text: the caller makes them safe.
std::string DescribeDlqSpan(const DlqCounts& counts);

// kInvalidArgument naming the DLQs and terms.all_queues when a replay to one
// named queue (`fixed_destination`) that is not a dry run selects messages
// of more than one DLQ and `all_queues` is not set. OK otherwise.
Status CheckDlqSpan(const DlqCounts& counts, bool fixed_destination, bool dry_run, bool all_queues,
                    const std::string& destination, const ReplayTerms& terms);

}  // namespace dlq
