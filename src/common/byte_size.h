// Byte sizes as people write them: "8MiB", "512 KiB", "1048576" (bytes).
// Binary units B, KiB, MiB, GiB; decimal units KB, MB, GB. Units are case-
// sensitive ("8mb" is rejected rather than guessed). Pure function.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace dlq {

// The number of bytes, or nullopt when `text` is not a size or overflows
// uint64_t. Surrounding whitespace and a space before the unit are allowed.
std::optional<uint64_t> ParseByteSize(std::string_view text);

}  // namespace dlq
