#include "common/byte_size.h"

#include <fmt/format.h>

#include <charconv>
#include <utility>

#include "common/strings.h"

namespace dlq {

std::optional<uint64_t> ParseByteSize(std::string_view text) {
  text = Trim(text);
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p == text.data()) return std::nullopt;
  std::string_view unit = Trim(text.substr(static_cast<size_t>(p - text.data())));
  static constexpr std::pair<std::string_view, uint64_t> kUnits[] = {
      {"", 1},      {"B", 1},          {"KiB", 1ull << 10},  {"MiB", 1ull << 20}, {"GiB", 1ull << 30},
      {"KB", 1000}, {"MB", 1'000'000}, {"GB", 1'000'000'000}};
  for (const auto& [name, mult] : kUnits) {
    if (unit != name) continue;
    if (v > UINT64_MAX / mult) return std::nullopt;
    return v * mult;
  }
  return std::nullopt;
}

std::string FormatByteSize(uint64_t b) {
  if (b < 1024) return fmt::format("{} B", b);
  if (b < (1u << 20)) return fmt::format("{:.1f} KiB", b / 1024.0);
  if (b < (1u << 30)) return fmt::format("{:.1f} MiB", b / 1048576.0);
  return fmt::format("{:.1f} GiB", b / 1073741824.0);
}

}  // namespace dlq
