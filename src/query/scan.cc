#include "query/scan.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include "common/mutex.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "archive/gzip.h"
#include "common/crypto.h"
#include "common/strings.h"

namespace dlq {
namespace {

using namespace std::chrono_literals;

// A batch stays open far less than a day (its messages are held under a
// visibility timeout, at most 12 h in SQS), and every record's archived_at is
// at or after its key's time; sent_at precedes archived_at (a day covers
// clock skew too). So a partition whose key time span ends a day before
// `since` holds no record at or after `since`.
constexpr auto kKeyTimeSlack = std::chrono::hours(24);

std::string KeyPrefixOf(const Destination& from) {
  return from.prefix.empty() ? std::string(kDefaultKeyPrefix) : from.prefix;
}

// ---------------------------------------------------------------------------
// Listing

struct Candidate {
  size_t layout;
  size_t level;
  KeyFacts facts;
};

bool Excluded(const KeyFacts& f, const ListOptions& o) {
  if (!f.queue.empty() && !o.queues.empty() && std::find(o.queues.begin(), o.queues.end(), f.queue) == o.queues.end()) {
    return true;
  }
  if (auto span = f.Span()) {
    if (o.since && span->second <= *o.since) return true;
    if (o.until && span->first >= *o.until) return true;
  }
  return false;
}

class Lister {
 public:
  Lister(ObjectStore& store, const std::vector<KeyPattern>& patterns, const ListOptions& options, std::string audit_dir,
         ListStats& stats)
      : store_(store), patterns_(patterns), options_(options), audit_dir_(std::move(audit_dir)), stats_(stats) {}

  Status Walk(const std::string& dir, const std::vector<Candidate>& cands) {
    std::string token;
    do {
      if (options_.stop != nullptr && options_.stop->load()) {
        return Cancelled("listing the archive stopped by a signal");
      }
      if (options_.deadline && options_.clock != nullptr && options_.clock->SteadyNow() >= *options_.deadline) {
        return DeadlineExceeded("listing the archive ran past the scan's deadline");
      }
      ++stats_.list_calls;
      Result<ListPage> page = store_.List(dir, cands.empty() ? "" : "/", token);
      if (!page.ok()) return page.status().WithContext(fmt::format("list {} prefix \"{}\"", store_.Describe(), dir));
      for (SkippedEntry& e : page->skipped) NoteSkipped(std::move(e), dir, cands);
      for (ObjectInfo& info : page->objects) {
        if (StartsWith(info.key, audit_dir_)) continue;
        AddObject(std::move(info), dir, cands);
      }
      for (const std::string& sub : page->common_prefixes) {
        if (sub == audit_dir_ || sub.size() <= dir.size() + 1) continue;
        std::string_view comp(sub.data() + dir.size(), sub.size() - dir.size() - 1);
        std::vector<Candidate> next;
        bool any_match = false;
        for (const Candidate& c : cands) {
          if (c.level + 1 >= patterns_[c.layout].levels()) continue;
          Candidate n{c.layout, c.level + 1, c.facts};
          if (!patterns_[c.layout].MatchLevel(c.level, comp, n.facts)) continue;
          any_match = true;
          if (!Excluded(n.facts, options_)) next.push_back(std::move(n));
        }
        if (any_match && next.empty()) {
          ++stats_.pruned_prefixes;
          continue;
        }
        DLQ_RETURN_IF_ERROR(Walk(sub, next));
      }
      token = page->next_token;
    } while (!token.empty());
    return Status::Ok();
  }

  std::vector<ArchiveObject> Take() { return std::move(objects_); }

