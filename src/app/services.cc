#include "app/services.h"

#include <fmt/format.h>
#include <unistd.h>

#include "aws/credential_providers.h"
#include "aws/curl_transport.h"
#include "common/strings.h"
#include "s3/local_object_store.h"
#include "s3/s3_object_store.h"

namespace dlq {
namespace {

// Temporary credentials from STS AssumeRole; wrap in CachingProvider.
class AssumeRoleProvider final : public CredentialsProvider {
 public:
  AssumeRoleProvider(StsClient& sts, AssumeRoleRequest request) : sts_(sts), request_(std::move(request)) {}
  Result<Credentials> GetCredentials() override {
    auto c = sts_.AssumeRole(request_);
    if (!c.ok()) return c.status().WithContext(fmt::format("assume role {}", request_.role_arn));
    c->source = fmt::format("assume-role ({})", request_.role_arn);
    return c;
  }
  std::string Name() const override { return "assume-role"; }

 private:
  StsClient& sts_;
  AssumeRoleRequest request_;
};

}  // namespace

Result<std::unique_ptr<AwsServices>> AwsServices::Create(const ServicesOptions& options, const Environment& env,
                                                         Clock& clock) {
  DLQ_RETURN_IF_ERROR(options.retry.Validate());
  std::unique_ptr<AwsServices> s(new AwsServices(clock));
  DLQ_ASSIGN_OR_RETURN(s->settings_, ResolveSettings(options.client, env));
  s->retry_ = options.retry;
  CurlTransportOptions topts;
  topts.connect_timeout = options.connect_timeout;
  topts.request_timeout = options.request_timeout;
  if (auto ca = env.GetNonEmpty("AWS_CA_BUNDLE")) topts.ca_bundle = *ca;
  DLQ_ASSIGN_OR_RETURN(auto transport, CurlTransport::Create(topts));
  s->transport_ = std::move(transport);
  s->credentials_ = MakeDefaultCredentialsChain(s->settings_, env, *s->transport_, clock);
  if (!options.role_arn.empty()) {
    if (!StartsWith(options.role_arn, "arn:")) {
      return InvalidArgument(fmt::format("role '{}' is not an IAM role ARN", options.role_arn));
    }
    s->source_credentials_ = std::move(s->credentials_);
    s->source_sts_ = std::make_unique<StsClient>(s->settings_.Endpoint("sts"), *s->transport_,
                                                 *s->source_credentials_, clock, options.retry);
    AssumeRoleRequest req;
    req.role_arn = options.role_arn;
    req.session_name = options.role_session_name;
    if (!options.external_id.empty()) req.external_id = options.external_id;
    s->credentials_ = std::make_unique<CachingProvider>(
        std::make_unique<AssumeRoleProvider>(*s->source_sts_, std::move(req)), clock);
  }

  s->sqs_aws_ = std::make_unique<AwsClient>(s->settings_.Endpoint("sqs"), *s->transport_, *s->credentials_, clock,
                                            options.retry);
  s->sqs_ = std::make_unique<SqsClient>(*s->sqs_aws_);
  s->s3_aws_ = std::make_unique<AwsClient>(s->settings_.Endpoint("s3"), *s->transport_, *s->credentials_, clock,
                                           options.retry);
  s->cw_aws_ = std::make_unique<AwsClient>(s->settings_.Endpoint("monitoring"), *s->transport_, *s->credentials_,
                                           clock, options.retry);
  s->cloudwatch_ = std::make_unique<CloudWatchClient>(*s->cw_aws_);
  s->sts_ = std::make_unique<StsClient>(s->settings_.Endpoint("sts"), *s->transport_, *s->credentials_, clock,
                                        options.retry);
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

void AwsServices::SetObserver(CallObserver observer) {
  sqs_aws_->SetObserver(observer);
  s3_aws_->SetObserver(observer);
  cw_aws_->SetObserver(observer);
}

std::string LocalHostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

Result<Destination> ParseDestination(std::string_view uri) {
  Destination d;
  d.uri = std::string(uri);
  auto trim_slashes = [](std::string_view s) {
    while (!s.empty() && s.front() == '/') s.remove_prefix(1);
    while (!s.empty() && s.back() == '/') s.remove_suffix(1);
    return std::string(s);
  };
  if (StartsWith(uri, "s3://")) {
    d.scheme = "s3";
    std::string_view rest = uri.substr(5);
    size_t slash = rest.find('/');
    d.bucket = std::string(rest.substr(0, slash));
    if (slash != std::string_view::npos) d.prefix = trim_slashes(rest.substr(slash + 1));
    if (d.bucket.empty()) return InvalidArgument(fmt::format("destination '{}' has no bucket (s3://BUCKET/PREFIX)", uri));
    return d;
  }
  if (StartsWith(uri, "file://")) {
    d.scheme = "file";
    d.root = std::string(uri.substr(7));
    if (d.root.empty() || d.root.front() != '/') {
      return InvalidArgument(fmt::format("destination '{}' must be an absolute path: file:///DIR", uri));
    }
    while (d.root.size() > 1 && d.root.back() == '/') d.root.pop_back();
    return d;
  }
  return InvalidArgument(fmt::format("destination '{}' must be s3://BUCKET/PREFIX or file:///DIR", uri));
}

Result<std::unique_ptr<ObjectStore>> OpenStore(const Destination& dest, AwsServices* services) {
  if (dest.scheme == "file") {
    // Nothing is created or checked here: CheckWritable() says what is wrong.
    return std::unique_ptr<ObjectStore>(std::make_unique<LocalObjectStore>(dest.root));
  }
  if (services == nullptr) return Internal("S3 destination without AWS services");
  return std::unique_ptr<ObjectStore>(std::make_unique<S3ObjectStore>(services->s3_for(dest.bucket), dest.bucket));
}

}  // namespace dlq
