// Reading one object of a scan: fetched whole (it is compressed),
// decompressed into a window a piece at a time, complete lines handled in
// place; only a line that spans pieces is kept across them, and only up to
// the line limit (scan_internal.h).
#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

#include "archive/gzip.h"
#include "query/scan_internal.h"

namespace dlq::scan_internal {
namespace {

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
    void* p =
        data_ == nullptr ? mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : Remap(n);
    if (p == MAP_FAILED) return false;
    data_ = static_cast<char*>(p);
    size_ = n;
    return true;
  }
  // mremap, except under ThreadSanitizer, which does not see the old range
  // unmapped by mremap: another thread's later mapping at that address would
  // be reported as racing with this one's writes. There: map, copy, unmap.
  void* Remap(size_t n) {
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
    void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return p;
    std::memcpy(p, data_, std::min(n, size_));
    munmap(data_, size_);
    return p;
#endif
#endif
    return mremap(data_, size_, n, MREMAP_MAYMOVE);
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

}  // namespace

void ReadClaimedObjects(ObjectStore& store, const ScanOptions& options, const Limits& limits,
                        const Prefilter& prefilter, const std::vector<ArchiveObject>& objects, PassState& state) {
  ObjectReader reader(store, options, limits, prefilter, state);
  while (std::optional<size_t> next = state.Claim()) {
    state.Finish(*next, reader.Read(*next, objects[*next].info));
  }
}

}  // namespace dlq::scan_internal
