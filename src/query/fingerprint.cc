#include "query/fingerprint.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "common/crypto.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/strings.h"

namespace dlq {
namespace {

constexpr int kMaxDepth = 16;
constexpr std::string_view kEllipsis = "\xE2\x80\xA6";  // U+2026

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// What a walk over a JSON document collects: its distinct key paths and the
// values of discriminator fields, each as "path=value".
struct ShapeWalk {
  const std::vector<std::string>& fields;
  std::set<std::string> paths;
  std::set<std::string> discriminators;
};

bool IsDiscriminator(const std::vector<std::string>& fields, std::string_view key, std::string_view path) {
  return std::any_of(fields.begin(), fields.end(),
                     [&](const std::string& f) { return f.find('.') == std::string::npos ? f == key : f == path; });
}

// The value of a discriminator field, or nullopt when it is an object, an
// array or a fraction (no value to tell failures apart by).
std::optional<std::string> DiscriminatorValue(simdjson::dom::element e) {
  using simdjson::dom::element_type;
  std::string out;
  switch (e.type()) {
    case element_type::STRING: {
      std::string_view text;
      if (e.get_string().get(text) != simdjson::SUCCESS) return std::nullopt;
      std::string masked;
      AppendMaskedText(text, masked);
      AppendJsonString(out, masked);
      return out;
    }
    case element_type::INT64: {
      int64_t i = 0;
      if (e.get_int64().get(i) != simdjson::SUCCESS) return std::nullopt;
      return std::to_string(i);
    }
    case element_type::UINT64: {
      uint64_t u = 0;
      if (e.get_uint64().get(u) != simdjson::SUCCESS) return std::nullopt;
      return std::to_string(u);
    }
    case element_type::BOOL: {
      bool b = false;
      return e.get_bool().get(b) == simdjson::SUCCESS && b ? "true" : "false";
    }
    case element_type::NULL_VALUE: return "null";
    default: return std::nullopt;
  }
}

void Walk(simdjson::dom::element e, const std::string& path, int depth, ShapeWalk& walk) {
  using simdjson::dom::element_type;
  if (e.type() != element_type::OBJECT && e.type() != element_type::ARRAY) {
    walk.paths.insert(path);
    return;
  }
  if (depth >= kMaxDepth) {
    walk.paths.insert(path + std::string(kEllipsis));
    return;
  }
  if (e.type() == element_type::ARRAY) {
    simdjson::dom::array array;
    if (e.get_array().get(array) != simdjson::SUCCESS) return;
    const std::string item_path = path + "[]";
    if (array.size() == 0) walk.paths.insert(item_path);
    for (auto item : array) Walk(item, item_path, depth + 1, walk);
    return;
  }
  simdjson::dom::object object;
  if (e.get_object().get(object) != simdjson::SUCCESS) return;
  if (object.size() == 0) walk.paths.insert(path + "{}");
  std::string key;
  for (auto field : object) {
    key.clear();
    AppendMaskedText(field.key, key);
    std::string field_path = path;
    if (!field_path.empty()) field_path += '.';
    field_path += key;
    if (IsDiscriminator(walk.fields, field.key, field_path)) {
      if (std::optional<std::string> value = DiscriminatorValue(field.value)) {
        value->insert(0, field_path + "=");
        walk.discriminators.insert(std::move(*value));
      }
    }
    Walk(field.value, field_path, depth + 1, walk);
  }
}

// "d1=v1 d2=v2 {path1,path2}" for a parsed JSON body.
std::string JsonFingerprint(simdjson::dom::element root, const FingerprintOptions& options) {
  ShapeWalk walk{options.fields, {}, {}};
  Walk(root, "", 0, walk);
  std::string out;
  for (const std::string& d : walk.discriminators) {
    out += d;
    out.push_back(' ');
  }
  out.push_back('{');
  bool first = true;
  for (const std::string& p : walk.paths) {
    if (!first) out.push_back(',');
    first = false;
    out += p;
  }
  out.push_back('}');
  return out;
}

std::string_view AttributeText(const MessageAttributes& attributes, const std::string& name) {
  auto it = attributes.find(name);
  if (it == attributes.end() || it->second.IsBinary()) return {};
  return Trim(it->second.string_value);
}

// The resource name of an ARN: the part after its last '/', else its
// resource part ("arn:aws:lambda:r:a:function:f" gives "function:f").
std::string_view ArnName(std::string_view arn) {
  if (size_t slash = arn.rfind('/'); slash != std::string_view::npos) return arn.substr(slash + 1);
  size_t colon = 0;
  for (int i = 0; i < 5 && colon != std::string_view::npos; ++i) colon = arn.find(':', i == 0 ? 0 : colon + 1);
  return colon == std::string_view::npos ? arn : arn.substr(colon + 1);
}

// A Lambda on-failure destination record (the JSON invocation record Lambda
// sends to an SQS destination after an asynchronous invocation or a stream
// batch failed; AWS Lambda Developer Guide, "Capturing records of Lambda
// asynchronous invocations"): its condition, function error and error.
std::optional<std::string> LambdaDestinationReason(simdjson::dom::element root) {
  auto string_at = [&](const char* pointer) {
    std::string_view s;
    return root.at_pointer(pointer).get(s) == simdjson::SUCCESS ? s : std::string_view();
  };
  const std::string_view condition = string_at("/requestContext/condition");
  if (condition.empty()) return std::nullopt;
  const std::string_view function_arn = string_at("/requestContext/functionArn"),
                         function_error = string_at("/responseContext/functionError"),
                         error_type = string_at("/responsePayload/errorType"),
                         error_message = string_at("/responsePayload/errorMessage");
  std::string out = "Lambda on-failure (";
  AppendMaskedText(condition, out);
  if (!function_error.empty()) {
    out += ", ";
    AppendMaskedText(function_error, out);
  }
  out += ")";
  if (!error_type.empty() || !error_message.empty()) out += ": ";
  AppendMaskedText(error_type, out);
  if (!error_type.empty() && !error_message.empty()) out += ": ";
  AppendMaskedText(error_message, out);
  if (!function_arn.empty()) out += fmt::format(" · function {}", ArnName(function_arn));
  return out;
}

// The parsed JSON root of a body that is an object or array, else nullopt.
std::optional<simdjson::dom::element> ParseJsonBody(std::string_view trimmed) {
  if (trimmed.empty() || (trimmed.front() != '{' && trimmed.front() != '[')) return std::nullopt;
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(trimmed.data(), trimmed.size(), true).get(root) != simdjson::SUCCESS) return std::nullopt;
  return root;
}

std::string_view TrimSpace(std::string_view body) {
  size_t b = 0, e = body.size();
  while (b < e && IsSpace(body[b])) ++b;
  while (e > b && IsSpace(body[e - 1])) --e;
  return body.substr(b, e - b);
}

}  // namespace

