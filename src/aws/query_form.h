// A query-protocol form (CloudWatch, SNS): name/value pairs in order,
// encoded as an application/x-www-form-urlencoded body.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace dlq {

using FormParams = std::vector<std::pair<std::string, std::string>>;
// "a=1&b=x%20y": names and values percent-encoded (RFC 3986), in the given order.
std::string EncodeForm(const FormParams& params);

}  // namespace dlq
