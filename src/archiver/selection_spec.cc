#include "archiver/selection_spec.h"

#include <fmt/format.h>

#include "common/time_util.h"

namespace dlq {

Result<Selection> ParseSelectionSpec(std::string_view v) {
  if (v == "all") return Selection{SelectionKind::kAll, std::chrono::seconds(0)};
  auto colon = v.find(':');
  std::string_view kind = v.substr(0, colon);
  auto window = colon == std::string_view::npos ? std::nullopt : ParseDuration(v.substr(colon + 1));
  if ((kind != "older_than" && kind != "expiring_within") || !window || window->count() <= 0) {
    return InvalidArgument(
        fmt::format("'{}': expected all, older_than:DURATION or expiring_within:DURATION (e.g. older_than:1h)", v));
  }
  return Selection{kind == "older_than" ? SelectionKind::kOlderThan : SelectionKind::kExpiringWithin, *window};
}

}  // namespace dlq
