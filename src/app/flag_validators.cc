#include "app/flag_validators.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

#include "common/byte_size.h"
#include "common/time_util.h"

namespace dlq {

DurationValidator::DurationValidator() {
  name_ = "DURATION";
  func_ = [](const std::string& s) {
    return ParseDuration(s) ? std::string() : "'" + s + "' is not a duration (e.g. 90s, 15m, 4h, 4d)";
  };
}

IntegerValidator::IntegerValidator(uint64_t min, uint64_t max) {
  name_ = "INTEGER";
  func_ = [min, max](std::string& s) {
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || v < min || v > max) {
      if (max == UINT64_MAX) return fmt::format("'{}' is not an integer >= {}", s, min);
      return fmt::format("'{}' is not an integer from {} to {}", s, min, max);
    }
    s = std::to_string(v);
    return std::string();
  };
}

SecondsValidator::SecondsValidator() {
  name_ = "SECONDS";
  func_ = [](const std::string& s) {
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) || v <= 0 || v > 3600) {
      return fmt::format("'{}' must be a number of seconds greater than 0 and at most 3600", s);
    }
    return std::string();
  };
}

BatchBytesValidator::BatchBytesValidator() {
  constexpr uint64_t kMinBatchBytes = 1u << 10, kMaxBatchBytes = 1u << 30;
  name_ = "SIZE";
  func_ = [](const std::string& s) {
    auto v = ParseByteSize(s);
    if (!v) return fmt::format("'{}' is not a size (e.g. 8MiB, 512KiB, 1048576)", s);
    if (*v < kMinBatchBytes || *v > kMaxBatchBytes) return fmt::format("'{}' is out of range [1KiB, 1GiB]", s);
    return std::string();
  };
}

}  // namespace dlq
