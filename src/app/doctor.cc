#include "app/doctor.h"

#include <fmt/format.h>

#include "causes/consumers.h"
#include "common/count_noun.h"
#include "common/json_writer.h"
#include "common/strings.h"
#include "common/text.h"
#include "common/time_util.h"

namespace dlq {

namespace {

std::string_view StateName(CheckState s) {
  switch (s) {
    case CheckState::kOk: return "ok";
    case CheckState::kFail: return "fail";
    case CheckState::kSkip: return "skip";
  }
  return "fail";
}

void WriteError(JsonWriter& w, std::string_view code, int exit_code, std::string_view message) {
  w.Key("error").BeginObject();
  w.Key("code").String(code);
  w.Key("exit_code").Int(exit_code);
  w.Key("message").String(message);
  w.EndObject();
}

DoctorCheck Ok(std::string name, std::string detail) {
  return {std::move(name), CheckState::kOk, std::move(detail)};
}
DoctorCheck Skip(std::string name, std::string detail) {
  return {std::move(name), CheckState::kSkip, std::move(detail)};
}
DoctorCheck Fail(std::string name, std::string detail, ErrorCode code) {
  return {std::move(name), CheckState::kFail, std::move(detail), code};
}

}  // namespace

bool DoctorReport::ok() const {
  for (const auto& c : checks)
    if (c.state == CheckState::kFail) return false;
  return true;
}

std::string DoctorReport::ToText() const {
  std::string out;
  for (const auto& c : checks) {
    const char* mark = c.state == CheckState::kSkip ? "SKIP" : (c.state == CheckState::kOk ? " OK " : "FAIL");
    out += fmt::format("[{}] {:<12} {}\n", mark, c.name, c.detail);
  }
  out += ok() ? "all checks passed\n" : "some checks failed\n";
  return out;
}

std::string DoctorReport::ToJson() const {
  JsonWriter w;
  w.BeginObject();
  w.Key("ok").Bool(ok());
  w.Key("checks").BeginArray();
  std::string failed;
  ErrorCode first_code = ErrorCode::kOk;
  for (const auto& c : checks) {
    w.BeginObject();
    w.Key("name").String(c.name);
    w.Key("status").String(StateName(c.state));
    w.Key("detail").String(c.detail);
    if (c.state == CheckState::kFail) {
      w.Key("code").String(ErrorCodeName(c.code));
      if (first_code == ErrorCode::kOk) first_code = c.code;
      failed += failed.empty() ? c.name : ", " + c.name;
    }
    w.EndObject();
  }
  w.EndArray();
  if (!ok()) WriteError(w, ErrorCodeName(first_code), 1, fmt::format("doctor: failed checks: {}", failed));
  w.EndObject();
  return w.Take();
}

std::string DoctorErrorJson(const Status& status, int exit_code) {
  JsonWriter w;
  w.BeginObject();
  w.Key("ok").Bool(false);
  WriteError(w, ErrorCodeName(status.code()), exit_code, status.message());
  w.EndObject();
  return w.Take();
}

std::string ExplainFailure(const Status& status, std::string_view service, std::string_view credential_source) {
  std::string what;
  switch (status.code()) {
    case ErrorCode::kUnauthenticated:
      what =
          fmt::format("{} rejected the request signature or credentials; check the access key and secret key from {}",
                      service, credential_source.empty() ? "your credential source" : credential_source);
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

namespace {

// The config files, the profile and the region, as the settings diagnosis
// found them.
void CheckSetup(const SettingsDiagnosis& setup, std::vector<DoctorCheck>& checks) {
  const AwsSettings* s = setup.settings ? &*setup.settings : nullptr;
  if (!setup.config.ok()) {
    checks.push_back(Fail("config", setup.config.message(), setup.config.code()));
  } else if (s != nullptr) {
    checks.push_back(Ok("config", fmt::format("{}, {}", s->shared.config.path, s->shared.credentials.path)));
  } else {
    checks.push_back(Skip("config", "not read"));
  }

  if (!setup.profile.ok()) {
    checks.push_back(Fail("profile", setup.profile.message(), setup.profile.code()));
  } else if (s != nullptr) {
    std::string where = s->profile_section ? "found" : "not in the config files (not needed with other credentials)";
    checks.push_back(Ok("profile", fmt::format("{}: {}", s->profile, where)));
  } else {
    checks.push_back(Skip("profile", "needs readable config files"));
  }

  if (!setup.region.ok()) {
    checks.push_back(Fail("region", setup.region.message(), setup.region.code()));
  } else if (s != nullptr) {
    checks.push_back(Ok("region", fmt::format("{} (from {}{})", s->region, s->region_source,
                                              setup.profile.ok() ? "" : ", without the missing profile")));
  } else {
    checks.push_back(Skip("region", "needs readable config files"));
  }
}

// Each service's endpoint in the region (and the SSO portal's).
DoctorCheck CheckEndpoints(const AwsSettings& s, const std::string& sso_portal) {
  std::string endpoints;
  for (const char* svc : {"sqs", "s3", "monitoring", "sts"}) {
    if (!endpoints.empty()) endpoints += ", ";
    endpoints += fmt::format("{} {}{}", svc, s.Endpoint(svc).endpoint, s.HasCustomEndpoint(svc) ? " (custom)" : "");
  }
  if (!sso_portal.empty()) {
    endpoints += fmt::format(", sso portal {}{}", sso_portal, s.HasCustomEndpoint("portal.sso") ? " (custom)" : "");
  }
  return Ok("endpoints", endpoints);
}

// Credentials need the profile (a misspelt one would silently fall back to
// other credentials), not the region. Sets `source` to where they came from
// when they were found.
DoctorCheck CheckCredentials(const DoctorDeps& deps, std::string& source) {
  const SettingsDiagnosis& setup = deps.setup;
  if (deps.credentials == nullptr || !setup.profile.ok()) {
    return Skip("credentials", setup.profile.ok() ? "needs readable config files" : "needs the profile");
  }
  auto creds = deps.credentials->GetCredentials();
  if (!creds.ok()) {
    return Fail("credentials",
                fmt::format("{}. Set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, pass --profile, or run "
                            "where a role is available",
                            creds.status().message()),
                creds.status().code());
  }
  source = creds->source;
  std::string cred_detail = fmt::format("{} from {}", creds->RedactedKeyId(), creds->source);
  if (!creds->session_token.empty()) cred_detail += ", temporary";
  if (creds->expiration) cred_detail += fmt::format(", expires {}", FormatIso8601(*creds->expiration));
  return Ok("credentials", cred_detail);
}

// --queue: its URL resolved, its depth and retention read.
DoctorCheck CheckQueue(const DoctorDeps& deps, const std::string& queue, const std::string& region,
                       const std::string& source) {
  std::string url = queue;
  Status st;
  if (!StartsWith(url, "http://") && !StartsWith(url, "https://")) {
    auto u = deps.sqs->GetQueueUrl(queue, "");
    if (u.ok()) {
      url = *u;
    } else {
      st = u.status();
    }
  }
  if (st.ok()) {
    auto attrs = deps.sqs->GetQueueAttributes(
        url, {"ApproximateNumberOfMessages", "MessageRetentionPeriod", "QueueArn", "RedrivePolicy"});
    if (attrs.ok()) {
      auto get = [&](const char* k) {
        auto it = attrs->find(k);
        return it == attrs->end() ? std::string("?") : it->second;
      };
      int64_t retention = ParseInt64(get("MessageRetentionPeriod")).value_or(0);
      return Ok("queue", fmt::format("{}: {} messages, retention {}", url, get("ApproximateNumberOfMessages"),
                                     FormatDuration(std::chrono::seconds(retention))));
    }
    st = attrs.status();
  }
  std::string detail = ExplainFailure(st, "SQS", source);
  if (st.code() == ErrorCode::kNotFound) {
    detail = fmt::format("queue '{}' does not exist in {} ({})", queue, region, st.ToString());
  }
  return Fail("queue", detail, st.code());
}

// --queue: where its causes would come from (doc/causes.md): its sources,
// their consumers' log groups and how each was found. Causes are optional, so
// finding none (or being denied) is said, and skipped, never a failure.
DoctorCheck CheckConsumers(const DoctorDeps& deps, const std::string& queue) {
  QueueInfo q;
  q.url = queue;
  if (!StartsWith(q.url, "http://") && !StartsWith(q.url, "https://")) {
    auto u = deps.sqs->GetQueueUrl(queue, "");
    if (!u.ok()) return Skip("consumers", "needs the queue");
    q.url = *u;
  }
  q.name = q.url.substr(q.url.rfind('/') + 1);
  auto attrs = deps.sqs->GetQueueAttributes(q.url, {"QueueArn"});
  if (!attrs.ok() || !attrs->contains("QueueArn")) return Skip("consumers", "needs the queue's ARN");
  q.arn = attrs->at("QueueArn");
  const ConsumerMap map = DiscoverConsumers(*deps.sqs, *deps.lambda, q, {});
  std::string detail = fmt::format("{}", fmt::join(map.Describe(), "; "));
  if (map.log_groups.empty()) {
    detail += fmt::format(
        "; no cause can be looked up until the consumer's log groups are named (stats --logs GROUP, or "
        "consumer_logs: [\"{}=GROUP\"] in the daemon's config)",
        q.name);
    return Skip("consumers", TerminalSafe(detail));
  }
  return Ok("consumers", TerminalSafe(detail));
}

// --bucket: it exists and is reachable.
DoctorCheck CheckBucket(const DoctorDeps& deps, const std::string& bucket, const std::string& source) {
  Status st = deps.head_bucket(bucket);
  if (st.ok()) return Ok("bucket", fmt::format("s3://{} exists and is reachable", bucket));
  if (st.code() == ErrorCode::kNotFound) {
    return Fail("bucket", fmt::format("bucket '{}' does not exist ({})", bucket, st.ToString()), st.code());
  }
  return Fail("bucket", ExplainFailure(st, "S3", source), st.code());
}

}  // namespace

DoctorReport RunDoctor(const DoctorDeps& deps, const DoctorOptions& options) {
  DoctorReport report;
  auto& checks = report.checks;
  const SettingsDiagnosis& setup = deps.setup;
  const AwsSettings* s = setup.settings ? &*setup.settings : nullptr;

  CheckSetup(setup, checks);
  bool region_ok = setup.region.ok() && s != nullptr;
  checks.push_back(region_ok ? CheckEndpoints(*s, deps.sso_portal) : Skip("endpoints", "needs a region"));
  if (!deps.http_client.empty()) checks.push_back(Ok("http", deps.http_client));
  std::string source;
  checks.push_back(CheckCredentials(deps, source));
  bool creds_ok = checks.back().state == CheckState::kOk;

  // The remaining checks call AWS: they need both a region and credentials.
  std::string blocked;
  if (!region_ok) blocked = "needs a region";
  if (!creds_ok) blocked = blocked.empty() ? "needs credentials" : "needs a region and credentials";
  if (!blocked.empty() || deps.sqs == nullptr) {
    if (blocked.empty()) blocked = "no AWS clients";
    for (const char* name : {"identity", "sqs", "queue", "consumers", "bucket"}) checks.push_back(Skip(name, blocked));
    return report;
  }

  auto identity = deps.caller_identity();
  if (identity.ok()) {
    checks.push_back(Ok("identity", fmt::format("{} (account {})", identity->arn, identity->account)));
  } else {
    checks.push_back(Fail("identity", ExplainFailure(identity.status(), "STS", source), identity.status().code()));
  }
  auto queues = deps.sqs->ListQueues("");
  if (queues.ok()) {
    checks.push_back(
        Ok("sqs", fmt::format("reachable and allowed ({} visible)", CountNoun(queues->size(), "queue", "queues"))));
  } else {
    checks.push_back(Fail("sqs", ExplainFailure(queues.status(), "SQS", source), queues.status().code()));
  }
  checks.push_back(options.queue.empty() ? Skip("queue", "no --queue given")
                                         : CheckQueue(deps, options.queue, s->region, source));
  if (options.queue.empty() || deps.lambda == nullptr) {
    checks.push_back(Skip("consumers", options.queue.empty() ? "no --queue given" : "no Lambda client"));
  } else if (checks.back().state != CheckState::kOk) {
    checks.push_back(Skip("consumers", "needs the queue"));
  } else {
    checks.push_back(CheckConsumers(deps, options.queue));
  }
  checks.push_back(options.bucket.empty() ? Skip("bucket", "no --bucket given")
                                          : CheckBucket(deps, options.bucket, source));
  return report;
}

}  // namespace dlq
