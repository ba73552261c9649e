#include "credentials/caching_provider.h"

namespace dlq {

CachingProvider::CachingProvider(std::unique_ptr<CredentialsProvider> inner, Clock& clock,
                                 std::chrono::seconds refresh_window)
    : inner_(std::move(inner)), clock_(clock), refresh_window_(refresh_window) {}

Result<Credentials> CachingProvider::GetCredentials() {
  MutexLock lock(mu_);
  SystemTime now = clock_.Now();
  if (cached_ && (!cached_->expiration || now + refresh_window_ < *cached_->expiration)) return *cached_;
  auto fresh = inner_->GetCredentials();
  if (!fresh.ok()) {
    if (cached_ && cached_->expiration && now < *cached_->expiration) return *cached_;
    return fresh.status();
  }
  cached_ = *fresh;
  return *cached_;
}

void CachingProvider::Invalidate() {
  MutexLock lock(mu_);
  cached_.reset();
  inner_->Invalidate();
}

}  // namespace dlq
