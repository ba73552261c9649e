// libFuzzer target: the credential documents read from outside the process
// (the credentials JSON of IMDS, the container endpoint and credential_process;
// the SSO token cache file; the SSO portal's GetRoleCredentials answer;
// SSO-OIDC CreateToken's answer) must never crash or read out of bounds, and
// whatever they accept is complete: both keys present, an SSO token without a
// line break, a refreshed token that expires after now.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/time_util.h"
#include "credentials/provider_util.h"
#include "credentials/sso_provider.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  dlq::CredentialsJsonExtras extras;
  auto plain = dlq::ParseCredentialsJson(text, "Token", "fuzz", &extras);
  if (plain.ok() && plain->empty()) __builtin_trap();

  dlq::SsoProfile profile;
  profile.profile = "fuzz";
  profile.cache_file = "/fuzz/cache.json";
  auto token = dlq::ParseSsoTokenCache(text, profile);
  if (token.ok() && (token->access_token.empty() || token->access_token.find_first_of("\r\n") != std::string::npos)) {
    __builtin_trap();
  }
  auto role = dlq::ParseSsoRoleCredentials(text, profile);
  if (role.ok() && (role->empty() || role->source != "sso (profile fuzz)")) __builtin_trap();

  dlq::SsoToken old;
  old.refresh_token = "old-refresh";
  const dlq::SystemTime now = dlq::FromUnixMillis(1700000000000);
  auto fresh = dlq::ParseSsoRefreshedToken(text, old, now, profile);
  if (fresh.ok() && (fresh->access_token.empty() || fresh->expires_at <= now || fresh->refresh_token.empty())) {
    __builtin_trap();
  }
  return 0;
}
