// The AWS CLI's credential providers and the default chain. Every provider is
// thread-safe and reads the environment, HTTP and time only through the
// injected Environment, HttpTransport and Clock, which must outlive it.
// GetCredentials returns kNotFound when the provider has nothing to offer
// (the chain moves on) and any other error for a real failure. Errors never
// contain secret keys, session tokens, web identity tokens or the output of
// a credential_process.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aws/aws_config.h"
#include "aws/credentials.h"
#include "aws/environment.h"
#include "aws/http.h"
#include "common/clock.h"
#include "common/mutex.h"

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

// AssumeRoleWithWebIdentity (unsigned) with a token read from a file on every fetch.
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

// Shared config/credentials files for settings.profile: static keys, role_arn with
// source_profile (recursive, cycle-checked) or credential_source, credential_process, and
// web_identity_token_file. Source e.g. "shared-credentials-file (profile dev)".
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

// Runs `command` through /bin/sh and parses its JSON output
// ({"Version": 1, "AccessKeyId", "SecretAccessKey", "SessionToken", "Expiration"}).
// The command's stderr goes to ours; its stdout never appears in an error.
Result<Credentials> RunCredentialProcess(const std::string& command, std::string_view profile);

// ECS/EKS container credentials: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI (on 169.254.170.2) or
// AWS_CONTAINER_CREDENTIALS_FULL_URI (https, loopback, 169.254.170.2, 169.254.170.23 or
// fd00:ec2::23 only) with the Authorization header from AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE
// or AWS_CONTAINER_AUTHORIZATION_TOKEN. Source "container".
class ContainerProvider final : public CredentialsProvider {
 public:
  ContainerProvider(const Environment& env, HttpTransport& transport) : env_(env), transport_(transport) {}
  Result<Credentials> GetCredentials() override;
  std::string Name() const override { return "container"; }

 private:
  const Environment& env_;
  HttpTransport& transport_;
};

// EC2 instance metadata (IMDSv2 token, falling back to IMDSv1 on 403/404/405 unless
// AWS_EC2_METADATA_V1_DISABLED=true). Base URL from AWS_EC2_METADATA_SERVICE_ENDPOINT;
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

// Caches the inner provider's credentials; refetches when fewer than `refresh_window` remain
// before Expiration. If a refresh fails while the cached credentials are still unexpired, they
// are returned and the refresh is retried on the next call. Fetches are serialized.
class CachingProvider final : public CredentialsProvider {
 public:
  CachingProvider(std::unique_ptr<CredentialsProvider> inner, Clock& clock,
                  std::chrono::seconds refresh_window = std::chrono::minutes(5));
  Result<Credentials> GetCredentials() override;
  void Invalidate() override;
  std::string Name() const override { return inner_->Name(); }

 private:
  std::unique_ptr<CredentialsProvider> inner_;
  Clock& clock_;
  std::chrono::seconds refresh_window_;
  Mutex mu_;
  std::optional<Credentials> cached_ DLQ_GUARDED_BY(mu_);
};

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
// wrapped in a CachingProvider.
std::unique_ptr<CredentialsProvider> MakeDefaultCredentialsChain(const AwsSettings& settings, const Environment& env,
                                                                 HttpTransport& transport, Clock& clock,
                                                                 const CredentialsChainOptions& options = {});

}  // namespace dlq