 private:
  // Keeps an entry the store left out for the report, each path once
  // (sorted), unless the options prune it or readers skip it anyway (audit).
  void NoteSkipped(SkippedEntry e, const std::string& dir, const std::vector<Candidate>& cands) {
    if (StartsWith(e.path, audit_dir_) || !StartsWith(e.path, dir)) return;
    std::string_view comp = std::string_view(e.path).substr(dir.size());
    bool any_match = false, kept = cands.empty();
    for (const Candidate& c : cands) {
      KeyFacts facts = c.facts;
      if (!patterns_[c.layout].MatchLevel(c.level, comp, facts)) continue;
      any_match = true;
      kept = kept || !Excluded(facts, options_);
    }
    if (any_match && !kept) return;
    std::vector<SkippedEntry>& out = stats_.skipped;
    auto at = std::lower_bound(out.begin(), out.end(), e.path,
                               [](const SkippedEntry& s, const std::string& path) { return s.path < path; });
    if (at == out.end() || at->path != e.path) out.insert(at, std::move(e));
  }

  void AddObject(ObjectInfo info, const std::string& dir, const std::vector<Candidate>& cands) {
    ArchiveObject obj;
    std::string_view comp = std::string_view(info.key).substr(dir.size());
    bool any_match = false;
    if (!cands.empty()) {
      for (const Candidate& c : cands) {
        if (c.level + 1 != patterns_[c.layout].levels()) continue;
        KeyFacts facts = c.facts;
        if (!patterns_[c.layout].MatchLevel(c.level, comp, facts)) continue;
        any_match = true;
        if (!Excluded(facts, options_)) {
          obj.facts = std::move(facts);
          obj.matched = true;
          break;
        }
      }
    } else {
      // Listed without a layout (a directory no layout explains): the key may
      // still match one as a whole.
      for (const KeyPattern& p : patterns_) {
        KeyFacts facts;
        if (p.Match(info.key, facts)) {
          any_match = true;
          if (!Excluded(facts, options_)) {
            obj.facts = std::move(facts);
            obj.matched = true;
            break;
          }
        }
      }
    }
    if (any_match && !obj.matched) {
      ++stats_.pruned_prefixes;
      return;
    }
    obj.info = std::move(info);
    objects_.push_back(std::move(obj));
  }

  ObjectStore& store_;
  const std::vector<KeyPattern>& patterns_;
  const ListOptions& options_;
  std::string audit_dir_;
  ListStats& stats_;
  std::vector<ArchiveObject> objects_;
};

// ---------------------------------------------------------------------------
// The raw-line prefilter

// True when `s` is written verbatim inside a JSON string by the archiver
// (nothing to escape), so its bytes appear as they are in the line.
bool Verbatim(std::string_view s) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || c == '"' || c == '\\') return false;
  }
  return true;
}

// Substrings every matching line contains (AND), derived from the filter.
// Valid only for lines in the archiver's canonical form (FindNonCanonical).
struct Prefilter {
  std::vector<std::string> needles;  // needles[0] is the longest (searched across the whole object)

