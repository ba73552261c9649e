#include "aws/http.h"

#include <fmt/format.h>

#include "common/strings.h"

namespace dlq {

const std::string* FindHeader(const HttpHeaders& headers, std::string_view name) {
  for (const auto& [k, v] : headers) {
    if (IEquals(k, name)) return &v;
  }
  return nullptr;
}

void SetHeader(HttpHeaders& headers, std::string_view name, std::string value) {
  std::erase_if(headers, [&](const auto& kv) { return IEquals(kv.first, name); });
  headers.emplace_back(std::string(name), std::move(value));
}

std::string Url::Authority() const {
  bool default_port = port == 0 || (scheme == "http" && port == 80) || (scheme == "https" && port == 443);
  return default_port ? host : host + ":" + std::to_string(port);
}

std::string Url::ToString() const {
  std::string out = scheme + "://" + Authority() + (path.empty() ? "/" : path);
  if (!query.empty()) out += "?" + query;
  return out;
}

Result<Url> ParseUrl(std::string_view text) {
  Url url;
  size_t p = text.find("://");
  if (p == std::string_view::npos)
    return InvalidArgument("URL '" + std::string(text) + "' has no scheme (expected http:// or https://)");
  url.scheme = ToLower(text.substr(0, p));
  if (url.scheme != "http" && url.scheme != "https") {
    return InvalidArgument("URL '" + std::string(text) + "' must use http or https");
  }
  std::string_view rest = text.substr(p + 3);
  size_t end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, end);
  rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  if (size_t at = authority.rfind('@'); at != std::string_view::npos) authority = authority.substr(at + 1);
  if (authority.empty()) return InvalidArgument("URL '" + std::string(text) + "' has no host");
  std::string_view port_text;
  if (authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return InvalidArgument("URL '" + std::string(text) + "' has a bad IPv6 host");
    url.host = std::string(authority.substr(0, close + 1));
    if (close + 1 < authority.size() && authority[close + 1] == ':') port_text = authority.substr(close + 2);
  } else {
    size_t colon = authority.rfind(':');
    url.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (!port_text.empty()) {
    std::optional<int64_t> port = ParseInt64(port_text);
    if (!port || *port <= 0 || *port > 65535) return InvalidArgument("URL '" + std::string(text) + "' has a bad port");
    url.port = static_cast<int>(*port);
  }
  if (size_t hash = rest.find('#'); hash != std::string_view::npos) rest = rest.substr(0, hash);
  size_t q = rest.find('?');
  url.path = std::string(rest.substr(0, q));
  if (url.path.empty()) url.path = "/";
  if (q != std::string_view::npos) url.query = std::string(rest.substr(q + 1));
  return url;
}

Status ProxyRefused(std::string_view target, int http_status) {
  if (http_status == 407) {
    return Status(
        ErrorCode::kUnauthenticated,
        fmt::format("{}: the proxy answered HTTP 407 (Proxy Authentication Required): put valid "
                    "proxy credentials in the proxy variable's URL (http://USER:PASSWORD@HOST:PORT), or exempt "
                    "the endpoint's host in NO_PROXY",
                    target));
  }
  return Status(ErrorCode::kFailedPrecondition,
                fmt::format("{}: the proxy refused the connection with HTTP {}: check that the proxy allows this "
                            "host and port, or exempt the endpoint's host in NO_PROXY",
                            target, http_status));
}

}  // namespace dlq
