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
#include "common/file_util.h"
#include "common/json_writer.h"
#include "common/log.h"
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

// Sends `req` up to 3 times, with full-jitter backoff between attempts, while
// the failure is retryable (the transport's, or `status_error`'s for a
// non-200 answer). The 200 response, or the last failure.
template <typename StatusError>
Result<HttpResponse> SendWithRetries(HttpTransport& transport, Clock& clock, const HttpRequest& req,
                                     std::string_view what, StatusError status_error) {
  const RetryOptions retry{
      .max_attempts = 3, .base_delay = std::chrono::milliseconds(100), .max_delay = std::chrono::milliseconds(2000)};
  std::mt19937_64 rng(std::random_device{}());
  Status last;
  for (int attempt = 0; attempt < retry.max_attempts; ++attempt) {
    if (attempt > 0) clock.SleepFor(BackoffDelay(retry, attempt, rng));
    auto resp = transport.Send(req);
    if (!resp.ok()) {
      last = resp.status().WithContext(what);
    } else if (resp->status != 200) {
      last = status_error(*resp);
    } else {
      return resp;
    }
    if (!last.retryable()) return last;
  }
  return last;
}

// SSO-OIDC CreateToken with the refresh_token grant, as the AWS CLI refreshes
// an sso-session login: a new access token (and maybe a new refresh token).
Result<SsoToken> RefreshToken(const SsoProfile& c, const SsoToken& old, HttpTransport& transport, Clock& clock) {
  if (old.refresh_token.empty() || old.client_id.empty() || old.client_secret.empty() ||
      old.registration_expires_at.empty()) {
    return Unauthenticated("the cached login has no refresh token");
  }
  std::optional<SystemTime> registration = ParseExpiresAt(old.registration_expires_at);
  if (!registration || clock.Now() >= *registration) {
    return Unauthenticated(fmt::format("its client registration expired ({})", old.registration_expires_at));
  }
  HttpRequest req;
  req.method = "POST";
  req.url = c.oidc_endpoint + "/token";
  req.timeout = std::chrono::seconds(10);
  req.headers.emplace_back("Content-Type", "application/json");
  std::string body;
  JsonWriter(body)
      .BeginObject()
      .Key("clientId")
      .String(old.client_id)
      .Key("clientSecret")
      .String(old.client_secret)
      .Key("grantType")
      .String("refresh_token")
      .Key("refreshToken")
      .String(old.refresh_token)
      .EndObject();
  req.body = std::move(body);
  const std::string what = fmt::format("IAM Identity Center OIDC {}", c.oidc_endpoint);
  auto resp = SendWithRetries(transport, clock, req, what, [&](const HttpResponse& r) {
    if (r.status < 400 || r.status >= 500 || r.status == 429) return HttpStatusError(r.status, what);
    // A refusal: {"error": "invalid_grant", "error_description": ...}; the code says enough.
    simdjson::dom::parser parser;
    simdjson::dom::object obj;
    std::string code = "?";
    if (ParseJsonObject(parser, r.body, obj)) code = JsonString(obj, "error").value_or("?");
    if (code.size() > 64) code.resize(64);
    return Unauthenticated(fmt::format("{}: HTTP {} {}", what, r.status, code));
  });
  if (!resp.ok()) return resp.status();
  return ParseSsoRefreshedToken(resp->body, old, clock.Now(), c);
}

// "2026-11-27T10:00:00Z": whole seconds, as the AWS CLI writes expiresAt.
std::string IsoSeconds(SystemTime t) {
  std::string s = FormatIso8601(std::chrono::floor<std::chrono::seconds>(t));  // "...:00.000Z"
  s.erase(s.size() - 5, 4);
  return s;
}