  static Prefilter For(const Filter& f) {
    Prefilter p;
    auto add = [&](std::string n) { p.needles.push_back(std::move(n)); };
    if (f.queues.size() == 1 && Verbatim(f.queues[0])) add(fmt::format("\"queue\":\"{}\",", f.queues[0]));
    if (f.ids.size() == 1 && Verbatim(f.ids[0])) add(fmt::format("\"message_id\":\"{}\",", f.ids[0]));
    for (const auto& [name, value] : f.attr_equals) {
      if (!Verbatim(name) || !Verbatim(value)) continue;
      add(fmt::format("\"{}\":{{\"DataType\":\"", name));
      add(fmt::format("\"StringValue\":\"{}\"}}", value));
    }
    for (const std::string& name : f.attr_exists) {
      if (Verbatim(name)) add(fmt::format("\"{}\":{{\"DataType\":\"", name));
    }
    if (!f.body_contains.empty() && Verbatim(f.body_contains)) add(f.body_contains);
    for (const auto& [path, value] : f.json_equals) {
      if (!value.empty() && Verbatim(value)) add(value);
    }
    std::stable_sort(p.needles.begin(), p.needles.end(),
                     [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
    return p;
  }
  bool enabled() const { return !needles.empty(); }
};

// Offsets in `text` where the archiver's canonical escaping may not hold, so
// a substring test could miss a match: `\/`, a `\u` escape other than the
// `\u000X`/`\u001X` the archiver writes for control characters, and the
// base64 fallbacks `..._base64":"` / `...Base64":"`. A line holding one is
// decoded in full. (A JSON body with its own `\u` escapes lands here too.)
void FindNonCanonical(std::string_view text, std::vector<size_t>& out) {
  out.clear();
  const char* p = text.data();
  const size_t n = text.size();
  auto at = [&](size_t i) -> bool {
    if (p[i] == '\\' && i + 1 < n) {
      if (p[i + 1] == '/') return true;
      if (p[i + 1] == 'u')
        return !(i + 5 < n && p[i + 2] == '0' && p[i + 3] == '0' && (p[i + 4] == '0' || p[i + 4] == '1'));
      return false;
    }
    return p[i] == '6' && i + 4 < n && p[i + 1] == '4' && p[i + 2] == '"' && p[i + 3] == ':' && p[i + 4] == '"';
  };
  size_t i = 0;
#if defined(__SSE2__)
  // Candidates: '\' followed by 'u' or '/', and '6' followed by '4' and '"'; rare in canonical text.
  const __m128i backslash = _mm_set1_epi8('\\'), u = _mm_set1_epi8('u'), slash = _mm_set1_epi8('/');
  const __m128i six = _mm_set1_epi8('6'), four = _mm_set1_epi8('4'), quote = _mm_set1_epi8('"');
  for (; i + 18 <= n; i += 16) {
    __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + 1));
    __m128i v2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + 2));
    __m128i esc =
        _mm_and_si128(_mm_cmpeq_epi8(v0, backslash), _mm_or_si128(_mm_cmpeq_epi8(v1, u), _mm_cmpeq_epi8(v1, slash)));
    __m128i b64 =
        _mm_and_si128(_mm_cmpeq_epi8(v0, six), _mm_and_si128(_mm_cmpeq_epi8(v1, four), _mm_cmpeq_epi8(v2, quote)));
    unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(esc, b64)));
    while (mask != 0) {
      size_t k = i + static_cast<size_t>(std::countr_zero(mask));
      if (at(k)) out.push_back(k);
      mask &= mask - 1;
    }
  }
#endif
  for (; i < n; ++i) {
    if ((p[i] == '\\' || p[i] == '6') && at(i)) out.push_back(i);
  }
}

// ---------------------------------------------------------------------------
// One pass's shared state: which object each worker reads, each object's
// results until they are delivered in order, the memory budget and the stop
// signals.

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

class PassState {
 public:
  PassState(const ScanOptions& options, const Limits& limits, const Clock& clock, size_t objects, size_t window)
      : options_(options), limits_(limits), clock_(clock), objects_(objects), window_(window) {}

  // True once the caller's stop flag is set, the deadline has passed or
  // Shutdown() was called. Lock-free; called after every piece.
  bool Stopping() const {
    if (shutdown_.load(std::memory_order_relaxed)) return true;
    if (options_.stop != nullptr && options_.stop->load(std::memory_order_relaxed)) return true;
    return options_.deadline && clock_.SteadyNow() >= *options_.deadline;
  }
  SteadyTime Now() const { return clock_.SteadyNow(); }

  // The next object for a worker, in key order and at most `window` ahead of
  // delivery; nullopt when there is none left or the pass is stopping.
  std::optional<size_t> Claim() {
    MutexLock lock(mu_);
    while (true) {
      if (Stopping() || next_ >= objects_) return std::nullopt;
      if (next_ < head_ + window_) break;
      room_.WaitFor(mu_, kPoll);
    }
    slots_.try_emplace(next_);
    return next_++;
  }

