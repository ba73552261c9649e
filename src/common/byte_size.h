// Byte sizes as people write them: "8MiB", "512 KiB", "1048576" (bytes).
// Binary units B, KiB, MiB, GiB; decimal units KB, MB, GB. Units are case-
// sensitive ("8mb" is rejected rather than guessed). Pure function.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dlq {

// The number of bytes, or nullopt when `text` is not a size or overflows
// uint64_t. Surrounding whitespace and a space before the unit are allowed.
std::optional<uint64_t> ParseByteSize(std::string_view text);

// "512 B", "12.3 KiB", "4.0 MiB", "1.2 GiB" (binary units, one decimal).
std::string FormatByteSize(uint64_t bytes);

}  // namespace dlq
