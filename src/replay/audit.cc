#include "replay/audit.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

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

using MessageKey = std::tuple<std::string, std::string, std::string>;  // id, new id, destination

void WriteRedrive(JsonWriter& w, const std::optional<RedriveAudit>& redrive) {
  if (!redrive) {
    w.Key("redrive").Null();
    return;
  }
  const RedriveAudit& g = *redrive;
  w.Key("redrive").BeginObject().Key("canary").Uint(g.canary).Key("ramp").BeginArray();
  for (double p : g.ramp) w.Double(p);
  w.EndArray().Key("window_s").Double(g.window_s).Key("outcome").String(g.outcome);
  w.Key("refailed").Uint(g.refailed).Key("dlq_receives").Uint(g.dlq_receives).Key("paused_s").Double(g.paused_s);
  w.EndObject();
}

void WriteFailedAgain(JsonWriter& w, const std::string& message_id, const std::string& new_message_id,
                      const std::string& destination, const FailedAgainMessage& f) {
  w.BeginObject().Key("message_id").String(message_id);
  StringOrNull(w.Key("new_message_id"), new_message_id);
  w.Key("destination").String(destination).Key("outcome").String("failed-again").Key("dlq").String(f.dlq);
  w.Key("found_at").String(FormatIso8601(f.found_at)).EndObject();
}

// Messages sent: "sent", or "failed-again" when a DLQ held them again; then
// messages found again that this run did not send (an earlier run it resumed did).
void WriteSent(JsonWriter& w, const AuditRecord& r) {
  std::map<MessageKey, const FailedAgainMessage*> again;
  for (const FailedAgainMessage& f : r.failed_again) {
    again.emplace(MessageKey{f.message_id, f.new_message_id, f.destination}, &f);
  }
  std::set<MessageKey> written;
  for (const ReplayedMessage& m : r.sent) {
    MessageKey key{m.message_id, m.new_message_id, m.destination};
    auto it = again.find(key);
    if (it != again.end()) {
      WriteFailedAgain(w, m.message_id, m.new_message_id, m.destination, *it->second);
      written.insert(std::move(key));
      continue;
    }
    w.BeginObject().Key("message_id").String(m.message_id);
    StringOrNull(w.Key("new_message_id"), m.new_message_id);
    w.Key("destination").String(m.destination).Key("outcome").String("sent").EndObject();
  }
  for (const FailedAgainMessage& f : r.failed_again) {
    if (written.insert(MessageKey{f.message_id, f.new_message_id, f.destination}).second) {
      WriteFailedAgain(w, f.message_id, f.new_message_id, f.destination, f);
    }
  }
}

void WriteReplayBody(JsonWriter& w, const AuditRecord& r) {
  const ReplayStats& s = r.stats;
  w.Key("again").Bool(r.again);
  w.Key("counts").BeginObject();
  w.Key("selected").Uint(s.accepted).Key("sent").Uint(s.sent).Key("failed").Uint(s.failed);
  w.Key("resumed").Uint(s.resumed).Key("already_replayed").Uint(s.already_replayed);
  w.Key("retries").Uint(s.retries).Key("bytes_sent").Uint(s.bytes_sent);
  w.Key("failed_again_skipped").Uint(r.failed_again_skipped);
  if (s.unresolved > 0 || s.throttled > 0 || s.refused > 0) {  // --to-origin
    w.Key("unresolved").Uint(s.unresolved).Key("throttled").Uint(s.throttled).Key("failed_at_once").Uint(s.refused);
  }
  w.EndObject();
  if (r.buckets) {
    w.Key("buckets");
    WriteBucketsJson(w, *r.buckets);
  }
  w.Key("sent_by_destination").BeginObject();
  for (const auto& [url, n] : r.sent_by_destination) w.Key(url).Uint(n);
  w.EndObject();
  WriteRedrive(w, r.redrive);
  w.Key("messages").BeginArray();
  WriteSent(w, r);
  for (const auto& f : r.failures) {
    w.BeginObject().Key("message_id").String(f.message_id);
    StringOrNull(w.Key("destination"), f.destination);
    w.Key("outcome").String("failed").Key("reason").String(f.reason).EndObject();
  }
  w.EndArray().EndObject();
}

}  // namespace