  // Reserves `n` bytes for `object`, waiting for room; false when the pass
  // is stopping (nothing reserved).
  bool Reserve(size_t object, size_t n) {
    MutexLock lock(mu_);
    while (!Fits(object, n)) {
      if (Stopping()) return false;
      room_.WaitFor(mu_, kPoll);
    }
    Add(object, n);
    return true;
  }
  void Release(size_t object, size_t n) {
    if (n == 0) return;
    MutexLock lock(mu_);
    Subtract(object, n);
  }
  // Queues a match for delivery, reserving its cost; false when stopping.
  bool Emit(size_t object, Match m) {
    MutexLock lock(mu_);
    while (!Fits(object, m.cost)) {
      if (Stopping()) return false;
      room_.WaitFor(mu_, kPoll);
    }
    Add(object, m.cost);
    slots_[object].pending.push_back(std::move(m));
    ready_.NotifyOne();
    return true;
  }
  void Finish(size_t object, ObjectResult result) {
    MutexLock lock(mu_);
    Slot& s = slots_[object];
    s.result = std::move(result);
    s.finished = true;
    ready_.NotifyOne();
  }

  enum class Pull { kMatches, kFinished, kStopped };
  // For the consumer, with object = 0, 1, 2, ... in turn: the object's
  // matches queued so far (moved into `out`; hand their cost back with
  // Delivered), else its result once it is finished (the next call is for
  // the next object), else kStopped when the pass is stopping.
  Pull Next(size_t object, std::vector<Match>& out, ObjectResult& result) {
    MutexLock lock(mu_);
    while (true) {
      auto it = slots_.find(object);
      if (it != slots_.end() && !it->second.pending.empty()) {
        out.clear();
        for (Match& m : it->second.pending) out.push_back(std::move(m));
        it->second.pending.clear();
        return Pull::kMatches;
      }
      if (it != slots_.end() && it->second.finished) {
        result = std::move(it->second.result);
        slots_.erase(it);
        head_ = object + 1;
        room_.NotifyAll();
        return Pull::kFinished;
      }
      if (Stopping()) return Pull::kStopped;
      ready_.WaitFor(mu_, kPoll);
    }
  }
  void Delivered(size_t object, size_t cost) {
    if (cost == 0) return;
    MutexLock lock(mu_);
    Subtract(object, cost);
  }

  // Ends the pass: waiters return, readers stop after their current piece.
  void Shutdown() {
    shutdown_ = true;
    MutexLock lock(mu_);
    room_.NotifyAll();
    ready_.NotifyAll();
  }
  size_t peak() const {
    MutexLock lock(mu_);
    return peak_;
  }
  // After Shutdown: the result of `object` once its reader has ended (it
  // ends after its current piece, or when a GET in flight returns); empty if
  // no worker took it.
  ObjectResult Partial(size_t object) {
    MutexLock lock(mu_);
    while (true) {
      auto it = slots_.find(object);
      if (it == slots_.end()) return {};
      if (it->second.finished) return std::move(it->second.result);
      ready_.WaitFor(mu_, kPoll);
    }
  }

 private:
  struct Slot {
    std::deque<Match> pending;
    size_t used = 0;
    bool finished = false;
    ObjectResult result;
  };

