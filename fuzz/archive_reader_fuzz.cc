// libFuzzer target for the archive read path: arbitrary bytes as a gzip
// object (bounded decompression) and as JSON lines. Any accepted record
// must survive a write/parse round trip unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "archive/gzip.h"
#include "archive/record.h"

namespace {

void ParseLines(std::string_view text) {
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    dlq::Result<dlq::ArchiveRecord> r = dlq::ParseRecordJson(line);
    if (!r.ok()) continue;
    std::string again;
    dlq::AppendRecordJson(*r, again);
    dlq::Result<dlq::ArchiveRecord> r2 = dlq::ParseRecordJson(again);
    // Invalid UTF-8 in lossy text fields (not body / attribute values) may be normalised once.
    if (!r2.ok() || r2->body != r->body || r2->message_attributes != r->message_attributes) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  dlq::Result<std::string> text = dlq::GzipDecompress(bytes, 1 << 20);
  if (text.ok()) ParseLines(*text);
  ParseLines(bytes);
  return 0;
}
