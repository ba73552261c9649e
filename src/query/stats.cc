#include "query/stats.h"

#include <fmt/format.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <simdjson.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "common/crypto.h"
#include "common/strings.h"
#include "common/text.h"
#include "common/time_util.h"
#include "query/fingerprint.h"

namespace dlq {
namespace {

constexpr std::string_view kEllipsis = "\xE2\x80\xA6";  // U+2026
constexpr size_t kTableGroupChars = 100;                // group text shown per table row

std::optional<SystemTime> TimeOf(const ArchiveRecord& r, TimeField by) {
  if (by == TimeField::kArchived) return r.archived_at;
  return r.sent_at;
}

std::string_view TimeFieldName(TimeField by) {
  return by == TimeField::kArchived ? "archived_at" : "sent_at";
}

// Count descending, then key ascending with the no-value group after the rest.
bool GroupOrder(const GroupStats& a, const GroupStats& b) {
  if (a.count != b.count) return a.count > b.count;
  if (a.key.has_value() != b.key.has_value()) return a.key.has_value();
  return a.key < b.key;
}

std::string Label(const GroupStats& g, bool other) {
  if (other) return "(other)";
  return g.key ? *g.key : "(none)";
}

// One table cell of group text: terminal-safe (TerminalSafe), cut to
// kTableGroupChars code points of the group's text.
std::string TableText(std::string_view s) {
  size_t chars = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && ++chars > kTableGroupChars) {
      return TerminalSafe(s.substr(0, i)) + std::string(kEllipsis);
    }
  }
  return TerminalSafe(s);
}

std::string TimeCell(const std::optional<SystemTime>& t) {
  return t ? FormatIso8601(*t) : "-";
}

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

void WriteString(JsonWriter& w, std::string_view s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

void WriteCause(JsonWriter& w, const GroupCause& c) {
  w.StartObject();
  w.Key("key");
  WriteString(w, c.key);
  w.Key("type");
  WriteString(w, c.type);
  w.Key("message");
  WriteString(w, c.message);
  w.Key("found");
  w.Uint64(c.found);
  w.Key("answered");
  w.Uint64(c.answered);
  if (!c.absence.empty()) {
    w.Key("absence");
    WriteString(w, c.absence);
    w.Key("reason");
    WriteString(w, c.reason);
  }
  if (!c.merged_keys.empty()) {
    w.Key("merged_keys");
    w.StartArray();
    for (const std::string& k : c.merged_keys) WriteString(w, k);
    w.EndArray();
  }
  w.EndObject();
}

// The CAUSE cell: the cause key, or "(none: STATUS)".
std::string CauseCell(const GroupStats& g) {
  if (!g.cause) return "-";
  if (!g.cause->key.empty()) return TableText(g.cause->key);
  return g.cause->absence.empty() ? "-" : fmt::format("(none: {})", TerminalSafe(g.cause->absence));
}

void WriteGroup(JsonWriter& w, const GroupStats& g, bool other, bool group_id, bool failed_again) {
  w.StartObject();
  if (group_id && g.key && !other) {
    w.Key("id");
    WriteString(w, GroupId(*g.key));
  }
  w.Key("key");
  if (g.key && !other) {
    WriteString(w, *g.key);
  } else {
    w.Null();
  }
  if (other) {
    w.Key("other");
    w.Bool(true);
  }
  w.Key("count");
  w.Uint64(g.count);
  w.Key("first_seen");
  if (g.first_seen) {
    WriteString(w, FormatIso8601(*g.first_seen));
  } else {
    w.Null();
  }
  w.Key("last_seen");
  if (g.last_seen) {
    WriteString(w, FormatIso8601(*g.last_seen));
  } else {
    w.Null();
  }
  w.Key("example_id");
  WriteString(w, g.example_id);
  if (failed_again) {
    w.Key("failed_again");
    w.Uint64(g.failed_again);
  }
  if (g.cause) {
    w.Key("cause");
    WriteCause(w, *g.cause);
  }
  w.EndObject();
}

}  // namespace

Result<GroupBy> GroupBy::Parse(std::string_view text) {
  GroupBy g;
  g.text = std::string(text);
  if (text == "queue") {
    g.kind = Kind::kQueue;
  } else if (text == "day") {
    g.kind = Kind::kDay;
  } else if (text == "fingerprint") {
    g.kind = Kind::kFingerprint;
  } else if (StartsWith(text, "attr:")) {
    g.kind = Kind::kAttribute;
    g.attribute = std::string(text.substr(5));
    if (g.attribute.empty()) return InvalidArgument("--group-by attr:NAME needs an attribute name after 'attr:'");
  } else if (StartsWith(text, "json:")) {
    g.kind = Kind::kJsonPath;
    auto path = JsonPath::Parse(text.substr(5));
    if (!path.ok()) return path.status().WithContext(fmt::format("--group-by {}", text));
    g.path = std::move(*path);
  } else {
    return InvalidArgument(
        fmt::format("--group-by '{}': expected queue, day, attr:NAME, json:PATH (e.g. json:$.error.type) or "
                    "fingerprint",
                    text));
  }
  return g;
}