  // The next object to deliver may use the whole budget, and when nothing
  // of it awaits delivery (so the consumer cannot free anything) it goes
  // ahead regardless: its own working set is at most 3/8 of the budget and
  // the others hold at most half. The others share half the budget.
  bool Fits(size_t object, size_t n) const DLQ_REQUIRES(mu_) {
    auto it = slots_.find(object);
    if (object == head_) return used_ + n <= limits_.budget || it == slots_.end() || it->second.pending.empty();
    auto head = slots_.find(head_);
    const size_t head_used = head == slots_.end() ? 0 : head->second.used;
    return used_ - head_used + n <= limits_.others;
  }
  void Add(size_t object, size_t n) DLQ_REQUIRES(mu_) {
    slots_[object].used += n;
    used_ += n;
    peak_ = std::max(peak_, used_);
    if (options_.on_reserved) options_.on_reserved(used_);
  }
  void Subtract(size_t object, size_t n) DLQ_REQUIRES(mu_) {
    auto it = slots_.find(object);
    if (it != slots_.end()) it->second.used -= n;
    used_ -= n;
    if (options_.on_reserved) options_.on_reserved(used_);
    room_.NotifyAll();
  }

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
// Reading one object: fetched whole (it is compressed), decompressed into a
// window a piece at a time, complete lines handled in place; only a line
// that spans pieces is kept across them, and only up to the line limit.

// Anonymous memory for a decompression window: grown and shrunk in place by
// mremap (no copy, never two buffers at once) and unmapped when dropped, so
// a long line's memory goes back to the system at once, whatever malloc
// would keep. Sizes are rounded up to whole pages.
class WindowMemory {
 public:
  WindowMemory() = default;
  ~WindowMemory() { Free(); }
  WindowMemory(const WindowMemory&) = delete;
  WindowMemory& operator=(const WindowMemory&) = delete;

  static size_t Rounded(size_t n) { return (n + kPage - 1) / kPage * kPage; }
  char* data() const { return data_; }
  size_t size() const { return size_; }
  // Makes the mapping Rounded(n) bytes, keeping the bytes both sizes have.
  // False (nothing changed) when the memory cannot be had.
  bool Resize(size_t n) {
    n = Rounded(n);
    if (n == size_) return true;
    void* p = data_ == nullptr ? mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                               : mremap(data_, size_, n, MREMAP_MAYMOVE);
    if (p == MAP_FAILED) return false;
    data_ = static_cast<char*>(p);
    size_ = n;
    return true;
  }
  void Free() {
    if (data_ != nullptr) munmap(data_, size_);
    data_ = nullptr;
    size_ = 0;
  }

 private:
  static constexpr size_t kPage = 4096;
  char* data_ = nullptr;
  size_t size_ = 0;
};

constexpr std::string_view kCanonicalLineStart = "{\"schema\":1,";

class ObjectReader {
 public:
  ObjectReader(ObjectStore& store, const ScanOptions& options, const Limits& limits, const Prefilter& prefilter,
               PassState& state)
      : store_(store), options_(options), limits_(limits), prefilter_(prefilter), state_(state) {}

  // Reads object `index`, queueing its matches on the pass state; returns
  // the rest of what it found. Everything it reserved is released.
  ObjectResult Read(size_t index, const ObjectInfo& info) {
    index_ = index;
    key_ = &info.key;
    r_ = ObjectResult{};
    Run(info);
    state_.Release(index_, held_);
    held_ = 0;
    if (window_.size() > kPiece && !window_.Resize(kPiece)) window_.Free();  // a long line grew it
    return std::move(r_);
  }

 private:
  bool Hold(size_t n) {
    const bool reserved = Waiting([&] { return state_.Reserve(index_, n); });
    if (!reserved) {
      r_.stopped = true;
      return false;
    }
    held_ += n;
    return true;
  }

  // Runs `wait` (a reservation that may wait for memory); with a time share,
  // the time it took does not count against this object.
  template <typename Wait>
  bool Waiting(Wait wait) {
    if (!options_.max_object_time) return wait();
    const auto before = state_.Now();
    const bool done = wait();
    waited_ += state_.Now() - before;
    return done;
  }

  // True once the object has used its share of the scan's time.
  bool OutOfTime() const {
    return options_.max_object_time && state_.Now() - started_ - waited_ >= *options_.max_object_time;
  }

  void CutShort() {
    r_.cut_short = true;
    ++r_.skipped_lines;
    Report(line_no_ + 1,
           fmt::format("cut short after {} ms, this object's share of the scan's time: {} complete lines ({} bytes) "
                       "read, the rest not read",
                       std::chrono::duration_cast<std::chrono::milliseconds>(*options_.max_object_time).count(),
                       line_no_, r_.bytes));
  }

