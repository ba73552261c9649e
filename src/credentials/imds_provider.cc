#include "credentials/imds_provider.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/strings.h"
#include "credentials/provider_util.h"

namespace dlq {
namespace {

constexpr std::string_view kImdsDefault = "http://169.254.169.254";

}  // namespace

ImdsProvider::ImdsProvider(const Environment& env, HttpTransport& transport, Options options)
    : env_(env), transport_(transport), options_(options) {}

Result<HttpResponse> ImdsProvider::Send(HttpRequest request) {
  request.timeout = options_.timeout;
  Result<HttpResponse> r = Unavailable("IMDS: no attempt made");
  for (int attempt = 0; attempt < std::max(1, options_.attempts); ++attempt) {
    r = transport_.Send(request);
    if (r.ok() && r->status < 500) return r;
  }
  return r;
}

Result<Credentials> ImdsProvider::GetCredentials() {
  if (IsTrueSetting(env_.GetNonEmpty("AWS_EC2_METADATA_DISABLED"))) {
    return NotFound("EC2 instance metadata is disabled by AWS_EC2_METADATA_DISABLED");
  }
  std::string base = env_.GetNonEmpty("AWS_EC2_METADATA_SERVICE_ENDPOINT").value_or(std::string(kImdsDefault));
  while (!base.empty() && base.back() == '/') base.pop_back();

  HttpRequest token_req;
  token_req.method = "PUT";
  token_req.url = base + "/latest/api/token";
  token_req.headers.emplace_back("X-aws-ec2-metadata-token-ttl-seconds", "21600");
  auto token_resp = Send(token_req);
  if (!token_resp.ok()) return NotFound(fmt::format("EC2 instance metadata not reachable at {}", base));
  std::string token;
  if (token_resp->status == 200) {
    token = std::string(Trim(token_resp->body));
  } else if (token_resp->status == 403 || token_resp->status == 404 || token_resp->status == 405) {
    if (IsTrueSetting(env_.GetNonEmpty("AWS_EC2_METADATA_V1_DISABLED"))) {
      return Unauthenticated(
          fmt::format("IMDSv2 token request failed with HTTP {} and IMDSv1 is disabled", token_resp->status));
    }
  } else {
    return HttpStatusError(token_resp->status, "IMDS token request");
  }

  auto get = [&](const std::string& path) {
    HttpRequest r;
    r.method = "GET";
    r.url = base + path;
    if (!token.empty()) r.headers.emplace_back("X-aws-ec2-metadata-token", token);
    return Send(std::move(r));
  };
  constexpr std::string_view kCredsPath = "/latest/meta-data/iam/security-credentials/";
  auto roles = get(std::string(kCredsPath));
  if (!roles.ok()) return NotFound(fmt::format("EC2 instance metadata not reachable at {}", base));
  if (roles->status == 404) return NotFound("no IAM role is attached to this EC2 instance");
  if (roles->status != 200) return HttpStatusError(roles->status, "IMDS role lookup");
  std::string_view list = roles->body;
  std::string role(Trim(list.substr(0, list.find('\n'))));
  if (role.empty()) return NotFound("no IAM role is attached to this EC2 instance");

  std::string what = fmt::format("IMDS credentials for role {}", role);
  auto creds_resp = get(std::string(kCredsPath) + UriEncode(role));
  if (!creds_resp.ok()) return creds_resp.status().WithContext(what);
  if (creds_resp->status != 200) return HttpStatusError(creds_resp->status, what);
  CredentialsJsonExtras extras;
  DLQ_ASSIGN_OR_RETURN(Credentials c, ParseCredentialsJson(creds_resp->body, "Token", what, &extras));
  if (extras.code && *extras.code != "Success") {
    return Unauthenticated(fmt::format("{}: Code {}", what, *extras.code));
  }
  c.source = "imds";
  return c;
}

}  // namespace dlq
