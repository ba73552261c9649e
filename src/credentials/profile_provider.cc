#include "credentials/profile_provider.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "common/strings.h"
#include "credentials/assume_role_provider.h"
#include "credentials/container_provider.h"
#include "credentials/credential_process.h"
#include "credentials/environment_provider.h"
#include "credentials/imds_provider.h"
#include "credentials/provider_util.h"
#include "credentials/sso_provider.h"
#include "credentials/web_identity_provider.h"

namespace dlq {

ProfileProvider::ProfileProvider(AwsSettings settings, const Environment& env, HttpTransport& transport, Clock& clock)
    : settings_(std::move(settings)), env_(env), transport_(transport), clock_(clock) {}

std::string ProfileProvider::Name() const {
  return fmt::format("shared files {} and {}", settings_.shared.credentials.path, settings_.shared.config.path);
}

Result<Credentials> ProfileProvider::GetCredentials() {
  std::vector<std::string> chain;
  return Resolve(settings_.profile, chain);
}

Result<Credentials> ProfileProvider::Resolve(const std::string& profile, std::vector<std::string>& chain) {
  std::optional<ConfigSection> section = settings_.shared.MergedProfile(profile);
  if (!section) {
    if (chain.empty()) return NotFound(fmt::format("profile {} is not in the shared files", profile));
    return InvalidArgument(fmt::format("source_profile {} of profile {} not found in {} or {}", profile, chain.back(),
                                       settings_.shared.config.path, settings_.shared.credentials.path));
  }
  chain.push_back(profile);
  auto role_arn = section->Get("role_arn");
  // A profile naming itself as source_profile uses its own static keys (as the AWS CLI does).
  bool self_source =
      section->Get("source_profile") == profile && chain.size() > 1 && chain[chain.size() - 2] == profile;
  if (role_arn && !role_arn->empty() && !self_source) return AssumeRoleFor(profile, *section, chain);
  if (IsSsoProfile(*section)) {  // before static keys, in the AWS CLI's order
    DLQ_ASSIGN_OR_RETURN(SsoProfile sso, ResolveSsoProfile(profile, *section, settings_, env_));
    return SsoProvider(std::move(sso), transport_, clock_).GetCredentials();
  }

  auto id = section->Get("aws_access_key_id");
  auto secret = section->Get("aws_secret_access_key");
  if ((id && !id->empty()) || (secret && !secret->empty())) {
    if (!id || id->empty()) {
      return InvalidArgument(fmt::format("profile {} has aws_secret_access_key but no aws_access_key_id", profile));
    }
    if (!secret || secret->empty()) {
      return InvalidArgument(fmt::format("profile {} has aws_access_key_id but no aws_secret_access_key", profile));
    }
    Credentials c;
    c.access_key_id = *id;
    c.secret_access_key = *secret;
    auto token = section->Get("aws_session_token");
    if (!token || token->empty()) token = section->Get("aws_security_token");
    c.session_token = token.value_or("");
    const ConfigSection* in_credentials = settings_.shared.credentials.FindProfile(profile);
    bool from_credentials = in_credentials != nullptr && in_credentials->Get("aws_access_key_id").has_value();
    c.source =
        fmt::format("{} (profile {})", from_credentials ? "shared-credentials-file" : "shared-config-file", profile);
    return c;
  }
  if (auto process = section->Get("credential_process"); process && !process->empty()) {
    return RunCredentialProcess(*process, profile);
  }
  if (section->Get("sso_session") || section->Get("sso_start_url")) {
    // SSO settings without sso_account_id and sso_role_name: say what is missing.
    return ResolveSsoProfile(profile, *section, settings_, env_).status();
  }
  if (chain.size() > 1) {
    return InvalidArgument(
        fmt::format("source_profile {} (of profile {}) has no credentials", profile, chain[chain.size() - 2]));
  }
  return NotFound(fmt::format("profile {} has no credentials", profile));
}

Result<Credentials> ProfileProvider::AssumeRoleFor(const std::string& profile, const ConfigSection& section,
                                                   std::vector<std::string>& chain) {
  std::string role_arn = *section.Get("role_arn");
  auto session_name = section.Get("role_session_name");
  if (auto token_file = section.Get("web_identity_token_file"); token_file && !token_file->empty()) {
    WebIdentityProvider::Config cfg;
    cfg.token_file = ExpandHome(*token_file, env_);
    cfg.role_arn = role_arn;
    cfg.session_name = session_name.value_or("");
    cfg.source = fmt::format("web-identity (profile {})", profile);
    return WebIdentityProvider(std::move(cfg), settings_.Endpoint("sts"), transport_, clock_).GetCredentials();
  }
  if (section.Get("mfa_serial")) {
    return InvalidArgument(
        fmt::format("assume role {} (profile {}): mfa_serial is set, but dlq-archive cannot prompt for an MFA code",
                    role_arn, profile));
  }
  auto source_profile = section.Get("source_profile");
  auto credential_source = section.Get("credential_source");
  if (source_profile && credential_source) {
    return InvalidArgument(
        fmt::format("profile {} sets both source_profile and credential_source; set only one", profile));
  }
  Credentials source;
  if (source_profile) {
    std::string src(Trim(*source_profile));
    bool self = src == profile;
    if (!self && std::find(chain.begin(), chain.end(), src) != chain.end()) {
      std::string path;
      for (const auto& p : chain) path += p + " -> ";
      return InvalidArgument(fmt::format("source_profile cycle: {}{}", path, src));
    }
    DLQ_ASSIGN_OR_RETURN(source, Resolve(src, chain));
  } else if (credential_source) {
    DLQ_ASSIGN_OR_RETURN(source, FromCredentialSource(profile, Trim(*credential_source)));
  } else {
    return InvalidArgument(fmt::format(
        "profile {} has role_arn but no source_profile, credential_source or web_identity_token_file", profile));
  }

  AssumeRoleProvider::Options options;
  options.profile = profile;
  options.request.role_arn = role_arn;
  options.request.session_name = session_name && !session_name->empty() ? *session_name : DefaultSessionName(clock_);
  if (auto ext = section.Get("external_id"); ext && !ext->empty()) options.request.external_id = *ext;
  if (auto d = section.Get("duration_seconds"); d && !d->empty()) {
    int64_t secs = 0;
    std::string_view text = Trim(*d);
    auto r = std::from_chars(text.data(), text.data() + text.size(), secs);
    if (r.ec != std::errc() || r.ptr != text.data() + text.size() || secs < 900 || secs > 43200) {
      return InvalidArgument(
          fmt::format("profile {}: duration_seconds '{}' must be a number from 900 to 43200", profile, text));
    }
    options.request.duration = std::chrono::seconds(secs);
  }
  AssumeRoleProvider assume(std::make_unique<StaticCredentialsProvider>(std::move(source)), settings_.Endpoint("sts"),
                            transport_, clock_, std::move(options));
  return assume.GetCredentials();
}

Result<Credentials> ProfileProvider::FromCredentialSource(const std::string& profile, std::string_view source) {
  Result<Credentials> r = NotFound("");
  if (source == "Environment") {
    r = EnvironmentProvider(env_).GetCredentials();
  } else if (source == "Ec2InstanceMetadata") {
    r = ImdsProvider(env_, transport_).GetCredentials();
  } else if (source == "EcsContainer") {
    r = ContainerProvider(env_, transport_).GetCredentials();
  } else {
    return InvalidArgument(
        fmt::format("profile {}: credential_source '{}' is not one of Environment, Ec2InstanceMetadata, EcsContainer",
                    profile, source));
  }
  if (!r.ok()) {
    Status s = r.status().WithContext(fmt::format("credential_source {} of profile {}", source, profile));
    // The profile asked for this source, so its absence is a configuration error.
    return s.code() == ErrorCode::kNotFound ? InvalidArgument(s.message()) : s;
  }
  return r;
}

}  // namespace dlq
