#include "aws/credential_providers.h"

#include <fmt/format.h>
#include <simdjson.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/strings.h"
#include "common/time_util.h"
#include "sts/sts_client.h"

namespace dlq {
namespace {

constexpr std::string_view kContainerHost = "http://169.254.170.2";
constexpr std::string_view kImdsDefault = "http://169.254.169.254";
constexpr size_t kMaxProcessOutput = 1 << 20;

bool IsTrue(const std::optional<std::string>& v) {
  return v && IEquals(Trim(*v), "true");
}

std::string DefaultSessionName(Clock& clock) {
  return fmt::format("dlq-archive-{}", ToUnixSeconds(clock.Now()));
}

// Reads a small file (token files). Errors name the file, never its content.
Result<std::string> ReadTokenFile(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument(fmt::format("cannot read {} {}: {}", what, path, std::strerror(errno)));
  std::ostringstream buf;
  buf << in.rdbuf();
  std::string token(Trim(buf.str()));
  if (token.empty()) return InvalidArgument(fmt::format("{} {} is empty", what, path));
  return token;
}

// Fields of a credentials JSON document beyond the credentials themselves.
struct JsonExtras {
  std::optional<int64_t> version;   // "Version" (credential_process)
  std::optional<std::string> code;  // "Code" (IMDS)
};

std::optional<std::string> JsonString(simdjson::dom::object& obj, std::string_view name) {
  std::string_view v;
  if (obj[name].get_string().get(v) != simdjson::SUCCESS) return std::nullopt;
  return std::string(v);
}

// Parses {"AccessKeyId", "SecretAccessKey", <token_field>, "Expiration"}. `what` names the
// source for errors; the body itself never appears in them.
Result<Credentials> ParseCredentialsJson(std::string_view body, std::string_view token_field, std::string_view what,
                                         JsonExtras* extras = nullptr) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(body);
  simdjson::dom::object obj;
  if (parser.parse(padded).get_object().get(obj) != simdjson::SUCCESS) {
    return Unauthenticated(fmt::format("{}: response is not a JSON object", what));
  }
  Credentials c;
  c.access_key_id = JsonString(obj, "AccessKeyId").value_or("");
  c.secret_access_key = JsonString(obj, "SecretAccessKey").value_or("");
  c.session_token = JsonString(obj, token_field).value_or("");
  if (c.empty()) return Unauthenticated(fmt::format("{}: response lacks AccessKeyId or SecretAccessKey", what));
  if (auto exp = JsonString(obj, "Expiration"); exp && !exp->empty()) {
    auto t = ParseIso8601(Trim(*exp));
    if (!t) return Unauthenticated(fmt::format("{}: unreadable Expiration '{}'", what, *exp));
    c.expiration = *t;
  }
  if (extras != nullptr) {
    int64_t version = 0;
    if (obj["Version"].get_int64().get(version) == simdjson::SUCCESS) extras->version = version;
    extras->code = JsonString(obj, "Code");
  }
  return c;
}

Status HttpStatusError(int status, std::string_view what) {
  std::string m = fmt::format("{}: HTTP {}", what, status);
  if (status == 401 || status == 403) return Unauthenticated(m);
  if (status == 429) return Throttled(m);
  if (status >= 500) return Unavailable(m);
  return Internal(m);
}

bool IsAllowedContainerHost(const Url& url) {
  if (url.scheme == "https") return true;
  const std::string& h = url.host;
  if (h == "localhost" || h == "[::1]" || h == "169.254.170.2" || h == "169.254.170.23" ||
      IEquals(h, "[fd00:ec2::23]")) {
    return true;
  }
  return StartsWith(h, "127.") && std::count(h.begin(), h.end(), '.') == 3 &&
         h.find_first_not_of("0123456789.") == std::string::npos;
}

}  // namespace

// ---------------------------------------------------------------------------- environment

