#include "replay/audit.h"

#include <fmt/format.h>

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
  w.BeginObject().Key("schema").Int(1).Key("kind").String(r.kind);
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
  w.Key("counts").BeginObject();
  w.Key("selected").Uint(s.accepted).Key("sent").Uint(s.sent).Key("failed").Uint(s.failed);
  w.Key("resumed").Uint(s.resumed).Key("retries").Uint(s.retries).Key("bytes_sent").Uint(s.bytes_sent);
  w.EndObject();
  w.Key("sent_by_destination").BeginObject();
  for (const auto& [url, n] : r.sent_by_destination) w.Key(url).Uint(n);
  w.EndObject();
  w.Key("sent_ids").BeginArray();
  for (const std::string& id : r.sent_ids) w.String(id);
  w.EndArray();
  w.Key("failed").BeginArray();
  for (const auto& f : r.failures) {
    w.BeginObject().Key("message_id").String(f.message_id);
    StringOrNull(w.Key("destination"), f.destination);
    w.Key("reason").String(f.reason).EndObject();
  }
  w.EndArray().EndObject();
  std::string out = w.Take();
  out += '\n';
  return out;
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
