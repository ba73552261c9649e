#include "server/host_policy.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>

#include "common/strings.h"

namespace dlq {
namespace {

// "[v6]" or "[v6]:port" with a valid IPv6 address and a decimal port.
bool IsBracketedIpv6(std::string_view host) {
  const size_t close = host.find(']');
  if (!host.starts_with("[") || close == std::string_view::npos) return false;
  std::string_view port = host.substr(close + 1);
  if (!port.empty()) {
    port.remove_prefix(1);
    if (host[close + 1] != ':' || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
      return false;
    }
  }
  const std::string address(host.substr(1, close - 1));
  in6_addr v6{};
  return ::inet_pton(AF_INET6, address.c_str(), &v6) == 1;
}

}  // namespace

bool HostPolicy::Allows(const std::string* host_header) const {
  if (host_header == nullptr) return true;  // HTTP/1.0 without Host: not a browser
  std::string host = ToLower(*host_header);
  if (host.starts_with("[")) return IsBracketedIpv6(host);
  if (size_t colon = host.rfind(':'); colon != std::string::npos) host.resize(colon);
  if (host.ends_with(".")) host.pop_back();
  if (host.empty()) return false;
  in_addr v4{};
  if (host == "localhost" || host == ToLower(listen_host) || ::inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return true;
  }
  for (const std::string& allowed : allowed_hosts) {
    std::string a = ToLower(allowed);
    if (a == "*" || a == host) return true;
    if (a.starts_with(".") && host.ends_with(a)) return true;
  }
  return false;
}

std::string HostForUrl(const std::string& host) {
  return host.find(':') != std::string::npos && !host.starts_with("[") ? "[" + host + "]" : host;
}

bool IsLoopbackHost(std::string_view host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (IEquals(host, "localhost") || host == "::1") return true;
  in_addr v4{};
  const std::string h(host);
  return ::inet_pton(AF_INET, h.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

}  // namespace dlq
