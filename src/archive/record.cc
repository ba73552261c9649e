#include "archive/record.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <charconv>

#include "archive/expiry.h"
#include "common/crypto.h"
#include "common/json_writer.h"
#include "common/strings.h"
#include "common/time_util.h"

namespace dlq {
namespace {

// ---------------------------------------------------------------------------
// Writing

// Appends `text_prefix` + the escaped text + '"' when `text` is valid UTF-8,
// else `base64_prefix` + its base64 + '"', so no byte is ever lost.
void AppendTextOrBase64(std::string& out, std::string_view text_prefix, std::string_view base64_prefix,
                        std::string_view text) {
  const size_t mark = out.size();
  out.append(text_prefix);
  if (!AppendJsonEscaped(out, text)) {
    out.resize(mark);
    out.append(base64_prefix);
    out.append(Base64Encode(text));
  }
  out.push_back('"');
}

void AppendKey(std::string& out, std::string_view key) {
  AppendJsonString(out, key);
  out.push_back(':');
}

void AppendInt(std::string& out, int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, r.ptr);
}

// A JSON string "2025-09-10T12:30:00.123Z".
void AppendTime(std::string& out, SystemTime t) {
  out.push_back('"');
  AppendIso8601(out, t);
  out.push_back('"');
}

// The fields of one line, as views, so both public writers share one encoder.
struct RecordView {
  std::string_view queue, queue_url, region, account_id, message_id, body, md5_of_body, md5_of_message_attributes;
  const std::map<std::string, std::string>* attributes;
  const MessageAttributes* message_attributes;
  std::optional<SystemTime> sent_at;
  SystemTime expires_at, archived_at;
  int64_t receive_count;
  std::optional<int64_t> own_receive_count;
  std::string_view source_queue_arn;
  bool extended_client_pointer;
  std::string_view archiver_version, archiver_host;
};

void WriteRecord(const RecordView& r, std::string& out) {
  out.reserve(out.size() + r.body.size() + 512);
  out.append("{\"schema\":");
  AppendInt(out, kArchiveSchemaVersion);
  out.append(",\"queue\":");
  AppendJsonString(out, r.queue);
  out.append(",\"queue_url\":");
  AppendJsonString(out, r.queue_url);
  out.append(",\"region\":");
  AppendJsonString(out, r.region);
  out.append(",\"account_id\":");
  AppendJsonString(out, r.account_id);
  out.append(",\"message_id\":");
  AppendJsonString(out, r.message_id);
  AppendTextOrBase64(out, ",\"body\":\"", ",\"body_encoding\":\"base64\",\"body_base64\":\"", r.body);
  out.append(",\"md5_of_body\":");
  AppendJsonString(out, r.md5_of_body);
  out.append(",\"md5_of_message_attributes\":");
  AppendJsonString(out, r.md5_of_message_attributes);
  out.append(",\"attributes\":{");
  bool first = true;
  for (const auto& [name, value] : *r.attributes) {
    if (!first) out.push_back(',');
    first = false;
    AppendKey(out, name);
    AppendJsonString(out, value);
  }
  out.append("},\"message_attributes\":{");
  first = true;
  for (const auto& [name, value] : *r.message_attributes) {
    if (!first) out.push_back(',');
    first = false;
    AppendKey(out, name);
    out.append("{\"DataType\":");
    AppendJsonString(out, value.data_type);
    if (value.IsBinary()) {
      out.append(",\"BinaryValue\":\"");
      out.append(Base64Encode(value.binary_value));
      out.push_back('"');
    } else {
      AppendTextOrBase64(out, ",\"StringValue\":\"", ",\"StringValueBase64\":\"", value.string_value);
    }
    out.push_back('}');
  }
  out.append("},\"sent_at\":");
  if (r.sent_at) {
    AppendTime(out, *r.sent_at);
  } else {
    out.append("null");
  }
  out.append(",\"expires_at\":");
  AppendTime(out, r.expires_at);
  out.append(",\"archived_at\":");
  AppendTime(out, r.archived_at);
  out.append(",\"receive_count\":");
  AppendInt(out, r.receive_count);
  if (r.own_receive_count) {
    out.append(",\"own_receive_count\":");
    AppendInt(out, *r.own_receive_count);
  }
  out.append(",\"source_queue_arn\":");
  if (r.source_queue_arn.empty()) {
    out.append("null");
  } else {
    AppendJsonString(out, r.source_queue_arn);
  }
  out.append(r.extended_client_pointer ? ",\"extended_client_pointer\":true" : ",\"extended_client_pointer\":false");
  out.append(",\"archiver\":{\"version\":");
  AppendJsonString(out, r.archiver_version);
  out.append(",\"host\":");
  AppendJsonString(out, r.archiver_host);
  out.append("}}\n");
}

std::string_view AttributeOr(const std::map<std::string, std::string>& attrs, const std::string& name) {
  auto it = attrs.find(name);
  return it == attrs.end() ? std::string_view() : std::string_view(it->second);
}

int64_t ReceiveCount(const std::map<std::string, std::string>& attrs) {
  static const std::string kName = "ApproximateReceiveCount";
  std::optional<int64_t> n = ParseInt64(AttributeOr(attrs, kName));
  return n && *n >= 0 ? *n : 0;
}

const std::string& SourceArnName() {
  static const std::string kName = "DeadLetterQueueSourceArn";
  return kName;
}

// ---------------------------------------------------------------------------
// Parsing

Status FieldError(std::string_view field, std::string_view problem) {
  return DataLoss(fmt::format("archive record: field \"{}\" {}", field, problem));
}

Status GetString(simdjson::dom::element v, std::string_view field, std::string& out) {
  std::string_view s;
  if (v.get_string().get(s) != simdjson::SUCCESS) return FieldError(field, "must be a string");
  out.assign(s.data(), s.size());
  return Status::Ok();
}

// A string or null (null leaves `out` empty).
Status GetOptionalString(simdjson::dom::element v, std::string_view field, std::string& out) {
  if (v.is_null()) {
    out.clear();
    return Status::Ok();
  }
  return GetString(v, field, out);
}

Status GetTime(simdjson::dom::element v, std::string_view field, SystemTime& out) {
  std::string_view s;
  if (v.get_string().get(s) != simdjson::SUCCESS) return FieldError(field, "must be an ISO-8601 string");
  // SystemTime counts nanoseconds (years 1678..2262); reject years outside [1700, 2200) before converting.
  int year = 0;
  if (s.size() >= 4 && std::from_chars(s.data(), s.data() + 4, year).ptr == s.data() + 4 &&
      (year < 1700 || year >= 2200)) {
    return FieldError(field, fmt::format("year {} is out of range", year));
  }
  std::optional<SystemTime> t = ParseIso8601(s);
  if (!t) return FieldError(field, fmt::format("is not an ISO-8601 UTC time: \"{}\"", s.substr(0, 64)));
  out = *t;
  return Status::Ok();
}

Status ParseMessageAttribute(simdjson::dom::element v, const std::string& name, MessageAttributeValue& out) {
  const std::string field = "message_attributes." + name;
  simdjson::dom::object obj;
  if (v.get_object().get(obj) != simdjson::SUCCESS) return FieldError(field, "must be an object");
  bool has_type = false, has_string = false, has_binary = false;
  for (auto [key, value] : obj) {
    if (key == "DataType") {
      DLQ_RETURN_IF_ERROR(GetString(value, field + ".DataType", out.data_type));
      has_type = true;
    } else if (key == "StringValue") {
      DLQ_RETURN_IF_ERROR(GetString(value, field + ".StringValue", out.string_value));
      has_string = true;
    } else if (key == "BinaryValue" || key == "StringValueBase64") {
      std::string encoded;
      DLQ_RETURN_IF_ERROR(GetString(value, fmt::format("{}.{}", field, key), encoded));
      std::optional<std::string> raw = Base64Decode(encoded);
      if (!raw) return FieldError(fmt::format("{}.{}", field, key), "is not valid base64");
      bool binary = key == "BinaryValue";
      (binary ? out.binary_value : out.string_value) = std::move(*raw);
      (binary ? has_binary : has_string) = true;
    }
  }
  if (!has_type) return FieldError(field + ".DataType", "is missing");
  bool ok = out.IsBinary() ? (has_binary && !has_string) : (has_string && !has_binary);
  if (!ok) {
    return FieldError(field, fmt::format("does not match DataType \"{}\" (Binary types carry BinaryValue only, "
                                         "others StringValue only)",
                                         out.data_type));
  }
  return Status::Ok();
}

}  // namespace

