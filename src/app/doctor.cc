#include "app/doctor.h"

#include <fmt/format.h>

#include "common/log.h"
#include "common/strings.h"
#include "common/time_util.h"

namespace dlq {

bool DoctorReport::ok() const {
  for (const auto& c : checks)
    if (!c.ok && !c.skipped) return false;
  return true;
}

std::string DoctorReport::ToText() const {
  std::string out;
  for (const auto& c : checks) {
    const char* mark = c.skipped ? "SKIP" : (c.ok ? " OK " : "FAIL");
    out += fmt::format("[{}] {:<12} {}\n", mark, c.name, c.detail);
  }
  out += ok() ? "all checks passed\n" : "some checks failed\n";
  return out;
}

std::string DoctorReport::ToJson() const {
  std::string out = "{\"ok\":";
  out += ok() ? "true" : "false";
  out += ",\"checks\":[";
  for (size_t i = 0; i < checks.size(); ++i) {
    const auto& c = checks[i];
    if (i) out += ',';
    out += "{\"name\":";
    AppendJsonString(out, c.name);
    out += ",\"status\":";
    AppendJsonString(out, c.skipped ? "skipped" : (c.ok ? "ok" : "failed"));
    out += ",\"detail\":";
    AppendJsonString(out, c.detail);
    out += '}';
  }
  out += "]}";
  return out;
}

std::string ExplainFailure(const Status& status, std::string_view service, std::string_view credential_source) {
  std::string what;
  switch (status.code()) {
    case ErrorCode::kUnauthenticated:
      what = fmt::format(
          "{} rejected the request signature or credentials; check the access key and secret key from {}", service,
          credential_source.empty() ? "your credential source" : credential_source);
      break;
    case ErrorCode::kPermissionDenied:
      what = fmt::format("{} denied access; the IAM identity needs permission for this action", service);
      break;
    case ErrorCode::kNotFound: what = fmt::format("{}: not found", service); break;
    case ErrorCode::kUnavailable:
      what = fmt::format("{} is unreachable; check the endpoint, network and proxy settings", service);
      break;
    case ErrorCode::kThrottled: what = fmt::format("{} throttled every attempt; try again later", service); break;
    default: what = fmt::format("{} call failed", service); break;
  }
  return fmt::format("{} ({})", what, status.ToString());
}

DoctorReport RunDoctor(const DoctorDeps& deps, const DoctorOptions& options) {
  DoctorReport report;
  const AwsSettings& s = deps.settings;
  report.checks.push_back({"settings", true, false,
                           fmt::format("profile {}, region {} (from {})", s.profile, s.region, s.region_source)});
  std::string endpoints;
  for (const char* svc : {"sqs", "s3", "monitoring", "sts"}) {
    if (!endpoints.empty()) endpoints += ", ";
    endpoints += fmt::format("{} {}{}", svc, s.Endpoint(svc).endpoint, s.HasCustomEndpoint(svc) ? " (custom)" : "");
  }
  report.checks.push_back({"endpoints", true, false, endpoints});

  auto creds = deps.credentials.GetCredentials();
  std::string source;
  if (!creds.ok()) {
    report.checks.push_back({"credentials", false, false,
                             fmt::format("{}. Set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, pass --profile, or run "
                                         "where a role is available",
                                         creds.status().message())});
    return report;  // nothing else can work
  }
  source = creds->source;
  std::string cred_detail = fmt::format("{} from {}", creds->RedactedKeyId(), creds->source);
  if (!creds->session_token.empty()) cred_detail += ", temporary";
  if (creds->expiration) cred_detail += fmt::format(", expires {}", FormatIso8601(*creds->expiration));
  report.checks.push_back({"credentials", true, false, cred_detail});

  auto identity = deps.caller_identity();
  if (identity.ok()) {
    report.checks.push_back({"identity", true, false, fmt::format("{} (account {})", identity->arn, identity->account)});
  } else {
    report.checks.push_back({"identity", false, false, ExplainFailure(identity.status(), "STS", source)});
  }

  auto queues = deps.sqs.ListQueues("");
  if (queues.ok()) {
    report.checks.push_back({"sqs", true, false, fmt::format("reachable and allowed ({} queues visible)", queues->size())});
  } else {
    report.checks.push_back({"sqs", false, false, ExplainFailure(queues.status(), "SQS", source)});
  }

  if (!options.queue.empty()) {
    std::string url = options.queue;
    Status st;
    if (!StartsWith(url, "http://") && !StartsWith(url, "https://")) {
      auto u = deps.sqs.GetQueueUrl(options.queue, "");
      if (u.ok()) {
        url = *u;
      } else {
        st = u.status();
      }
    }
    if (st.ok()) {
      auto attrs = deps.sqs.GetQueueAttributes(
          url, {"ApproximateNumberOfMessages", "MessageRetentionPeriod", "QueueArn", "RedrivePolicy"});
      if (attrs.ok()) {
        auto get = [&](const char* k) {
          auto it = attrs->find(k);
          return it == attrs->end() ? std::string("?") : it->second;
        };
        int64_t retention = 0;
        try {
          retention = std::stoll(get("MessageRetentionPeriod"));
        } catch (...) {
        }
        report.checks.push_back({"queue", true, false,
                                 fmt::format("{}: {} messages, retention {}", url, get("ApproximateNumberOfMessages"),
                                             FormatDuration(std::chrono::seconds(retention)))});
      } else {
        st = attrs.status();
      }
    }
    if (!st.ok()) {
      std::string detail = ExplainFailure(st, "SQS", source);
      if (st.code() == ErrorCode::kNotFound) {
        detail = fmt::format("queue '{}' does not exist in {} ({})", options.queue, s.region, st.ToString());
      }
      report.checks.push_back({"queue", false, false, detail});
    }
  } else {
    report.checks.push_back({"queue", true, true, "no --queue given"});
  }

  if (!options.bucket.empty()) {
    Status st = deps.head_bucket(options.bucket);
    if (st.ok()) {
      report.checks.push_back({"bucket", true, false, fmt::format("s3://{} exists and is reachable", options.bucket)});
    } else if (st.code() == ErrorCode::kNotFound) {
      report.checks.push_back({"bucket", false, false,
                               fmt::format("bucket '{}' does not exist ({})", options.bucket, st.ToString())});
    } else {
      report.checks.push_back({"bucket", false, false, ExplainFailure(st, "S3", source)});
    }
  } else {
    report.checks.push_back({"bucket", true, true, "no --bucket given"});
  }
  return report;
}

}  // namespace dlq
