// AWS Signature Version 4: a pure function of request, credentials and an
// explicit time. Never reads a clock. Each stage is callable on its own so
// tests can check it against the official test suite.
#pragma once

#include <chrono>
#include <string>

#include "aws/credentials.h"
#include "aws/http.h"
#include "common/clock.h"

namespace dlq {

struct SigningOptions {
  std::string region;   // e.g. "us-east-1"
  std::string service;  // signing name: "sqs", "s3", "monitoring", "sts"
  SystemTime time;      // the request time (X-Amz-Date)
  // S3 rules: the path is neither normalized nor double-encoded, and the
  // x-amz-content-sha256 header is added and signed.
  bool s3 = false;
  // S3 only: sign "UNSIGNED-PAYLOAD" instead of the body's SHA-256.
  bool unsigned_payload = false;
  // Presigned URLs: X-Amz-Expires.
  std::chrono::seconds expires{3600};
};

// The intermediate results of signing one request.
struct SigningStages {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signature;         // lower-case hex
  std::string signed_headers;    // "host;x-amz-date"
  std::string credential_scope;  // "20150830/us-east-1/service/aws4_request"
};

// Header signing, stage by stage. `request` must already carry every header
// that will be signed (Host, X-Amz-Date, X-Amz-Security-Token,
// x-amz-content-sha256 ...); these functions add nothing.
SigningStages ComputeHeaderSignature(const HttpRequest& request, const Credentials& creds,
                                     const SigningOptions& options);

// Adds Host (when missing), X-Amz-Date, X-Amz-Security-Token (when the
// credentials have a session token), x-amz-content-sha256 (S3) and
// Authorization to `request`. Replaces any earlier signature headers, so a
// retried request can be signed again.
void SignRequest(HttpRequest& request, const Credentials& creds, const SigningOptions& options);

// Query signing (presigned URL), stage by stage: `request.url` must already
// carry the X-Amz-* query parameters except X-Amz-Signature.
SigningStages ComputeQuerySignature(const HttpRequest& request, const Credentials& creds,
                                    const SigningOptions& options);

// Returns request.url with X-Amz-Algorithm, X-Amz-Credential, X-Amz-Date,
// X-Amz-Expires, X-Amz-SignedHeaders, X-Amz-Security-Token (if any) and
// X-Amz-Signature added.
std::string PresignUrl(const HttpRequest& request, const Credentials& creds, const SigningOptions& options);

// The derived signing key (HMAC chain over date, region, service).
std::string DeriveSigningKey(std::string_view secret, std::string_view day, std::string_view region,
                             std::string_view service);

}  // namespace dlq
