#include "replay/audit.h"

#include <fmt/format.h>
#include <simdjson.h>

#include "common/crypto.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/time_util.h"

namespace dlq {
namespace {

// An empty string is written as null (unknown caller, no transform, ...).
JsonWriter& StringOrNull(JsonWriter& w, const std::string& s) {
  return s.empty() ? w.Null() : w.String(s);
}

}  // namespace

std::string AuditKey(const std::string& prefix, SystemTime at, const std::string& id) {
  std::string key = prefix.empty() ? "" : prefix + "/";
  return key + fmt::format("_audit/{}-{}.json", FormatAmzDate(at), id);
}

std::string AuditJson(const AuditRecord& r) {
  JsonWriter w;
  w.BeginObject().Key("schema").Int(r.kind == "archive" ? 1 : 2).Key("kind").String(r.kind);
  StringOrNull(w.Key("caller_arn"), r.caller_arn);
  StringOrNull(w.Key("caller_error"), r.caller_error);
  w.Key("started_at").String(FormatIso8601(r.started_at));
  w.Key("finished_at").String(FormatIso8601(r.finished_at));
  w.Key("source").String(r.source);
  w.Key("filter").String(r.filter);
  w.Key("destination").String(r.destination);
  StringOrNull(w.Key("transform"), r.transform);
  w.Key("outcome").String(r.outcome);
  if (r.kind == "archive") {
    const ArchiveAuditCounts& a = r.archive;
    w.Key("counts").BeginObject();
    w.Key("received").Uint(a.received).Key("archived").Uint(a.archived).Key("deleted").Uint(a.deleted);
    w.Key("skipped").Uint(a.skipped).Key("released").Uint(a.released).Key("delete_failures").Uint(a.delete_failures);
    w.Key("objects").Uint(a.objects).Key("bytes_uploaded").Uint(a.bytes_uploaded);
    w.EndObject().EndObject();
    std::string out = w.Take();
    out += '\n';
    return out;
  }
  const ReplayStats& s = r.stats;
  w.Key("again").Bool(r.again);
  w.Key("counts").BeginObject();
  w.Key("selected").Uint(s.accepted).Key("sent").Uint(s.sent).Key("failed").Uint(s.failed);
  w.Key("resumed").Uint(s.resumed).Key("already_replayed").Uint(s.already_replayed);
  w.Key("retries").Uint(s.retries).Key("bytes_sent").Uint(s.bytes_sent);
  w.EndObject();
  w.Key("sent_by_destination").BeginObject();
  for (const auto& [url, n] : r.sent_by_destination) w.Key(url).Uint(n);
  w.EndObject();
  w.Key("messages").BeginArray();
  for (const ReplayedMessage& m : r.sent) {
    w.BeginObject().Key("message_id").String(m.message_id);
    StringOrNull(w.Key("new_message_id"), m.new_message_id);
    w.Key("destination").String(m.destination).Key("outcome").String("sent").EndObject();
  }
  for (const auto& f : r.failures) {
    w.BeginObject().Key("message_id").String(f.message_id);
    StringOrNull(w.Key("destination"), f.destination);
    w.Key("outcome").String("failed").Key("reason").String(f.reason).EndObject();
  }
  w.EndArray().EndObject();
  std::string out = w.Take();
  out += '\n';
  return out;
}

std::string AuditIdOfKey(std::string_view key) {
  size_t slash = key.rfind('/');
  if (slash != std::string_view::npos) key.remove_prefix(slash + 1);
  if (key.ends_with(".json")) key.remove_suffix(5);
  return std::string(key);
}

namespace {

// Reads the fields of one JSON object with the checks every field shares.
class Fields {
 public:
  explicit Fields(simdjson::dom::object obj) : obj_(obj) {}
  static Status Bad(std::string_view why) { return InvalidArgument(fmt::format("not an audit record: {}", why)); }
  Status Str(const char* field, std::string& out, bool nullable = false) const {
    simdjson::dom::element e;
    if (obj_[field].get(e) != simdjson::SUCCESS) return Bad(fmt::format("no \"{}\"", field));
    if (nullable && e.is_null()) {
      out.clear();
      return Status::Ok();
    }
    std::string_view v;
    if (e.get_string().get(v) != simdjson::SUCCESS) return Bad(fmt::format("\"{}\" must be a string", field));
    out.assign(v);
    return Status::Ok();
  }
  Status Num(const char* field, uint64_t& out) const {
    if (obj_[field].get_uint64().get(out) != simdjson::SUCCESS) {
      return Bad(fmt::format("\"{}\" must be a non-negative integer", field));
    }
    return Status::Ok();
  }
  Status Time(const char* field, SystemTime& out) const {
    std::string text;
    DLQ_RETURN_IF_ERROR(Str(field, text));
    auto t = ParseIso8601(text);
    if (!t) return Bad(fmt::format("\"{}\" is not an ISO-8601 time", field));
    out = *t;
    return Status::Ok();
  }
  Result<simdjson::dom::object> Obj(const char* field) const {
    simdjson::dom::object o;
    if (obj_[field].get_object().get(o) != simdjson::SUCCESS)
      return Bad(fmt::format("\"{}\" must be an object", field));
    return o;
  }
  Result<simdjson::dom::array> Arr(const char* field) const {
    simdjson::dom::array a;
    if (obj_[field].get_array().get(a) != simdjson::SUCCESS) return Bad(fmt::format("\"{}\" must be an array", field));
    return a;
  }

