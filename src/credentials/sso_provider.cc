#include "credentials/sso_provider.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

#include "aws/aws_client.h"
#include "common/crypto.h"
#include "common/strings.h"
#include "common/time_util.h"
#include "credentials/provider_util.h"

namespace dlq {
namespace {

constexpr std::array<std::string_view, 4> kRequired = {"sso_start_url", "sso_region", "sso_account_id",
                                                       "sso_role_name"};

// sso_region goes into the portal's host name: letters, digits and '-' only.
bool IsPlainRegion(std::string_view region) {
  if (region.empty() || region.size() > 63) return false;
  for (char c : region) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

std::string LoginHint(const std::string& profile) {
  return fmt::format("run `aws sso login --profile {}`", profile);
}

std::optional<std::string> JsonString(simdjson::dom::object& obj, std::string_view name) {
  std::string_view v;
  if (obj[name].get_string().get(v) != simdjson::SUCCESS) return std::nullopt;
  return std::string(v);
}

// The AWS CLI writes expiresAt as "2026-11-27T10:00:00Z"; releases before
// 2.0.29 wrote "2026-11-27T10:00:00UTC".
std::optional<SystemTime> ParseExpiresAt(std::string_view text) {
  std::string s(Trim(text));
  if (EndsWith(s, "UTC")) s.replace(s.size() - 3, 3, "Z");
  return ParseIso8601(s);
}

Result<std::string> ReadCacheFile(const SsoProfile& c) {
  std::ifstream in(c.cache_file, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) {
      return Unauthenticated(
          fmt::format("profile {} uses IAM Identity Center (SSO) and there is no login for it ({} "
                      "does not exist): {}",
                      c.profile, c.cache_file, LoginHint(c.profile)));
    }
    return Unauthenticated(fmt::format("profile {}: cannot read the SSO token cache {}: {}", c.profile, c.cache_file,
                                       std::strerror(errno)));
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

Status PortalStatusError(int status, const SsoProfile& c) {
  const std::string what = fmt::format("IAM Identity Center GetRoleCredentials for role {} in account {} (profile {})",
                                       c.role_name, c.account_id, c.profile);
  if (status == 401) {
    return Unauthenticated(
        fmt::format("{}: HTTP 401, the SSO login is no longer valid: {}", what, LoginHint(c.profile)));
  }
  if (status == 403) {
    return Unauthenticated(fmt::format("{}: HTTP 403, this login may not use that role in that account", what));
  }
  if (status == 404) return InvalidArgument(fmt::format("{}: HTTP 404, no such role or account", what));
  return HttpStatusError(status, what);
}

}  // namespace

Result<SsoToken> ParseSsoTokenCache(std::string_view text, const SsoProfile& c) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(text);
  simdjson::dom::object obj;
  std::optional<std::string> token;
  std::optional<std::string> expires;
  if (parser.parse(padded).get_object().get(obj) == simdjson::SUCCESS) {
    token = JsonString(obj, "accessToken");
    expires = JsonString(obj, "expiresAt");
  }
  if (!token || token->empty() || !expires) {
    return Unauthenticated(
        fmt::format("profile {}: the SSO token cache {} is not a JSON object with accessToken and "
                    "expiresAt: {}",
                    c.profile, c.cache_file, LoginHint(c.profile)));
  }
  std::optional<SystemTime> at = ParseExpiresAt(*expires);
  if (!at) {
    return Unauthenticated(fmt::format("profile {}: unreadable expiresAt '{}' in the SSO token cache {}: {}", c.profile,
                                       *expires, c.cache_file, LoginHint(c.profile)));
  }
  if (token->find_first_of("\r\n") != std::string::npos) {
    return Unauthenticated(
        fmt::format("profile {}: the SSO token in {} contains a line break", c.profile, c.cache_file));
  }
  return SsoToken{std::move(*token), *at};
}

Result<Credentials> ParseSsoRoleCredentials(std::string_view body, const SsoProfile& c) {
  const std::string what = fmt::format("IAM Identity Center GetRoleCredentials (profile {})", c.profile);
  simdjson::dom::parser parser;
  simdjson::padded_string padded(body);
  simdjson::dom::object root;
  simdjson::dom::object creds;
  if (parser.parse(padded).get_object().get(root) != simdjson::SUCCESS ||
      root["roleCredentials"].get_object().get(creds) != simdjson::SUCCESS) {
    return Unauthenticated(fmt::format("{}: response has no roleCredentials object", what));
  }
  Credentials out;
  out.access_key_id = JsonString(creds, "accessKeyId").value_or("");
  out.secret_access_key = JsonString(creds, "secretAccessKey").value_or("");
  out.session_token = JsonString(creds, "sessionToken").value_or("");
  if (out.empty()) return Unauthenticated(fmt::format("{}: response lacks accessKeyId or secretAccessKey", what));
  int64_t expiration_ms = 0;
  if (creds["expiration"].get_int64().get(expiration_ms) == simdjson::SUCCESS) {
    out.expiration = FromUnixMillis(expiration_ms);
  }
  out.source = fmt::format("sso (profile {})", c.profile);
  return out;
}

bool IsSsoProfile(const ConfigSection& profile) {
  return profile.Get("sso_account_id").has_value() || profile.Get("sso_role_name").has_value();
}

Result<SsoProfile> ResolveSsoProfile(const std::string& profile, const ConfigSection& section,
                                     const AwsSettings& settings, const Environment& env) {
  const std::string& config_path = settings.shared.config.path;
  ConfigValues values;
  for (std::string_view key : kRequired) {
    if (auto v = section.Get(key)) values.emplace(std::string(key), *v);
  }
  SsoProfile out;
  out.profile = profile;
  if (auto session = section.Get("sso_session"); session && !session->empty()) {
    out.session_name = *session;
    auto it = settings.shared.config.sso_sessions.find(out.session_name);
    if (it == settings.shared.config.sso_sessions.end()) {
      return InvalidArgument(fmt::format("profile {} names sso_session {}, but {} has no [sso-session {}] section",
                                         profile, out.session_name, config_path, out.session_name));
    }
    for (const auto& [key, value] : it->second.values) {
      auto [at, inserted] = values.emplace(key, value);
      if (!inserted && at->second != value) {
        return InvalidArgument(fmt::format("{} differs between profile {} ({}) and sso-session {} ({}) in {}", key,
                                           profile, at->second, out.session_name, value, config_path));
      }
    }
  }
  std::vector<std::string_view> missing;
  for (std::string_view key : kRequired) {
    auto it = values.find(key);
    if (it == values.end() || it->second.empty()) missing.push_back(key);
  }
  if (!missing.empty()) {
    return InvalidArgument(fmt::format("profile {} is configured for IAM Identity Center (SSO) but lacks {} in {}",
                                       profile, fmt::join(missing, ", "), config_path));
  }
  out.start_url = values["sso_start_url"];
  out.region = values["sso_region"];
  out.account_id = values["sso_account_id"];
  out.role_name = values["sso_role_name"];
  if (!IsPlainRegion(out.region)) {
    return InvalidArgument(fmt::format("profile {}: invalid sso_region '{}'", profile, out.region));
  }
  const std::string key = Sha1Hex(out.session_name.empty() ? out.start_url : out.session_name);
  out.cache_file = ExpandHome(fmt::format("~/.aws/sso/cache/{}.json", key), env);
  auto custom = settings.endpoint_overrides.find("portal.sso");
  out.endpoint =
      custom != settings.endpoint_overrides.end() ? custom->second : DefaultEndpoint("portal.sso", out.region);
  return out;
}

SsoProvider::SsoProvider(SsoProfile config, HttpTransport& transport, Clock& clock)
    : config_(std::move(config)), transport_(transport), clock_(clock) {}

Result<Credentials> SsoProvider::GetCredentials() {
  DLQ_ASSIGN_OR_RETURN(std::string cache, ReadCacheFile(config_));
  DLQ_ASSIGN_OR_RETURN(SsoToken token, ParseSsoTokenCache(cache, config_));
  if (clock_.Now() >= token.expires_at) {
    return Unauthenticated(fmt::format("the SSO login for profile {} expired at {}: {}", config_.profile,
                                       FormatIso8601(token.expires_at), LoginHint(config_.profile)));
  }
  HttpRequest req;
  req.method = "GET";
  req.url = fmt::format("{}/federation/credentials?account_id={}&role_name={}", config_.endpoint,
                        UriEncode(config_.account_id), UriEncode(config_.role_name));
  req.timeout = std::chrono::seconds(10);
  req.headers.emplace_back("x-amz-sso_bearer_token", token.access_token);

  const RetryOptions retry{
      .max_attempts = 3, .base_delay = std::chrono::milliseconds(100), .max_delay = std::chrono::milliseconds(2000)};
  std::mt19937_64 rng(std::random_device{}());
  Status last;
  for (int attempt = 0; attempt < retry.max_attempts; ++attempt) {
    if (attempt > 0) clock_.SleepFor(BackoffDelay(retry, attempt, rng));
    auto resp = transport_.Send(req);
    if (!resp.ok()) {
      last = resp.status().WithContext(fmt::format("IAM Identity Center portal {}", config_.endpoint));
    } else if (resp->status != 200) {
      last = PortalStatusError(resp->status, config_);
    } else {
      return ParseSsoRoleCredentials(resp->body, config_);
    }
    if (!last.retryable()) return last;
  }
  return last;
}

}  // namespace dlq
