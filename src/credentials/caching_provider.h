// A cache in front of any provider. Thread-safe; fetches are serialized. The
// clock must outlive it.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "aws/credentials.h"
#include "common/clock.h"
#include "common/mutex.h"

namespace dlq {

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

}  // namespace dlq
