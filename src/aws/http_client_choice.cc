#include "aws/http_client_choice.h"

#include <fmt/format.h>

#include <span>

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

std::string_view ProxyVariableFor(const Environment& env, std::string_view scheme) {
  static constexpr std::string_view kHttp[] = {"http_proxy", "all_proxy", "ALL_PROXY"};
  static constexpr std::string_view kHttps[] = {"https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"};
  for (std::string_view name :
       scheme == "https" ? std::span<const std::string_view>(kHttps) : std::span<const std::string_view>(kHttp)) {
    if (env.GetNonEmpty(name)) return name;
  }
  return {};
}

Result<std::string> DescribeHttpClient(const Environment& env) {
  DLQ_ASSIGN_OR_RETURN(HttpClient client, ChooseHttpClient(env));
  const char* name = client == HttpClient::kCurl ? "libcurl" : "built-in HTTP/1.1 client";
  std::string_view proxy;
  for (std::string_view p : kProxyVariables) {
    if (env.GetNonEmpty(p)) {
      proxy = p;
      break;
    }
  }
  if (auto forced = env.GetNonEmpty(kHttpClientEnv)) {
    if (client == HttpClient::kBuiltin && !proxy.empty()) {
      return fmt::format("{} ({}={}: {} is ignored)", name, kHttpClientEnv, *forced, proxy);
    }
    return fmt::format("{} ({}={})", name, kHttpClientEnv, *forced);
  }
  if (!proxy.empty()) return fmt::format("{}, for the proxy in {} (NO_PROXY applies)", name, proxy);
  return fmt::format("{} (no proxy variable set)", name);
}

}  // namespace dlq