std::string AuditKey(const std::string& prefix, SystemTime at, const std::string& id) {
  std::string key = prefix.empty() ? "" : prefix + "/";
  return key + fmt::format("_audit/{}-{}.json", FormatAmzDate(at), id);
}

std::string AuditJson(const AuditRecord& r) {
  JsonWriter w;
  w.BeginObject().Key("schema").Int(r.kind == "archive" ? 1 : 3).Key("kind").String(r.kind);
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
  WriteReplayBody(w, r);
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
  // A finite, non-negative number (-0 is read as 0, so it is written back the same).
  Status NonNegative(const char* field, double& out) const {
    double v = 0;
    if (obj_[field].get_double().get(v) != simdjson::SUCCESS || !std::isfinite(v) || v < 0) {
      return Bad(fmt::format("\"{}\" must be a non-negative number", field));
    }
    out = v + 0.0;
    return Status::Ok();
  }
  bool Has(const char* field) const {
    simdjson::dom::element e;
    return obj_[field].get(e) == simdjson::SUCCESS;
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

// "buckets" (optional: records written before it have none).
Status ParseBuckets(const Fields& f, AuditRecord& r) {
  if (!f.Has("buckets")) return Status::Ok();
  DLQ_ASSIGN_OR_RETURN(simdjson::dom::object obj, f.Obj("buckets"));
  Fields b(obj);
  ReplayBuckets out;
  const std::pair<const char*, uint64_t*> fields[] = {{"selected", &out.selected},
                                                      {"sent", &out.sent},
                                                      {"failed", &out.failed},
                                                      {"failed_again", &out.failed_again},
                                                      {"already_replayed", &out.already_replayed},
                                                      {"copies", &out.copies},
                                                      {"resumed", &out.resumed},
                                                      {"skipped_failed_again", &out.skipped_failed_again},
                                                      {"would_send", &out.would_send},
                                                      {"not_sent", &out.not_sent}};
  for (const auto& [name, value] : fields) DLQ_RETURN_IF_ERROR(b.Num(name, *value));
  if (b.Has("unresolved")) DLQ_RETURN_IF_ERROR(b.Num("unresolved", out.unresolved));  // --to-origin records only
  if (out.Sum() != out.selected) return Fields::Bad("\"buckets\" do not add up to \"selected\"");
  r.buckets = out;
  return Status::Ok();
}

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
    } else if (outcome == "failed-again" && schema >= 3) {
      FailedAgainMessage again{std::move(id), "", "", "", {}};
      DLQ_RETURN_IF_ERROR(m.Str("new_message_id", again.new_message_id, true));
      DLQ_RETURN_IF_ERROR(m.Str("destination", again.destination));
      DLQ_RETURN_IF_ERROR(m.Str("dlq", again.dlq));
      DLQ_RETURN_IF_ERROR(m.Time("found_at", again.found_at));
      r.sent.push_back({again.message_id, again.new_message_id, again.destination});
      r.failed_again.push_back(std::move(again));
    } else if (outcome == "failed") {
      ReplayFailure fl{std::move(id), "", ""};
      DLQ_RETURN_IF_ERROR(m.Str("destination", fl.destination, true));
      DLQ_RETURN_IF_ERROR(m.Str("reason", fl.reason));
      r.failures.push_back(std::move(fl));
    } else {
      return Fields::Bad(schema >= 3 ? "a message's \"outcome\" must be \"sent\", \"failed-again\" or \"failed\""
                                     : "a message's \"outcome\" must be \"sent\" or \"failed\"");
    }
  }
  return Status::Ok();
}

