// Destination: where archives go, parsed from the URL that `archive --to`,
// the daemon's `destination` and `--from` take. Pure; no I/O.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace dlq {

// "s3://bucket/prefix" or "file:///abs/dir" (a prefix is the path under the
// bucket or directory root).
struct Destination {
  std::string uri;
  std::string scheme;  // "s3" or "file"
  std::string bucket;  // s3 only
  std::string root;    // file only: the directory
  std::string prefix;  // key prefix, no leading or trailing '/'
};

// kInvalidArgument naming the URL and the expected form, or the offending
// segment of an s3:// bucket or prefix that does not name exactly one place
// (an empty, "." or ".." segment, a control character: ValidateKeyPath). One
// trailing '/' is dropped. A file:// directory is the operator's own path and
// is taken as given (the kernel resolves it the same way for every reader).
Result<Destination> ParseDestination(std::string_view uri);

// The directories under the archive prefix that hold no archive objects:
// replay's audit records and the causes sidecar. Readers of the archive skip
// them (Athena skips every `_`-prefixed path by itself).
inline constexpr std::string_view kReservedArchiveDirs[] = {"_audit", "_causes"};

// The key prefix archives are written under: `prefix`, or kDefaultKeyPrefix
// ("dlq-archive") when the URL has none. `_audit/` and `_causes/` go below it.
std::string ArchivePrefix(const Destination& destination);

}  // namespace dlq
