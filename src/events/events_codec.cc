#include "events/events_codec.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <chrono>
#include <map>
#include <set>

#include "aws/json_response.h"
#include "common/json_writer.h"
#include "common/time_util.h"

namespace dlq {
namespace events {
namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

size_t SkipSpace(std::string_view s, size_t i) {
  while (i < s.size() && IsSpace(s[i])) ++i;
  return i;
}

// `s[i]` is '"': the index just after the closing quote (s.size() when unterminated).
size_t SkipString(std::string_view s, size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return s.size();
}

// The index just after the value starting at `s[i]`.
size_t SkipValue(std::string_view s, size_t i) {
  if (i >= s.size()) return s.size();
  if (s[i] == '"') return SkipString(s, i);
  if (s[i] != '{' && s[i] != '[') {
    while (i < s.size() && !IsSpace(s[i]) && s[i] != ',' && s[i] != '}' && s[i] != ']') ++i;
    return i;
  }
  size_t depth = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == '"') {
      i = SkipString(s, i);
      continue;
    }
    if (c == '{' || c == '[') ++depth;
    if ((c == '}' || c == ']') && --depth == 0) return i + 1;
    ++i;
  }
  return s.size();
}

void WriteTime(JsonWriter& w, SystemTime t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  if (ms % 1000 == 0) {
    w.Int(ms / 1000);
  } else {
    w.Double(static_cast<double>(ms) / 1000.0);
  }
}

void WriteEntry(JsonWriter& w, const PutEventsEntry& e) {
  w.BeginObject();
  w.Key("Source").String(e.source);
  w.Key("DetailType").String(e.detail_type);
  w.Key("Detail").String(e.detail);
  if (!e.resources.empty()) {
    w.Key("Resources").BeginArray();
    for (const std::string& r : e.resources) w.String(r);
    w.EndArray();
  }
  if (e.time) WriteTime(w.Key("Time"), *e.time);
  if (!e.event_bus_name.empty()) w.Key("EventBusName").String(e.event_bus_name);
  if (!e.trace_header.empty()) w.Key("TraceHeader").String(e.trace_header);
  w.EndObject();
}

}  // namespace

// The buses the entries go to, for errors: "orders-bus", "default", "a, b".
std::string BusesOf(const std::vector<PutEventsEntry>& entries) {
  std::set<std::string> buses;
  for (const PutEventsEntry& e : entries) buses.insert(e.event_bus_name.empty() ? "default" : e.event_bus_name);
  std::string out;
  for (const std::string& b : buses) out += (out.empty() ? "" : ", ") + b;
  return out;
}

Status ValidateEntries(const std::vector<PutEventsEntry>& entries, const std::string& buses) {
  if (entries.size() > kMaxEntriesPerPut) {
    return InvalidArgument(
        fmt::format("PutEvents {}: {} entries, more than {} per call", buses, entries.size(), kMaxEntriesPerPut));
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    const PutEventsEntry& e = entries[i];
    for (auto [name, value] :
         {std::pair{"source", &e.source}, std::pair{"detail-type", &e.detail_type}, std::pair{"detail", &e.detail}}) {
      if (value->empty()) return InvalidArgument(fmt::format("PutEvents {}: entry {} has no {}", buses, i, name));
    }
  }
  return Status::Ok();
}

std::string BuildPutEventsRequest(const std::vector<PutEventsEntry>& entries) {
  JsonWriter w;
  w.BeginObject().Key("Entries").BeginArray();
  for (const PutEventsEntry& e : entries) WriteEntry(w, e);
  w.EndArray().EndObject();
  return w.Take();
}

Result<PutEventsResponse> ParsePutEventsResponse(std::string_view json) {
  JsonDocument doc;
  DLQ_ASSIGN_OR_RETURN(JsonFields root, doc.Parse(json, "PutEvents response"));
  PutEventsResponse out;
  DLQ_RETURN_IF_ERROR(root.Int("FailedEntryCount", out.failed_entry_count));
  DLQ_ASSIGN_OR_RETURN(std::vector<JsonFields> entries, root.Objects("Entries"));
  for (const JsonFields& e : entries) {
    PutEventsEntryResult r;
    DLQ_RETURN_IF_ERROR(e.String("EventId", r.event_id));
    DLQ_RETURN_IF_ERROR(e.String("ErrorCode", r.error_code));
    DLQ_RETURN_IF_ERROR(e.String("ErrorMessage", r.error_message));
    if (r.event_id.empty() && r.error_code.empty()) return e.Malformed("EventId", "and ErrorCode are both missing");
    out.entries.push_back(std::move(r));
  }
  return out;
}

