#include "aws/http.h"

#include <fmt/format.h>

#include <algorithm>

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
  Result<HostPort> split = SplitHostPort(authority);
  if (!split.ok()) return InvalidArgument("URL '" + std::string(text) + "' " + split.status().message());
  url.host = split->bracketed ? "[" + split->host + "]" : split->host;
  if (split->port && !split->port->empty()) {
    std::optional<int> port = ParsePort(*split->port, 1);
    if (!port) return InvalidArgument("URL '" + std::string(text) + "' has a bad port");
    url.port = *port;
  }
  if (size_t hash = rest.find('#'); hash != std::string_view::npos) rest = rest.substr(0, hash);
  size_t q = rest.find('?');
  url.path = std::string(rest.substr(0, q));
  if (url.path.empty()) url.path = "/";
  if (q != std::string_view::npos) url.query = std::string(rest.substr(q + 1));
  return url;
}

Result<HostPort> SplitHostPort(std::string_view text) {
  HostPort out;
  std::string_view rest;  // ":PORT" or ""
  if (StartsWith(text, "[")) {
    size_t close = text.find(']');
    if (close == std::string_view::npos) return InvalidArgument("has a bad IPv6 host (no closing ']')");
    out.bracketed = true;
    out.host = std::string(text.substr(1, close - 1));
    rest = text.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return InvalidArgument("has text after the IPv6 host that is not :PORT");
  } else {
    size_t colon = text.find(':');
    if (colon != std::string_view::npos && text.find(':', colon + 1) != std::string_view::npos) {
      return InvalidArgument("has more than one ':' (write an IPv6 address in brackets: [::1]:PORT)");
    }
    out.host = std::string(text.substr(0, colon));
    if (colon != std::string_view::npos) rest = text.substr(colon);
  }
  if (!rest.empty()) out.port = std::string(rest.substr(1));
  return out;
}

std::optional<int> ParsePort(std::string_view text, int min_port) {
  if (text.empty() || text.size() > 5) return std::nullopt;
  if (!std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  int port = static_cast<int>(*ParseInt64(text));
  if (port < min_port || port > 65535) return std::nullopt;
  return port;
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
