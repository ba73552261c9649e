// libFuzzer target for the archive read path: arbitrary bytes as a gzip
// object (bounded decompression, whole and streamed) and as JSON lines, and
// as an archive object read by the scan engine under a small memory budget
// and line limit. Any accepted record must survive a write/parse round trip
// unchanged; the streamed gunzip must give what the whole one gives; the
// scan must stay within its budget.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "archive/destination.h"
#include "archive/gzip.h"
#include "archive/record.h"
#include "query/scan.h"

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

// Streams `gz` in odd-sized pieces, up to `limit` bytes.
std::string Stream(std::string_view gz, size_t limit, bool& ok) {
  dlq::GunzipStream s(gz);
  std::string out;
  char piece[4099];
  while (out.size() <= limit) {
    size_t n = s.Read(piece, sizeof piece);
    if (n == 0) break;
    out.append(piece, n);
  }
  ok = s.done() && s.status().ok();
  return out;
}

// One archive object under the default key layout.
class OneObjectStore final : public dlq::ObjectStore {
 public:
  explicit OneObjectStore(std::string_view data) : data_(data) {}
  dlq::Status Put(const std::string&, std::string_view, const dlq::PutOptions&) override {
    return dlq::Internal("read-only");
  }
  dlq::Result<std::string> Get(const std::string&, std::optional<std::pair<uint64_t, uint64_t>>) override {
    return std::string(data_);
  }
  dlq::Result<dlq::ObjectInfo> Head(const std::string&) override { return Info(); }
  dlq::Result<dlq::ListPage> List(const std::string& prefix, const std::string&, const std::string&) override {
    dlq::ListPage page;
    if (std::string_view(kKey).starts_with(prefix)) page.objects.push_back(Info());
    return page;
  }
  dlq::Status Delete(const std::string&) override { return dlq::Internal("read-only"); }
  dlq::Result<dlq::DestinationCheck> CheckWritable() override { return dlq::Internal("read-only"); }
  std::string Describe() const override { return "fuzz://"; }

 private:
  static constexpr const char* kKey = "dlq-archive/q/20250910/q-123000-0000000000000001.json.gz";
  dlq::ObjectInfo Info() const { return {kKey, data_.size(), "", {}}; }
  std::string_view data_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  constexpr size_t kLimit = 1 << 20;
  dlq::Result<std::string> text = dlq::GzipDecompress(bytes, kLimit);
  if (text.ok()) ParseLines(*text);
  bool streamed_ok = false;
  std::string streamed = Stream(bytes, kLimit, streamed_ok);
  if (text.ok() && (!streamed_ok || streamed != *text)) std::abort();
  ParseLines(bytes);

  OneObjectStore store(bytes);
  dlq::ScanOptions options;
  options.parallelism = 1;
  options.memory_budget_bytes = size_t{4} << 20;
  options.max_line_bytes = 4096;
  options.max_object_bytes = kLimit;
  auto stats = dlq::ScanArchive(store, dlq::ParseDestination("s3://bucket").value(), options,
                                [](const dlq::ArchiveRecord&, const dlq::RecordLocation&) { return true; });
  if (!stats.ok() || stats->peak_reserved_bytes > options.memory_budget_bytes) std::abort();
  return 0;
}