std::optional<std::string> GroupBy::KeyOf(const ArchiveRecord& r, TimeField by) const {
  switch (kind) {
    case Kind::kQueue: return r.queue;
    case Kind::kDay: {
      std::optional<SystemTime> t = TimeOf(r, by);
      if (!t) return std::nullopt;
      return FormatIso8601(*t).substr(0, 10);
    }
    case Kind::kAttribute: {
      if (auto it = r.message_attributes.find(attribute); it != r.message_attributes.end()) {
        if (it->second.IsBinary()) return "base64:" + Base64Encode(it->second.binary_value);
        return it->second.string_value;
      }
      if (auto it = r.attributes.find(attribute); it != r.attributes.end()) return it->second;
      return std::nullopt;
    }
    case Kind::kJsonPath: return path->Lookup(r.body);
    case Kind::kFingerprint: return FailureGroupKey(r, fingerprint);
  }
  return std::nullopt;
}

void GroupStats::Add(const ArchiveRecord& r, std::optional<SystemTime> t) {
  ++count;
  if (t) {
    if (!first_seen || *t < *first_seen) first_seen = t;
    if (!last_seen || *t > *last_seen) last_seen = t;
  }
  // Earliest time first (records without one after), then the smallest id.
  auto rank = [](const std::optional<SystemTime>& time) {
    return std::make_pair(!time.has_value(), time.value_or(SystemTime{}));
  };
  if (example_id.empty() || rank(t) < rank(example_time_) ||
      (rank(t) == rank(example_time_) && r.message_id < example_id)) {
    example_id = r.message_id;
    example_time_ = t;
  }
}

StatsAggregator::StatsAggregator(GroupBy group_by, TimeField by, size_t max_groups)
    : group_by_(std::move(group_by)), by_(by), max_groups_(max_groups) {}

void StatsAggregator::Add(const ArchiveRecord& record) {
  ++records_;
  std::optional<std::string> key = group_by_.KeyOf(record, by_);
  std::string slot;
  if (key) {
    CapKey(*key, kMaxGroupKeyBytes);
    slot = "=" + *key;
  } else {
    slot = "!";
  }
  if (observer_) observer_(key, record);
  std::optional<SystemTime> t = TimeOf(record, by_);
  auto it = groups_.find(slot);
  GroupStats* g = nullptr;
  if (it != groups_.end()) {
    g = &it->second;
  } else if (groups_.size() >= max_groups_) {
    if (!other_) other_.emplace();
    g = &*other_;
  } else {
    g = &groups_.emplace(std::move(slot), GroupStats{}).first->second;  // the key lives in the slot until Finish
  }
  g->Add(record, t);
  if (is_failed_again_ && is_failed_again_(record)) ++g->failed_again;
}

StatsReport StatsAggregator::Finish() && {
  StatsReport report;
  report.group_by = group_by_.text;
  report.by = by_;
  report.group_ids = group_by_.kind == GroupBy::Kind::kFingerprint;
  report.max_groups = max_groups_;
  report.records = records_;
  report.failed_again_counted = static_cast<bool>(is_failed_again_);
  report.other = std::move(other_);
  report.groups.reserve(groups_.size());
  while (!groups_.empty()) {  // moves each key out of its slot: never two copies of the keys
    auto node = groups_.extract(groups_.begin());
    GroupStats& g = node.mapped();
    std::string& slot = node.key();
    if (slot.front() == '=') {
      slot.erase(0, 1);
      g.key = std::move(slot);
    }
    report.groups.push_back(std::move(g));
  }
  std::sort(report.groups.begin(), report.groups.end(), GroupOrder);
  return report;
}

