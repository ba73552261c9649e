// StsClient: the STS calls dlq-archive needs, on the AWS query protocol
// (form-encoded POST, XML responses, Version 2011-06-15). Thread-safe; holds
// references to the transport, credentials and clock, which must outlive it.
// Errors carry the STS error code and request id; returned Statuses never
// contain secrets or the web identity token.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "aws/aws_client.h"
#include "aws/credentials.h"
#include "aws/http.h"
#include "common/clock.h"
#include "common/status.h"

namespace dlq {

struct CallerIdentity {
  std::string account;
  std::string arn;
  std::string user_id;
};

struct AssumeRoleRequest {
  std::string role_arn;
  std::string session_name;
  std::optional<std::string> external_id;
  std::optional<std::chrono::seconds> duration;  // STS default (1 h) when unset
};

struct AssumeRoleWithWebIdentityRequest {
  std::string role_arn;
  std::string session_name;
  std::string token;  // the OIDC token; secret
  std::optional<std::chrono::seconds> duration;
};

class StsClient {
 public:
  // `credentials` signs GetCallerIdentity and AssumeRole.
  StsClient(ServiceEndpoint endpoint, HttpTransport& transport, CredentialsProvider& credentials, Clock& clock,
            RetryOptions retry = {});

  Result<CallerIdentity> GetCallerIdentity();
  // The returned Credentials have expiration set and source left empty.
  Result<Credentials> AssumeRole(const AssumeRoleRequest& request);
  // Unsigned: sent straight through the transport.
  Result<Credentials> AssumeRoleWithWebIdentity(const AssumeRoleWithWebIdentityRequest& request);

 private:
  AwsClient client_;
  HttpTransport& transport_;
  Clock& clock_;
  RetryOptions retry_;
};

// AssumeRoleWithWebIdentity without an StsClient (it needs no credentials). Retries throttling,
// 5xx and connection errors up to retry.max_attempts times, sleeping on `clock`.
Result<Credentials> AssumeRoleWithWebIdentity(const ServiceEndpoint& endpoint, HttpTransport& transport, Clock& clock,
                                              const AssumeRoleWithWebIdentityRequest& request,
                                              const RetryOptions& retry = {});

// Parses the <Credentials> element of an AssumeRole* response body (exposed for tests and fuzzing).
Result<Credentials> ParseStsCredentials(std::string_view xml, std::string_view operation);

}  // namespace dlq
