// Counts in words for output: "1 object", "2 objects".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dlq {

// `n`, a space, and `one` when n == 1, else `many`.
std::string CountNoun(uint64_t n, std::string_view one, std::string_view many);

}  // namespace dlq
