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
// Epoch seconds from 2001-09-09 (the first 10-digit value) to 2100-01-01.
constexpr uint64_t kEpochSecondsMin = 1'000'000'000, kEpochSecondsMax = 4'102'444'800;
constexpr std::string_view kEllipsis = "\xE2\x80\xA6";  // U+2026

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}
bool IsHex(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
bool IsWord(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// Characters at s[i, i+n) are all digits.
bool Digits(std::string_view s, size_t i, size_t n) {
  if (i + n > s.size()) return false;
  for (size_t k = i; k < i + n; ++k)
    if (!IsDigit(s[k])) return false;
  return true;
}

bool EndsToken(std::string_view s, size_t end) {
  return end >= s.size() || !IsWord(s[end]);
}

// Length of a UUID at i (8-4-4-4-12 hex), or 0.
size_t MatchUuid(std::string_view s, size_t i) {
  static constexpr size_t kGroups[] = {8, 4, 4, 4, 12};
  size_t p = i;
  for (size_t g = 0; g < 5; ++g) {
    if (g > 0) {
      if (p >= s.size() || s[p] != '-') return 0;
      ++p;
    }
    for (size_t k = 0; k < kGroups[g]; ++k, ++p)
      if (p >= s.size() || !IsHex(s[p])) return 0;
  }
  return EndsToken(s, p) ? p - i : 0;
}

// Length of an ISO 8601 date or date-time at i, or 0:
// YYYY-MM-DD[(T| )HH:MM[:SS[.f+]]][Z|(+|-)HH[:]MM].
size_t MatchIsoTime(std::string_view s, size_t i) {
  if (!Digits(s, i, 4) || i + 10 > s.size() || s[i + 4] != '-' || !Digits(s, i + 5, 2) || s[i + 7] != '-' ||
      !Digits(s, i + 8, 2)) {
    return 0;
  }
  size_t p = i + 10;
  if (p + 6 <= s.size() && (s[p] == 'T' || s[p] == ' ') && Digits(s, p + 1, 2) && s[p + 3] == ':' &&
      Digits(s, p + 4, 2)) {
    p += 6;
    if (p + 3 <= s.size() && s[p] == ':' && Digits(s, p + 1, 2)) {
      p += 3;
      if (p + 1 < s.size() && (s[p] == '.' || s[p] == ',') && IsDigit(s[p + 1])) {
        ++p;
        while (p < s.size() && IsDigit(s[p])) ++p;
      }
    }
    if (p < s.size() && s[p] == 'Z') {
      ++p;
    } else if (p + 3 <= s.size() && (s[p] == '+' || s[p] == '-') && Digits(s, p + 1, 2)) {
      size_t q = p + 3;
      if (q < s.size() && s[q] == ':') ++q;
      if (Digits(s, q, 2)) p = q + 2;
    }
  }
  return EndsToken(s, p) ? p - i : 0;
}

// Length of a number at i ([-]digits[.digits][(e|E)[+-]digits]) that ends a
// token, or 0. Sets `integer_digits` when it is a plain unsigned integer.
size_t MatchNumber(std::string_view s, size_t i, size_t& integer_digits) {
  size_t p = i;
  if (p < s.size() && s[p] == '-') ++p;
  size_t start = p;
  while (p < s.size() && IsDigit(s[p])) ++p;
  if (p == start) return 0;
  bool plain = s[i] != '-';
  if (p + 1 < s.size() && s[p] == '.' && IsDigit(s[p + 1])) {
    plain = false;
    p += 2;
    while (p < s.size() && IsDigit(s[p])) ++p;
  }
  if (p < s.size() && (s[p] == 'e' || s[p] == 'E')) {
    size_t q = p + 1;
    if (q < s.size() && (s[q] == '+' || s[q] == '-')) ++q;
    if (q < s.size() && IsDigit(s[q])) {
      plain = false;
      p = q;
      while (p < s.size() && IsDigit(s[p])) ++p;
    }
  }
  if (!EndsToken(s, p)) return 0;
  integer_digits = plain ? p - start : 0;
  return p - i;
}

bool IsEpoch(std::string_view digits) {
  if (digits.size() != 10 && digits.size() != 13) return false;
  uint64_t v = 0;
  for (char c : digits) v = v * 10 + static_cast<uint64_t>(c - '0');
  if (digits.size() == 13) v /= 1000;
  return v >= kEpochSecondsMin && v < kEpochSecondsMax;
}

// A word (run of [A-Za-z0-9_]) that is a hex string: 0x followed by hex
// digits, or 8+ hex digits mixing digits and letters.
bool IsHexWord(std::string_view w) {
  if (w.size() > 2 && w[0] == '0' && (w[1] == 'x' || w[1] == 'X')) {
    return std::all_of(w.begin() + 2, w.end(), IsHex);
  }
  if (w.size() < 8 || !std::all_of(w.begin(), w.end(), IsHex)) return false;
  bool digit = std::any_of(w.begin(), w.end(), IsDigit);
  bool letter = std::any_of(w.begin(), w.end(), [](char c) { return !IsDigit(c); });
  return digit && letter;
}

void AppendMaskedWord(std::string_view w, std::string& out) {
  if (IsHexWord(w)) {
    out += "<hex>";
    return;
  }
  size_t i = 0;
  while (i < w.size()) {
    if (IsDigit(w[i])) {
      while (i < w.size() && IsDigit(w[i])) ++i;
      out += "<num>";
    } else {
      out.push_back(w[i++]);
    }
  }
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

void CapKey(std::string& key, size_t max_bytes) {
  if (!simdjson::validate_utf8(key.data(), key.size())) key = "base64:" + Base64Encode(key);
  if (key.size() <= max_bytes) return;
  std::string tag = std::string(kEllipsis) + "#" + Sha256Hex(key).substr(0, 16);
  size_t keep = max_bytes > tag.size() ? max_bytes - tag.size() : 0;
  while (keep > 0 && (static_cast<unsigned char>(key[keep]) & 0xC0) == 0x80) --keep;  // UTF-8 boundary
  key.resize(keep);
  key += tag;
}

void AppendMaskedText(std::string_view s, std::string& out) {
  const size_t start = out.size();
  bool pending_space = false;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (IsSpace(c)) {
      pending_space = out.size() > start;
      ++i;
      continue;
    }
    if (pending_space) out.push_back(' ');
    pending_space = false;
    bool boundary = i == 0 || !IsWord(s[i - 1]);
    if (!boundary || !(IsWord(c) || (c == '-' && i + 1 < s.size() && IsDigit(s[i + 1])))) {
      out.push_back(c);
      ++i;
      continue;
    }
    if (size_t n = MatchUuid(s, i)) {
      out += "<uuid>";
      i += n;
      continue;
    }
    if (size_t n = MatchIsoTime(s, i)) {
      out += "<ts>";
      i += n;
      continue;
    }
    size_t integer_digits = 0;
    if (size_t n = MatchNumber(s, i, integer_digits)) {
      out += integer_digits > 0 && IsEpoch(s.substr(i, n)) ? "<ts>" : "<num>";
      i += n;
      continue;
    }
    if (c == '-') {
      out.push_back(c);
      ++i;
      continue;
    }
    size_t end = i;
    while (end < s.size() && IsWord(s[end])) ++end;
    AppendMaskedWord(s.substr(i, end - i), out);
    i = end;
  }
}

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