  void Report(uint64_t line, std::string message) {
    if (r_.errors.size() < options_.max_reported_errors) r_.errors.push_back({*key_, line, std::move(message)});
  }

  void Refuse(uint64_t size) {
    r_.skipped_object = true;
    Report(0, fmt::format("object of {} bytes not read: larger than the {} bytes (1/8 of the scan's memory budget of "
                          "{} bytes) one object may take",
                          size, limits_.max_compressed, limits_.budget));
  }

  void Run(const ObjectInfo& info) {
    if (options_.max_object_time) started_ = state_.Now();
    waited_ = {};
    if (info.size > limits_.max_compressed) {
      Refuse(info.size);
      return;
    }
    if (!Hold(info.size)) return;
    std::string compressed;
    if (Status st = store_.GetInto(*key_, compressed); !st.ok()) {
      r_.skipped_object = true;
      Report(0, st.WithContext(fmt::format("get {} key {}", store_.Describe(), *key_)).ToString());
      return;
    }
    if (compressed.size() > limits_.max_compressed) {
      Refuse(compressed.size());
      return;
    }
    if (compressed.size() > held_ && !Hold(compressed.size() - held_)) return;
    r_.compressed = compressed.size();

    if (!Hold(kPiece)) return;
    if (!window_.Resize(kPiece)) {
      r_.skipped_object = true;
      Report(0, fmt::format("cannot map {} bytes for decompression", kPiece));
      return;
    }
    begin_ = end_ = 0;
    line_no_ = 0;
    long_line_ = 0;
    GunzipStream gz(compressed);
    Status damage;
    while (true) {
      if (state_.Stopping()) {
        r_.stopped = true;
        return;
      }
      if (OutOfTime()) {
        if (long_line_ != 0) SkipLongLine();
        CutShort();
        return;
      }
      if (!MakeRoom(damage)) break;
      size_t n = gz.Read(window_.data() + end_, std::min(window_.size() - end_, kPiece));
      if (n > options_.max_object_bytes - r_.bytes) {
        n = options_.max_object_bytes - r_.bytes;
        damage = DataLoss(fmt::format("decompressed size exceeds the limit of {} bytes", options_.max_object_bytes));
      }
      r_.bytes += n;
      if (!Consume(n)) return;
      if (n == 0 || !damage.ok()) break;
    }
    if (r_.stopped) return;
    if (damage.ok()) damage = gz.status();
    if (long_line_ != 0) SkipLongLine();
    std::string_view tail(window_.data() + begin_, end_ - begin_);
    if (damage.ok()) {
      if (!tail.empty()) ReadLines(tail);
      return;
    }
    if (r_.bytes == 0) {
      r_.skipped_object = true;
      Report(0, damage.ToString());
      return;
    }
    ++r_.skipped_lines;
    Report(line_no_ + 1, fmt::format("object is damaged from here on ({} complete lines read before): {}", line_no_,
                                     damage.ToString()));
  }