// Schema 3's "redrive": null for a run without a guard.
Status ParseRedrive(simdjson::dom::object obj, AuditRecord& r) {
  simdjson::dom::element e;
  if (obj["redrive"].get(e) != simdjson::SUCCESS) return Fields::Bad("no \"redrive\"");
  if (e.is_null()) return Status::Ok();
  simdjson::dom::object o;
  if (e.get_object().get(o) != simdjson::SUCCESS) return Fields::Bad("\"redrive\" must be an object or null");
  Fields g(o);
  RedriveAudit& out = r.redrive.emplace();
  DLQ_RETURN_IF_ERROR(g.Num("canary", out.canary));
  DLQ_ASSIGN_OR_RETURN(simdjson::dom::array ramp, g.Arr("ramp"));
  for (simdjson::dom::element p : ramp) {
    double v = 0;
    if (p.get_double().get(v) != simdjson::SUCCESS || !std::isfinite(v) || v < 0) {
      return Fields::Bad("\"ramp\" must hold non-negative numbers");
    }
    out.ramp.push_back(v + 0.0);
  }
  DLQ_RETURN_IF_ERROR(g.NonNegative("window_s", out.window_s));
  DLQ_RETURN_IF_ERROR(g.Str("outcome", out.outcome));
  DLQ_RETURN_IF_ERROR(g.Num("refailed", out.refailed));
  DLQ_RETURN_IF_ERROR(g.Num("dlq_receives", out.dlq_receives));
  return g.NonNegative("paused_s", out.paused_s);
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
  if (schema >= 3) DLQ_RETURN_IF_ERROR(c.Num("failed_again_skipped", r.failed_again_skipped));
  if (schema >= 3) DLQ_RETURN_IF_ERROR(ParseBuckets(f, r));
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
  if (obj["schema"].get_int64().get(schema) != simdjson::SUCCESS || schema < 1 || schema > 3) {
    return Fields::Bad("\"schema\" must be 1, 2 or 3");
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
  if (r.kind == "replay" && schema >= 3) DLQ_RETURN_IF_ERROR(ParseRedrive(obj, r));
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

namespace {

Result<std::vector<std::string>> ListAuditRecords(ObjectStore& store, const std::string& prefix) {
  const std::string dir = (prefix.empty() ? "" : prefix + "/") + "_audit/";
  std::vector<std::string> keys;
  std::string token;
  do {
    auto page = store.List(dir, "/", token);
    if (!page.ok()) return page.status().WithContext(fmt::format("listing {}/{}", store.Describe(), dir));
    for (ObjectInfo& o : page->objects) {
      if (o.key.ends_with(".json")) keys.push_back(std::move(o.key));
    }
    token = page->next_token;
  } while (!token.empty());
  std::sort(keys.begin(), keys.end());
  return keys;
}

// Feeds keys[from...] into index, oldest first.
Status AddRecords(ObjectStore& store, const std::vector<std::string>& keys, size_t from, FailedAgainIndex& index) {
  for (size_t i = from; i < keys.size(); ++i) {
    const std::string& key = keys[i];
    auto data = GetAtMost(store, key, kMaxAuditRecordBytes, "audit record");
    if (!data.ok() && data.status().code() == ErrorCode::kFailedPrecondition) {
      index.unreadable.emplace_back(key, data.status().message());
      continue;
    }
    if (!data.ok()) return data.status().WithContext(fmt::format("reading {}/{}", store.Describe(), key));
    auto record = ParseAuditRecord(*data);
    if (!record.ok()) {
      index.unreadable.emplace_back(key, record.status().message());
      continue;
    }
    index.Add(*record);
  }
  return Status::Ok();
}

}  // namespace

Result<FailedAgainIndex> ReadFailedAgain(ObjectStore& store, const std::string& prefix) {
  auto keys = ListAuditRecords(store, prefix);
  if (!keys.ok()) return keys.status();
  FailedAgainIndex index;
  DLQ_RETURN_IF_ERROR(AddRecords(store, *keys, 0, index));
  return index;
}

Result<std::shared_ptr<const FailedAgainIndex>> FailedAgainCache::Read(ObjectStore& store, const std::string& prefix) {
  auto keys = ListAuditRecords(store, prefix);
  if (!keys.ok()) return keys.status();
  MutexLock lock(mu_);
  Entry& entry = entries_[store.Describe() + "\n" + prefix];
  const bool extends = entry.index != nullptr && entry.keys.size() <= keys->size() &&
                       std::equal(entry.keys.begin(), entry.keys.end(), keys->begin());
  if (extends && entry.keys.size() == keys->size()) return entry.index;
  auto index = std::make_shared<FailedAgainIndex>(extends ? *entry.index : FailedAgainIndex{});
  const size_t from = extends ? entry.keys.size() : 0;
  DLQ_RETURN_IF_ERROR(AddRecords(store, *keys, from, *index));
  records_read_ += keys->size() - from;
  entry.keys = std::move(*keys);
  entry.index = std::move(index);
  return entry.index;
}

uint64_t FailedAgainCache::records_read() const {
  MutexLock lock(mu_);
  return records_read_;
}

ReplayBuckets BucketsOf(const AuditRecord& r) {
  if (r.buckets) return *r.buckets;
  // Older records counted messages that failed again as sent too, and
  // skipped the ones that had failed after an earlier replay.
  std::set<std::pair<std::string, std::string>> again;
  for (const FailedAgainMessage& f : r.failed_again) again.emplace(f.message_id, f.new_message_id);
  ReplayBuckets b = MakeBuckets(0, r.stats, again.size());
  b.skipped_failed_again = r.failed_again_skipped;
  b.selected = std::max(r.stats.accepted, b.Sum() - b.not_sent);
  b.not_sent = b.selected - (b.Sum() - b.not_sent);
  return b;
}

const std::string* FailedAgainIndex::RootOf(const std::string& id) const {
  auto it = root_of.find(id);
  return it == root_of.end() ? nullptr : &it->second;
}

const FailedAgainIndex::Latest* FailedAgainIndex::LatestOf(const std::string& id) const {
  const std::string* root = RootOf(id);
  if (root == nullptr) return nullptr;
  auto it = latest.find(*root);
  return it == latest.end() ? nullptr : &it->second;
}

bool FailedAgainIndex::Contains(const std::string& id) const {
  const Latest* l = LatestOf(id);
  return l != nullptr && l->failed_again;
}

bool FailedAgainIndex::CountOnce(const std::string& id, std::set<std::string>& counted) const {
  if (!Contains(id)) return false;
  return counted.insert(*RootOf(id)).second;
}

void FailedAgainIndex::Add(const AuditRecord& record) {
  // Deliveries first: a copy of a lineage already kept continues it (its new
  // id joins the lineage); then this record's re-failures, which start a
  // lineage or mark a kept one failed again.
  std::set<std::pair<std::string, std::string>> again;  // (message id, new id) found again in this record
  for (const FailedAgainMessage& f : record.failed_again) again.emplace(f.message_id, f.new_message_id);
  for (const ReplayedMessage& m : record.sent) {
    if (again.count({m.message_id, m.new_message_id}) != 0) continue;
    const std::string* root = RootOf(m.message_id);
    if (root == nullptr) continue;  // never failed again: the ledger has it
    const std::string r = *root;
    if (!m.new_message_id.empty()) root_of[m.new_message_id] = r;
    latest[r] = Latest{false, m.destination, m.message_id, m.new_message_id};
  }
  for (const FailedAgainMessage& f : record.failed_again) {
    const std::string* known = RootOf(f.message_id);
    const std::string r = known != nullptr ? *known : f.message_id;
    root_of[f.message_id] = r;
    if (!f.new_message_id.empty()) root_of[f.new_message_id] = r;
    latest[r] = Latest{true, f.destination, f.message_id, f.new_message_id};
    messages.push_back(f);
  }
}

}  // namespace dlq
