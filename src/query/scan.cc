// The scan's orchestration: passes over the listed objects, their workers,
// de-duplication and delivery in key order (scan.h). Listing:
// archive_listing.cc; reading one object: scan_object_reader.cc; the
// raw-line prefilter: scan_prefilter.cc; one pass's shared state:
// scan_pass_state.cc.
#include "query/scan.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <optional>
#include <thread>
#include <utility>

#include "common/crypto.h"
#include "query/scan_internal.h"

namespace dlq {
namespace {

using scan_internal::kMinBudget;
using scan_internal::Limits;
using scan_internal::Match;
using scan_internal::ObjectResult;
using scan_internal::PassState;
using scan_internal::Prefilter;
using scan_internal::ReadClaimedObjects;

// A batch stays open far less than a day (its messages are held under a
// visibility timeout, at most 12 h in SQS), and every record's archived_at is
// at or after its key's time; sent_at precedes archived_at (a day covers
// clock skew too). So a partition whose key time span ends a day before
// `since` holds no record at or after `since`.
constexpr auto kKeyTimeSlack = std::chrono::hours(24);

// ---------------------------------------------------------------------------
// De-duplication: a bounded open-addressing set of 128-bit hashes of
// (queue, message_id), restricted to a range of the hash space per pass.

struct Hash128 {
  uint64_t hi = 0, lo = 0;
  bool operator==(const Hash128&) const = default;
};

Hash128 HashId(const ArchiveRecord& r) {
  Md5Hasher h;
  h.Update(r.queue);
  h.Update(std::string_view("\0", 1));
  h.Update(r.message_id);
  Md5Digest d = h.Finish();
  Hash128 out;
  std::memcpy(&out.hi, d.data(), 8);
  std::memcpy(&out.lo, d.data() + 8, 8);
  if (out.hi == 0 && out.lo == 0) out.lo = 1;  // {0,0} marks an empty slot
  return out;
}

class HashSet {
 public:
  // Grows by doubling up to the largest power of two of 16-byte slots that
  // fits in `memory_bytes`; Full() once that table is 75% used.
  explicit HashSet(size_t memory_bytes) {
    max_slots_ = 256;
    while (max_slots_ * 2 * sizeof(Hash128) <= memory_bytes) max_slots_ *= 2;
    Clear();
  }
  bool Contains(const Hash128& h) const {
    for (size_t i = h.lo & Mask();; i = (i + 1) & Mask()) {
      if (slots_[i] == h) return true;
      if (slots_[i] == Hash128{}) return false;
    }
  }
  bool Full() const { return slots_.size() == max_slots_ && size_ >= Limit(); }
  void Insert(const Hash128& h) {
    if (size_ >= Limit() && slots_.size() < max_slots_) Rebuild(slots_.size() * 2, UINT64_MAX);
    size_t i = h.lo & Mask();
    while (!(slots_[i] == Hash128{})) {
      if (slots_[i] == h) return;
      i = (i + 1) & Mask();
    }
    slots_[i] = h;
    ++size_;
  }
  // Drops every hash whose `hi` is above `max_hi`.
  void RemoveAbove(uint64_t max_hi) { Rebuild(slots_.size(), max_hi); }
  void Clear() {
    slots_.assign(std::min<size_t>(max_slots_, 1 << 12), Hash128{});
    size_ = 0;
  }

 private:
  size_t Mask() const { return slots_.size() - 1; }
  size_t Limit() const { return slots_.size() / 4 * 3; }
  void Rebuild(size_t slots, uint64_t max_hi) {
    std::vector<Hash128> old(slots, Hash128{});
    old.swap(slots_);
    size_ = 0;
    for (const Hash128& h : old) {
      if (h == Hash128{} || h.hi > max_hi) continue;
      size_t i = h.lo & Mask();
      while (!(slots_[i] == Hash128{})) i = (i + 1) & Mask();
      slots_[i] = h;
      ++size_;
    }
  }
  std::vector<Hash128> slots_;
  size_t size_ = 0, max_slots_ = 0;
};

struct Position {
  size_t object = 0;
  uint64_t line = 0;
  bool operator<(const Position& o) const { return std::tie(object, line) < std::tie(o.object, o.line); }
};

// A pass finishes the hash range [lo, hi]; records before `done_before` were
// delivered by earlier passes (they only fill the set).
struct Pass {
  uint64_t lo = 0, hi = UINT64_MAX;
  Position done_before;
};

// ---------------------------------------------------------------------------
// Parallel fetch and decode, delivered in key order.

// The workers of one pass: each reads the objects PassState hands it. The
// destructor shuts the pass down and joins them (each ends after its current
// piece, or when a GET in flight returns).
class Workers {
 public:
  Workers(ObjectStore& store, const ScanOptions& options, const Limits& limits, const Prefilter& prefilter,
          const std::vector<ArchiveObject>& objects, PassState& state, int workers)
      : state_(state) {
    size_t n = std::min(objects.size(), static_cast<size_t>(workers));
    for (size_t i = 0; i < n; ++i) {
      threads_.emplace_back([&store, &options, &limits, &prefilter, &objects, &state] {
        ReadClaimedObjects(store, options, limits, prefilter, objects, state);
      });
    }
  }
  ~Workers() {
    state_.Shutdown();
    for (std::thread& t : threads_) t.join();
  }
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

