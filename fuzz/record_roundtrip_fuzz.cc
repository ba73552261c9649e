// Round-trip property: any body (valid UTF-8 or not) and attribute value
// encoded into an archive line must parse back to exactly the same bytes.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "archive/record.h"
#include "common/time_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  size_t split = size > 0 ? data[0] % (size + 1) : 0;
  dlq::Message m;
  m.message_id = "fuzz";
  m.md5_of_body = "x";
  m.body = input.substr(0, split);
  m.attributes["SentTimestamp"] = "1700000000000";
  m.message_attributes["s"] = {"String", input.substr(split), ""};
  m.message_attributes["b"] = {"Binary", "", input};
  dlq::ArchiveContext ctx;
  ctx.queue = "q";
  std::string line(size % 41, ' ');
  size_t before = line.size();
  dlq::AppendRecordJson(m, ctx, dlq::FromUnixMillis(1700000000000), line);
  auto rec = dlq::ParseRecordJson(std::string_view(line).substr(before));
  if (!rec.ok() || rec->body != m.body || rec->message_attributes.at("b").binary_value != input) std::abort();
  return 0;
}
