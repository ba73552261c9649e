// ECS/EKS container credentials. Thread-safe; the environment and transport
// must outlive the provider. kNotFound when neither URI variable is set.
// Errors never contain the authorization token or the response body.
#pragma once

#include <string>

#include "aws/credentials.h"
#include "aws/environment.h"
#include "aws/http.h"

namespace dlq {

// AWS_CONTAINER_CREDENTIALS_RELATIVE_URI (on 169.254.170.2) or
// AWS_CONTAINER_CREDENTIALS_FULL_URI (https, loopback, 169.254.170.2, 169.254.170.23 or
// fd00:ec2::23 only) with the Authorization header from AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE
// or AWS_CONTAINER_AUTHORIZATION_TOKEN. Retryable failures are tried 3 times. Source "container".
class ContainerProvider final : public CredentialsProvider {
 public:
  ContainerProvider(const Environment& env, HttpTransport& transport) : env_(env), transport_(transport) {}
  Result<Credentials> GetCredentials() override;
  std::string Name() const override { return "container"; }

 private:
  const Environment& env_;
  HttpTransport& transport_;
};

}  // namespace dlq
