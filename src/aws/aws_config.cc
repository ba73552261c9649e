#include "aws/aws_config.h"

#include <fmt/format.h>

#include <array>

#include "aws/http.h"
#include "common/strings.h"

namespace dlq {
namespace {

struct ServiceIds {
  std::string_view signing_name;  // "monitoring"; for SSO the endpoint prefix, "portal.sso"
  std::string_view config_key;    // services section key: "cloudwatch"
  std::string_view env_suffix;    // AWS_ENDPOINT_URL_CLOUDWATCH
  // --endpoint-url applies (the AWS CLI's option never redirects the SSO
  // portal, which the credential provider calls, not the command).
  bool follows_endpoint_option = true;
  // A second variable read after AWS_ENDPOINT_URL_<env_suffix>, for a
  // service better known by its signing name (AWS_ENDPOINT_URL_LOGS).
  std::string_view env_alias = {};
};

// Keys and suffixes from the SDKs' table of service-specific endpoints (the
// serviceId upper-cased, spaces to '_': "CloudWatch Logs" -> CLOUDWATCH_LOGS).
constexpr std::array<ServiceIds, 10> kServices{{
    {"sqs", "sqs", "SQS"},
    {"s3", "s3", "S3"},
    {"monitoring", "cloudwatch", "CLOUDWATCH"},
    {"sts", "sts", "STS"},
    {"logs", "cloudwatch_logs", "CLOUDWATCH_LOGS", true, "LOGS"},
    {"lambda", "lambda", "LAMBDA"},
    {"sns", "sns", "SNS"},
    {"events", "eventbridge", "EVENTBRIDGE"},
    {"portal.sso", "sso", "SSO", false},
    {"oidc", "sso_oidc", "SSO_OIDC", false},
}};

bool IsValidRegion(std::string_view region) {
  if (region.empty() || region.size() > 63 || region.front() == '-' || region.back() == '-') return false;
  for (char c : region) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool IsTrue(const std::optional<std::string>& v) {
  return v && IEquals(Trim(*v), "true");
}

Result<std::string> CheckedEndpoint(std::string_view url, std::string_view origin) {
  std::string_view trimmed = Trim(url);
  auto parsed = ParseUrl(trimmed);
  if (!parsed.ok()) return parsed.status().WithContext(fmt::format("endpoint from {}", origin));
  std::string out(trimmed);
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

Result<std::optional<std::string>> ResolveEndpointFor(const ServiceIds& ids, const ClientOptions& options,
                                                      const Environment& env, const AwsSettings& s,
                                                      bool ignore_configured) {
  if (options.endpoint_url && ids.follows_endpoint_option) {
    DLQ_ASSIGN_OR_RETURN(std::string e, CheckedEndpoint(*options.endpoint_url, "--endpoint-url"));
    return std::optional<std::string>(e);
  }
  if (ignore_configured) return std::optional<std::string>();
  for (std::string_view suffix : {ids.env_suffix, ids.env_alias}) {
    if (suffix.empty()) continue;
    std::string env_name = fmt::format("AWS_ENDPOINT_URL_{}", suffix);
    if (auto v = env.GetNonEmpty(env_name)) {
      DLQ_ASSIGN_OR_RETURN(std::string e, CheckedEndpoint(*v, env_name));
      return std::optional<std::string>(e);
    }
  }
  if (s.profile_section) {
    if (auto services_name = s.profile_section->Get("services")) {
      if (const ConfigSection* services = s.shared.config.FindServices(Trim(*services_name))) {
        if (auto v = services->GetSub(ids.config_key, "endpoint_url"); v && !v->empty()) {
          DLQ_ASSIGN_OR_RETURN(std::string e,
                               CheckedEndpoint(*v, fmt::format("[services {}] {}.endpoint_url in {}", services->name,
                                                               ids.config_key, s.shared.config.path)));
          return std::optional<std::string>(e);
        }
      }
    }
  }
  if (auto v = env.GetNonEmpty("AWS_ENDPOINT_URL")) {
    DLQ_ASSIGN_OR_RETURN(std::string e, CheckedEndpoint(*v, "AWS_ENDPOINT_URL"));
    return std::optional<std::string>(e);
  }
  if (s.profile_section) {
    if (auto v = s.profile_section->Get("endpoint_url"); v && !v->empty()) {
      DLQ_ASSIGN_OR_RETURN(std::string e, CheckedEndpoint(*v, fmt::format("endpoint_url of profile {}", s.profile)));
      return std::optional<std::string>(e);
    }
  }
  return std::optional<std::string>();
}

}  // namespace

std::string DefaultEndpoint(std::string_view service, std::string_view region) {
  std::string_view suffix = StartsWith(region, "cn-") ? "amazonaws.com.cn" : "amazonaws.com";
  return fmt::format("https://{}.{}.{}", service, region, suffix);
}

bool IsDnsCompatibleBucket(std::string_view bucket) {
  if (bucket.size() < 3 || bucket.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(bucket.front()) || !alnum(bucket.back())) return false;
  for (char c : bucket) {
    if (!alnum(c) && c != '-') return false;
  }
  return true;
}

ServiceEndpoint AwsSettings::Endpoint(std::string_view service) const {
  ServiceEndpoint e;
  e.service = std::string(service);
  e.region = region;
  auto it = endpoint_overrides.find(service);
  e.endpoint = it != endpoint_overrides.end() ? it->second : DefaultEndpoint(service, region);
  e.s3 = service == "s3";
  return e;
}

bool AwsSettings::HasCustomEndpoint(std::string_view service) const {
  return endpoint_overrides.find(service) != endpoint_overrides.end();
}

S3AddressingStyle AwsSettings::S3Style(std::string_view bucket) const {
  if (!IsDnsCompatibleBucket(bucket)) return S3AddressingStyle::kPath;
  std::string style = s3_addressing_style.value_or("auto");
  if (style == "path") return S3AddressingStyle::kPath;
  if (style == "virtual") return S3AddressingStyle::kVirtualHosted;
  return HasCustomEndpoint("s3") ? S3AddressingStyle::kPath : S3AddressingStyle::kVirtualHosted;
}

Result<AwsSettings> ResolveSettings(const ClientOptions& options, const Environment& env) {
  AwsSettings s;
  DLQ_ASSIGN_OR_RETURN(s.shared, LoadSharedConfig(env));

  std::optional<std::string> named_profile;
  if (options.profile && !options.profile->empty()) {
    named_profile = options.profile;
    s.profile_from_option = true;
  } else if (auto v = env.GetNonEmpty("AWS_PROFILE")) {
    named_profile = v;
  } else if (auto legacy = env.GetNonEmpty("AWS_DEFAULT_PROFILE")) {
    named_profile = legacy;
  }
  if (named_profile) s.profile = *named_profile;
  s.profile_section = s.shared.MergedProfile(s.profile);
  if (named_profile && !s.profile_section) {
    return NotFound(
        fmt::format("profile '{}' not found in {} or {}", s.profile, s.shared.config.path, s.shared.credentials.path));
  }

  if (options.region && !options.region->empty()) {
    s.region = *options.region;
    s.region_source = "--region";
  } else if (auto v = env.GetNonEmpty("AWS_REGION")) {
    s.region = *v;
    s.region_source = "AWS_REGION";
  } else if (auto d = env.GetNonEmpty("AWS_DEFAULT_REGION")) {
    s.region = *d;
    s.region_source = "AWS_DEFAULT_REGION";
  } else if (s.profile_section) {
    if (auto r = s.profile_section->Get("region"); r && !r->empty()) {
      s.region = *r;
      s.region_source = fmt::format("profile {}", s.profile);
    }
  }
  if (s.region.empty()) {
    return InvalidArgument(
        fmt::format("no region: pass --region, set AWS_REGION or add region to profile {}", s.profile));
  }
  if (!IsValidRegion(s.region)) {
    return InvalidArgument(fmt::format("invalid region '{}' (from {})", s.region, s.region_source));
  }

  std::optional<std::string> ignore = env.GetNonEmpty("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS");
  if (!ignore && s.profile_section) ignore = s.profile_section->Get("ignore_configured_endpoint_urls");
  bool ignore_configured = IsTrue(ignore);
  for (const ServiceIds& ids : kServices) {
    DLQ_ASSIGN_OR_RETURN(std::optional<std::string> e, ResolveEndpointFor(ids, options, env, s, ignore_configured));
    if (e) s.endpoint_overrides.emplace(std::string(ids.signing_name), std::move(*e));
  }

  std::optional<std::string> style = env.GetNonEmpty("AWS_S3_ADDRESSING_STYLE");
  std::string style_origin = "AWS_S3_ADDRESSING_STYLE";
  if (!style && s.profile_section) {
    style = s.profile_section->GetSub("s3", "addressing_style");
    style_origin = fmt::format("s3.addressing_style of profile {}", s.profile);
  }
  if (style && !style->empty()) {
    std::string v = ToLower(Trim(*style));
    if (v != "auto" && v != "path" && v != "virtual") {
      return InvalidArgument(
          fmt::format("invalid S3 addressing style '{}' in {} (expected auto, path or virtual)", v, style_origin));
    }
    s.s3_addressing_style = v;
  }
  return s;
}

}  // namespace dlq
