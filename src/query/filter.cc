#include "query/filter.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>

#include "common/json_writer.h"
#include "common/log.h"
#include "common/strings.h"
#include "common/time_util.h"

namespace dlq {
namespace {

template <typename T>
bool Contains(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

void WriteList(JsonWriter& w, std::vector<std::string> items) {
  std::sort(items.begin(), items.end());
  items.erase(std::unique(items.begin(), items.end()), items.end());
  w.BeginArray();
  for (const std::string& item : items) w.String(item);
  w.EndArray();
}

void WritePairs(JsonWriter& w, std::vector<std::pair<std::string, std::string>> items) {
  std::sort(items.begin(), items.end());
  items.erase(std::unique(items.begin(), items.end()), items.end());
  w.BeginArray();
  for (const auto& [first, second] : items) w.BeginArray().String(first).String(second).EndArray();
  w.EndArray();
}

Status FlagError(std::string_view flag, std::string_view value, std::string_view why) {
  return InvalidArgument(fmt::format("{} '{}': {}", flag, value, why));
}

// "NAME=VALUE" split at the first '='; the name must not be empty.
std::optional<std::pair<std::string, std::string>> SplitNameValue(std::string_view text) {
  size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) return std::nullopt;
  return std::make_pair(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
}

}  // namespace

bool Filter::Matches(const ArchiveRecord& r) const {
  if (!queues.empty() && !Contains(queues, r.queue)) return false;
  if (since || until) {
    std::optional<SystemTime> t = by == TimeField::kSent ? r.sent_at : std::optional<SystemTime>(r.archived_at);
    if (!t) return false;
    if (since && *t < *since) return false;
    if (until && *t >= *until) return false;
  }
  if (!ids.empty() && !Contains(ids, r.message_id)) return false;
  // The consumer's receives: dlq-archive's own (looking, archiving) do not count.
  if (min_receive_count && ConsumerReceiveCount(r) < *min_receive_count) return false;
  for (const std::string& name : attr_exists) {
    if (r.message_attributes.find(name) == r.message_attributes.end()) return false;
  }
  for (const auto& [name, value] : attr_equals) {
    auto it = r.message_attributes.find(name);
    if (it == r.message_attributes.end() || it->second.IsBinary() || it->second.string_value != value) return false;
  }
  if (!body_contains.empty() && r.body.find(body_contains) == std::string::npos) return false;
  if (!body_regex.empty()) {
    if (regex_ && regex_->pattern() == body_regex) {
      if (!regex_->Search(r.body)) return false;
    } else {
      Result<Regex> re = Regex::Compile(body_regex);
      if (!re.ok() || !re->Search(r.body)) return false;
    }
  }
  for (const auto& [path, value] : json_equals) {
    std::optional<std::string> got = path.Lookup(r.body);
    if (!got || *got != value) return false;
  }
  if (!fingerprint.empty() && GroupId(FailureGroupKey(r, fingerprint_options)) != fingerprint) return false;
  return true;
}

Status Filter::CompileRegex() {
  regex_.reset();
  if (body_regex.empty()) return Status::Ok();
  Result<Regex> re = Regex::Compile(body_regex);
  if (!re.ok()) return FlagError("--body-regex", body_regex, re.status().message());
  regex_ = std::move(*re);
  return Status::Ok();
}

bool Filter::Empty() const {
  return queues.empty() && !since && !until && ids.empty() && attr_equals.empty() && attr_exists.empty() &&
         body_contains.empty() && body_regex.empty() && json_equals.empty() && !min_receive_count &&
         fingerprint.empty();
}

std::string Filter::Canonical() const {
  auto time_or_null = [](JsonWriter& w, const std::optional<SystemTime>& t) -> JsonWriter& {
    return t ? w.String(FormatIso8601(*t)) : w.Null();
  };
  JsonWriter w;
  w.BeginObject();
  WriteList(w.Key("queue"), queues);
  time_or_null(w.Key("since"), since);
  time_or_null(w.Key("until"), until);
  w.Key("by").String(by == TimeField::kSent ? "sent" : "archived");
  WriteList(w.Key("id"), ids);
  WritePairs(w.Key("attr"), attr_equals);
  WriteList(w.Key("attr_exists"), attr_exists);
  w.Key("body_contains").String(body_contains);
  w.Key("body_regex").String(body_regex);
  std::vector<std::pair<std::string, std::string>> json;
  for (const auto& [path, value] : json_equals) json.emplace_back(path.text(), value);
  WritePairs(w.Key("json"), std::move(json));
  w.Key("min_receive_count");
  if (min_receive_count) {
    w.Int(*min_receive_count);
  } else {
    w.Null();
  }
  if (!fingerprint.empty()) {  // only when set: the text of filters without it stays as it was
    w.Key("fingerprint").String(fingerprint);
    w.Key("fingerprint_fields").BeginArray();
    for (const std::string& field : fingerprint_options.fields) w.String(field);
    w.EndArray();
  }
  w.EndObject();
  return w.Take();
}

std::optional<SystemTime> ParseTimeBound(std::string_view text, SystemTime now) {
  text = Trim(text);
  if (text.empty()) return std::nullopt;
  if (text.size() == 10 && text[4] == '-' && text[7] == '-') {
    return ParseIso8601(fmt::format("{}T00:00:00Z", text));
  }
  if (std::optional<SystemTime> t = ParseIso8601(text)) return t;
  // Durations are bounded to 100 years so `now - d` stays inside SystemTime's range.
  constexpr std::chrono::seconds kMaxAgo = std::chrono::hours(24 * 365 * 100);
  if (std::optional<std::chrono::seconds> d = ParseDuration(text); d && *d <= kMaxAgo) return now - *d;
  return std::nullopt;
}

void AddFilterFlags(CLI::App& cmd, FilterFlags& f) {
  cmd.add_option("--queue", f.queues, "only this DLQ (repeatable: any of them)");
  cmd.add_option("--since", f.since, "only records at or after T: RFC 3339, a UTC date (2026-11-20), or 24h / 7d ago");
  cmd.add_option("--until", f.until, "only records before T (same forms as --since)");
  cmd.add_option("--by", f.by, "the time --since/--until compare: sent (sent_at, default) or archived (archived_at)");
  cmd.add_option("--id", f.ids, "only this message id (repeatable: any of them)");
  cmd.add_option("--attr", f.attrs, "NAME=VALUE: message attribute NAME has string value VALUE (repeatable: all)");
  cmd.add_option("--attr-exists", f.attr_exists, "NAME: message attribute NAME is present (repeatable: all)");
  cmd.add_option("--body-contains", f.body_contains, "the body contains this text");
  cmd.add_option("--body-regex", f.body_regex,
                 "the body matches this regular expression anywhere (RE2 syntax, doc/querying.md)");
  cmd.add_option("--json", f.json,
                 "PATH=VALUE: the body is JSON and the value at PATH is VALUE, e.g. '$.error.type=Timeout' "
                 "(repeatable: all)");
  cmd.add_option("--min-receive-count", f.min_receive_count,
                 "only records the consumer received at least N times (SQS's count minus dlq-archive's own receives)");
  cmd.add_option("--fingerprint", f.fingerprint,
                 "ID: only the failure group with this id (as `stats --group-by fingerprint` prints it)");
  cmd.add_option("--fingerprint-fields", f.fingerprint_fields,
                 "F1,F2,...: the JSON fields whose values tell failure groups apart (default: "
                 "type,eventType,detail-type,source,error)");
}

Result<Filter> BuildFilter(const FilterFlags& flags, SystemTime now) {
  Filter f;
  for (const std::string& q : flags.queues) {
    if (Trim(q).empty()) return FlagError("--queue", q, "a queue name must not be empty");
    // A queue URL or ARN names the queue by its last component.
    std::string_view name = q;
    if (size_t slash = name.rfind('/'); slash != std::string_view::npos) name.remove_prefix(slash + 1);
    if (StartsWith(name, "arn:")) name.remove_prefix(name.rfind(':') + 1);
    f.queues.emplace_back(name);
  }
  auto bound = [&](std::string_view flag, const std::string& text, std::optional<SystemTime>& out) -> Status {
    if (text.empty()) return Status::Ok();
    out = ParseTimeBound(text, now);
    if (!out) {
      return FlagError(flag, text,
                       "not a time: use RFC 3339 (2026-11-20T10:00:00Z), a UTC date (2026-11-20) or a duration "
                       "ago (24h, 7d)");
    }
    return Status::Ok();
  };
  DLQ_RETURN_IF_ERROR(bound("--since", flags.since, f.since));
  DLQ_RETURN_IF_ERROR(bound("--until", flags.until, f.until));
  if (f.since && f.until && *f.since >= *f.until) {
    return InvalidArgument(
        fmt::format("--since '{}' is not before --until '{}': the range selects nothing", flags.since, flags.until));
  }
  if (flags.by.empty() || flags.by == "sent") {
    f.by = TimeField::kSent;
  } else if (flags.by == "archived") {
    f.by = TimeField::kArchived;
  } else {
    return FlagError("--by", flags.by, "must be 'sent' or 'archived'");
  }
  for (const std::string& id : flags.ids) {
    if (id.empty()) return FlagError("--id", id, "a message id must not be empty");
    f.ids.push_back(id);
  }
  for (const std::string& a : flags.attrs) {
    auto nv = SplitNameValue(a);
    if (!nv) return FlagError("--attr", a, "expected NAME=VALUE");
    f.attr_equals.push_back(std::move(*nv));
  }
  for (const std::string& name : flags.attr_exists) {
    if (name.empty()) return FlagError("--attr-exists", name, "an attribute name must not be empty");
    f.attr_exists.push_back(name);
  }
  f.body_contains = flags.body_contains;
  f.body_regex = flags.body_regex;
  DLQ_RETURN_IF_ERROR(f.CompileRegex());
  for (const std::string& j : flags.json) {
    size_t consumed = 0;
    Result<JsonPath> path = JsonPath::ParsePrefix(j, consumed);
    if (!path.ok()) return path.status().WithContext(fmt::format("--json '{}'", j));
    if (consumed >= j.size() || j[consumed] != '=') {
      return FlagError("--json", j, "expected PATH=VALUE, e.g. '$.error.type=Timeout'");
    }
    f.json_equals.emplace_back(std::move(*path), j.substr(consumed + 1));
  }
  if (!flags.min_receive_count.empty()) {
    std::optional<int64_t> n = ParseInt64(flags.min_receive_count);
    if (!n || *n < 0) return FlagError("--min-receive-count", flags.min_receive_count, "must be an integer >= 0");
    f.min_receive_count = *n;
  }
  auto fields = FingerprintOptions::Parse(flags.fingerprint_fields);
  if (!fields.ok()) return fields.status();
  f.fingerprint_options = std::move(*fields);
  if (!flags.fingerprint.empty()) {
    std::string id = ToLower(Trim(flags.fingerprint));
    if (id.size() != kGroupIdChars || id.find_first_not_of("0123456789abcdef") != std::string::npos) {
      return FlagError("--fingerprint", flags.fingerprint,
                       "expected a group id of 12 hex digits, as `stats --group-by fingerprint` prints it");
    }
    f.fingerprint = std::move(id);
  }
  return f;
}

}  // namespace dlq
