// libFuzzer target for the JSON-path parser and lookup: the input is
// "PATH\nJSON". A parsed path must print back as itself, re-parse to the same
// path, and a lookup must never crash on any document.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "query/json_path.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t nl = in.find('\n');
  std::string_view path_text = in.substr(0, nl);
  std::string_view json = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
  dlq::Result<dlq::JsonPath> path = dlq::JsonPath::Parse(path_text);
  size_t consumed = 0;
  dlq::Result<dlq::JsonPath> prefix = dlq::JsonPath::ParsePrefix(path_text, consumed);
  if (prefix.ok() && consumed > path_text.size()) std::abort();
  if (!path.ok()) return 0;
  if (path->text() != path_text) std::abort();
  if (!prefix.ok() || consumed != path_text.size() || !(*prefix == *path)) std::abort();
  std::optional<std::string> a = path->Lookup(json);
  std::optional<std::string> b = path->Lookup(json);
  if (a != b) std::abort();  // deterministic
  return 0;
}
