// JSON text output: the string escaper (shared with the archive record
// encoder's hot path) and a streaming writer that places commas itself.
// Pure functions; a JsonWriter is not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlq {

// Length of the valid UTF-8 sequence (RFC 3629: no overlongs, surrogates or
// code points above U+10FFFF) that starts at p[0], of the n bytes available;
// 0 when p does not start a valid sequence. Precondition: n >= 1.
size_t Utf8SequenceLength(const unsigned char* p, size_t n);

// Appends the JSON string contents of `s` (no quotes): '"', '\\' and bytes
// below 0x20 escaped, UTF-8 validated and copied as is. Returns false and
// leaves `out` unchanged when `s` is not valid UTF-8. Hot path: runs of plain
// ASCII are copied 16 (SSE2) or 8 bytes at a time.
bool AppendJsonEscaped(std::string& out, std::string_view s);

// Appends `s` as a quoted JSON string. Invalid UTF-8 bytes become U+FFFD, one
// per byte (lossy: for text only; lossless callers use AppendJsonEscaped and
// fall back to base64).
void AppendJsonString(std::string& out, std::string_view s);

// Writes one JSON value, in order, into a string:
//   JsonWriter w;
//   w.BeginObject().Key("ok").Bool(true).Key("ids").BeginArray().Int(1).EndArray().EndObject();
// Commas and ':' are placed by the writer. Strings go through
// AppendJsonString (invalid UTF-8 becomes U+FFFD). Doubles are written in
// the shortest form that reads back the same value ("0.5", "3", "1e+21");
// NaN and infinities, which JSON cannot express, are written as null.
// Preconditions (checked by assert in debug builds): Key only directly inside
// an object and before each of its values; every Begin has its End.
class JsonWriter {
 public:
  // Writes into a string the writer owns (see text() and Take()).
  JsonWriter() : out_(&own_) {}
  // Appends to `out`, which must outlive the writer.
  explicit JsonWriter(std::string& out) : out_(&out) {}
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view name);

  JsonWriter& String(std::string_view value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Uint(uint64_t value);
  JsonWriter& Double(double value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();
  // A value the caller has already encoded as JSON, written verbatim.
  JsonWriter& Raw(std::string_view json);
  // String(value), or null when `value` is nullopt.
  JsonWriter& OptionalString(const std::optional<std::string_view>& value);

  // The text written so far (the target string, owned or not).
  const std::string& text() const { return *out_; }
  // Moves the owned text out; the writer is empty afterwards.
  std::string Take();

 private:
  void BeforeValue();
  template <class T>
  JsonWriter& Integer(T value);
  void Open(char bracket);
  void Close(char bracket);

  std::string own_;
  std::string* out_;
  std::vector<char> open_;  // '{' or '[' per open container, innermost last
  bool need_comma_ = false;
  bool after_key_ = false;
};

}  // namespace dlq
