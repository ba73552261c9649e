// `dlq-archive doctor`: the first command a user runs. Checks, in order,
// settings, credentials, caller identity, SQS (and a named queue) and S3 (and
// a named bucket), and explains each failure. Never prints a secret.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "aws/aws_config.h"
#include "aws/credentials.h"
#include "sqs/sqs_client.h"
#include "sts/sts_client.h"

namespace dlq {

struct DoctorOptions {
  std::string queue;   // name or URL; empty: skip the queue check
  std::string bucket;  // empty: skip the bucket check
};

// What the doctor talks to, as seams so tests can fake each one.
struct DoctorDeps {
  const AwsSettings& settings;
  CredentialsProvider& credentials;
  std::function<Result<CallerIdentity>()> caller_identity;
  QueueClient& sqs;
  std::function<Status(const std::string& bucket)> head_bucket;
};

struct DoctorCheck {
  std::string name;    // "credentials", "identity", "sqs", "queue", "s3", "bucket", ...
  bool ok = false;
  bool skipped = false;
  std::string detail;  // what was found, or what failed and what to do
};

struct DoctorReport {
  std::vector<DoctorCheck> checks;
  bool ok() const;
  std::string ToText() const;
  std::string ToJson() const;
};

DoctorReport RunDoctor(const DoctorDeps& deps, const DoctorOptions& options);

// A user-facing explanation of an AWS failure: names what was rejected and
// what to check (credentials, permissions, names), plus the AWS details.
std::string ExplainFailure(const Status& status, std::string_view service, std::string_view credential_source);

}  // namespace dlq
