// CLI11 validators the commands share. Each rejects a bad value with a
// message naming it (CLI11 adds the flag), so a bad flag is a usage error (2).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>

namespace dlq {

// Durations like "90s", "15m", "4h", "4d" (common/time_util.h ParseDuration).
struct DurationValidator : public CLI::Validator {
  DurationValidator();
};

// A decimal integer in [min, max]. Rewrites the value in canonical form, so
// CLI11's own conversion (strtoull with base 0) never sees "-1" (which it
// would wrap) or "010" (which it would read as octal).
struct IntegerValidator : public CLI::Validator {
  IntegerValidator(uint64_t min, uint64_t max);
};

// Seconds as a decimal number: positive, finite, at most an hour.
struct SecondsValidator : public CLI::Validator {
  SecondsValidator();
};

// Batch sizes: the byte-size notation of the config file, 1 KiB .. 1 GiB.
struct BatchBytesValidator : public CLI::Validator {
  BatchBytesValidator();
};

}  // namespace dlq
