// Feeds arbitrary bytes to every S3 XML response parser. The parsers must
// never crash, hang or throw; they return a value or a Status.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "s3/xml_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view xml(reinterpret_cast<const char*>(data), size);
  auto list = dlq::ParseListObjectsV2(xml);
  if (list.ok()) {
    for (const auto& o : list->objects) {
      if (o.key.empty() && o.size == UINT64_MAX) __builtin_trap();  // touch the results
    }
  }
  (void)dlq::ParseInitiateMultipartUpload(xml);
  auto complete = dlq::ParseCompleteMultipartUpload(xml);
  if (!complete.ok() && complete.status().ok()) __builtin_trap();
  auto error = dlq::ParseS3Error(xml);
  if (error) (void)dlq::XmlEscape(error->message);
  (void)dlq::UnquoteEtag(xml);
  return 0;
}
