// libFuzzer target for the filter parser: the input is up to 12 NUL-separated
// fields fed to BuildFilter as --queue --since --until --by --id --attr
// --attr-exists --body-contains --body-regex --json --min-receive-count, then
// the rest as a record body. An accepted filter must have a stable Canonical()
// and evaluate any record without crashing; a refused one is kInvalidArgument
// (an unsupported regex construct too). Regexes are RE2 (common/regex.h), so
// no pattern length is out of bounds here.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "query/filter.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> f;
  while (f.size() < 11) {
    size_t z = in.find('\0');
    f.emplace_back(in.substr(0, z));
    in.remove_prefix(z == std::string_view::npos ? in.size() : z + 1);
  }
  dlq::FilterFlags flags;
  if (!f[0].empty()) flags.queues = {f[0]};
  flags.since = f[1];
  flags.until = f[2];
  flags.by = f[3];
  if (!f[4].empty()) flags.ids = {f[4]};
  if (!f[5].empty()) flags.attrs = {f[5]};
  if (!f[6].empty()) flags.attr_exists = {f[6]};
  flags.body_contains = f[7];
  flags.body_regex = f[8];
  if (!f[9].empty()) flags.json = {f[9]};
  flags.min_receive_count = f[10];
  dlq::Result<dlq::Filter> filter = dlq::BuildFilter(flags, dlq::SystemTime(std::chrono::seconds(1'800'000'000)));
  if (!filter.ok()) {
    if (filter.status().code() != dlq::ErrorCode::kInvalidArgument) std::abort();
    return 0;
  }
  dlq::Result<dlq::Filter> again = dlq::BuildFilter(flags, dlq::SystemTime(std::chrono::seconds(1'800'000'000)));
  if (!again.ok() || again->Canonical() != filter->Canonical()) std::abort();
  dlq::ArchiveRecord r;
  r.queue = f[0];
  r.message_id = f[4];
  r.body = std::string(in.substr(0, 4096));
  r.sent_at = dlq::SystemTime(std::chrono::seconds(1'799'000'000));
  r.message_attributes["a"] = {"String", r.body, ""};
  (void)filter->Matches(r);
  return 0;
}