std::string RenderStatsTable(const StatsReport& report) {
  // COUNT, FIRST SEEN, LAST SEEN, EXAMPLE ID, ID (with group_ids), GROUP. The
  // id comes before the group, so rows whose cut groups read alike still differ.
  using Row = std::vector<std::string>;
  std::vector<Row> rows;
  rows.push_back({"COUNT", "FIRST SEEN", "LAST SEEN", "EXAMPLE ID"});
  if (report.group_ids) rows.back().emplace_back("ID");
  if (report.failed_again_counted) rows.back().emplace_back("FAILED_AGAIN");
  if (report.causes) {
    rows.back().emplace_back("FOUND");
    rows.back().emplace_back("CAUSE");
  }
  rows.back().emplace_back("GROUP");
  auto add = [&](const GroupStats& g, bool other) {
    Row& row = rows.emplace_back();
    row = {std::to_string(g.count), TimeCell(g.first_seen), TimeCell(g.last_seen), TerminalSafe(g.example_id)};
    if (report.group_ids) row.push_back(g.key && !other ? GroupId(*g.key) : "-");
    if (report.failed_again_counted) row.push_back(std::to_string(g.failed_again));
    if (report.causes) {
      row.push_back(g.cause ? fmt::format("{}/{}", g.cause->found, g.cause->answered) : "-");
      row.push_back(CauseCell(g));
    }
    std::string label = TableText(Label(g, other));
    if (g.cause && !g.cause->merged_keys.empty()) {
      label += fmt::format(" (+{} group{} with the same cause)", g.cause->merged_keys.size(),
                           g.cause->merged_keys.size() == 1 ? "" : "s");
    }
    row.push_back(std::move(label));
  };
  for (const GroupStats& g : report.groups) add(g, false);
  if (report.other) add(*report.other, true);
  std::vector<size_t> widths(rows.front().size(), 0);
  for (const Row& row : rows) {
    for (size_t i = 0; i + 1 < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const Row& row : rows) {
    out += fmt::format("{:>{}}", row[0], widths[0]);
    for (size_t i = 1; i + 1 < row.size(); ++i) out += fmt::format("  {:<{}}", row[i], widths[i]);
    out += fmt::format("  {}\n", row.back());
  }
  size_t groups = report.groups.size() + (report.other ? 1 : 0);
  out += fmt::format("{} record{} in {} group{} by {} (times: {})\n", report.records, report.records == 1 ? "" : "s",
                     groups, groups == 1 ? "" : "s", report.group_by, TimeFieldName(report.by));
  if (report.other) {
    out +=
        fmt::format("more than {} groups: the {} records of groups found after the first {} are counted as (other)\n",
                    report.max_groups, report.other->count, report.max_groups);
  }
  if (report.group_ids && !report.groups.empty()) {
    out += "--fingerprint ID selects one group in search, stats, show and replay\n";
  }
  if (report.causes) {
    out +=
        "CAUSE: the consumer's error from its logs; FOUND: messages with that cause of those looked up; "
        "`show MESSAGE_ID` shows where it was logged\n";
  }
  return out;
}

std::string RenderStatsJson(const StatsReport& report) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  w.Key("group_by");
  WriteString(w, report.group_by);
  w.Key("time_field");
  WriteString(w, TimeFieldName(report.by));
  w.Key("records");
  w.Uint64(report.records);
  w.Key("max_groups");
  w.Uint64(report.max_groups);
  w.Key("groups_capped");
  w.Bool(report.other.has_value());
  w.Key("groups");
  w.StartArray();
  for (const GroupStats& g : report.groups) WriteGroup(w, g, false, report.group_ids, report.failed_again_counted);
  if (report.other) WriteGroup(w, *report.other, true, report.group_ids, report.failed_again_counted);
  w.EndArray();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize()) + "\n";
}

std::string RenderStatsJsonLines(const StatsReport& report) {
  std::string out;
  auto line = [&](const GroupStats& g, bool other) {
    rapidjson::StringBuffer buf;
    JsonWriter w(buf);
    WriteGroup(w, g, other, report.group_ids, report.failed_again_counted);
    out.append(buf.GetString(), buf.GetSize());
    out.push_back('\n');
  };
  for (const GroupStats& g : report.groups) line(g, false);
  if (report.other) line(*report.other, true);
  return out;
}

void MergeGroupsByCause(StatsReport& report) {
  std::map<std::string, size_t> by_cause;  // cause key -> index of the group kept
  std::vector<GroupStats> kept;
  kept.reserve(report.groups.size());
  for (GroupStats& g : report.groups) {  // count descending: the first of a cause is the largest
    if (g.cause) report.causes = true;
    if (!g.cause || g.cause->key.empty()) {
      kept.push_back(std::move(g));
      continue;
    }
    auto [it, inserted] = by_cause.try_emplace(g.cause->key, kept.size());
    if (inserted) {
      kept.push_back(std::move(g));
      continue;
    }
    GroupStats& into = kept[it->second];
    into.count += g.count;
    into.failed_again += g.failed_again;
    if (g.first_seen && (!into.first_seen || *g.first_seen < *into.first_seen)) into.first_seen = g.first_seen;
    if (g.last_seen && (!into.last_seen || *g.last_seen > *into.last_seen)) into.last_seen = g.last_seen;
    into.cause->found += g.cause->found;
    into.cause->answered += g.cause->answered;
    into.cause->merged_keys.push_back(Label(g, false));
    for (std::string& k : g.cause->merged_keys) into.cause->merged_keys.push_back(std::move(k));
  }
  report.groups = std::move(kept);
  std::sort(report.groups.begin(), report.groups.end(), GroupOrder);
}

}  // namespace dlq
