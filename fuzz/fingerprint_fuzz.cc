// Properties of FingerprintBody on any bytes: it never crashes, never exceeds
// kMaxFingerprintBytes, is deterministic, is always valid UTF-8, and masks
// every digit of a text body outside a cut (masks carry no digits).
#include <simdjson.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "query/fingerprint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  std::string fp = dlq::FingerprintBody(body);
  if (fp.size() > dlq::kMaxFingerprintBytes) std::abort();
  if (dlq::FingerprintBody(body) != fp) std::abort();
  if (!simdjson::validate_utf8(fp.data(), fp.size())) std::abort();
  std::string masked;
  dlq::AppendMaskedText(body, masked);
  if (masked.find_first_of("0123456789") != std::string::npos) std::abort();
  return 0;
}
