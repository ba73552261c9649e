// The provider chain and the default chain dlq-archive uses (the AWS CLI's
// order). Thread-safe as far as its providers are.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aws/aws_config.h"
#include "aws/credentials.h"
#include "aws/environment.h"
#include "aws/http.h"
#include "common/clock.h"
#include "credentials/imds_provider.h"

namespace dlq {

// Tries providers in order; kNotFound moves on, any other error stops the chain (with the
// provider's name as context). When all return kNotFound: kUnauthenticated
// "no AWS credentials found: checked <names> (profile X)".
class ChainProvider final : public CredentialsProvider {
 public:
  ChainProvider(std::vector<std::unique_ptr<CredentialsProvider>> providers, std::string profile);
  Result<Credentials> GetCredentials() override;
  void Invalidate() override;
  std::string Name() const override { return "default chain"; }

 private:
  std::vector<std::unique_ptr<CredentialsProvider>> providers_;
  std::string profile_;
};

struct CredentialsChainOptions {
  std::optional<Credentials> explicit_credentials;  // tried first when set
  std::chrono::seconds refresh_window{std::chrono::minutes(5)};
  ImdsProvider::Options imds;
};

// The AWS CLI order: explicit keys -> environment (skipped when the profile came from
// --profile, as the CLI does) -> web identity (env) -> profile files -> container -> IMDS,
// wrapped in a CachingProvider. `env`, `transport` and `clock` must outlive the result.
std::unique_ptr<CredentialsProvider> MakeDefaultCredentialsChain(const AwsSettings& settings, const Environment& env,
                                                                 HttpTransport& transport, Clock& clock,
                                                                 const CredentialsChainOptions& options = {});

}  // namespace dlq
