// Low-level SigV4 knobs: one per rule the official test suite varies
// independently. SigningOptions maps onto them (SigV4ConfigFor); product code
// should call the functions in aws/sigv4.h. Pure functions, thread-safe.
#pragma once

#include <string>

#include "aws/sigv4.h"

namespace dlq {

struct SigV4Config {
  bool normalize_path = true;          // remove dot segments and empty segments from the path
  bool double_encode_path = true;      // URI-encode the path as sent once more (all services but S3)
  bool content_sha256_header = false;  // add and sign x-amz-content-sha256 (header signing)
  bool unsigned_payload = false;       // sign "UNSIGNED-PAYLOAD" instead of the body's SHA-256
  bool omit_session_token = false;     // send the session token but leave it out of the signature
};

// The knobs for header signing under `options` (S3: no normalization, no
// double encoding, x-amz-content-sha256 signed).
SigV4Config SigV4ConfigFor(const SigningOptions& options);

// The aws/sigv4.h functions with explicit knobs; region, service, time and
// expires still come from `options` (its s3/unsigned_payload are ignored).
SigningStages ComputeHeaderSignature(const HttpRequest& request, const Credentials& creds,
                                     const SigningOptions& options, const SigV4Config& config);
void SignRequest(HttpRequest& request, const Credentials& creds, const SigningOptions& options,
                 const SigV4Config& config);
SigningStages ComputeQuerySignature(const HttpRequest& request, const Credentials& creds, const SigningOptions& options,
                                    const SigV4Config& config);
std::string PresignUrl(const HttpRequest& request, const Credentials& creds, const SigningOptions& options,
                       const SigV4Config& config);

}  // namespace dlq