bool IsExtendedClientPointer(std::string_view body, const MessageAttributes& attrs) {
  // Named once: a literal would build a std::string (beyond the small-string
  // size) for every lookup of every record.
  static const std::string kPayloadSize = "ExtendedPayloadSize";
  static const std::string kLegacyPayloadSize = "SQSLargePayloadSize";
  if (attrs.count(kPayloadSize) || attrs.count(kLegacyPayloadSize)) return true;
  size_t i = 0;
  while (i < body.size() && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n' || body[i] == '\r')) ++i;
  if (i >= body.size() || body[i] != '[') return false;
  std::string_view head = body.substr(i, 200);
  return (head.find("\"software.amazon.payloadoffloading.PayloadS3Pointer\"") != std::string_view::npos ||
          head.find("\"com.amazon.sqs.javamessaging.MessageS3Pointer\"") != std::string_view::npos) &&
         body.find("s3BucketName") != std::string_view::npos;
}

ArchiveRecord MakeArchiveRecord(const Message& msg, const ArchiveContext& ctx, SystemTime archived_at) {
  ArchiveRecord r;
  r.queue = ctx.queue;
  r.queue_url = ctx.queue_url;
  r.region = ctx.region;
  r.account_id = ctx.account_id;
  r.message_id = msg.message_id;
  r.body = msg.body;
  r.md5_of_body = msg.md5_of_body;
  r.md5_of_message_attributes = msg.md5_of_message_attributes;
  r.attributes = msg.attributes;
  r.message_attributes = msg.message_attributes;
  r.sent_at = AttributeMillis(msg, std::string("SentTimestamp"));
  r.expires_at = ComputeExpiry(msg, ctx.fifo, ctx.retention, archived_at);
  r.archived_at = archived_at;
  r.receive_count = ReceiveCount(msg.attributes);
  r.source_queue_arn = std::string(AttributeOr(msg.attributes, SourceArnName()));
  r.extended_client_pointer = IsExtendedClientPointer(msg.body, msg.message_attributes);
  r.archiver = {ctx.archiver_version, ctx.host};
  return r;
}

void AppendRecordJson(const Message& msg, const ArchiveContext& ctx, SystemTime archived_at, std::string& out,
                      std::optional<int64_t> own_receive_count) {
  static const std::string kSentTimestamp = "SentTimestamp";
  std::optional<SystemTime> sent_at = AttributeMillis(msg, kSentTimestamp);
  RecordView v{ctx.queue,
               ctx.queue_url,
               ctx.region,
               ctx.account_id,
               msg.message_id,
               msg.body,
               msg.md5_of_body,
               msg.md5_of_message_attributes,
               &msg.attributes,
               &msg.message_attributes,
               sent_at,
               ExpiryFromSentTime(sent_at, ctx.fifo, ctx.retention, archived_at),
               archived_at,
               ReceiveCount(msg.attributes),
               own_receive_count,
               AttributeOr(msg.attributes, SourceArnName()),
               IsExtendedClientPointer(msg.body, msg.message_attributes),
               ctx.archiver_version,
               ctx.host};
  WriteRecord(v, out);
}

void AppendRecordJson(const ArchiveRecord& r, std::string& out) {
  RecordView v{r.queue,
               r.queue_url,
               r.region,
               r.account_id,
               r.message_id,
               r.body,
               r.md5_of_body,
               r.md5_of_message_attributes,
               &r.attributes,
               &r.message_attributes,
               r.sent_at,
               r.expires_at,
               r.archived_at,
               r.receive_count,
               r.own_receive_count,
               r.source_queue_arn,
               r.extended_client_pointer,
               r.archiver.version,
               r.archiver.host};
  WriteRecord(v, out);
}

// One branch per field of the archive format, in its order (doc/archive-format.md): split, the format is
// scattered over several functions.
// NOLINTNEXTLINE(readability-function-size)
namespace {

// What ParseRecordJson met besides the record's own fields.
struct RecordFields {
  bool schema = false, queue = false, id = false, body = false, md5 = false, archived_at = false, expires_at = false;
  std::string_view body_encoding;
  std::optional<simdjson::dom::element> body_base64;
};

Status ParseAttributes(simdjson::dom::element value, std::string_view key, ArchiveRecord& r) {
  simdjson::dom::object attrs;
  if (value.get_object().get(attrs) != simdjson::SUCCESS) return FieldError(key, "must be an object");
  for (auto [name, attr] : attrs) {
    std::string field = fmt::format("attributes.{}", name);
    auto [at, inserted] = r.attributes.try_emplace(std::string(name));
    if (!inserted) return FieldError(field, "appears more than once");
    DLQ_RETURN_IF_ERROR(GetString(attr, field, at->second));
  }
  return Status::Ok();
}

Status ParseMessageAttributes(simdjson::dom::element value, std::string_view key, ArchiveRecord& r) {
  simdjson::dom::object attrs;
  if (value.get_object().get(attrs) != simdjson::SUCCESS) return FieldError(key, "must be an object");
  for (auto [name, attr] : attrs) {
    std::string n(name);
    // A second value under one name would be parsed over the first and
    // keep parts of it (a Binary value under a String type): refused.
    auto [at, inserted] = r.message_attributes.try_emplace(n);
    if (!inserted) return FieldError("message_attributes." + n, "appears more than once");
    DLQ_RETURN_IF_ERROR(ParseMessageAttribute(attr, n, at->second));
  }
  return Status::Ok();
}

Status ParseArchiver(simdjson::dom::element value, std::string_view key, ArchiveRecord& r) {
  simdjson::dom::object a;
  if (value.get_object().get(a) != simdjson::SUCCESS) return FieldError(key, "must be an object");
  for (auto [akey, avalue] : a) {
    if (akey == "version") DLQ_RETURN_IF_ERROR(GetOptionalString(avalue, "archiver.version", r.archiver.version));
    if (akey == "host") DLQ_RETURN_IF_ERROR(GetOptionalString(avalue, "archiver.host", r.archiver.host));
  }
  return Status::Ok();
}

// The fields whose value is read as it is: strings, times, counts, flags.
Status ParseScalarField(std::string_view key, simdjson::dom::element value, ArchiveRecord& r, RecordFields& seen) {
  if (key == "queue") {
    seen.queue = true;
    return GetString(value, key, r.queue);
  }
  if (key == "queue_url") return GetOptionalString(value, key, r.queue_url);
  if (key == "region") return GetOptionalString(value, key, r.region);
  if (key == "account_id") return GetOptionalString(value, key, r.account_id);
  if (key == "message_id") {
    seen.id = true;
    return GetString(value, key, r.message_id);
  }
  if (key == "body") {
    seen.body = true;
    return GetString(value, key, r.body);
  }
  if (key == "md5_of_body") {
    seen.md5 = true;
    return GetString(value, key, r.md5_of_body);
  }
  if (key == "md5_of_message_attributes") return GetOptionalString(value, key, r.md5_of_message_attributes);
  if (key == "sent_at") {
    if (value.is_null()) return Status::Ok();
    SystemTime t;
    DLQ_RETURN_IF_ERROR(GetTime(value, key, t));
    r.sent_at = t;
    return Status::Ok();
  }
  if (key == "expires_at") {
    seen.expires_at = true;
    return GetTime(value, key, r.expires_at);
  }
  if (key == "archived_at") {
    seen.archived_at = true;
    return GetTime(value, key, r.archived_at);
  }
  if (key == "receive_count") {
    if (value.get_int64().get(r.receive_count) != simdjson::SUCCESS) return FieldError(key, "must be an integer");
    return Status::Ok();
  }
  if (key == "own_receive_count") {
    int64_t own = 0;
    if (value.get_int64().get(own) != simdjson::SUCCESS || own < 0) return FieldError(key, "must be an integer >= 0");
    r.own_receive_count = own;
    return Status::Ok();
  }
  if (key == "source_queue_arn") return GetOptionalString(value, key, r.source_queue_arn);
  if (key == "extended_client_pointer") {
    if (value.get_bool().get(r.extended_client_pointer) != simdjson::SUCCESS) {
      return FieldError(key, "must be a boolean");
    }
    return Status::Ok();
  }
  return Status::Ok();  // unknown fields are ignored (forward compatibility within schema 1)
}

Status ParseField(std::string_view key, simdjson::dom::element value, ArchiveRecord& r, RecordFields& seen) {
  if (key == "schema") {
    if (value.get_int64().get(r.schema) != simdjson::SUCCESS) return FieldError(key, "must be an integer");
    seen.schema = true;
    return Status::Ok();
  }
  if (key == "body_base64") {
    seen.body_base64 = value;
    return Status::Ok();
  }
  if (key == "body_encoding") {
    if (value.get_string().get(seen.body_encoding) != simdjson::SUCCESS) return FieldError(key, "must be a string");
    return Status::Ok();
  }
  if (key == "attributes") return ParseAttributes(value, key, r);
  if (key == "message_attributes") return ParseMessageAttributes(value, key, r);
  if (key == "archiver") return ParseArchiver(value, key, r);
  return ParseScalarField(key, value, r, seen);
}

// The checks once every field is read: the schema, the body's one form,
// the required fields.
Status CheckRecord(ArchiveRecord& r, RecordFields& seen) {
  if (!seen.schema) return FieldError("schema", "is missing");
  if (r.schema < 1 || r.schema > kArchiveSchemaVersion) {
    return FailedPrecondition(fmt::format("archive record: unsupported schema version {} (this reader supports {})",
                                          r.schema, kArchiveSchemaVersion));
  }
  if (seen.body_base64) {
    if (seen.body) return FieldError("body_base64", "must not appear together with \"body\"");
    if (seen.body_encoding != "base64") {
      return FieldError("body_encoding", "must be \"base64\" when body_base64 is used");
    }
    std::string encoded;
    DLQ_RETURN_IF_ERROR(GetString(*seen.body_base64, "body_base64", encoded));
    std::optional<std::string> raw = Base64Decode(encoded);
    if (!raw) return FieldError("body_base64", "is not valid base64");
    r.body = std::move(*raw);
    seen.body = true;
  }
  if (!seen.queue) return FieldError("queue", "is missing");
  if (!seen.id) return FieldError("message_id", "is missing");
  if (r.message_id.empty()) return FieldError("message_id", "is empty");
  if (!seen.body) return FieldError("body", "is missing");
  if (!seen.md5) return FieldError("md5_of_body", "is missing");
  if (!seen.archived_at) return FieldError("archived_at", "is missing");
  if (!seen.expires_at) return FieldError("expires_at", "is missing");
  return Status::Ok();
}

}  // namespace

Result<ArchiveRecord> ParseRecordJson(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.parse(line.data(), line.size()).get(doc); err != simdjson::SUCCESS) {
    return DataLoss(fmt::format("archive record: invalid JSON: {}", simdjson::error_message(err)));
  }
  simdjson::dom::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS) return DataLoss("archive record: line is not a JSON object");
  ArchiveRecord r;
  RecordFields seen;
  for (auto [key, value] : obj) DLQ_RETURN_IF_ERROR(ParseField(key, value, r, seen));
  DLQ_RETURN_IF_ERROR(CheckRecord(r, seen));
  return r;
}

int64_t ConsumerReceiveCount(const ArchiveRecord& record) {
  return std::max<int64_t>(0, record.receive_count - record.own_receive_count.value_or(0));
}

Message RecordToMessage(const ArchiveRecord& record) {
  Message m;
  m.message_id = record.message_id;
  m.body = record.body;
  m.md5_of_body = record.md5_of_body;
  m.md5_of_message_attributes = record.md5_of_message_attributes;
  m.attributes = record.attributes;
  m.message_attributes = record.message_attributes;
  return m;
}

}  // namespace dlq
