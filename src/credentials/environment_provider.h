// Credentials from the process environment. Thread-safe; `env` must outlive
// the provider. kNotFound when neither key variable is set.
#pragma once

#include <string>

#include "aws/credentials.h"
#include "aws/environment.h"

namespace dlq {

// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN (legacy AWS_ACCESS_KEY,
// AWS_SECRET_KEY, AWS_SECURITY_TOKEN), optional AWS_CREDENTIAL_EXPIRATION. Source "environment".
class EnvironmentProvider final : public CredentialsProvider {
 public:
  explicit EnvironmentProvider(const Environment& env) : env_(env) {}
  Result<Credentials> GetCredentials() override;
  std::string Name() const override { return "environment"; }

 private:
  const Environment& env_;
};

}  // namespace dlq
