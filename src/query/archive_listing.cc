// Listing the archive with partition pruning (scan.h: ListArchive).
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "common/strings.h"
#include "query/scan.h"

namespace dlq {
namespace {

std::string KeyPrefixOf(const Destination& from) {
  return from.prefix.empty() ? std::string(kDefaultKeyPrefix) : from.prefix;
}

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
  Lister(ObjectStore& store, const std::vector<KeyPattern>& patterns, const ListOptions& options,
         std::vector<std::string> reserved_dirs, ListStats& stats)
      : store_(store),
        patterns_(patterns),
        options_(options),
        reserved_dirs_(std::move(reserved_dirs)),
        stats_(stats) {}

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
        if (Reserved(info.key)) continue;
        AddObject(std::move(info), dir, cands);
      }
      for (const std::string& sub : page->common_prefixes) {
        if (Reserved(sub) || sub.size() <= dir.size() + 1) continue;
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
    if (Reserved(e.path) || !StartsWith(e.path, dir)) return;
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
  // Under a reserved directory (_audit/, _causes/): not archive objects.
  bool Reserved(std::string_view key) const {
    return std::any_of(reserved_dirs_.begin(), reserved_dirs_.end(),
                       [&](const std::string& d) { return StartsWith(key, d); });
  }

  std::vector<std::string> reserved_dirs_;
  ListStats& stats_;
  std::vector<ArchiveObject> objects_;
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
  // The replay audit records and the causes sidecar live beside the archive objects.
  std::vector<std::string> reserved_dirs;
  for (std::string_view d : kReservedArchiveDirs) reserved_dirs.push_back(fmt::format("{}/{}/", KeyPrefixOf(from), d));
  // A level of another layout can look like one of ours (any name looks like
  // a queue), so pruning is only safe when the keys follow the layouts: check
  // the first page of keys, and list everything unpruned if one does not.
  ++st.list_calls;
  Result<ListPage> sample = store.List(dir, "", "");
  if (!sample.ok()) return sample.status().WithContext(fmt::format("list {} prefix \"{}\"", store.Describe(), dir));
  for (const ObjectInfo& info : sample->objects) {
    if (std::any_of(reserved_dirs.begin(), reserved_dirs.end(),
                    [&](const std::string& d) { return StartsWith(info.key, d); })) {
      continue;
    }
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
  Lister lister(store, patterns, options, std::move(reserved_dirs), st);
  DLQ_RETURN_IF_ERROR(lister.Walk(dir, cands));
  std::vector<ArchiveObject> objects = lister.Take();
  std::sort(objects.begin(), objects.end(),
            [](const ArchiveObject& a, const ArchiveObject& b) { return a.info.key < b.info.key; });
  return objects;
}

}  // namespace dlq
