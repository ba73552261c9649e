#include "query/json_path.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <charconv>

namespace dlq {
namespace {

bool IsNameChar(char c) {
  return c != '.' && c != '[' && c != ']' && c != '=' && c != '"' && c != '\'' && c != ' ' && c != '\t' && c != '\n' &&
         c != '\r';
}

Status PathError(std::string_view text, size_t pos, std::string_view why) {
  return InvalidArgument(
      fmt::format("JSON path \"{}\": {} at offset {} (expected $.name, $[0] or $[\"key\"] steps)", text, why, pos));
}

// The raw literal text of the number at `steps` in `padded` (already known to
// be valid JSON with a number there).
template <typename Steps>
std::optional<std::string> NumberText(const simdjson::padded_string& padded, const Steps& steps) {
  thread_local simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  if (parser.iterate(padded).get(doc) != simdjson::SUCCESS) return std::nullopt;
  std::string_view raw;
  if (steps.empty()) {
    if (doc.raw_json_token().get(raw) != simdjson::SUCCESS) return std::nullopt;
  } else {
    simdjson::ondemand::value v;
    if (doc.get_value().get(v) != simdjson::SUCCESS) return std::nullopt;
    for (const auto& step : steps) {
      simdjson::ondemand::value next;
      if (const std::string* key = std::get_if<std::string>(&step)) {
        simdjson::ondemand::object obj;
        if (v.get_object().get(obj) != simdjson::SUCCESS) return std::nullopt;
        bool found = false;
        for (auto field : obj) {
          std::string_view k;
          if (field.unescaped_key().get(k) != simdjson::SUCCESS) return std::nullopt;
          if (k == *key) {
            if (field.value().get(next) != simdjson::SUCCESS) return std::nullopt;
            found = true;
            break;
          }
        }
        if (!found) return std::nullopt;
      } else {
        simdjson::ondemand::array arr;
        if (v.get_array().get(arr) != simdjson::SUCCESS) return std::nullopt;
        if (arr.at(std::get<size_t>(step)).get(next) != simdjson::SUCCESS) return std::nullopt;
      }
      v = next;
    }
    raw = v.raw_json_token();
  }
  while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\t' || raw.back() == '\n' || raw.back() == '\r')) {
    raw.remove_suffix(1);
  }
  return std::string(raw);
}

}  // namespace

Result<JsonPath> JsonPath::ParsePrefix(std::string_view text, size_t& consumed) {
  JsonPath path;
  if (text.empty() || text[0] != '$') return PathError(text, 0, "a path must start with '$'");
  size_t i = 1;
  while (i < text.size() && text[i] != '=') {
    if (text[i] == '.') {
      size_t start = ++i;
      while (i < text.size() && IsNameChar(text[i])) ++i;
      if (i == start) return PathError(text, start, "empty name after '.'");
      path.steps_.emplace_back(std::string(text.substr(start, i - start)));
    } else if (text[i] == '[') {
      ++i;
      if (i < text.size() && (text[i] == '"' || text[i] == '\'')) {
        const char quote = text[i++];
        std::string key;
        bool closed = false;
        while (i < text.size()) {
          char c = text[i++];
          if (c == quote) {
            closed = true;
            break;
          }
          if (c == '\\') {
            if (i >= text.size() || (text[i] != '\\' && text[i] != '"' && text[i] != '\'')) {
              return PathError(text, i - 1, "bad escape in a quoted key (only \\\\, \\\" and \\' are allowed)");
            }
            c = text[i++];
          }
          key.push_back(c);
        }
        if (!closed) return PathError(text, text.size(), "unterminated quoted key");
        path.steps_.emplace_back(std::move(key));
      } else {
        size_t start = i;
        while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
        size_t index = 0;
        auto [p, ec] = std::from_chars(text.data() + start, text.data() + i, index);
        if (i == start || ec != std::errc() || p != text.data() + i) {
          return PathError(text, start, "an index must be a non-negative integer or a quoted key");
        }
        path.steps_.emplace_back(index);
      }
      if (i >= text.size() || text[i] != ']') return PathError(text, i, "expected ']'");
      ++i;
    } else {
      return PathError(text, i, fmt::format("unexpected character '{}'", text[i]));
    }
  }
  consumed = i;
  path.text_ = std::string(text.substr(0, i));
  return path;
}

Result<JsonPath> JsonPath::Parse(std::string_view text) {
  size_t consumed = 0;
  DLQ_ASSIGN_OR_RETURN(JsonPath path, ParsePrefix(text, consumed));
  if (consumed != text.size()) return PathError(text, consumed, "unexpected character '='");
  return path;
}

std::optional<std::string> JsonPath::Lookup(std::string_view json) const {
  thread_local simdjson::dom::parser parser;
  simdjson::padded_string padded(json);
  simdjson::dom::element e;
  if (parser.parse(padded).get(e) != simdjson::SUCCESS) return std::nullopt;
  for (const Step& step : steps_) {
    simdjson::dom::element next;
    if (const std::string* key = std::get_if<std::string>(&step)) {
      simdjson::dom::object obj;
      if (e.get_object().get(obj) != simdjson::SUCCESS || obj.at_key(*key).get(next) != simdjson::SUCCESS) {
        return std::nullopt;
      }
    } else {
      simdjson::dom::array arr;
      if (e.get_array().get(arr) != simdjson::SUCCESS ||
          arr.at(std::get<size_t>(step)).get(next) != simdjson::SUCCESS) {
        return std::nullopt;
      }
    }
    e = next;
  }
  switch (e.type()) {
    case simdjson::dom::element_type::STRING: return std::string(e.get_string().value_unsafe());
    case simdjson::dom::element_type::BOOL: return std::string(e.get_bool().value_unsafe() ? "true" : "false");
    case simdjson::dom::element_type::NULL_VALUE: return std::string("null");
    case simdjson::dom::element_type::OBJECT:
    case simdjson::dom::element_type::ARRAY: return simdjson::minify(e);
    default: return NumberText(padded, steps_);
  }
}

}  // namespace dlq
