// Replay checkpoints (`replay --checkpoint FILE`). A replay sends records in
// a deterministic order (the "send sequence": the same archive, filter and
// destination give the same sequence every run). The checkpoint stores how
// many items of that sequence are finished, a hash chain over their message
// ids (so a resume can prove it is skipping exactly those), and the ids of
// the finished items that failed (a resume sends them again). Its size is
// bounded by the failure cap, never by the archive's size.
//
// Files are written durably: temp file, fsync, rename, fsync of the directory.
// A crash leaves the previous checkpoint or the new one, never a torn file.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dlq {

inline constexpr int kCheckpointVersion = 1;
// The largest checkpoint file read (the bound of audit records, 256 MiB): a
// larger one is refused, named, without being read.
inline constexpr uint64_t kMaxCheckpointBytes = uint64_t{256} << 20;

struct CheckpointState {
  std::string identity;                 // hex SHA-256 of identity_text
  std::string identity_text;            // what the run replays: source, filter, destination, transform
  uint64_t done = 0;                    // finished items of the send sequence
  std::string chain;                    // ChainNext over the message ids of those items, "" for none
  std::vector<std::string> failed_ids;  // finished but failed; sent again on resume
  uint64_t sent = 0;                    // totals over every run so far
  uint64_t failed = 0;
};

// The identity text of a run: one line per component, in a fixed order.
std::string CheckpointIdentityText(std::string_view source, std::string_view filter, std::string_view destination,
                                   std::string_view transform);
// Hex SHA-256 of the text.
std::string CheckpointIdentity(std::string_view identity_text);

// The chain after one more item: hex SHA-256 of (chain, '\n', message_id).
std::string ChainNext(std::string_view chain, std::string_view message_id);

// nullopt when `path` does not exist. kInvalidArgument naming the file for an
// unreadable, malformed or too large (kMaxCheckpointBytes) checkpoint (never
// silently restarted).
Result<std::optional<CheckpointState>> LoadCheckpoint(const std::string& path);
// Writes durably (see above), a new file with permission bits `mode`.
// Errors name the file and the failing call.
Status SaveCheckpoint(const std::string& path, const CheckpointState& state, mode_t mode = 0600);

// Parses checkpoint file content (exposed for the fuzz target).
Result<CheckpointState> ParseCheckpoint(std::string_view text);
std::string SerializeCheckpoint(const CheckpointState& state);

}  // namespace dlq