  // Makes room for a piece after end_: moves the partial line to the front,
  // then grows the window (up to the line limit plus a piece). False when
  // the pass is stopping (r_.stopped) or the memory cannot be mapped
  // (`damage` says so).
  bool MakeRoom(Status& damage) {
    if (window_.size() - end_ >= kPiece) return true;
    if (begin_ > 0) {
      std::memmove(window_.data(), window_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
      if (window_.size() - end_ >= kPiece) return true;
    }
    const size_t old = window_.size();
    const size_t cap = WindowMemory::Rounded(std::min(std::max(old * 2, end_ + kPiece), limits_.max_line + kPiece));
    if (!Hold(cap - old)) return false;
    if (!window_.Resize(cap)) {
      damage = Internal(fmt::format("cannot map {} bytes for a line of more than {} bytes", cap, end_));
      return false;
    }
    return true;
  }

  // The window back to one piece, once the line it held is being skipped.
  void Shrink() {
    const size_t old = window_.size();
    if (old <= kPiece || !window_.Resize(kPiece)) return;
    state_.Release(index_, old - kPiece);
    held_ -= old - kPiece;
  }

  // Handles `n` new bytes at end_: every line they complete, and the start
  // of a line too long to keep (then skipped up to its end).
  bool Consume(size_t n) {
    char* w = window_.data();
    size_t from = end_;
    end_ += n;
    if (long_line_ != 0) {
      const void* nl = std::memchr(w + from, '\n', n);
      if (nl == nullptr) {
        long_bytes_ += n;
        begin_ = end_ = 0;
        return true;
      }
      const size_t at = static_cast<size_t>(static_cast<const char*>(nl) - w);
      long_bytes_ += at - from;
      SkipLongLine();
      begin_ = from = at + 1;
    }
    if (const void* last = memrchr(w + from, '\n', end_ - from)) {
      const size_t stop = static_cast<size_t>(static_cast<const char*>(last) - w) + 1;
      if (!ReadLines(std::string_view(w + begin_, stop - begin_))) return false;
      begin_ = stop;
    }
    if (end_ - begin_ > limits_.max_line) {
      long_line_ = ++line_no_;
      ++r_.lines;
      long_bytes_ = end_ - begin_;
      begin_ = end_ = 0;
      Shrink();
    }
    return true;
  }

  void SkipLongLine() {
    ++r_.skipped_lines;
    Report(long_line_, fmt::format("line of {} bytes skipped: longer than the {} bytes one record may take",
                                   long_bytes_, limits_.max_line));
    long_line_ = 0;
  }

  // Reads complete lines (the last may lack its newline), numbering them on
  // from line_no_. False when the pass stopped while a match waited for room.
  bool ReadLines(std::string_view text) {
    const bool prefilter = prefilter_.enabled();
    if (prefilter) FindNonCanonical(text, marks_);
    size_t next_mark = 0;
    const char* base = text.data();
    const char* end = base + text.size();
    // Next occurrence of the anchor needle at or after `from` (end when none).
    const std::string& anchor = prefilter ? prefilter_.needles[0] : empty_;
    const char* hit = base;
    bool hit_valid = false;
    auto next_hit = [&](const char* from) {
      if (!hit_valid || hit < from) {
        void* h = memmem(from, static_cast<size_t>(end - from), anchor.data(), anchor.size());
        hit = h == nullptr ? end : static_cast<const char*>(h);
        hit_valid = true;
      }
      return hit;
    };
    const char* p = base;
    while (p < end) {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
      const char* line_end = nl == nullptr ? end : nl;
      std::string_view line(p, static_cast<size_t>(line_end - p));
      const size_t line_off = static_cast<size_t>(p - base);
      p = nl == nullptr ? end : nl + 1;
      ++line_no_;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.empty()) continue;
      ++r_.lines;
      if (prefilter && line.substr(0, kCanonicalLineStart.size()) == kCanonicalLineStart) {
        while (next_mark < marks_.size() && marks_[next_mark] < line_off) ++next_mark;
        bool canonical = next_mark == marks_.size() || marks_[next_mark] >= line_off + line.size();
        if (canonical) {
          if (next_hit(line.data()) >= line.data() + line.size()) continue;
          bool all = true;
          for (size_t i = 1; i < prefilter_.needles.size() && all; ++i) {
            const std::string& n = prefilter_.needles[i];
            all = memmem(line.data(), line.size(), n.data(), n.size()) != nullptr;
          }
          if (!all) continue;
        }
      }
      ++r_.parsed;
      Result<ArchiveRecord> rec = ParseRecordJson(line);
      if (!rec.ok()) {
        ++r_.skipped_lines;
        Report(line_no_, rec.status().ToString());
        continue;
      }
      if (!options_.filter.Matches(*rec)) continue;
      const size_t cost = line.size() + kRecordCost;
      if (!Waiting([&] { return state_.Emit(index_, Match{std::move(*rec), line_no_, cost}); })) {
        r_.stopped = true;
        return false;
      }
    }
    return true;
  }

