#include "credentials/chain_provider.h"

#include <fmt/format.h>

#include "credentials/caching_provider.h"
#include "credentials/container_provider.h"
#include "credentials/environment_provider.h"
#include "credentials/profile_provider.h"
#include "credentials/web_identity_provider.h"

namespace dlq {

ChainProvider::ChainProvider(std::vector<std::unique_ptr<CredentialsProvider>> providers, std::string profile)
    : providers_(std::move(providers)), profile_(std::move(profile)) {}

Result<Credentials> ChainProvider::GetCredentials() {
  std::string checked;
  for (const auto& p : providers_) {
    auto r = p->GetCredentials();
    if (r.ok()) return r;
    if (r.status().code() != ErrorCode::kNotFound) return r.status().WithContext(p->Name());
    if (!checked.empty()) checked += ", ";
    checked += p->Name();
  }
  return Unauthenticated(fmt::format("no AWS credentials found: checked {} (profile {})", checked, profile_));
}

void ChainProvider::Invalidate() {
  for (const auto& p : providers_) p->Invalidate();
}

std::unique_ptr<CredentialsProvider> MakeDefaultCredentialsChain(const AwsSettings& settings, const Environment& env,
                                                                 HttpTransport& transport, Clock& clock,
                                                                 const CredentialsChainOptions& options) {
  std::vector<std::unique_ptr<CredentialsProvider>> providers;
  if (options.explicit_credentials) {
    Credentials c = *options.explicit_credentials;
    if (c.source.empty()) c.source = "explicit";
    providers.push_back(std::make_unique<StaticCredentialsProvider>(std::move(c)));
  }
  if (!settings.profile_from_option) providers.push_back(std::make_unique<EnvironmentProvider>(env));
  providers.push_back(std::make_unique<WebIdentityProvider>(env, settings.Endpoint("sts"), transport, clock));
  providers.push_back(std::make_unique<ProfileProvider>(settings, env, transport, clock));
  providers.push_back(std::make_unique<ContainerProvider>(env, transport));
  providers.push_back(std::make_unique<ImdsProvider>(env, transport, options.imds));
  auto chain = std::make_unique<ChainProvider>(std::move(providers), settings.profile);
  return std::make_unique<CachingProvider>(std::move(chain), clock, options.refresh_window);
}

}  // namespace dlq
