#include "aws/query_form.h"

#include "common/strings.h"

namespace dlq {

std::string EncodeForm(const FormParams& params) {
  std::string out;
  for (const auto& [name, value] : params) {
    if (!out.empty()) out += '&';
    out += UriEncode(name);
    out += '=';
    out += UriEncode(value);
  }
  return out;
}

}  // namespace dlq
