#include "credentials/assume_role_provider.h"

#include <fmt/format.h>

namespace dlq {

AssumeRoleProvider::AssumeRoleProvider(std::unique_ptr<CredentialsProvider> source, ServiceEndpoint sts,
                                       HttpTransport& transport, Clock& clock, Options options)
    : source_(std::move(source)),
      sts_(std::move(sts), transport, *source_, clock, options.retry),
      options_(std::move(options)) {}

Result<Credentials> AssumeRoleProvider::GetCredentials() {
  const std::string& role = options_.request.role_arn;
  auto creds = sts_.AssumeRole(options_.request);
  if (options_.profile.empty()) {
    if (!creds.ok()) return creds.status().WithContext(fmt::format("assume role {}", role));
    creds->source = fmt::format("assume-role ({})", role);
  } else {
    if (!creds.ok())
      return creds.status().WithContext(fmt::format("assume role {} (profile {})", role, options_.profile));
    creds->source = fmt::format("assume-role (profile {}, role {})", options_.profile, role);
  }
  return creds;
}

}  // namespace dlq
