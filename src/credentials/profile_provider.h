// Credentials from the shared config and credentials files. Thread-safe; the
// environment, transport and clock must outlive the provider. Errors never
// contain secret keys, session tokens or the output of a credential_process.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "aws/aws_config.h"
#include "aws/config_file.h"
#include "aws/credentials.h"
#include "aws/environment.h"
#include "aws/http.h"
#include "common/clock.h"

namespace dlq {

// Shared config/credentials files for settings.profile: static keys, role_arn with
// source_profile (recursive, cycle-checked) or credential_source (both through
// AssumeRoleProvider), credential_process, web_identity_token_file, and IAM
// Identity Center (sso_session or legacy sso_start_url, through SsoProvider).
// Source e.g. "shared-credentials-file (profile dev)".
class ProfileProvider final : public CredentialsProvider {
 public:
  ProfileProvider(AwsSettings settings, const Environment& env, HttpTransport& transport, Clock& clock);
  Result<Credentials> GetCredentials() override;
  std::string Name() const override;

 private:
  Result<Credentials> Resolve(const std::string& profile, std::vector<std::string>& chain);
  Result<Credentials> AssumeRoleFor(const std::string& profile, const ConfigSection& section,
                                    std::vector<std::string>& chain);
  Result<Credentials> FromCredentialSource(const std::string& profile, std::string_view source);

  AwsSettings settings_;
  const Environment& env_;
  HttpTransport& transport_;
  Clock& clock_;
};

}  // namespace dlq
