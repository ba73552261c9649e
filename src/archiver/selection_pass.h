// SelectionPass: sorts what each receive brings into messages to archive and
// messages examined but not taken, which the drainer holds invisible to the
// end of the pass so that later receives reach messages not seen yet.
// Remembers every message examined and not archived, so a copy that comes
// back counts once. Thread-compatible (the drainer calls it under its mutex).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "common/clock.h"
#include "sqs/sqs_client.h"

namespace dlq {

enum class SelectionKind { kAll, kOlderThan, kExpiringWithin };

struct Selection {
  SelectionKind kind = SelectionKind::kAll;
  std::chrono::seconds window{0};  // for kOlderThan (by SentTimestamp) and kExpiringWithin (by expiry)
};

class SelectionPass {
 public:
  struct Options {
    Selection selection;
    bool dry_run = false;  // count what is selected, take nothing
    bool keep = false;     // archive without deleting: the originals stay examined
    bool fifo = false;     // the queue's, for expiry
    std::chrono::seconds retention{0};
  };
  explicit SelectionPass(Options options) : options_(options) {}

  // Whether the selection takes `m` at `now` (wall clock).
  bool Selects(const Message& m, SystemTime now) const;

  struct Sorted {
    std::vector<Message> take;      // to archive
    std::vector<Message> examined;  // to hold invisible until the pass ends
    bool progress = false;          // something this pass had not seen
    uint64_t selected = 0;          // dry run: selected for the first time (counted, not taken)
    uint64_t skipped = 0;           // not selected, for the first time
  };
  // A whole-queue drain takes every message; a selection, a dry run or keep
  // remembers what it examined: the first receipt of a selected message is
  // taken (dry run: counted), every other one is held.
  Sorted Sort(std::vector<Message>&& msgs, SystemTime now);

 private:
  const Options options_;
  std::unordered_set<std::string> seen_;  // examined, not taken (skipped, dry run, keep)
};

}  // namespace dlq
