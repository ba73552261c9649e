// The dashboard's page, script and style sheet (the files under web/),
// embedded in the binary at build time by cmake/embed_web.cmake, so the page
// works offline and needs nothing but the daemon. Immutable; thread-safe.
#pragma once

#include <span>
#include <string_view>

namespace dlq {

struct WebAsset {
  std::string_view path;          // URL path, e.g. "/app.js" ("/" is index.html)
  std::string_view content_type;  // from the file's extension
  std::string_view body;
};

std::span<const WebAsset> WebAssets();

}  // namespace dlq