Result<Credentials> EnvironmentProvider::GetCredentials() {
  auto id = env_.GetNonEmpty("AWS_ACCESS_KEY_ID");
  if (!id) id = env_.GetNonEmpty("AWS_ACCESS_KEY");
  auto secret = env_.GetNonEmpty("AWS_SECRET_ACCESS_KEY");
  if (!secret) secret = env_.GetNonEmpty("AWS_SECRET_KEY");
  if (!id && !secret) return NotFound("no AWS_ACCESS_KEY_ID in the environment");
  if (!id) return InvalidArgument("AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not");
  if (!secret) return InvalidArgument("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
  Credentials c;
  c.access_key_id = *id;
  c.secret_access_key = *secret;
  auto token = env_.GetNonEmpty("AWS_SESSION_TOKEN");
  if (!token) token = env_.GetNonEmpty("AWS_SECURITY_TOKEN");
  c.session_token = token.value_or("");
  if (auto exp = env_.GetNonEmpty("AWS_CREDENTIAL_EXPIRATION")) {
    auto t = ParseIso8601(Trim(*exp));
    if (!t) return InvalidArgument(fmt::format("AWS_CREDENTIAL_EXPIRATION '{}' is not an ISO-8601 time", *exp));
    c.expiration = *t;
  }
  c.source = "environment";
  return c;
}

// ---------------------------------------------------------------------------- web identity

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

// ---------------------------------------------------------------------------- credential_process

Result<Credentials> RunCredentialProcess(const std::string& command, std::string_view profile) {
  std::string what = fmt::format("credential_process of profile {}", profile);
  if (Trim(command).empty()) return InvalidArgument(what + " is empty");
  std::fflush(nullptr);
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return Internal(fmt::format("{}: cannot start /bin/sh: {}", what, std::strerror(errno)));
  std::string out;
  char buf[4096];
  size_t n = 0;
  bool too_big = false;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) {
    if (out.size() + n > kMaxProcessOutput) {
      too_big = true;
      continue;  // drain so the child can exit
    }
    out.append(buf, n);
  }
  int status = ::pclose(pipe);
  if (status == -1) return Internal(fmt::format("{}: cannot wait for the process: {}", what, std::strerror(errno)));
  if (WIFSIGNALED(status)) {
    return Unauthenticated(fmt::format("{} was killed by signal {}", what, WTERMSIG(status)));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    int code = WEXITSTATUS(status);
    return Unauthenticated(fmt::format("{} exited with status {}{} (its output is not shown as it may hold secrets)",
                                       what, code, code == 127 ? ", command not found" : ""));
  }
  if (too_big) return Unauthenticated(fmt::format("{}: output is larger than 1 MiB", what));
  JsonExtras extras;
  DLQ_ASSIGN_OR_RETURN(Credentials c, ParseCredentialsJson(out, "SessionToken", what, &extras));
  if (extras.version != 1) {
    return Unauthenticated(fmt::format("{}: output must have \"Version\": 1", what));
  }
  c.source = fmt::format("credential-process (profile {})", profile);
  return c;
}

// ---------------------------------------------------------------------------- profile

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
    return InvalidArgument(fmt::format(
        "profile {} uses IAM Identity Center (SSO), which dlq-archive does not support; run "
        "`aws configure export-credentials --profile {} --format env` and pass the result in the environment",
        profile, profile));
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
  std::string context = fmt::format("assume role {} (profile {})", role_arn, profile);
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
        fmt::format("{}: mfa_serial is set, but dlq-archive cannot prompt for an MFA code", context));
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

  AssumeRoleRequest req;
  req.role_arn = role_arn;
  req.session_name = session_name && !session_name->empty() ? *session_name : DefaultSessionName(clock_);
  if (auto ext = section.Get("external_id"); ext && !ext->empty()) req.external_id = *ext;
  if (auto d = section.Get("duration_seconds"); d && !d->empty()) {
    std::string_view text = Trim(*d);
    const int64_t secs = ParseInt64(text).value_or(-1);
    if (secs < 900 || secs > 43200) {
      return InvalidArgument(
          fmt::format("profile {}: duration_seconds '{}' must be a number from 900 to 43200", profile, text));
    }
    req.duration = std::chrono::seconds(secs);
  }
  StaticCredentialsProvider source_provider(std::move(source));
  StsClient sts(settings_.Endpoint("sts"), transport_, source_provider, clock_);
  auto creds = sts.AssumeRole(req);
  if (!creds.ok()) return creds.status().WithContext(context);
  creds->source = fmt::format("assume-role (profile {}, role {})", profile, role_arn);
  return creds;
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

// ---------------------------------------------------------------------------- container

Result<Credentials> ContainerProvider::GetCredentials() {
  HttpRequest req;
  req.method = "GET";
  req.timeout = std::chrono::seconds(2);
  if (auto rel = env_.GetNonEmpty("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")) {
    req.url = std::string(kContainerHost) + (StartsWith(*rel, "/") ? "" : "/") + *rel;
  } else if (auto full = env_.GetNonEmpty("AWS_CONTAINER_CREDENTIALS_FULL_URI")) {
    auto url = ParseUrl(*full);
    if (!url.ok()) return url.status().WithContext("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    if (!IsAllowedContainerHost(*url)) {
      return InvalidArgument(
          fmt::format("AWS_CONTAINER_CREDENTIALS_FULL_URI host {} is not allowed: use https, a loopback address, "
                      "169.254.170.2 or 169.254.170.23",
                      url->host));
    }
    req.url = *full;
    std::optional<std::string> token;
    if (auto file = env_.GetNonEmpty("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")) {
      DLQ_ASSIGN_OR_RETURN(std::string t, ReadTokenFile(*file, "container authorization token file"));
      token = std::move(t);
    } else {
      token = env_.GetNonEmpty("AWS_CONTAINER_AUTHORIZATION_TOKEN");
    }
    if (token) {
      if (token->find_first_of("\r\n") != std::string::npos) {
        return InvalidArgument("container authorization token contains a line break");
      }
      req.headers.emplace_back("Authorization", *token);
    }
  } else {
    return NotFound("no AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or AWS_CONTAINER_CREDENTIALS_FULL_URI");
  }
  req.headers.emplace_back("Accept", "application/json");
  std::string what = fmt::format("container credentials from {}", req.url);
  Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto resp = transport_.Send(req);
    if (!resp.ok()) {
      last = resp.status().WithContext(what);
      if (last.retryable()) continue;
      return last;
    }
    if (resp->status != 200) {
      last = HttpStatusError(resp->status, what);
      if (last.retryable()) continue;
      return last;
    }
    DLQ_ASSIGN_OR_RETURN(Credentials c, ParseCredentialsJson(resp->body, "Token", what));
    c.source = "container";
    return c;
  }
  return last;
}

