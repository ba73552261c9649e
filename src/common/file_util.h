// Small file helpers shared by the modules that keep state on local disk.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace dlq {

// Permission bits of what dlq-archive creates on local disk: archive objects
// and audit records of a file:// archive, their directories, replay
// checkpoints. Owner-only unless the operator widens them (DLQ_FILE_MODE);
// the process umask can only narrow them further.
struct FileModes {
  mode_t file = 0600;
  mode_t dir = 0700;
};

// A file mode in octal ("0640", "640"): the owner must keep read and write,
// and only read and write bits are allowed (0600..0666); directories get the
// same bits plus search (x) wherever read is granted (0640 -> 0750).
// kInvalidArgument saying what is accepted.
Result<FileModes> ParseFileModes(std::string_view octal);

// Replaces the file at `path` with `data` so that a reader sees the old
// content or the new, never a mix, and the new survives a crash: written to
// a temporary file beside it, fsynced, renamed over `path`, and the
// directory fsynced. The temporary file gets a fresh random name and is
// created exclusively (O_EXCL|O_NOFOLLOW) with `mode`: a file or symbolic
// link planted at any name is never written through. kInvalidArgument
// naming the step, the path and the system's reason; the temporary file is
// removed on failure.
Status WriteFileAtomically(const std::string& path, std::string_view data, mode_t mode);

// Reads the whole regular file at `path`, refusing one larger than
// `max_bytes` without reading it (kInvalidArgument naming `what`, the path,
// its size and the limit). kNotFound when it does not exist; other errors
// (kInvalidArgument) name the step, the path and the system's reason. What
// it holds stays within `max_bytes` + 64 KiB even if the file grows meanwhile.
Result<std::string> ReadFileAtMost(const std::string& path, uint64_t max_bytes, std::string_view what);

// Makes `path` a directory only its owner can use: the missing directories
// of it are created 0700 whatever the umask. Returns the permission bits of
// `path` (an existing directory keeps its own: the caller decides whether to
// warn). kInvalidArgument naming the directory and the system's reason.
Result<mode_t> MakePrivateDirectories(const std::string& path);

}  // namespace dlq
