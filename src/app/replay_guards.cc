#include "app/replay_guards.h"

namespace dlq {

Status CheckFilterNotEmpty(bool archive_form, bool dry_run, bool all, const Filter& filter) {
  if (!archive_form || dry_run || all || !filter.Empty()) return Status();
  return InvalidArgument(
      "no filter selects every message in the archive: narrow it (--queue, --attr, --since, --id, ...) or pass "
      "--all to replay them all (--dry-run shows what --all would send)");
}

}  // namespace dlq
