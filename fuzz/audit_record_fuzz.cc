// libFuzzer target for stored audit records (replay/audit.h), which `audit
// ls|show` read back from the archive: any bytes either fail to parse or give
// a record whose serialisation parses back and serialises identically.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "replay/audit.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  dlq::Result<dlq::AuditRecord> r = dlq::ParseAuditRecord(bytes);
  if (!r.ok()) return 0;
  const std::string once = dlq::AuditJson(*r);
  dlq::Result<dlq::AuditRecord> again = dlq::ParseAuditRecord(once);
  if (!again.ok() || dlq::AuditJson(*again) != once) std::abort();
  return 0;
}
