// IAM Identity Center (SSO) role credentials for a profile, as the AWS CLI v2
// and the SDKs get them after `aws sso login`: the access token cached in
// ~/.aws/sso/cache/<sha1 of the sso-session name, or of the start URL for a
// legacy profile>.json is exchanged at the SSO portal's GetRoleCredentials
// (GET /federation/credentials, unsigned, the token in a header). An
// sso-session login within 15 minutes of expiry is refreshed through SSO-OIDC
// CreateToken (its refresh token) and the cache file atomically rewritten
// (mode 0600), as the AWS CLI does; a legacy login, or one that cannot be
// refreshed, ends with an error saying to run `aws sso login` again. Neither
// the tokens, the client secret nor the credentials appear in any error.
// Thread-safe; the transport and clock must outlive the provider.
#pragma once

#include <string>
#include <string_view>

#include "aws/aws_config.h"
#include "aws/config_file.h"
#include "aws/credentials.h"
#include "aws/environment.h"
#include "aws/http.h"
#include "common/clock.h"

namespace dlq {

struct SsoProfile {
  std::string profile;       // for messages and the credentials' source
  std::string session_name;  // sso_session; empty for a legacy profile (keyed by its start URL)
  std::string start_url;
  std::string region;  // sso_region: where the portal is
  std::string account_id;
  std::string role_name;
  std::string cache_file;     // the token cache file, expanded
  std::string endpoint;       // portal base URL, without trailing '/'
  std::string oidc_endpoint;  // SSO-OIDC (token refresh) base URL, without trailing '/'
};

// True when the profile asks for SSO credentials (it names sso_account_id or
// sso_role_name, as the AWS CLI decides).
bool IsSsoProfile(const ConfigSection& profile);

// The SSO settings of `profile` (its merged section), with its sso-session
// section from settings.shared when it names one. kInvalidArgument naming the
// missing keys, an sso-session that does not exist, or a key whose value
// differs between the profile and its sso-session.
Result<SsoProfile> ResolveSsoProfile(const std::string& profile, const ConfigSection& section,
                                     const AwsSettings& settings, const Environment& env);

// A login from the token cache file.
struct SsoToken {
  std::string access_token;
  SystemTime expires_at;
  // What a refresh needs (sso-session logins); empty when the file lacks it.
  std::string refresh_token;
  std::string client_id;
  std::string client_secret;
  std::string registration_expires_at;  // as written, kept verbatim
};
// The parsers of the three documents involved, each failing with
// kUnauthenticated naming `profile` and what is wrong, never a token or key:
// the token cache file ({"accessToken", "expiresAt", ...}), the portal's
// GetRoleCredentials answer ({"roleCredentials": {...}}), and SSO-OIDC
// CreateToken's answer ({"accessToken", "expiresIn", "refreshToken"?}), which
// gives `old` with the new access token, expiring expiresIn (1 s to a year)
// after `now`.
Result<SsoToken> ParseSsoTokenCache(std::string_view text, const SsoProfile& profile);
Result<Credentials> ParseSsoRoleCredentials(std::string_view body, const SsoProfile& profile);
Result<SsoToken> ParseSsoRefreshedToken(std::string_view body, const SsoToken& old, SystemTime now,
                                        const SsoProfile& profile);

class SsoProvider final : public CredentialsProvider {
 public:
  SsoProvider(SsoProfile config, HttpTransport& transport, Clock& clock);
  Result<Credentials> GetCredentials() override;
  std::string Name() const override { return "sso"; }

 private:
  SsoProfile config_;
  HttpTransport& transport_;
  Clock& clock_;
};

}  // namespace dlq
