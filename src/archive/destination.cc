#include "archive/destination.h"

#include <fmt/format.h>

#include "archive/key_layout.h"
#include "common/strings.h"

namespace dlq {

Result<Destination> ParseDestination(std::string_view uri) {
  Destination d;
  d.uri = std::string(uri);
  auto trim_slashes = [](std::string_view s) {
    while (!s.empty() && s.front() == '/') s.remove_prefix(1);
    while (!s.empty() && s.back() == '/') s.remove_suffix(1);
    return std::string(s);
  };
  if (StartsWith(uri, "s3://")) {
    d.scheme = "s3";
    std::string_view rest = uri.substr(5);
    size_t slash = rest.find('/');
    d.bucket = std::string(rest.substr(0, slash));
    if (slash != std::string_view::npos) d.prefix = trim_slashes(rest.substr(slash + 1));
    if (d.bucket.empty())
      return InvalidArgument(fmt::format("destination '{}' has no bucket (s3://BUCKET/PREFIX)", uri));
    return d;
  }
  if (StartsWith(uri, "file://")) {
    d.scheme = "file";
    d.root = std::string(uri.substr(7));
    if (d.root.empty() || d.root.front() != '/') {
      return InvalidArgument(fmt::format("destination '{}' must be an absolute path: file:///DIR", uri));
    }
    while (d.root.size() > 1 && d.root.back() == '/') d.root.pop_back();
    return d;
  }
  return InvalidArgument(fmt::format("destination '{}' must be s3://BUCKET/PREFIX or file:///DIR", uri));
}

std::string ArchivePrefix(const Destination& destination) {
  return destination.prefix.empty() ? std::string(kDefaultKeyPrefix) : destination.prefix;
}

}  // namespace dlq
