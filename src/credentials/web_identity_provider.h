// STS AssumeRoleWithWebIdentity (unsigned) with an OIDC token read from a
// file on every fetch (EKS IRSA, GitHub OIDC). Thread-safe; the environment,
// transport and clock must outlive the provider. Errors never contain the
// token.
#pragma once

#include <optional>
#include <string>

#include "aws/aws_config.h"
#include "aws/credentials.h"
#include "aws/environment.h"
#include "aws/http.h"
#include "common/clock.h"

namespace dlq {

class WebIdentityProvider final : public CredentialsProvider {
 public:
  struct Config {
    std::string token_file;
    std::string role_arn;
    std::string session_name;  // empty: "dlq-archive-<unix seconds>"
    std::string source = "web-identity";
  };
  // Configured from AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN, AWS_ROLE_SESSION_NAME at each call;
  // kNotFound when AWS_WEB_IDENTITY_TOKEN_FILE is unset.
  WebIdentityProvider(const Environment& env, ServiceEndpoint sts, HttpTransport& transport, Clock& clock);
  // Fixed configuration (from a profile).
  WebIdentityProvider(Config config, ServiceEndpoint sts, HttpTransport& transport, Clock& clock);
  Result<Credentials> GetCredentials() override;
  std::string Name() const override { return "web identity"; }

 private:
  const Environment* env_ = nullptr;
  std::optional<Config> config_;
  ServiceEndpoint sts_;
  HttpTransport& transport_;
  Clock& clock_;
};

}  // namespace dlq
