#include "common/count_noun.h"

namespace dlq {

std::string CountNoun(uint64_t n, std::string_view one, std::string_view many) {
  std::string out = std::to_string(n);
  out += ' ';
  out += n == 1 ? one : many;
  return out;
}

}  // namespace dlq
