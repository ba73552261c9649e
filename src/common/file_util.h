// Small file helpers shared by the modules that keep state on local disk.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "common/status.h"

namespace dlq {

// Replaces the file at `path` with `data` so that a reader sees the old
// content or the new, never a mix, and the new survives a crash: written to
// a temporary file beside it (created with `mode`), fsynced, renamed over
// `path`, and the directory fsynced. kInvalidArgument naming the step, the
// path and the system's reason; the temporary file is removed on failure.
Status WriteFileAtomically(const std::string& path, std::string_view data, mode_t mode);

}  // namespace dlq
