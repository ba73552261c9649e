#include "causes/cause_record.h"

#include <fmt/format.h>

#include <array>
#include <utility>

#include "aws/json_response.h"
#include "common/json_writer.h"
#include "common/strings.h"
#include "common/time_util.h"

namespace dlq {
namespace {

constexpr std::array<std::pair<CauseStatus, std::string_view>, 9> kStatusNames = {{
    {CauseStatus::kFound, "found"},
    {CauseStatus::kNoError, "no_error"},
    {CauseStatus::kNotMentioned, "not_mentioned"},
    {CauseStatus::kNoConsumer, "no_consumer"},
    {CauseStatus::kLogsExpired, "logs_expired"},
    {CauseStatus::kAccessDenied, "access_denied"},
    {CauseStatus::kLogGroupNotFound, "log_group_not_found"},
    {CauseStatus::kThrottled, "throttled"},
    {CauseStatus::kError, "error"},
}};

void WriteTime(JsonWriter& w, std::string_view key, int64_t ms) {
  w.Key(key);
  std::string text;
  AppendIso8601(text, FromUnixMillis(ms));
  w.String(text);
}

void WriteCause(JsonWriter& w, const Cause& c) {
  w.BeginObject();
  w.Key("type").String(c.type);
  w.Key("message").String(c.message);
  w.Key("key").String(c.key);
  if (!c.stack.empty()) w.Key("stack").String(c.stack);
  if (!c.request_id.empty()) w.Key("request_id").String(c.request_id);
  w.Key("log_group").String(c.log_group);
  w.Key("log_stream").String(c.log_stream);
  WriteTime(w, "time", c.timestamp_ms);
  if (c.batch_partial) w.Key("batch_partial").Bool(true);
  w.Key("context").BeginArray();
  for (const std::string& line : c.context_lines) w.String(line);
  w.EndArray();
  w.EndObject();
}

// A required string field.
Status RequiredString(const JsonFields& f, std::string_view key, std::string& out) {
  DLQ_RETURN_IF_ERROR(f.String(key, out));
  if (out.empty()) return f.Malformed(key, "is missing or empty");
  return Status::Ok();
}

// An ISO 8601 time field as epoch milliseconds; `required` fails when absent.
Status TimeField(const JsonFields& f, std::string_view key, bool required, int64_t& out_ms) {
  std::string text;
  DLQ_RETURN_IF_ERROR(f.String(key, text));
  if (text.empty()) return required ? f.Malformed(key, "is missing") : Status::Ok();
  std::optional<SystemTime> t = ParseIso8601(text);
  if (!t) return f.Malformed(key, "is not an ISO 8601 time");
  out_ms = ToUnixMillis(*t);
  return Status::Ok();
}

Result<Cause> ParseCause(const JsonFields& f) {
  Cause c;
  DLQ_RETURN_IF_ERROR(f.String("type", c.type));
  DLQ_RETURN_IF_ERROR(f.String("message", c.message));
  DLQ_RETURN_IF_ERROR(f.String("key", c.key));
  DLQ_RETURN_IF_ERROR(f.String("stack", c.stack));
  DLQ_RETURN_IF_ERROR(f.String("request_id", c.request_id));
  DLQ_RETURN_IF_ERROR(f.String("log_group", c.log_group));
  DLQ_RETURN_IF_ERROR(f.String("log_stream", c.log_stream));
  DLQ_RETURN_IF_ERROR(TimeField(f, "time", false, c.timestamp_ms));
  std::optional<bool> partial;
  DLQ_RETURN_IF_ERROR(f.Bool("batch_partial", partial));
  c.batch_partial = partial.value_or(false);
  DLQ_RETURN_IF_ERROR(f.Strings("context", c.context_lines));
  if (c.type.empty() && c.message.empty()) return f.Malformed("cause", "has neither a type nor a message");
  return c;
}

Result<CauseRecord> ParseFields(const JsonFields& f) {
  CauseRecord r;
  std::optional<int64_t> schema;
  DLQ_RETURN_IF_ERROR(f.Int64("schema", schema));
  if (!schema) return f.Malformed("schema", "is missing");
  if (*schema < 1) return f.Malformed("schema", "is below 1");
  if (*schema > kCauseRecordSchema) {
    return FailedPrecondition(
        fmt::format("cause record schema {} is newer than this reader's {}: upgrade dlq-archive to read it", *schema,
                    kCauseRecordSchema));
  }
  r.schema = *schema;
  DLQ_RETURN_IF_ERROR(RequiredString(f, "queue", r.queue));
  DLQ_RETURN_IF_ERROR(RequiredString(f, "message_id", r.message_id));
  DLQ_RETURN_IF_ERROR(f.String("group_key", r.group_key));
  int64_t looked_up_ms = 0;
  DLQ_RETURN_IF_ERROR(TimeField(f, "looked_up_at", true, looked_up_ms));
  r.looked_up_at = FromUnixMillis(looked_up_ms);
  std::string status;
  DLQ_RETURN_IF_ERROR(RequiredString(f, "status", status));
  std::optional<CauseStatus> parsed = ParseCauseStatus(status);
  if (!parsed) return f.Malformed("status", "is not a known status");
  r.status = *parsed;
  DLQ_RETURN_IF_ERROR(f.String("reason", r.reason));
  DLQ_RETURN_IF_ERROR(f.Strings("log_groups", r.log_groups));
  DLQ_ASSIGN_OR_RETURN(std::optional<JsonFields> window, f.Object("window"));
  if (window) {
    DLQ_RETURN_IF_ERROR(TimeField(*window, "start", true, r.window_start_ms));
    DLQ_RETURN_IF_ERROR(TimeField(*window, "end", true, r.window_end_ms));
  }
  DLQ_ASSIGN_OR_RETURN(std::optional<JsonFields> cause, f.Object("cause"));
  if (cause) {
    DLQ_ASSIGN_OR_RETURN(Cause c, ParseCause(*cause));
    r.cause = std::move(c);
  }
  if ((r.status == CauseStatus::kFound) != r.cause.has_value()) {
    return f.Malformed("cause", r.cause ? "is set but the status is not found" : "is missing for status found");
  }
  return r;
}

}  // namespace

std::string_view CauseStatusName(CauseStatus status) {
  for (const auto& [s, name] : kStatusNames) {
    if (s == status) return name;
  }
  return "error";
}

std::optional<CauseStatus> ParseCauseStatus(std::string_view name) {
  for (const auto& [s, n] : kStatusNames) {
    if (n == name) return s;
  }
  return std::nullopt;
}

bool IsSettled(CauseStatus status) {
  return status == CauseStatus::kFound || status == CauseStatus::kNoError || status == CauseStatus::kLogsExpired;
}

void AppendCauseRecordJson(const CauseRecord& r, std::string& out) {
  JsonWriter w(out);
  w.BeginObject();
  w.Key("schema").Int(r.schema);
  w.Key("queue").String(r.queue);
  w.Key("message_id").String(r.message_id);
  if (!r.group_key.empty()) w.Key("group_key").String(r.group_key);
  WriteTime(w, "looked_up_at", ToUnixMillis(r.looked_up_at));
  w.Key("status").String(CauseStatusName(r.status));
  if (!r.reason.empty()) w.Key("reason").String(r.reason);
  w.Key("log_groups").BeginArray();
  for (const std::string& g : r.log_groups) w.String(g);
  w.EndArray();
  if (r.window_start_ms != 0 || r.window_end_ms != 0) {
    w.Key("window").BeginObject();
    WriteTime(w, "start", r.window_start_ms);
    WriteTime(w, "end", r.window_end_ms);
    w.EndObject();
  }
  if (r.cause) {
    w.Key("cause");
    WriteCause(w, *r.cause);
  }
  w.EndObject();
  out.push_back('\n');
}

Result<CauseRecord> ParseCauseRecordJson(std::string_view line) {
  if (EndsWith(line, "\n")) line.remove_suffix(1);
  if (EndsWith(line, "\r")) line.remove_suffix(1);
  JsonDocument doc;
  auto fields = doc.Parse(line, "cause record");
  if (!fields.ok()) return DataLoss(fields.status().message());
  Result<CauseRecord> r = ParseFields(*fields);
  if (!r.ok() && r.status().code() == ErrorCode::kInternal) return DataLoss(r.status().message());
  return r;
}

std::string CauseSearchText(const CauseRecord& record) {
  if (record.status != CauseStatus::kFound || !record.cause) return "";
  return ToLower(record.cause->type + "\n" + record.cause->message + "\n" + record.cause->key);
}

}  // namespace dlq
