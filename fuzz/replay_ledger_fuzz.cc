// libFuzzer target for the replay ledger's files (replay/ledger.h), read back
// from the audit location before every replay: any bytes either fail to parse
// as a part and as an index, or parse to a value that serialises and parses
// back to itself (index hashes sorted and unique).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "replay/ledger.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (auto part = dlq::ParseLedgerPart(bytes); part.ok()) {
    auto back = dlq::ParseLedgerPart(dlq::SerializeLedgerPart(*part));
    if (!back.ok() || back->destination != part->destination || back->ids != part->ids) std::abort();
  }
  if (auto index = dlq::ParseLedgerIndex(bytes); index.ok()) {
    for (size_t i = 1; i < index->hashes.size(); ++i) {
      if (index->hashes[i - 1] >= index->hashes[i]) std::abort();
    }
    auto back = dlq::ParseLedgerIndex(dlq::SerializeLedgerIndex(*index));
    if (!back.ok() || back->destination != index->destination || back->parts != index->parts ||
        back->hashes != index->hashes) {
      std::abort();
    }
  }
  return 0;
}