 private:
  PassState& state_;
  std::vector<std::thread> threads_;
};

}  // namespace

std::string_view ScanStopName(ScanStop stop) {
  switch (stop) {
    case ScanStop::kNone: return "";
    case ScanStop::kCancelled: return "cancelled";
    case ScanStop::kDeadline: return "deadline";
  }
  return "";
}

namespace {

ListOptions ScanListOptions(const ScanOptions& options, const Clock& clock) {
  ListOptions list;
  list.layouts = options.layouts;
  list.queues = options.filter.queues;
  if (options.filter.since) list.since = *options.filter.since - kKeyTimeSlack;
  if (options.filter.until && options.filter.by == TimeField::kArchived) list.until = options.filter.until;
  list.stop = options.stop;
  list.deadline = options.deadline;
  list.clock = &clock;
  return list;
}

int ScanWorkers(const ScanOptions& options, const Destination& from) {
  if (options.parallelism > 0) return options.parallelism;
  return from.scheme == "s3" ? 16 : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Runs the passes of one scan over listed objects and delivers their matches
// to `fn` in key order (with deduplication: each id once, over as many passes
// as the set of seen ids needs). Holds references only; lives for one
// ScanArchive call on one thread (the workers it starts are joined per pass).
class Scanner {
 public:
  using RecordFn = std::function<bool(const ArchiveRecord&, const RecordLocation&)>;

  Scanner(ObjectStore& store, const ScanOptions& options, const Clock& clock, const std::vector<ArchiveObject>& objects,
          int workers, const RecordFn& fn, ScanStats& stats)
      : store_(store),
        options_(options),
        clock_(clock),
        objects_(objects),
        workers_(workers),
        fn_(fn),
        stats_(stats),
        limits_(Limits::For(options)),
        prefilter_(Prefilter::For(options.filter)),
        seen_(std::max<size_t>(options.dedup_memory_bytes, 4096)) {}

  void Run() {
    while (!passes_.empty()) {
      Pass pass = passes_.front();
      passes_.pop_front();
      if (!RunPass(pass)) return;
    }
  }

 private:
  enum class Delivery { kGoOn, kStopping, kCallerDone };

  // Reads every object for `pass`; false when the scan ended early.
  bool RunPass(Pass& pass) {
    const bool first_pass = stats_.passes == 0;
    ++stats_.passes;
    stats_.objects_done = 0;
    seen_.Clear();
    PassState state(options_, limits_, clock_, objects_.size(), static_cast<size_t>(workers_) + 2);
    Workers reader(store_, options_, limits_, prefilter_, objects_, state, workers_);
    for (size_t i = 0; i < objects_.size(); ++i) {
      if (state.Stopping()) return StopAt(state, i);
      ObjectResult r;
      PassState::Pull pull;
      while ((pull = state.Next(i, batch_, r)) == PassState::Pull::kMatches) {
        switch (DeliverBatch(state, i, pass)) {
          case Delivery::kGoOn: break;
          case Delivery::kStopping: return StopAt(state, i);
          case Delivery::kCallerDone: return CallerDoneAt(state, i);
        }
      }
      if (pull == PassState::Pull::kStopped) return StopAt(state, i);
      if (r.stopped) {
        stats_.compressed_bytes += r.compressed;
        stats_.bytes += r.bytes;
        return StopAt(state, objects_.size());
      }
      CountObject(r, first_pass, i);
    }
    NotePeak(state);
    return true;
  }

  // Hands the matches of object `i` in batch_ to fn_, then releases their memory.
  Delivery DeliverBatch(PassState& state, size_t i, Pass& pass) {
    size_t cost = 0;
    for (const Match& m : batch_) cost += m.cost;
    bool go_on = true, stopping = false;
    for (size_t k = 0; k < batch_.size() && go_on; ++k) {
      if (state.Stopping()) {
        stopping = true;
        break;
      }
      const Match& m = batch_[k];
      if (options_.deduplicate && !FirstCopyInPass(m, Position{i, m.line}, pass)) continue;
      ++stats_.records;
      go_on = fn_(m.record, RecordLocation{objects_[i].info.key, m.line});
    }
    batch_.clear();
    state.Delivered(i, cost);
    if (stopping) return Delivery::kStopping;
    return go_on ? Delivery::kGoOn : Delivery::kCallerDone;
  }

  // Whether `m` is the first copy of its id in this pass's hash range that an
  // earlier pass did not deliver. When the set is full, the upper half of the
  // range moves to a later pass.
  bool FirstCopyInPass(const Match& m, const Position& pos, Pass& pass) {
    Hash128 h = HashId(m.record);
    if (h.hi < pass.lo || h.hi > pass.hi) return false;
    if (seen_.Contains(h)) {
      if (!(pos < pass.done_before)) ++stats_.duplicates;
      return false;
    }
    while (seen_.Full() && pass.lo < pass.hi) {
      uint64_t mid = pass.lo + (pass.hi - pass.lo) / 2;
      passes_.push_back(Pass{mid + 1, pass.hi, std::max(pass.done_before, pos)});
      pass.hi = mid;
      seen_.RemoveAbove(mid);
    }
    if (h.hi > pass.hi) return false;
    seen_.Insert(h);
    return !(pos < pass.done_before);
  }

  // Counts one object read to its end. Lines, parses and errors are counted
  // on the first pass only: later passes read the same objects again.
  void CountObject(ObjectResult& r, bool first_pass, size_t i) {
    ++stats_.objects;
    ++stats_.objects_done;
    stats_.compressed_bytes += r.compressed;
    stats_.bytes += r.bytes;
    if (!first_pass) return;
    stats_.lines += r.lines;
    stats_.parsed += r.parsed;
    stats_.skipped_lines += r.skipped_lines;
    stats_.skipped_objects += r.skipped_object ? 1 : 0;
    if (r.cut_short && stats_.cut_short.size() < options_.max_reported_errors) {
      stats_.cut_short.push_back({objects_[i].info.key, r.lines, r.bytes});
    }
    for (ReadError& e : r.errors) {
      if (stats_.errors.size() < options_.max_reported_errors) stats_.errors.push_back(std::move(e));
    }
  }

  // Ends the scan while object `i` is being read: what was read of it counts
  // in the byte totals (how far the scan got). Returns false, as RunPass does.
  bool StopAt(PassState& state, size_t i) {
    stats_.stopped = true;
    stats_.stop_reason = options_.stop != nullptr && options_.stop->load() ? ScanStop::kCancelled : ScanStop::kDeadline;
    state.Shutdown();
    ObjectResult partial = state.Partial(i);
    stats_.compressed_bytes += partial.compressed;
    stats_.bytes += partial.bytes;
    NotePeak(state);
    return false;
  }

  // Ends the scan because fn_ asked to while object `i` was being delivered:
  // that object was read (objects; what was read of it in the byte totals),
  // though not to its end (objects_done). Returns false, as RunPass does.
  bool CallerDoneAt(PassState& state, size_t i) {
    state.Shutdown();
    ObjectResult partial = state.Partial(i);
    ++stats_.objects;
    stats_.compressed_bytes += partial.compressed;
    stats_.bytes += partial.bytes;
    NotePeak(state);
    return false;
  }

  void NotePeak(const PassState& state) {
    stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, state.peak());
  }

  ObjectStore& store_;
  const ScanOptions& options_;
  const Clock& clock_;
  const std::vector<ArchiveObject>& objects_;
  const int workers_;
  const RecordFn& fn_;
  ScanStats& stats_;
  const Limits limits_;
  const Prefilter prefilter_;
  HashSet seen_;
  std::deque<Pass> passes_{Pass{}};
  std::vector<Match> batch_;  // reused: one object's matches at a time
};

}  // namespace

Result<ScanStats> ScanArchive(ObjectStore& store, const Destination& from, const ScanOptions& in_options,
                              const std::function<bool(const ArchiveRecord&, const RecordLocation&)>& fn) {
  ScanOptions options = in_options;
  DLQ_RETURN_IF_ERROR(options.filter.CompileRegex());
  if (options.memory_budget_bytes < kMinBudget) {
    return InvalidArgument(fmt::format("a scan's memory budget must be at least {} bytes, not {}", kMinBudget,
                                       options.memory_budget_bytes));
  }
  const Clock& clock = options.clock != nullptr ? *options.clock : DefaultClock();
  ListStats list_stats;
  DLQ_ASSIGN_OR_RETURN(std::vector<ArchiveObject> objects,
                       ListArchive(store, from, ScanListOptions(options, clock), &list_stats));
  ScanStats stats;
  stats.pruned_prefixes = list_stats.pruned_prefixes;
  stats.unrecognised_key = list_stats.unrecognised_key;
  stats.objects_listed = objects.size();
  stats.skipped_entries = std::move(list_stats.skipped);
  Scanner(store, options, clock, objects, ScanWorkers(options, from), fn, stats).Run();
  return stats;
}

}  // namespace dlq
