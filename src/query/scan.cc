#include "query/scan.h"

#include <fmt/format.h>

#include "common/mutex.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <deque>
#include <map>
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
// Reading one object

struct Match {
  ArchiveRecord record;
  uint64_t line;
};

struct ObjectResult {
  std::vector<Match> matches;
  uint64_t compressed = 0, bytes = 0, lines = 0, parsed = 0, skipped_lines = 0;
  bool skipped_object = false;
  std::vector<ReadError> errors;
};

constexpr std::string_view kCanonicalLineStart = "{\"schema\":1,";

class ObjectReader {
 public:
  ObjectReader(ObjectStore& store, const ScanOptions& options, const Prefilter& prefilter)
      : store_(store), options_(options), prefilter_(prefilter) {}

  ObjectResult Read(const std::string& key) {
    ObjectResult r;
    if (Status st = store_.GetInto(key, compressed_); !st.ok()) {
      r.skipped_object = true;
      Report(r, key, 0, st.WithContext(fmt::format("get {} key {}", store_.Describe(), key)).ToString());
      return r;
    }
    r.compressed = compressed_.size();
    GunzipResult gz = GzipDecompressInto(compressed_, options_.max_object_bytes, buffer_);
    r.bytes = gz.size;
    std::string_view text(buffer_.data(), gz.size);
    std::string_view cut;  // the last, incomplete line of a damaged object
    if (!gz.status.ok()) {
      size_t last_nl = text.rfind('\n');
      size_t keep = last_nl == std::string_view::npos ? 0 : last_nl + 1;
      cut = text.substr(keep);
      text = text.substr(0, keep);
      if (keep == 0 && cut.empty()) {
        r.skipped_object = true;
        Report(r, key, 0, gz.status.ToString());
        return r;
      }
    }
    uint64_t line_no = ReadLines(key, text, r);
    if (!gz.status.ok()) {
      ++r.skipped_lines;
      Report(r, key, line_no + 1,
             fmt::format("object is damaged from here on ({} complete lines read before): {}", line_no,
                         gz.status.ToString()));
    }
    return r;
  }

 private:
  void Report(ObjectResult& r, const std::string& key, uint64_t line, std::string message) {
    if (r.errors.size() < options_.max_reported_errors) r.errors.push_back({key, line, std::move(message)});
  }

  // Returns the number of lines (including blank ones).
  uint64_t ReadLines(const std::string& key, std::string_view text, ObjectResult& r) {
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
    uint64_t line_no = 0;
    const char* p = base;
    while (p < end) {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
      const char* line_end = nl == nullptr ? end : nl;
      std::string_view line(p, static_cast<size_t>(line_end - p));
      const size_t line_off = static_cast<size_t>(p - base);
      p = nl == nullptr ? end : nl + 1;
      ++line_no;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.empty()) continue;
      ++r.lines;
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
      ++r.parsed;
      Result<ArchiveRecord> rec = ParseRecordJson(line);
      if (!rec.ok()) {
        ++r.skipped_lines;
        Report(r, key, line_no, rec.status().ToString());
        continue;
      }
      if (!options_.filter.Matches(*rec)) continue;
      r.matches.push_back({std::move(*rec), line_no});
    }
    return line_no;
  }

  ObjectStore& store_;
  const ScanOptions& options_;
  const Prefilter& prefilter_;
  std::string compressed_;  // reused fetch buffer
  GunzipBuffer buffer_;     // reused decompression buffer
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

class OrderedReader {
 public:
  OrderedReader(ObjectStore& store, const ScanOptions& options, const Prefilter& prefilter,
                const std::vector<ArchiveObject>& objects, int workers)
      : objects_(objects), window_(static_cast<size_t>(workers) + 2) {
    size_t n = std::min(objects.size(), static_cast<size_t>(workers));
    for (size_t i = 0; i < n; ++i) {
      threads_.emplace_back([this, &store, &options, &prefilter] {
        ObjectReader reader(store, options, prefilter);
        Work(reader);
      });
    }
  }
  ~OrderedReader() {
    {
      MutexLock lock(mu_);
      stop_ = true;
    }
    cv_.NotifyAll();
    for (std::thread& t : threads_) t.join();
  }
  OrderedReader(const OrderedReader&) = delete;
  OrderedReader& operator=(const OrderedReader&) = delete;

  // The result for object `i`; called with i = 0, 1, 2, ... in order.
  ObjectResult Next(size_t i) {
    MutexLock lock(mu_);
    cv_.Wait(mu_, [&]() DLQ_REQUIRES(mu_) { return done_.count(i) > 0; });
    ObjectResult r = std::move(done_[i]);
    done_.erase(i);
    consumed_ = i + 1;
    cv_.NotifyAll();
    return r;
  }