// The cache file's document as the AWS CLI writes it after a refresh.
std::string TokenCacheJson(const SsoProfile& c, const SsoToken& t) {
  std::string out;
  JsonWriter(out)
      .BeginObject()
      .Key("startUrl")
      .String(c.start_url)
      .Key("region")
      .String(c.region)
      .Key("accessToken")
      .String(t.access_token)
      .Key("expiresAt")
      .String(IsoSeconds(t.expires_at))
      .Key("clientId")
      .String(t.client_id)
      .Key("clientSecret")
      .String(t.client_secret)
      .Key("registrationExpiresAt")
      .String(t.registration_expires_at)
      .Key("refreshToken")
      .String(t.refresh_token)
      .EndObject();
  return out;
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
  simdjson::dom::object obj;
  std::optional<std::string> token;
  std::optional<std::string> expires;
  SsoToken out;
  if (ParseJsonObject(parser, text, obj)) {
    token = JsonString(obj, "accessToken");
    expires = JsonString(obj, "expiresAt");
    out.refresh_token = JsonString(obj, "refreshToken").value_or("");
    out.client_id = JsonString(obj, "clientId").value_or("");
    out.client_secret = JsonString(obj, "clientSecret").value_or("");
    out.registration_expires_at = JsonString(obj, "registrationExpiresAt").value_or("");
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
  out.access_token = std::move(*token);
  out.expires_at = *at;
  return out;
}

Result<Credentials> ParseSsoRoleCredentials(std::string_view body, const SsoProfile& c) {
  const std::string what = fmt::format("IAM Identity Center GetRoleCredentials (profile {})", c.profile);
  simdjson::dom::parser parser;
  simdjson::dom::object root;
  simdjson::dom::object creds;
  if (!ParseJsonObject(parser, body, root) || root["roleCredentials"].get_object().get(creds) != simdjson::SUCCESS) {
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

Result<SsoToken> ParseSsoRefreshedToken(std::string_view body, const SsoToken& old, SystemTime now,
                                        const SsoProfile& c) {
  const std::string what = fmt::format("IAM Identity Center OIDC CreateToken (profile {})", c.profile);
  simdjson::dom::parser parser;
  simdjson::dom::object obj;
  int64_t expires_in = 0;
  if (!ParseJsonObject(parser, body, obj) || obj["expiresIn"].get_int64().get(expires_in) != simdjson::SUCCESS) {
    return Unauthenticated(fmt::format("{}: response has no accessToken and expiresIn", what));
  }
  // Access tokens live hours; anything beyond a year is not a lifetime to trust (nor to add to a time).
  constexpr int64_t kMaxLifetimeSeconds = int64_t{366} * 24 * 3600;
  if (expires_in <= 0 || expires_in > kMaxLifetimeSeconds) {
    return Unauthenticated(fmt::format("{}: expiresIn {} is not a lifetime in seconds", what, expires_in));
  }
  SsoToken fresh = old;
  fresh.access_token = JsonString(obj, "accessToken").value_or("");
  if (fresh.access_token.empty() || fresh.access_token.find_first_of("\r\n") != std::string::npos) {
    return Unauthenticated(fmt::format("{}: response has no usable accessToken", what));
  }
  if (auto rotated = JsonString(obj, "refreshToken"); rotated && !rotated->empty()) fresh.refresh_token = *rotated;
  fresh.expires_at = now + std::chrono::seconds(expires_in);
  return fresh;
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
  auto endpoint = [&](std::string_view service) {
    auto custom = settings.endpoint_overrides.find(service);
    return custom != settings.endpoint_overrides.end() ? custom->second : DefaultEndpoint(service, out.region);
  };
  out.endpoint = endpoint("portal.sso");
  out.oidc_endpoint = endpoint("oidc");
  return out;
}

SsoProvider::SsoProvider(SsoProfile config, HttpTransport& transport, Clock& clock)
    : config_(std::move(config)), transport_(transport), clock_(clock) {}

Result<Credentials> SsoProvider::GetCredentials() {
  DLQ_ASSIGN_OR_RETURN(std::string cache, ReadCacheFile(config_));
  DLQ_ASSIGN_OR_RETURN(SsoToken token, ParseSsoTokenCache(cache, config_));
  // An sso-session login is refreshed 15 minutes before it expires, as the
  // AWS CLI does, and the cache file updated for the next reader.
  std::string refresh_failure;
  if (!config_.session_name.empty() && token.expires_at < clock_.Now() + std::chrono::minutes(15)) {
    Result<SsoToken> fresh = RefreshToken(config_, token, transport_, clock_);
    if (fresh.ok()) {
      token = std::move(*fresh);
      if (Status saved = WriteFileAtomically(config_.cache_file, TokenCacheJson(config_, token), 0600); !saved.ok()) {
        Log().Log(LogLevel::kWarn, "sso token cache not updated",
                  {{"profile", config_.profile}, {"error", saved.ToString()}});
      }
    } else if (clock_.Now() < token.expires_at) {
      Log().Log(LogLevel::kWarn, "sso token refresh failed, using the current login until it expires",
                {{"profile", config_.profile},
                 {"expires_at", FormatIso8601(token.expires_at)},
                 {"error", fresh.status().ToString()}});
    } else {
      refresh_failure = fmt::format(" and could not be refreshed ({})", fresh.status().message());
    }
  }
  if (clock_.Now() >= token.expires_at) {
    return Unauthenticated(fmt::format("the SSO login for profile {} expired at {}{}: {}", config_.profile,
                                       FormatIso8601(token.expires_at), refresh_failure, LoginHint(config_.profile)));
  }
  HttpRequest req;
  req.method = "GET";
  req.url = fmt::format("{}/federation/credentials?account_id={}&role_name={}", config_.endpoint,
                        UriEncode(config_.account_id), UriEncode(config_.role_name));
  req.timeout = std::chrono::seconds(10);
  req.headers.emplace_back("x-amz-sso_bearer_token", token.access_token);
  auto resp = SendWithRetries(transport_, clock_, req, fmt::format("IAM Identity Center portal {}", config_.endpoint),
                              [&](const HttpResponse& r) { return PortalStatusError(r.status, config_); });
  if (!resp.ok()) return resp.status();
  return ParseSsoRoleCredentials(resp->body, config_);
}

}  // namespace dlq
