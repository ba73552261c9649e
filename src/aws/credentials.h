// AWS credentials and the provider interface. Providers are thread-safe.
// Secrets must never be logged or put in a Status message; use
// Credentials::Redacted() for display.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/status.h"

namespace dlq {

struct Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;             // empty for long-term keys
  std::optional<SystemTime> expiration;  // set for temporary credentials
  std::string source;                    // e.g. "environment", "shared-credentials-file (profile dev)"

  bool empty() const { return access_key_id.empty() || secret_access_key.empty(); }
  // "AKIA****WXYZ": safe to print.
  std::string RedactedKeyId() const;
};

class CredentialsProvider {
 public:
  virtual ~CredentialsProvider() = default;
  // Returns valid credentials, refreshing temporary ones before they expire.
  // kNotFound means this provider has none (the chain moves on); any other
  // error is a real failure the user must see.
  virtual Result<Credentials> GetCredentials() = 0;
  // Drops cached credentials (called after ExpiredToken) so the next
  // GetCredentials fetches fresh ones.
  virtual void Invalidate() {}
  virtual std::string Name() const = 0;
};

// Always returns the same credentials.
class StaticCredentialsProvider final : public CredentialsProvider {
 public:
  explicit StaticCredentialsProvider(Credentials c) : creds_(std::move(c)) {}
  Result<Credentials> GetCredentials() override { return creds_; }
  std::string Name() const override { return creds_.source.empty() ? "static" : creds_.source; }

 private:
  Credentials creds_;
};

}  // namespace dlq
