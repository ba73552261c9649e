// Private to the scan's files (scan*.cc; not for other modules): the limits
// one scan's memory budget sets, the raw-line prefilter, one pass's shared
// state and the workers' loop. The scan's contract is in scan.h.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "archive/record.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "query/filter.h"
#include "query/scan.h"
#include "s3/object_store.h"

namespace dlq::scan_internal {

constexpr size_t kPiece = size_t{256} << 10;  // decompressed per step (stop checks in between)
constexpr size_t kRecordCost = 512;           // a match's estimated memory beyond its line's bytes
constexpr size_t kMinBudget = size_t{4} << 20;
// How often a waiting worker or consumer looks at the stop flag and the
// deadline (neither wakes it: a signal handler cannot notify).
constexpr auto kPoll = std::chrono::milliseconds(10);

// What the budget allows (see scan.h).
struct Limits {
  size_t budget = 0;
  size_t others = 0;          // shared by the objects other than the next one to deliver
  size_t max_compressed = 0;  // larger objects are refused
  size_t max_line = 0;        // longer lines are skipped

  static Limits For(const ScanOptions& o) {
    Limits l;
    l.budget = o.memory_budget_bytes;
    l.others = l.budget / 2;
    l.max_compressed = l.budget / 8;
    l.max_line = std::min(o.max_line_bytes, l.budget / 8 - kPiece);
    return l;
  }
};

// ---------------------------------------------------------------------------
// The raw-line prefilter (scan_prefilter.cc)

// Substrings every matching line contains (AND), derived from the filter.
// Valid only for lines in the archiver's canonical form (FindNonCanonical).
struct Prefilter {
  std::vector<std::string> needles;  // needles[0] is the longest (searched across the whole object)

  static Prefilter For(const Filter& f);
  bool enabled() const { return !needles.empty(); }
};

// Offsets in `text` where the archiver's canonical escaping may not hold, so
// a substring test could miss a match: `\/`, a `\u` escape other than the
// `\u000X`/`\u001X` the archiver writes for control characters, and the
// base64 fallbacks `..._base64":"` / `...Base64":"`. A line holding one is
// decoded in full. (A JSON body with its own `\u` escapes lands here too.)
// `out` is cleared first.
void FindNonCanonical(std::string_view text, std::vector<size_t>& out);

// ---------------------------------------------------------------------------
// One pass's shared state (scan_pass_state.cc): which object each worker
// reads, each object's results until they are delivered in order, the
// memory budget and the stop signals.

struct Match {
  ArchiveRecord record;
  uint64_t line;
  size_t cost;  // reserved until delivered
};

// What reading one object found besides its matches.
struct ObjectResult {
  uint64_t compressed = 0, bytes = 0, lines = 0, parsed = 0, skipped_lines = 0;
  bool skipped_object = false;
  bool cut_short = false;  // its share of the scan's time ran out
  bool stopped = false;    // ended early by a stop, the deadline or the end of the pass
  std::vector<ReadError> errors;
};

// Shared by one pass's workers (producers) and the thread that delivers
// (the consumer); thread-safe. Holds references to the options and clock.
class PassState {
 public:
  PassState(const ScanOptions& options, const Limits& limits, const Clock& clock, size_t objects, size_t window)
      : options_(options), limits_(limits), clock_(clock), objects_(objects), window_(window) {}

  // True once the caller's stop flag is set, the deadline has passed or
  // Shutdown() was called. Lock-free; called after every piece.
  bool Stopping() const;
  SteadyTime Now() const { return clock_.SteadyNow(); }

  // The next object for a worker, in key order and at most `window` ahead of
  // delivery; nullopt when there is none left or the pass is stopping.
  std::optional<size_t> Claim();

  // Reserves `n` bytes for `object`, waiting for room; false when the pass
  // is stopping (nothing reserved).
  bool Reserve(size_t object, size_t n);
  void Release(size_t object, size_t n);
  // Queues a match for delivery, reserving its cost; false when stopping.
  bool Emit(size_t object, Match m);
  void Finish(size_t object, ObjectResult result);

  enum class Pull { kMatches, kFinished, kStopped };
  // For the consumer, with object = 0, 1, 2, ... in turn: the object's
  // matches queued so far (moved into `out`; hand their cost back with
  // Delivered), else its result once it is finished (the next call is for
  // the next object), else kStopped when the pass is stopping.
  Pull Next(size_t object, std::vector<Match>& out, ObjectResult& result);
  void Delivered(size_t object, size_t cost);

  // Ends the pass: waiters return, readers stop after their current piece.
  void Shutdown();
  size_t peak() const;
  // After Shutdown: the result of `object` once its reader has ended (it
  // ends after its current piece, or when a GET in flight returns); empty if
  // no worker took it.
  ObjectResult Partial(size_t object);

 private:
  struct Slot {
    std::deque<Match> pending;
    size_t used = 0;
    bool finished = false;
    ObjectResult result;
  };

  bool Fits(size_t object, size_t n) const DLQ_REQUIRES(mu_);
  void Add(size_t object, size_t n) DLQ_REQUIRES(mu_);
  void Subtract(size_t object, size_t n) DLQ_REQUIRES(mu_);

  const ScanOptions& options_;
  const Limits limits_;
  const Clock& clock_;
  const size_t objects_;
  const size_t window_;
  std::atomic<bool> shutdown_{false};
  mutable Mutex mu_;
  CondVar room_;   // memory freed, or the head moved on
  CondVar ready_;  // a match or a result for the consumer
  size_t next_ DLQ_GUARDED_BY(mu_) = 0;
  size_t head_ DLQ_GUARDED_BY(mu_) = 0;  // the object the consumer delivers now
  size_t used_ DLQ_GUARDED_BY(mu_) = 0;
  size_t peak_ DLQ_GUARDED_BY(mu_) = 0;
  std::map<size_t, Slot> slots_ DLQ_GUARDED_BY(mu_);
};

// ---------------------------------------------------------------------------
// Reading objects (scan_object_reader.cc)

// One worker of a pass: reads the objects `state` hands it (Claim) until
// there are none left or the pass is stopping, queueing their matches and
// finishing each with its result. An object's working set is released when
// its reading ends; its matches stay reserved until delivered
// (PassState::Delivered). Runs on the worker's own thread.
void ReadClaimedObjects(ObjectStore& store, const ScanOptions& options, const Limits& limits,
                        const Prefilter& prefilter, const std::vector<ArchiveObject>& objects, PassState& state);

}  // namespace dlq::scan_internal