std::optional<std::string_view> TopLevelMemberText(std::string_view json, size_t index) {
  size_t i = SkipSpace(json, 0);
  if (i >= json.size() || json[i] != '{') return std::nullopt;
  for (size_t k = 0;; ++k) {
    i = SkipSpace(json, i + 1);  // past '{' or ','
    if (i >= json.size() || json[i] != '"') return std::nullopt;
    i = SkipSpace(json, SkipString(json, i));
    if (i >= json.size() || json[i] != ':') return std::nullopt;
    const size_t start = SkipSpace(json, i + 1);
    const size_t end = SkipValue(json, start);
    if (k == index) return json.substr(start, end - start);
    i = SkipSpace(json, end);
    if (i >= json.size() || json[i] != ',') return std::nullopt;
  }
}

}  // namespace events

namespace {

// The members of an event EventBridge delivered, by key; `detail_index` the position of "detail".
struct EventMembers {
  std::map<std::string_view, simdjson::dom::element> by_key;
  size_t detail_index = 0;
};

Result<EventMembers> ReadEventMembers(simdjson::dom::object event) {
  EventMembers out;
  size_t index = 0;
  for (auto [key, value] : event) {
    if (!out.by_key.emplace(key, value).second) {
      return InvalidArgument(fmt::format("not an EventBridge event: \"{}\" appears twice", key.substr(0, 64)));
    }
    if (key == "detail") out.detail_index = index;
    ++index;
  }
  return out;
}

Result<std::string> RequiredString(const EventMembers& m, std::string_view key) {
  auto it = m.by_key.find(key);
  std::string_view v;
  if (it == m.by_key.end() || it->second.get_string().get(v) != simdjson::SUCCESS || v.empty()) {
    return InvalidArgument(fmt::format("not an EventBridge event: no \"{}\" string", key));
  }
  return std::string(v);
}

Status ReadOptional(const EventMembers& m, PutEventsEntry& entry) {
  if (auto it = m.by_key.find("time"); it != m.by_key.end()) {
    std::string_view text;
    std::optional<SystemTime> t;
    if (it->second.get_string().get(text) == simdjson::SUCCESS) t = ParseIso8601(text);
    if (!t) return InvalidArgument("not an EventBridge event: \"time\" is not an ISO 8601 time");
    entry.time = t;
  }
  if (auto it = m.by_key.find("resources"); it != m.by_key.end() && !it->second.is_null()) {
    simdjson::dom::array list;
    if (it->second.get_array().get(list) != simdjson::SUCCESS) {
      return InvalidArgument("not an EventBridge event: \"resources\" is not an array");
    }
    for (simdjson::dom::element item : list) {
      std::string_view v;
      if (item.get_string().get(v) != simdjson::SUCCESS) {
        return InvalidArgument("not an EventBridge event: \"resources\" has an item that is not a string");
      }
      entry.resources.emplace_back(v);
    }
  }
  return Status::Ok();
}

}  // namespace

Result<PutEventsEntry> PutEventsEntryFromEvent(std::string_view event, const std::string& bus) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(event);
  simdjson::dom::object root;
  if (auto error = parser.parse(padded).get_object().get(root); error != simdjson::SUCCESS) {
    return InvalidArgument(
        fmt::format("not an EventBridge event: not a JSON object ({})", simdjson::error_message(error)));
  }
  DLQ_ASSIGN_OR_RETURN(EventMembers members, ReadEventMembers(root));
  PutEventsEntry entry;
  entry.event_bus_name = bus;
  DLQ_ASSIGN_OR_RETURN(entry.source, RequiredString(members, "source"));
  DLQ_ASSIGN_OR_RETURN(entry.detail_type, RequiredString(members, "detail-type"));
  auto detail = members.by_key.find("detail");
  if (detail == members.by_key.end() || !detail->second.is_object()) {
    return InvalidArgument("not an EventBridge event: no \"detail\" object");
  }
  std::optional<std::string_view> text = events::TopLevelMemberText(event, members.detail_index);
  if (!text || text->empty() || text->front() != '{' || text->back() != '}')
    return Internal("PutEventsEntryFromEvent: the text of \"detail\" was not found");
  entry.detail = std::string(*text);
  DLQ_RETURN_IF_ERROR(ReadOptional(members, entry));
  return entry;
}

}  // namespace dlq
