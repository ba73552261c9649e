// The dashboard's JSON answers, shared by its files (dashboard.cc, access.cc;
// not for other modules). Pure functions.
#pragma once

#include <string>
#include <string_view>

#include "common/json_writer.h"
#include "common/strings.h"
#include "server/http_message.h"

namespace dlq::dashboard_internal {

inline constexpr std::string_view kJson = "application/json";

// `body` as application/json, never cached or sniffed.
inline HttpServerResponse JsonResponse(int status, std::string body) {
  HttpServerResponse r;
  r.status = status;
  r.content_type = std::string(kJson);
  r.body = std::move(body);
  r.headers.emplace_back("Cache-Control", "no-store");
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  return r;
}

// {"error": message}
inline HttpServerResponse Error(int status, std::string_view message) {
  return JsonResponse(status, JsonWriter().BeginObject().Key("error").String(message).EndObject().Take());
}

// The value of the request's first header called `name` (any case); "" when none.
inline std::string_view Header(const HttpServerRequest& r, std::string_view name) {
  for (const auto& [k, v] : r.headers) {
    if (IEquals(k, name)) return v;
  }
  return {};
}

}  // namespace dlq::dashboard_internal
