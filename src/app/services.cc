#include "app/services.h"

#include <fmt/format.h>
#include <unistd.h>

#include "aws/default_transport.h"
#include "aws/http_client_choice.h"
#include "common/aws_regions.h"
#include "common/strings.h"
#include "credentials/assume_role_provider.h"
#include "credentials/caching_provider.h"
#include "credentials/chain_provider.h"
#include "s3/local_object_store.h"
#include "s3/s3_object_store.h"

namespace dlq {
namespace {

// The environment without the variables that name a profile, so settings can
// be resolved past a profile that does not exist.
class WithoutProfileEnvironment final : public Environment {
 public:
  explicit WithoutProfileEnvironment(const Environment& base) : base_(base) {}
  std::optional<std::string> GetEnv(std::string_view name) const override {
    if (name == "AWS_PROFILE" || name == "AWS_DEFAULT_PROFILE") return std::nullopt;
    return base_.GetEnv(name);
  }

 private:
  const Environment& base_;
};

// The profile the options and environment name (nullopt: none named).
std::optional<std::string> NamedProfile(const ClientOptions& options, const Environment& env) {
  if (options.profile && !options.profile->empty()) return options.profile;
  if (auto v = env.GetNonEmpty("AWS_PROFILE")) return v;
  return env.GetNonEmpty("AWS_DEFAULT_PROFILE");
}

Status MissingProfile(const SharedConfig& shared, const std::string& name) {
  std::vector<std::string> names;
  for (const ConfigFile* f : {&shared.config, &shared.credentials}) {
    for (const auto& [n, section] : f->profiles) names.push_back(n);
  }
  std::string msg =
      fmt::format("profile '{}' not found in {} or {}", name, shared.config.path, shared.credentials.path);
  if (std::string best = ClosestMatch(name, names); !best.empty()) {
    msg += fmt::format("; did you mean '{}'?", best);
  } else if (names.empty()) {
    msg += " (neither file has any profile)";
  }
  return NotFound(std::move(msg));
}

}  // namespace

Status CheckKnownRegion(const AwsSettings& settings, const Environment& env) {
  if (IsKnownAwsRegion(settings.region)) return Status::Ok();
  bool all_custom = true;
  for (std::string_view service : {"sqs", "s3", "monitoring", "sts"}) all_custom &= settings.HasCustomEndpoint(service);
  if (all_custom || env.GetNonEmpty("DLQ_ARCHIVE_ALLOW_UNKNOWN_REGION") == "1") return Status::Ok();
  return CheckAwsRegion(settings.region, settings.region_source);
}

SettingsDiagnosis DiagnoseSettings(const ClientOptions& options, const Environment& env) {
  SettingsDiagnosis d;
  auto resolved = ResolveSettings(options, env);
  if (resolved.ok()) {
    d.region = CheckKnownRegion(*resolved, env);
    if (!d.region.ok()) resolved->region = std::string(kPlaceholderRegion), resolved->region_source = "placeholder";
    d.settings = std::move(*resolved);
    return d;
  }
  auto shared = LoadSharedConfig(env);
  if (!shared.ok()) {
    d.config = shared.status();
    return d;
  }
  ClientOptions masked = options;
  WithoutProfileEnvironment no_profile_env(env);
  const Environment* use_env = &env;
  if (auto named = NamedProfile(options, env); named && !shared->MergedProfile(*named)) {
    d.profile = MissingProfile(*shared, *named);
    masked.profile.reset();
    use_env = &no_profile_env;
  }
  auto second = ResolveSettings(masked, *use_env);
  if (second.ok()) {
    d.region = CheckKnownRegion(*second, env);
    if (!d.region.ok()) second->region = std::string(kPlaceholderRegion), second->region_source = "placeholder";
    d.settings = std::move(*second);
    return d;
  }
  // Whatever still fails: the region if a placeholder region resolves.
  ClientOptions with_region = masked;
  with_region.region = std::string(kPlaceholderRegion);
  auto third = ResolveSettings(with_region, *use_env);
  if (third.ok()) {
    d.region = second.status();
    third->region_source = "placeholder";
    d.settings = std::move(*third);
  } else {
    d.config = third.status();
  }
  return d;
}

Result<std::unique_ptr<AwsServices>> AwsServices::Create(const ServicesOptions& options, const Environment& env,
                                                         Clock& clock) {
  DLQ_ASSIGN_OR_RETURN(AwsSettings settings, ResolveSettings(options.client, env));
  DLQ_RETURN_IF_ERROR(CheckKnownRegion(settings, env));
  return Create(settings, options, env, clock);
}

Result<std::unique_ptr<AwsServices>> AwsServices::Create(const AwsSettings& settings, const ServicesOptions& options,
                                                         const Environment& env, Clock& clock) {
  DLQ_RETURN_IF_ERROR(options.retry.Validate());
  std::unique_ptr<AwsServices> s(new AwsServices(clock));
  s->settings_ = settings;
  s->retry_ = options.retry;
  TransportSettings topts;
  topts.connect_timeout = options.connect_timeout;
  topts.request_timeout = options.request_timeout;
  if (auto ca = env.GetNonEmpty("AWS_CA_BUNDLE")) topts.ca_bundle = *ca;
  DLQ_ASSIGN_OR_RETURN(topts.client, ChooseHttpClient(env));
  topts.proxy_variable_http = ProxyVariableFor(env, "http");
  topts.proxy_variable_https = ProxyVariableFor(env, "https");
  DLQ_ASSIGN_OR_RETURN(s->transport_, MakeDefaultTransport(topts));
  s->credentials_ = MakeDefaultCredentialsChain(s->settings_, env, *s->transport_, clock);
  if (!options.role_arn.empty()) {
    if (!StartsWith(options.role_arn, "arn:")) {
      return InvalidArgument(fmt::format("role '{}' is not an IAM role ARN", options.role_arn));
    }
    AssumeRoleProvider::Options assume;
    assume.request.role_arn = options.role_arn;
    assume.request.session_name = options.role_session_name;
    if (!options.external_id.empty()) assume.request.external_id = options.external_id;
    assume.retry = options.retry;
    s->credentials_ = std::make_unique<CachingProvider>(
        std::make_unique<AssumeRoleProvider>(std::move(s->credentials_), s->settings_.Endpoint("sts"), *s->transport_,
                                             clock, std::move(assume)),
        clock);
  }

  s->sqs_aws_ =
      std::make_unique<AwsClient>(s->settings_.Endpoint("sqs"), *s->transport_, *s->credentials_, clock, options.retry);
  s->sqs_ = std::make_unique<SqsClient>(*s->sqs_aws_);
  s->s3_aws_ =
      std::make_unique<AwsClient>(s->settings_.Endpoint("s3"), *s->transport_, *s->credentials_, clock, options.retry);
  s->cw_aws_ = std::make_unique<AwsClient>(s->settings_.Endpoint("monitoring"), *s->transport_, *s->credentials_, clock,
                                           options.retry);
  s->cloudwatch_ = std::make_unique<CloudWatchClient>(*s->cw_aws_);
  s->logs_aws_ = std::make_unique<AwsClient>(s->settings_.Endpoint("logs"), *s->transport_, *s->credentials_, clock,
                                             LogsRetryOptions());
  s->logs_ = std::make_unique<AwsLogsClient>(*s->logs_aws_);
  s->lambda_aws_ = std::make_unique<AwsClient>(s->settings_.Endpoint("lambda"), *s->transport_, *s->credentials_, clock,
                                               options.retry);
  s->lambda_ = std::make_unique<AwsLambdaApi>(*s->lambda_aws_);
  s->sns_aws_ =
      std::make_unique<AwsClient>(s->settings_.Endpoint("sns"), *s->transport_, *s->credentials_, clock, options.retry);
  s->sns_ = std::make_unique<AwsSnsApi>(*s->sns_aws_);
  s->events_aws_ = std::make_unique<AwsClient>(s->settings_.Endpoint("events"), *s->transport_, *s->credentials_, clock,
                                               options.retry);
  s->events_ = std::make_unique<AwsEventsApi>(*s->events_aws_);
  s->sts_ =
      std::make_unique<StsClient>(s->settings_.Endpoint("sts"), *s->transport_, *s->credentials_, clock, options.retry);
  S3ClientOptions virt;
  virt.path_style = false;
  S3ClientOptions path;
  path.path_style = true;
  s->s3_virtual_ = std::make_unique<S3Client>(*s->s3_aws_, virt);
  s->s3_path_ = std::make_unique<S3Client>(*s->s3_aws_, path);
  return s;
}

S3Client& AwsServices::s3_for(const std::string& bucket) {
  return settings_.S3Style(bucket) == S3AddressingStyle::kPath ? *s3_path_ : *s3_virtual_;
}

void AwsServices::SetObserver(const CallObserver& observer) {
  sqs_aws_->SetObserver(observer);
  s3_aws_->SetObserver(observer);
  cw_aws_->SetObserver(observer);
  logs_aws_->SetObserver(observer);
  lambda_aws_->SetObserver(observer);
  sns_aws_->SetObserver(observer);
  events_aws_->SetObserver(observer);
}

Result<FileModes> FileModesFromEnv(const Environment& env) {
  auto text = env.GetNonEmpty("DLQ_FILE_MODE");
  if (!text) return FileModes{};
  Result<FileModes> modes = ParseFileModes(*text);
  if (!modes.ok()) return modes.status().WithContext("DLQ_FILE_MODE");
  return modes;
}

std::string LocalHostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

Result<std::unique_ptr<ObjectStore>> OpenStore(const Destination& dest, AwsServices* services, const FileModes& modes) {
  if (dest.scheme == "file") {
    // Nothing is created or checked here: CheckWritable() says what is wrong.
    return std::unique_ptr<ObjectStore>(
        std::make_unique<LocalObjectStore>(dest.root, LocalObjectStore::kDefaultPageSize, nullptr, modes));
  }
  if (services == nullptr) return Internal("S3 destination without AWS services");
  return std::unique_ptr<ObjectStore>(std::make_unique<S3ObjectStore>(services->s3_for(dest.bucket), dest.bucket));
}

}  // namespace dlq
