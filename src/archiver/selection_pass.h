// SelectionPass: sorts what each receive brings into messages to archive and
// messages examined but not taken, and holds the latter (invisible, the
// heartbeat extending them) to the end of the pass so that later receives
// reach messages not seen yet. Remembers every message examined and not
// archived, so a copy that comes back counts once; counts each message's
// receives and MD5 failures, and sets aside one that fails every time.
// Thread-compatible (the drainer calls it under its mutex).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "archiver/held_batch.h"
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
    std::chrono::seconds visibility_timeout{120};  // of what it receives, and of what it sets aside
    int corrupt_receipts_to_give_up = 3;           // MD5 failures of one message before it is set aside
    // Examined messages held at most; beyond, HoldExamined hands them back.
    size_t max_examined_held = 20000;
    // Receives of a message before this run (DrainOptions::prior_own_receives); unset: none.
    std::function<int(const std::string& message_id)> prior_own_receives;
  };
  explicit SelectionPass(Options options);

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
  // Counts each message's receive first (OwnReceives).
  Sorted Sort(std::vector<Message>&& msgs, SystemTime now);

  // Receives of `message_id` by dlq-archive: before this run and in it.
  int OwnReceives(const std::string& message_id) const;

  // A receipt that failed the MD5 check; returns the message's failures so
  // far. From corrupt_receipts_to_give_up on, the pass holds it (set aside,
  // not extended) to its end; before, the caller releases it.
  int NoteCorrupt(const HeldMessage& receipt);

  // Holds what the pass examined to its end. Returns what it hands back to
  // release now: everything examined so far, once max_examined_held is reached.
  std::vector<HeldMessage> HoldExamined(std::vector<HeldMessage>&& held);
  size_t held() const { return examined_.held.size() + set_aside_.held.size(); }
  // Whether HoldExamined ever handed messages back early.
  bool released_early() const { return released_early_; }

  // The heartbeat: examined messages due for an extension (AppendDue), and
  // recording one; false when it is not held here (any more).
  void AppendDue(SteadyTime now, std::vector<VisibilityDue>& due) const;
  bool RecordDue(const VisibilityDue& d, SteadyTime until);

  // The pass is over: what it held, to release, and the ids of messages that
  // failed the MD5 check on every receive.
  struct End {
    std::vector<HeldMessage> examined;
    std::vector<HeldMessage> set_aside;
    std::vector<std::string> corrupt_ids;
  };
  End Finish();

 private:
  const Options options_;
  std::unordered_set<std::string> seen_;           // examined, not taken (skipped, dry run, keep)
  std::unordered_map<std::string, int> receipts_;  // message id -> receives in this run
  std::map<std::string, int> corrupt_counts_;      // message id -> MD5 failures
  HeldBatch examined_;                             // examined and held to the end of the pass
  HeldBatch set_aside_;                            // failed the MD5 check every time
  bool released_early_ = false;
};

}  // namespace dlq
