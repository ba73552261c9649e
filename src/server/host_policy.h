// Which Host header values the daemon's listener serves, so that a page
// from a DNS-rebinding name (attacker.example resolving to 127.0.0.1) cannot
// read it: no Host (HTTP/1.0, not a browser), an IPv4 address, an IPv6
// address in brackets, `localhost`, the listen host, or one of
// allowed_hosts ("name", ".suffix", or "*" for every Host). Case-insensitive,
// any port, a trailing dot ignored.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dlq {

struct HostPolicy {
  std::string listen_host;
  std::vector<std::string> allowed_hosts;

  bool Allows(const std::string* host_header) const;
};

// True for 127.0.0.0/8, ::1 and "localhost" (with or without IPv6 brackets).
bool IsLoopbackHost(std::string_view host);
// host, in brackets when it is an IPv6 literal.
std::string HostForUrl(const std::string& host);

}  // namespace dlq
