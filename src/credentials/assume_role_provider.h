// Temporary credentials from STS AssumeRole, signed with the credentials of a
// source provider. The one AssumeRole provider: profiles with role_arn
// (ProfileProvider) and --role-arn / a group's role (app/services) both use it.
//
// Every GetCredentials makes one AssumeRole call; wrap it in CachingProvider
// to reuse the credentials until shortly before they expire. Thread-safe as
// far as `source` is; the transport and clock must outlive it. Errors carry
// the role (and profile) as context and never contain secrets.
#pragma once

#include <memory>
#include <string>

#include "aws/aws_client.h"
#include "aws/aws_config.h"
#include "aws/credentials.h"
#include "aws/http.h"
#include "common/clock.h"
#include "sts/sts_client.h"

namespace dlq {

class AssumeRoleProvider final : public CredentialsProvider {
 public:
  struct Options {
    AssumeRoleRequest request;  // role_arn and session_name must be set
    // The profile whose role_arn this is; empty when the role came from an option.
    // Named in the credentials' source and in errors.
    std::string profile;
    RetryOptions retry;  // for the STS call
  };
  AssumeRoleProvider(std::unique_ptr<CredentialsProvider> source, ServiceEndpoint sts, HttpTransport& transport,
                     Clock& clock, Options options);

  // Source "assume-role (profile P, role R)", or "assume-role (R)" without a profile.
  Result<Credentials> GetCredentials() override;
  std::string Name() const override { return "assume-role"; }

 private:
  std::unique_ptr<CredentialsProvider> source_;
  StsClient sts_;  // signs with *source_
  Options options_;
};

}  // namespace dlq
