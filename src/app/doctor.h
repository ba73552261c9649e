// `dlq-archive doctor`: the first command a user runs, so it must work on a
// broken setup. Checks, in order, the config files, the profile, the region,
// the endpoints, credentials, caller identity, SQS (and a named queue) and S3
// (and a named bucket). Every check is always reported: one that cannot run
// because an earlier one failed is skipped with the reason. Never prints a
// secret.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "app/services.h"
#include "aws/aws_config.h"
#include "aws/credentials.h"
#include "lambda_api/lambda_api.h"
#include "sqs/sqs_client.h"
#include "sts/sts_client.h"

namespace dlq {

struct DoctorOptions {
  std::string queue;   // name or URL; empty: skip the queue check
  std::string bucket;  // empty: skip the bucket check
};

// What the doctor talks to, as seams so tests can fake each one. The
// pointers and functions are null/empty when the setup did not get that far
// (then the checks that need them are skipped).
struct DoctorDeps {
  SettingsDiagnosis setup;
  CredentialsProvider* credentials = nullptr;
  std::function<Result<CallerIdentity>()> caller_identity;
  QueueClient* sqs = nullptr;
  LambdaApi* lambda = nullptr;  // the "consumers" check (causes); skipped when null
  std::function<Status(const std::string& bucket)> head_bucket;
  std::string http_client;  // DescribeHttpClient's answer; no "http" check when empty
  std::string sso_portal;   // an IAM Identity Center profile's portal, shown with the endpoints; else empty
};

enum class CheckState { kOk, kFail, kSkip };

struct DoctorCheck {
  // "config", "profile", "region", "endpoints", "http", "credentials", "identity", "sqs", "queue", "consumers",
  // "bucket"
  std::string name;
  CheckState state = CheckState::kFail;
  std::string detail;               // what was found, or what failed and what to do
  ErrorCode code = ErrorCode::kOk;  // for a failure: why
};

struct DoctorReport {
  std::vector<DoctorCheck> checks;
  bool ok() const;  // no check failed
  // One line per check, then a verdict.
  std::string ToText() const;
  // {"ok":bool,"checks":[{"name","status":"ok"|"fail"|"skip","detail"[,"code"]}...]}
  // plus, when not ok, "error":{"code","exit_code":1,"message"} naming the
  // failed checks.
  std::string ToJson() const;
};

DoctorReport RunDoctor(const DoctorDeps& deps, const DoctorOptions& options);

// The JSON document doctor prints when it cannot produce a report (a usage
// error, or a failure before any check): {"ok":false,"error":{...}}.
std::string DoctorErrorJson(const Status& status, int exit_code);

// A user-facing explanation of an AWS failure: names what was rejected and
// what to check (credentials, permissions, names), plus the AWS details.
std::string ExplainFailure(const Status& status, std::string_view service, std::string_view credential_source);

}  // namespace dlq