// ---------------------------------------------------------------------------- IMDS

ImdsProvider::ImdsProvider(const Environment& env, HttpTransport& transport, Options options)
    : env_(env), transport_(transport), options_(options) {}

Result<HttpResponse> ImdsProvider::Send(HttpRequest request) {
  request.timeout = options_.timeout;
  Result<HttpResponse> r = Unavailable("IMDS: no attempt made");
  for (int attempt = 0; attempt < std::max(1, options_.attempts); ++attempt) {
    r = transport_.Send(request);
    if (r.ok() && r->status < 500) return r;
  }
  return r;
}

Result<Credentials> ImdsProvider::GetCredentials() {
  if (IsTrue(env_.GetNonEmpty("AWS_EC2_METADATA_DISABLED"))) {
    return NotFound("EC2 instance metadata is disabled by AWS_EC2_METADATA_DISABLED");
  }
  std::string base = env_.GetNonEmpty("AWS_EC2_METADATA_SERVICE_ENDPOINT").value_or(std::string(kImdsDefault));
  while (!base.empty() && base.back() == '/') base.pop_back();

  HttpRequest token_req;
  token_req.method = "PUT";
  token_req.url = base + "/latest/api/token";
  token_req.headers.emplace_back("X-aws-ec2-metadata-token-ttl-seconds", "21600");
  auto token_resp = Send(token_req);
  if (!token_resp.ok()) return NotFound(fmt::format("EC2 instance metadata not reachable at {}", base));
  std::string token;
  if (token_resp->status == 200) {
    token = std::string(Trim(token_resp->body));
  } else if (token_resp->status == 403 || token_resp->status == 404 || token_resp->status == 405) {
    if (IsTrue(env_.GetNonEmpty("AWS_EC2_METADATA_V1_DISABLED"))) {
      return Unauthenticated(
          fmt::format("IMDSv2 token request failed with HTTP {} and IMDSv1 is disabled", token_resp->status));
    }
  } else {
    return HttpStatusError(token_resp->status, "IMDS token request");
  }

  auto get = [&](const std::string& path) {
    HttpRequest r;
    r.method = "GET";
    r.url = base + path;
    if (!token.empty()) r.headers.emplace_back("X-aws-ec2-metadata-token", token);
    return Send(std::move(r));
  };
  constexpr std::string_view kCredsPath = "/latest/meta-data/iam/security-credentials/";
  auto roles = get(std::string(kCredsPath));
  if (!roles.ok()) return NotFound(fmt::format("EC2 instance metadata not reachable at {}", base));
  if (roles->status == 404) return NotFound("no IAM role is attached to this EC2 instance");
  if (roles->status != 200) return HttpStatusError(roles->status, "IMDS role lookup");
  std::string_view list = roles->body;
  std::string role(Trim(list.substr(0, list.find('\n'))));
  if (role.empty()) return NotFound("no IAM role is attached to this EC2 instance");

  std::string what = fmt::format("IMDS credentials for role {}", role);
  auto creds_resp = get(std::string(kCredsPath) + UriEncode(role));
  if (!creds_resp.ok()) return creds_resp.status().WithContext(what);
  if (creds_resp->status != 200) return HttpStatusError(creds_resp->status, what);
  JsonExtras extras;
  DLQ_ASSIGN_OR_RETURN(Credentials c, ParseCredentialsJson(creds_resp->body, "Token", what, &extras));
  if (extras.code && *extras.code != "Success") {
    return Unauthenticated(fmt::format("{}: Code {}", what, *extras.code));
  }
  c.source = "imds";
  return c;
}

// ---------------------------------------------------------------------------- caching

CachingProvider::CachingProvider(std::unique_ptr<CredentialsProvider> inner, Clock& clock,
                                 std::chrono::seconds refresh_window)
    : inner_(std::move(inner)), clock_(clock), refresh_window_(refresh_window) {}

Result<Credentials> CachingProvider::GetCredentials() {
  std::lock_guard lock(mu_);
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
  std::lock_guard lock(mu_);
  cached_.reset();
  inner_->Invalidate();
}

// ---------------------------------------------------------------------------- chain

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
