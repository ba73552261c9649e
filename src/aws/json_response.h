// Typed reading of the JSON documents that AWS JSON and REST-JSON services
// answer (CloudWatch Logs, Lambda). Never trusts its input: a document that
// is not a JSON object, or a field of the wrong type, is kInternal
// ("malformed <what>: <path> is not a string"); an absent or null field
// reads as unset. A JsonFields view is valid while the JsonDocument that
// produced it lives; neither is thread-safe, both are cheap to create.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dlq {

// The members of one JSON object, with the path that led to it for errors.
class JsonFields {
 public:
  JsonFields(simdjson::dom::object object, std::string what, std::string path)
      : object_(object), what_(std::move(what)), path_(std::move(path)) {}

  // Each leaves `out` unchanged when the field is absent or null.
  Status String(std::string_view key, std::string& out) const;
  Status Int64(std::string_view key, std::optional<int64_t>& out) const;
  // A number that must fit an int.
  Status Int(std::string_view key, std::optional<int>& out) const;
  Status Bool(std::string_view key, std::optional<bool>& out) const;
  Status Strings(std::string_view key, std::vector<std::string>& out) const;
  // A nested object; nullopt when absent or null.
  Result<std::optional<JsonFields>> Object(std::string_view key) const;
  // An array of objects (empty when absent or null).
  Result<std::vector<JsonFields>> Objects(std::string_view key) const;

  // kInternal "malformed <what>: <path.key> <problem>".
  Status Malformed(std::string_view key, std::string_view problem) const;

 private:
  // The member `key`; false when absent or null.
  bool Find(std::string_view key, simdjson::dom::element& out) const;
  std::string PathOf(std::string_view key) const;

  simdjson::dom::object object_;
  std::string what_;
  std::string path_;
};

// One parsed response. `what` names it in errors: "FilterLogEvents response".
class JsonDocument {
 public:
  JsonDocument() = default;
  JsonDocument(const JsonDocument&) = delete;
  JsonDocument& operator=(const JsonDocument&) = delete;

  // The top-level object of `json`; kInternal when `json` is not JSON or
  // not an object.
  Result<JsonFields> Parse(std::string_view json, std::string_view what);

 private:
  simdjson::dom::parser parser_;
  simdjson::padded_string padded_;
};

}  // namespace dlq
