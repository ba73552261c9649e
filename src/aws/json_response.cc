#include "aws/json_response.h"

#include <fmt/format.h>

#include <limits>

namespace dlq {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

std::string JsonFields::PathOf(std::string_view key) const {
  return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
}

Status JsonFields::Malformed(std::string_view key, std::string_view problem) const {
  return Internal(fmt::format("malformed {}: {} {}", what_, PathOf(key), problem));
}

bool JsonFields::Find(std::string_view key, element& out) const {
  if (object_.at_key(key).get(out) != simdjson::SUCCESS) return false;
  return !out.is_null();
}

Status JsonFields::String(std::string_view key, std::string& out) const {
  element e;
  if (!Find(key, e)) return Status::Ok();
  std::string_view v;
  if (e.get_string().get(v) != simdjson::SUCCESS) return Malformed(key, "is not a string");
  out.assign(v.data(), v.size());
  return Status::Ok();
}

Status JsonFields::Int64(std::string_view key, std::optional<int64_t>& out) const {
  element e;
  if (!Find(key, e)) return Status::Ok();
  int64_t v = 0;
  if (e.get_int64().get(v) != simdjson::SUCCESS) return Malformed(key, "is not an integer");
  out = v;
  return Status::Ok();
}

Status JsonFields::Int(std::string_view key, std::optional<int>& out) const {
  std::optional<int64_t> wide;
  DLQ_RETURN_IF_ERROR(Int64(key, wide));
  if (!wide) return Status::Ok();
  if (*wide < std::numeric_limits<int>::min() || *wide > std::numeric_limits<int>::max()) {
    return Malformed(key, fmt::format("is out of range ({})", *wide));
  }
  out = static_cast<int>(*wide);
  return Status::Ok();
}

Status JsonFields::Bool(std::string_view key, std::optional<bool>& out) const {
  element e;
  if (!Find(key, e)) return Status::Ok();
  bool v = false;
  if (e.get_bool().get(v) != simdjson::SUCCESS) return Malformed(key, "is not a boolean");
  out = v;
  return Status::Ok();
}

Status JsonFields::Strings(std::string_view key, std::vector<std::string>& out) const {
  element e;
  if (!Find(key, e)) return Status::Ok();
  array list;
  if (e.get_array().get(list) != simdjson::SUCCESS) return Malformed(key, "is not an array");
  std::vector<std::string> values;
  for (element item : list) {
    std::string_view v;
    if (item.get_string().get(v) != simdjson::SUCCESS) return Malformed(key, "has an item that is not a string");
    values.emplace_back(v);
  }
  out = std::move(values);
  return Status::Ok();
}

Result<std::optional<JsonFields>> JsonFields::Object(std::string_view key) const {
  element e;
  if (!Find(key, e)) return std::optional<JsonFields>();
  object nested;
  if (e.get_object().get(nested) != simdjson::SUCCESS) return Malformed(key, "is not an object");
  return std::optional<JsonFields>(JsonFields(nested, what_, PathOf(key)));
}

Result<std::vector<JsonFields>> JsonFields::Objects(std::string_view key) const {
  std::vector<JsonFields> out;
  element e;
  if (!Find(key, e)) return out;
  array list;
  if (e.get_array().get(list) != simdjson::SUCCESS) return Malformed(key, "is not an array");
  size_t i = 0;
  for (element item : list) {
    object nested;
    const std::string item_key = fmt::format("{}[{}]", key, i++);
    if (item.get_object().get(nested) != simdjson::SUCCESS) return Malformed(item_key, "is not an object");
    out.emplace_back(nested, what_, PathOf(item_key));
  }
  return out;
}

Result<JsonFields> JsonDocument::Parse(std::string_view json, std::string_view what) {
  padded_ = simdjson::padded_string(json);
  element root;
  if (auto error = parser_.parse(padded_).get(root); error != simdjson::SUCCESS) {
    return Internal(fmt::format("malformed {}: not JSON ({})", what, simdjson::error_message(error)));
  }
  object top;
  if (root.get_object().get(top) != simdjson::SUCCESS) {
    return Internal(fmt::format("malformed {}: the top level is not an object", what));
  }
  return JsonFields(top, std::string(what), "");
}

}  // namespace dlq
