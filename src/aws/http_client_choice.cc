#include "aws/http_client_choice.h"

#include <fmt/format.h>

namespace dlq {

Result<HttpClient> ChooseHttpClient(const Environment& env) {
  auto value = env.GetNonEmpty(kHttpClientEnv);
  if (!value) {
    for (std::string_view proxy : kProxyVariables) {
      if (env.GetNonEmpty(proxy)) return HttpClient::kCurl;
    }
    return HttpClient::kBuiltin;
  }
  if (*value == "curl") return HttpClient::kCurl;
  if (*value == "builtin") return HttpClient::kBuiltin;
  return InvalidArgument(fmt::format("{}='{}' is not an HTTP client: use curl or builtin (or unset it for the default)",
                                     kHttpClientEnv, *value));
}

}  // namespace dlq