 private:
  simdjson::dom::object obj_;
};

Status ParseMessages(const Fields& f, int64_t schema, AuditRecord& r) {
  if (schema == 1) {
    DLQ_ASSIGN_OR_RETURN(simdjson::dom::array ids, f.Arr("sent_ids"));
    for (simdjson::dom::element e : ids) {
      std::string_view id;
      if (e.get_string().get(id) != simdjson::SUCCESS) return Fields::Bad("\"sent_ids\" must hold strings");
      r.sent.push_back({std::string(id), "", ""});
    }
    DLQ_ASSIGN_OR_RETURN(simdjson::dom::array failed, f.Arr("failed"));
    for (simdjson::dom::element e : failed) {
      simdjson::dom::object o;
      if (e.get_object().get(o) != simdjson::SUCCESS) return Fields::Bad("\"failed\" must hold objects");
      Fields m(o);
      ReplayFailure fl;
      DLQ_RETURN_IF_ERROR(m.Str("message_id", fl.message_id));
      DLQ_RETURN_IF_ERROR(m.Str("destination", fl.destination, true));
      DLQ_RETURN_IF_ERROR(m.Str("reason", fl.reason));
      r.failures.push_back(std::move(fl));
    }
    return Status::Ok();
  }
  DLQ_ASSIGN_OR_RETURN(simdjson::dom::array messages, f.Arr("messages"));
  for (simdjson::dom::element e : messages) {
    simdjson::dom::object o;
    if (e.get_object().get(o) != simdjson::SUCCESS) return Fields::Bad("\"messages\" must hold objects");
    Fields m(o);
    std::string id, outcome, destination;
    DLQ_RETURN_IF_ERROR(m.Str("message_id", id));
    DLQ_RETURN_IF_ERROR(m.Str("outcome", outcome));
    if (outcome == "sent") {
      ReplayedMessage sent{std::move(id), "", ""};
      DLQ_RETURN_IF_ERROR(m.Str("new_message_id", sent.new_message_id, true));
      DLQ_RETURN_IF_ERROR(m.Str("destination", sent.destination));
      r.sent.push_back(std::move(sent));
    } else if (outcome == "failed") {
      ReplayFailure fl{std::move(id), "", ""};
      DLQ_RETURN_IF_ERROR(m.Str("destination", fl.destination, true));
      DLQ_RETURN_IF_ERROR(m.Str("reason", fl.reason));
      r.failures.push_back(std::move(fl));
    } else {
      return Fields::Bad("a message's \"outcome\" must be \"sent\" or \"failed\"");
    }
  }
  return Status::Ok();
}

Status ParseCounts(const Fields& f, int64_t schema, AuditRecord& r) {
  DLQ_ASSIGN_OR_RETURN(simdjson::dom::object counts_obj, f.Obj("counts"));
  Fields c(counts_obj);
  if (r.kind == "archive") {
    ArchiveAuditCounts& a = r.archive;
    DLQ_RETURN_IF_ERROR(c.Num("received", a.received));
    DLQ_RETURN_IF_ERROR(c.Num("archived", a.archived));
    DLQ_RETURN_IF_ERROR(c.Num("deleted", a.deleted));
    DLQ_RETURN_IF_ERROR(c.Num("skipped", a.skipped));
    DLQ_RETURN_IF_ERROR(c.Num("released", a.released));
    DLQ_RETURN_IF_ERROR(c.Num("delete_failures", a.delete_failures));
    DLQ_RETURN_IF_ERROR(c.Num("objects", a.objects));
    return c.Num("bytes_uploaded", a.bytes_uploaded);
  }
  ReplayStats& s = r.stats;
  DLQ_RETURN_IF_ERROR(c.Num("selected", s.accepted));
  DLQ_RETURN_IF_ERROR(c.Num("sent", s.sent));
  DLQ_RETURN_IF_ERROR(c.Num("failed", s.failed));
  DLQ_RETURN_IF_ERROR(c.Num("resumed", s.resumed));
  DLQ_RETURN_IF_ERROR(c.Num("retries", s.retries));
  DLQ_RETURN_IF_ERROR(c.Num("bytes_sent", s.bytes_sent));
  if (schema >= 2) DLQ_RETURN_IF_ERROR(c.Num("already_replayed", s.already_replayed));
  DLQ_ASSIGN_OR_RETURN(simdjson::dom::object by_dest, f.Obj("sent_by_destination"));
  for (auto [url, n] : by_dest) {
    uint64_t count = 0;
    if (n.get_uint64().get(count) != simdjson::SUCCESS) {
      return Fields::Bad("\"sent_by_destination\" must map URLs to counts");
    }
    r.sent_by_destination[std::string(url)] = count;
  }
  return ParseMessages(f, schema, r);
}

}  // namespace

Result<AuditRecord> ParseAuditRecord(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json.data(), json.size()).get(doc) != simdjson::SUCCESS) return Fields::Bad("invalid JSON");
  simdjson::dom::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS) return Fields::Bad("not a JSON object");
  int64_t schema = 0;
  if (obj["schema"].get_int64().get(schema) != simdjson::SUCCESS || (schema != 1 && schema != 2)) {
    return Fields::Bad("\"schema\" must be 1 or 2");
  }
  Fields f(obj);
  AuditRecord r;
  DLQ_RETURN_IF_ERROR(f.Str("kind", r.kind));
  if (r.kind != "replay" && r.kind != "archive") return Fields::Bad("\"kind\" must be \"replay\" or \"archive\"");
  DLQ_RETURN_IF_ERROR(f.Str("caller_arn", r.caller_arn, true));
  DLQ_RETURN_IF_ERROR(f.Str("caller_error", r.caller_error, true));
  DLQ_RETURN_IF_ERROR(f.Time("started_at", r.started_at));
  DLQ_RETURN_IF_ERROR(f.Time("finished_at", r.finished_at));
  DLQ_RETURN_IF_ERROR(f.Str("source", r.source));
  DLQ_RETURN_IF_ERROR(f.Str("filter", r.filter));
  DLQ_RETURN_IF_ERROR(f.Str("destination", r.destination));
  DLQ_RETURN_IF_ERROR(f.Str("transform", r.transform, true));
  DLQ_RETURN_IF_ERROR(f.Str("outcome", r.outcome));
  if (r.kind == "replay" && schema >= 2) {
    bool again = false;
    if (obj["again"].get_bool().get(again) != simdjson::SUCCESS) return Fields::Bad("\"again\" must be true or false");
    r.again = again;
  }
  DLQ_RETURN_IF_ERROR(ParseCounts(f, schema, r));
  return r;
}

Result<std::string> WriteAudit(ObjectStore& store, const std::string& prefix, const AuditRecord& record) {
  const std::string key = AuditKey(prefix, record.finished_at, RandomHex(8));
  PutOptions options;
  options.content_type = "application/json";
  options.create_only = true;
  Status st = store.Put(key, AuditJson(record), options);
  if (!st.ok()) return st.WithContext(fmt::format("audit record {}/{}", store.Describe(), key));
  return key;
}

}  // namespace dlq
