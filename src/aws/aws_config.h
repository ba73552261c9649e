// Region, profile, endpoint and S3 addressing resolution, as the AWS CLI
// does it: explicit options first, then the environment, then the profile in
// the shared config files. Resolution reads the environment only through the
// injected Environment. AwsSettings is a plain value, safe to copy and to
// read from many threads.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "aws/aws_client.h"
#include "aws/config_file.h"
#include "aws/environment.h"
#include "common/status.h"

namespace dlq {

// What the user passed on the command line (--region, --profile, --endpoint-url).
struct ClientOptions {
  std::optional<std::string> region;
  std::optional<std::string> profile;
  std::optional<std::string> endpoint_url;
};

enum class S3AddressingStyle { kVirtualHosted, kPath };

struct AwsSettings {
  std::string profile = "default";
  // True when the profile came from --profile: like the AWS CLI, the
  // credential chain then skips environment credentials.
  bool profile_from_option = false;
  std::string region;
  std::string region_source;                     // "--region", "AWS_REGION", "AWS_DEFAULT_REGION", "profile dev"
  SharedConfig shared;                           // both files as loaded
  std::optional<ConfigSection> profile_section;  // merged view; nullopt when no file has the profile
  // Endpoint overrides by signing name ("sqs", "s3", "monitoring", "sts", "logs", "lambda", "sns",
  // "events"), already resolved from --endpoint-url, AWS_ENDPOINT_URL_<SERVICE> (CloudWatch Logs:
  // AWS_ENDPOINT_URL_CLOUDWATCH_LOGS, then AWS_ENDPOINT_URL_LOGS; EventBridge:
  // AWS_ENDPOINT_URL_EVENTBRIDGE), the services section (keys "cloudwatch_logs", "lambda", "sns",
  // "eventbridge"), AWS_ENDPOINT_URL and the profile's endpoint_url, in
  // that order; without trailing '/'. "portal.sso" (the IAM Identity
  // Center portal) and "oidc" (its token refresh) are resolved the same way except that
  // --endpoint-url does not apply.
  std::map<std::string, std::string, std::less<>> endpoint_overrides;
  std::optional<std::string> s3_addressing_style;  // "path", "virtual" or "auto" when configured

  // The endpoint for a service by signing name; the AWS default when no override is set.
  ServiceEndpoint Endpoint(std::string_view service) const;
  bool HasCustomEndpoint(std::string_view service) const;
  // Path-style when configured so, when S3 has a custom endpoint, or when the bucket name is not
  // usable as a DNS label (virtual-hosted otherwise).
  S3AddressingStyle S3Style(std::string_view bucket) const;
};

// Resolves everything. Fails on an unreadable or malformed config file, an explicitly named
// profile that does not exist, an invalid endpoint URL, or when no region is configured
// ("no region: pass --region, set AWS_REGION or add region to profile X").
Result<AwsSettings> ResolveSettings(const ClientOptions& options, const Environment& env);

// The AWS default endpoint, e.g. "https://sqs.eu-west-1.amazonaws.com" or
// "https://s3.cn-north-1.amazonaws.com.cn".
std::string DefaultEndpoint(std::string_view service, std::string_view region);

// True when the bucket name can be a virtual-hosted DNS label (3-63 chars of a-z 0-9 '-',
// starting and ending alphanumeric, no dots since they break the TLS wildcard certificate).
bool IsDnsCompatibleBucket(std::string_view bucket);

}  // namespace dlq
