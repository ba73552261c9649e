// Test helper: what was written to a stream (a tmpfile a command printed to).
#pragma once

#include <cstdio>
#include <string>

namespace dlq {

// Everything written to `f` so far, from its start; leaves `f` at its end.
inline std::string ReadAll(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  return out;
}

}  // namespace dlq
