// The one-word form of a Selection used by the Lambda runtime's
// DLQ_ARCHIVE_POLICY and `dlq-archive stack --policy`: "all",
// "older_than:DURATION" or "expiring_within:DURATION" (e.g. older_than:1h).
// Pure.
#pragma once

#include <string>
#include <string_view>

#include "archiver/selection_pass.h"
#include "common/status.h"

namespace dlq {

// kInvalidArgument "'TEXT': expected all, older_than:DURATION or
// expiring_within:DURATION (e.g. older_than:1h)"; a window must be positive.
Result<Selection> ParseSelectionSpec(std::string_view text);

}  // namespace dlq