  ObjectStore& store_;
  const ScanOptions& options_;
  const Limits& limits_;
  const Prefilter& prefilter_;
  PassState& state_;
  // The object being read.
  size_t index_ = 0;
  const std::string* key_ = nullptr;
  ObjectResult r_;
  size_t held_ = 0;  // reserved for this object's working set
  // Decompressed bytes [begin_, end_) of window_ are the unfinished line.
  WindowMemory window_;
  size_t begin_ = 0, end_ = 0;
  uint64_t line_no_ = 0;
  uint64_t long_line_ = 0;  // the number of the over-long line being skipped; 0: none
  uint64_t long_bytes_ = 0;
  SteadyTime started_{};  // with a time share: when reading began
  Duration waited_{};     // time spent waiting for memory since
  std::vector<size_t> marks_;
  const std::string empty_;
};

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
        ObjectReader reader(store, options, limits, prefilter, state);
        while (std::optional<size_t> next = state.Claim()) {
          state.Finish(*next, reader.Read(*next, objects[*next].info));
        }
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

std::vector<KeyPattern> LayoutPatterns(const ArchiveLayouts& layouts, const Destination& from) {
  std::string prefix = KeyPrefixOf(from);
  std::vector<KeyPattern> out;
  if (layouts.templates.empty()) {
    out.emplace_back(KeyTemplate::Default(), prefix);
    out.emplace_back(KeyTemplate::Parse(kHiveKeyTemplate).value(), prefix);
  } else {
    for (const KeyTemplate& t : layouts.templates) out.emplace_back(t, prefix);
  }
  return out;
}

Result<std::vector<ArchiveObject>> ListArchive(ObjectStore& store, const Destination& from, const ListOptions& options,
                                               ListStats* stats) {
  std::vector<KeyPattern> patterns = LayoutPatterns(options.layouts, from);
  // Start at the literal directory every layout shares.
  std::string dir = patterns.front().literal_dir();
  for (const KeyPattern& p : patterns) {
    size_t n = 0;
    while (n < dir.size() && n < p.literal_dir().size() && dir[n] == p.literal_dir()[n]) ++n;
    dir.resize(n);
  }
  dir.resize(dir.rfind('/') == std::string::npos ? 0 : dir.rfind('/') + 1);
  const size_t level = static_cast<size_t>(std::count(dir.begin(), dir.end(), '/'));
  std::vector<Candidate> cands;
  for (size_t i = 0; i < patterns.size(); ++i) {
    if (level < patterns[i].levels()) cands.push_back({i, level, {}});
  }
  ListStats local;
  ListStats& st = stats != nullptr ? *stats : local;
  const std::string audit_dir = KeyPrefixOf(from) + "/_audit/";
  // A level of another layout can look like one of ours (any name looks like
  // a queue), so pruning is only safe when the keys follow the layouts: check
  // the first page of keys, and list everything unpruned if one does not.
  ++st.list_calls;
  Result<ListPage> sample = store.List(dir, "", "");
  if (!sample.ok()) return sample.status().WithContext(fmt::format("list {} prefix \"{}\"", store.Describe(), dir));
  for (const ObjectInfo& info : sample->objects) {
    if (StartsWith(info.key, audit_dir)) continue;
    bool known = false;
    for (const KeyPattern& p : patterns) {
      KeyFacts facts;
      known = known || p.Match(info.key, facts);
    }
    if (!known) {
      st.unrecognised_key = info.key;
      cands.clear();
      break;
    }
  }
  Lister lister(store, patterns, options, audit_dir, st);
  DLQ_RETURN_IF_ERROR(lister.Walk(dir, cands));
  std::vector<ArchiveObject> objects = lister.Take();
  std::sort(objects.begin(), objects.end(),
            [](const ArchiveObject& a, const ArchiveObject& b) { return a.info.key < b.info.key; });
  return objects;
}

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
