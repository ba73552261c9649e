#include "credentials/web_identity_provider.h"

#include "credentials/provider_util.h"
#include "sts/sts_client.h"

namespace dlq {

WebIdentityProvider::WebIdentityProvider(const Environment& env, ServiceEndpoint sts, HttpTransport& transport,
                                         Clock& clock)
    : env_(&env), sts_(std::move(sts)), transport_(transport), clock_(clock) {}

WebIdentityProvider::WebIdentityProvider(Config config, ServiceEndpoint sts, HttpTransport& transport, Clock& clock)
    : config_(std::move(config)), sts_(std::move(sts)), transport_(transport), clock_(clock) {}

Result<Credentials> WebIdentityProvider::GetCredentials() {
  Config cfg;
  if (config_) {
    cfg = *config_;
  } else {
    auto file = env_->GetNonEmpty("AWS_WEB_IDENTITY_TOKEN_FILE");
    if (!file) return NotFound("AWS_WEB_IDENTITY_TOKEN_FILE is not set");
    auto role = env_->GetNonEmpty("AWS_ROLE_ARN");
    if (!role) return InvalidArgument("AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not");
    cfg.token_file = *file;
    cfg.role_arn = *role;
    cfg.session_name = env_->GetNonEmpty("AWS_ROLE_SESSION_NAME").value_or("");
  }
  DLQ_ASSIGN_OR_RETURN(std::string token, ReadTokenFile(cfg.token_file, "web identity token file"));
  AssumeRoleWithWebIdentityRequest req;
  req.role_arn = cfg.role_arn;
  req.session_name = cfg.session_name.empty() ? DefaultSessionName(clock_) : cfg.session_name;
  req.token = std::move(token);
  auto creds = AssumeRoleWithWebIdentity(sts_, transport_, clock_, req);
  if (!creds.ok()) return creds.status().WithContext("web identity");
  creds->source = cfg.source;
  return creds;
}

}  // namespace dlq
