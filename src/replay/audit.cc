#include "replay/audit.h"

#include <fmt/format.h>

#include "common/crypto.h"
#include "common/log.h"
#include "common/time_util.h"

namespace dlq {
namespace {

void AppendStringOrNull(std::string& out, const std::string& s) {
  if (s.empty()) {
    out += "null";
  } else {
    AppendJsonString(out, s);
  }
}

}  // namespace

std::string AuditKey(const std::string& prefix, SystemTime at, const std::string& id) {
  std::string key = prefix.empty() ? "" : prefix + "/";
  return key + fmt::format("_audit/{}-{}.json", FormatAmzDate(at), id);
}

std::string AuditJson(const AuditRecord& r) {
  std::string out = "{\"schema\":1,\"kind\":\"replay\",\"caller_arn\":";
  AppendStringOrNull(out, r.caller_arn);
  out += ",\"caller_error\":";
  AppendStringOrNull(out, r.caller_error);
  out += ",\"started_at\":";
  AppendJsonString(out, FormatIso8601(r.started_at));
  out += ",\"finished_at\":";
  AppendJsonString(out, FormatIso8601(r.finished_at));
  out += ",\"source\":";
  AppendJsonString(out, r.source);
  out += ",\"filter\":";
  AppendJsonString(out, r.filter);
  out += ",\"destination\":";
  AppendJsonString(out, r.destination);
  out += ",\"transform\":";
  AppendStringOrNull(out, r.transform);
  out += ",\"outcome\":";
  AppendJsonString(out, r.outcome);
  const ReplayStats& s = r.stats;
  out += fmt::format(
      ",\"counts\":{{\"selected\":{},\"sent\":{},\"failed\":{},\"resumed\":{},\"retries\":{},\"bytes_sent\":{}}}",
      s.accepted, s.sent, s.failed, s.resumed, s.retries, s.bytes_sent);
  out += ",\"sent_by_destination\":{";
  bool first = true;
  for (const auto& [url, n] : r.sent_by_destination) {
    if (!first) out += ',';
    first = false;
    AppendJsonString(out, url);
    out += fmt::format(":{}", n);
  }
  out += "},\"sent_ids\":[";
  for (size_t i = 0; i < r.sent_ids.size(); ++i) {
    if (i) out += ',';
    AppendJsonString(out, r.sent_ids[i]);
  }
  out += "],\"failed\":[";
  for (size_t i = 0; i < r.failures.size(); ++i) {
    if (i) out += ',';
    out += "{\"message_id\":";
    AppendJsonString(out, r.failures[i].message_id);
    out += ",\"destination\":";
    AppendStringOrNull(out, r.failures[i].destination);
    out += ",\"reason\":";
    AppendJsonString(out, r.failures[i].reason);
    out += '}';
  }
  out += "]}\n";
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
