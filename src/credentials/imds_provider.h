// EC2 instance metadata (IMDS) credentials. Thread-safe; the environment and
// transport must outlive the provider.
#pragma once

#include <chrono>
#include <string>

#include "aws/credentials.h"
#include "aws/environment.h"
#include "aws/http.h"

namespace dlq {

// IMDSv2 token, falling back to IMDSv1 on 403/404/405 unless
// AWS_EC2_METADATA_V1_DISABLED=true. Base URL from AWS_EC2_METADATA_SERVICE_ENDPOINT;
// AWS_EC2_METADATA_DISABLED=true turns it off. An unreachable service is kNotFound, so a
// non-EC2 machine fails fast. Source "imds".
class ImdsProvider final : public CredentialsProvider {
 public:
  struct Options {
    std::chrono::milliseconds timeout{1000};
    int attempts = 1;
  };
  ImdsProvider(const Environment& env, HttpTransport& transport, Options options);
  ImdsProvider(const Environment& env, HttpTransport& transport) : ImdsProvider(env, transport, Options{}) {}
  Result<Credentials> GetCredentials() override;
  std::string Name() const override { return "EC2 instance metadata"; }

 private:
  Result<HttpResponse> Send(HttpRequest request);

  const Environment& env_;
  HttpTransport& transport_;
  Options options_;
};

}  // namespace dlq