Result<FingerprintOptions> FingerprintOptions::Parse(std::string_view comma_list) {
  FingerprintOptions options;
  if (Trim(comma_list).empty()) return options;
  options.fields.clear();
  for (std::string_view field : Split(comma_list, ',')) {
    field = Trim(field);
    if (field.empty()) {
      return InvalidArgument(
          fmt::format("--fingerprint-fields '{}': a field name must not be empty (e.g. type,error.code)", comma_list));
    }
    options.fields.emplace_back(field);
  }
  return options;
}

std::string FingerprintBody(std::string_view body, const FingerprintOptions& options) {
  std::string_view trimmed = TrimSpace(body);
  std::string out;
  if (std::optional<simdjson::dom::element> root = ParseJsonBody(trimmed)) {
    out = JsonFingerprint(*root, options);
  } else {
    AppendMaskedText(trimmed, out);
  }
  CapKey(out, kMaxFingerprintBytes);
  return out;
}

// The reasons AWS documents as message attributes of a DLQ message:
//  - Lambda asynchronous invocation DLQ (AWS Lambda Developer Guide, "Dead-letter
//    queues"): RequestID (String), ErrorCode (Number: a 3-digit HTTP status
//    code) and ErrorMessage (String, cut to 1 KB).
//  - EventBridge rule target DLQ (Amazon EventBridge User Guide, "Using
//    dead-letter queues to process undelivered events"): RULE_ARN, TARGET_ARN,
//    ERROR_CODE, ERROR_MESSAGE, EXHAUSTED_RETRY_CONDITION, RETRY_ATTEMPTS.
//  - EventBridge Scheduler DLQ (EventBridge Scheduler User Guide, "Configuring
//    a dead-letter queue"): the same ERROR_* and retry attributes with
//    SCHEDULE_ARN in place of RULE_ARN.
// SNS subscription DLQs carry no reason (the message as SNS would have
// delivered it). The request id and retry count are per message, never in the
// reason.
std::optional<std::string> FailureReason(const MessageAttributes& attributes) {
  auto text = [&](const char* name) { return AttributeText(attributes, name); };
  std::string out;
  if (!text("ErrorCode").empty() && attributes.count("ErrorMessage") != 0) {
    out = fmt::format("Lambda async ({}): ", text("ErrorCode"));
    AppendMaskedText(text("ErrorMessage"), out);
    CapKey(out, kMaxFingerprintBytes);
    return out;
  }
  if (text("ERROR_CODE").empty()) return std::nullopt;
  out = fmt::format("{} ({})", text("SCHEDULE_ARN").empty() ? "EventBridge" : "EventBridge Scheduler",
                    text("ERROR_CODE"));
  if (!text("ERROR_MESSAGE").empty()) {
    out += ": ";
    AppendMaskedText(text("ERROR_MESSAGE"), out);
  }
  if (!text("RULE_ARN").empty()) out += fmt::format(" · rule {}", ArnName(text("RULE_ARN")));
  if (!text("SCHEDULE_ARN").empty()) out += fmt::format(" · schedule {}", ArnName(text("SCHEDULE_ARN")));
  if (!text("TARGET_ARN").empty()) out += fmt::format(" · target {}", ArnName(text("TARGET_ARN")));
  if (!text("EXHAUSTED_RETRY_CONDITION").empty()) {
    out += fmt::format(" · {}", text("EXHAUSTED_RETRY_CONDITION"));
  }
  CapKey(out, kMaxFingerprintBytes);
  return out;
}

std::string FailureGroupKey(const ArchiveRecord& record, const FingerprintOptions& options) {
  if (std::optional<std::string> reason = FailureReason(record.message_attributes)) return std::move(*reason);
  std::string_view trimmed = TrimSpace(record.body);
  std::string out;
  if (std::optional<simdjson::dom::element> root = ParseJsonBody(trimmed)) {
    std::optional<std::string> reason = LambdaDestinationReason(*root);
    out = reason ? std::move(*reason) : JsonFingerprint(*root, options);
  } else {
    AppendMaskedText(trimmed, out);
  }
  CapKey(out, kMaxFingerprintBytes);
  return out;
}

std::string GroupId(std::string_view key) {
  return Sha256Hex(key).substr(0, kGroupIdChars);
}

}  // namespace dlq