 private:
  void Work(ObjectReader& reader) {
    while (true) {
      size_t i;
      {
        MutexLock lock(mu_);
        cv_.Wait(mu_,
                 [&]() DLQ_REQUIRES(mu_) { return stop_ || next_ >= objects_.size() || next_ < consumed_ + window_; });
        if (stop_ || next_ >= objects_.size()) return;
        i = next_++;
      }
      ObjectResult r = reader.Read(objects_[i].info.key);
      {
        MutexLock lock(mu_);
        done_[i] = std::move(r);
      }
      cv_.NotifyAll();
    }
  }

  const std::vector<ArchiveObject>& objects_;
  const size_t window_;
  Mutex mu_;
  CondVar cv_;
  size_t next_ DLQ_GUARDED_BY(mu_) = 0;
  size_t consumed_ DLQ_GUARDED_BY(mu_) = 0;
  bool stop_ DLQ_GUARDED_BY(mu_) = false;
  std::map<size_t, ObjectResult> done_ DLQ_GUARDED_BY(mu_);
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

Result<ScanStats> ScanArchive(ObjectStore& store, const Destination& from, const ScanOptions& in_options,
                              const std::function<bool(const ArchiveRecord&, const RecordLocation&)>& fn) {
  ScanOptions options = in_options;
  DLQ_RETURN_IF_ERROR(options.filter.CompileRegex());
  ScanStats stats;

  ListOptions list;
  list.layouts = options.layouts;
  list.queues = options.filter.queues;
  if (options.filter.since) list.since = *options.filter.since - kKeyTimeSlack;
  if (options.filter.until && options.filter.by == TimeField::kArchived) list.until = options.filter.until;
  list.stop = options.stop;
  ListStats list_stats;
  DLQ_ASSIGN_OR_RETURN(std::vector<ArchiveObject> objects, ListArchive(store, from, list, &list_stats));
  stats.pruned_prefixes = list_stats.pruned_prefixes;
  stats.unrecognised_key = list_stats.unrecognised_key;
  stats.skipped_entries = std::move(list_stats.skipped);

  int workers = options.parallelism;
  if (workers <= 0) {
    workers = from.scheme == "s3" ? 16 : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  const Prefilter prefilter = Prefilter::For(options.filter);
  HashSet seen(std::max<size_t>(options.dedup_memory_bytes, 4096));
  std::deque<Pass> passes{Pass{}};
  while (!passes.empty()) {
    Pass pass = passes.front();
    passes.pop_front();
    const bool first_pass = stats.passes == 0;
    ++stats.passes;
    seen.Clear();
    OrderedReader reader(store, options, prefilter, objects, workers);
    for (size_t i = 0; i < objects.size(); ++i) {
      if (options.stop != nullptr && options.stop->load()) {
        stats.stopped = true;
        return stats;
      }
      ObjectResult r = reader.Next(i);
      ++stats.objects;
      stats.compressed_bytes += r.compressed;
      stats.bytes += r.bytes;
      if (first_pass) {
        stats.lines += r.lines;
        stats.parsed += r.parsed;
        stats.skipped_lines += r.skipped_lines;
        stats.skipped_objects += r.skipped_object ? 1 : 0;
        for (ReadError& e : r.errors) {
          if (stats.errors.size() < options.max_reported_errors) stats.errors.push_back(std::move(e));
        }
      }
      for (const Match& m : r.matches) {
        const Position pos{i, m.line};
        if (options.deduplicate) {
          Hash128 h = HashId(m.record);
          if (h.hi < pass.lo || h.hi > pass.hi) continue;
          if (seen.Contains(h)) {
            if (!(pos < pass.done_before)) ++stats.duplicates;
            continue;
          }
          while (seen.Full() && pass.lo < pass.hi) {
            // Out of room: finish the upper half of this range in a later pass.
            uint64_t mid = pass.lo + (pass.hi - pass.lo) / 2;
            passes.push_back(Pass{mid + 1, pass.hi, std::max(pass.done_before, pos)});
            pass.hi = mid;
            seen.RemoveAbove(mid);
          }
          if (h.hi > pass.hi) continue;
          seen.Insert(h);
          if (pos < pass.done_before) continue;
        }
        ++stats.records;
        if (!fn(m.record, RecordLocation{objects[i].info.key, m.line})) return stats;
      }
    }
  }
  return stats;
}

}  // namespace dlq
