#include "credentials/container_provider.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/strings.h"
#include "credentials/provider_util.h"

namespace dlq {
namespace {

constexpr std::string_view kContainerHost = "http://169.254.170.2";

bool IsAllowedContainerHost(const Url& url) {
  if (url.scheme == "https") return true;
  const std::string& h = url.host;
  if (h == "localhost" || h == "[::1]" || h == "169.254.170.2" || h == "169.254.170.23" ||
      IEquals(h, "[fd00:ec2::23]")) {
    return true;
  }
  return StartsWith(h, "127.") && std::count(h.begin(), h.end(), '.') == 3 &&
         h.find_first_not_of("0123456789.") == std::string::npos;
}

}  // namespace

Result<Credentials> ContainerProvider::GetCredentials() {
  HttpRequest req;
  req.method = "GET";
  req.timeout = std::chrono::seconds(2);
  if (auto rel = env_.GetNonEmpty("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")) {
    req.url = std::string(kContainerHost) + (StartsWith(*rel, "/") ? "" : "/") + *rel;
  } else if (auto full = env_.GetNonEmpty("AWS_CONTAINER_CREDENTIALS_FULL_URI")) {
    auto url = ParseUrl(*full);
    if (!url.ok()) return url.status().WithContext("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    if (!IsAllowedContainerHost(*url)) {
      return InvalidArgument(
          fmt::format("AWS_CONTAINER_CREDENTIALS_FULL_URI host {} is not allowed: use https, a loopback address, "
                      "169.254.170.2 or 169.254.170.23",
                      url->host));
    }
    req.url = *full;
    std::optional<std::string> token;
    if (auto file = env_.GetNonEmpty("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")) {
      DLQ_ASSIGN_OR_RETURN(std::string t, ReadTokenFile(*file, "container authorization token file"));
      token = std::move(t);
    } else {
      token = env_.GetNonEmpty("AWS_CONTAINER_AUTHORIZATION_TOKEN");
    }
    if (token) {
      if (token->find_first_of("\r\n") != std::string::npos) {
        return InvalidArgument("container authorization token contains a line break");
      }
      req.headers.emplace_back("Authorization", *token);
    }
  } else {
    return NotFound("no AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or AWS_CONTAINER_CREDENTIALS_FULL_URI");
  }
  req.headers.emplace_back("Accept", "application/json");
  std::string what = fmt::format("container credentials from {}", req.url);
  Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto resp = transport_.Send(req);
    if (!resp.ok()) {
      last = resp.status().WithContext(what);
      if (last.retryable()) continue;
      return last;
    }
    if (resp->status != 200) {
      last = HttpStatusError(resp->status, what);
      if (last.retryable()) continue;
      return last;
    }
    DLQ_ASSIGN_OR_RETURN(Credentials c, ParseCredentialsJson(resp->body, "Token", what));
    c.source = "container";
    return c;
  }
  return last;
}

}  // namespace dlq
