// libFuzzer target for replay checkpoint files (replay/checkpoint.h): any
// bytes either fail to parse or give a state that serialises and parses back
// to the same state.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "replay/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  dlq::Result<dlq::CheckpointState> s = dlq::ParseCheckpoint(bytes);
  if (!s.ok()) return 0;
  dlq::Result<dlq::CheckpointState> again = dlq::ParseCheckpoint(dlq::SerializeCheckpoint(*s));
  if (!again.ok() || again->done != s->done || again->chain != s->chain || again->failed_ids != s->failed_ids ||
      again->identity_text != s->identity_text || again->sent != s->sent || again->failed != s->failed) {
    std::abort();
  }
  return 0;
}
