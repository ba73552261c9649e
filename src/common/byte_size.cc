#include "common/byte_size.h"

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

}  // namespace dlq
