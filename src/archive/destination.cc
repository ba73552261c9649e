#include "archive/destination.h"

#include <fmt/format.h>

#include "archive/key_layout.h"
#include "common/strings.h"
#include "common/text.h"

namespace dlq {

Result<Destination> ParseDestination(std::string_view uri) {
  Destination d;
  d.uri = std::string(uri);
  if (StartsWith(uri, "s3://")) {
    d.scheme = "s3";
    std::string_view rest = uri.substr(5);
    size_t slash = rest.find('/');
    d.bucket = std::string(rest.substr(0, slash));
    if (d.bucket.empty())
      return InvalidArgument(
          fmt::format("destination '{}' has no bucket (s3://BUCKET/PREFIX)", EscapeControlBytes(uri)));
    // The bucket is a path segment too (path-style URLs).
    Status bucket_ok = ValidateKeyPath(d.bucket, "bucket");
    if (!bucket_ok.ok()) return bucket_ok.WithContext(fmt::format("destination '{}'", EscapeControlBytes(uri)));
    std::string_view prefix = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    if (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);  // "s3://b/p/" is "s3://b/p"
    if (!prefix.empty()) {
      Status prefix_ok = ValidateKeyPath(prefix, "prefix");
      if (!prefix_ok.ok()) return prefix_ok.WithContext(fmt::format("destination '{}'", EscapeControlBytes(uri)));
    }
    d.prefix = std::string(prefix);
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
