// libFuzzer target for guarded-redrive journals (replay/redrive_journal.h):
// any bytes either fail to parse or give a journal that serialises and
// parses back to the same records.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "replay/redrive_journal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  dlq::Result<dlq::RedriveJournal> j = dlq::ParseRedriveJournal(bytes);
  if (!j.ok()) return 0;
  if (j->valid_bytes > size) std::abort();
  const std::string text = dlq::SerializeRedriveJournal(*j);
  dlq::Result<dlq::RedriveJournal> again = dlq::ParseRedriveJournal(text);
  if (!again.ok() || again->valid_bytes != text.size() || dlq::SerializeRedriveJournal(*again) != text ||
      again->sent.size() != j->sent.size() || again->phases.size() != j->phases.size() ||
      again->refailed.size() != j->refailed.size()) {
    std::abort();
  }
  return 0;
}
