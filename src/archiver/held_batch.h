// What the drainer holds invisible in SQS, by receipt handle: HeldMessage,
// the HeldBatch it travels in (to an object, or held by the selection pass),
// and the heartbeat's VisibilityDue entries for them. Plain values; the
// owner of a batch says which lock guards it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "archive/batch_builder.h"
#include "common/clock.h"

namespace dlq {

struct HeldMessage {
  std::string message_id;
  std::string receipt_handle;  // empty: its place in a batch that moved it elsewhere
  SteadyTime received_at;      // first receipt by us
  SteadyTime visible_until;    // our deadline, never later than SQS's
  // Another receipt of a message whose record is in the same batch (a copy
  // SQS handed out again): settled with it, counted once.
  bool copy = false;
};

struct HeldBatch {
  uint64_t seq = 0;
  std::vector<HeldMessage> held;
  std::optional<SealedBatch> sealed;  // set once compressed
  bool deleting = false;              // stored; only deletes remain
};

// A held message whose visibility the heartbeat extends: batch.held[index]
// when it was due, by `seconds`. `moves`: its batch hands messages on to
// another batch (a receiver's messages waiting for room), so it may be
// elsewhere when the extension comes back.
struct VisibilityDue {
  uint64_t seq = 0;
  size_t index = 0;
  std::string receipt_handle;
  int seconds = 0;
  bool moves = false;
};
// An extension SQS applied: (index into the due entries, new deadline).
using VisibilityExtension = std::pair<size_t, SteadyTime>;

// Appends to `due` the messages of `batch` whose visibility ends within half
// of `timeout` at `now`, each extended by `timeout` or by what is left of
// SQS's 12-hour window (less 30 s). A message with less than 10 s of that
// window left is not extended; if `building` it sets `seal` (archive it now).
void AppendDue(const HeldBatch& batch, SteadyTime now, std::chrono::seconds timeout, bool building, bool moves,
               bool& seal, std::vector<VisibilityDue>& due);

// Records deadline `until` for `d` when batch.held[d.index] still holds its
// receipt handle; false when it does not (it moved or left).
bool RecordDue(HeldBatch& batch, const VisibilityDue& d, SteadyTime until);

}  // namespace dlq
