// `dlq-archive stack`: the CloudFormation template that runs the archiver as
// the Lambda custom runtime (src/lambda/), generated from the daemon's config,
// the queues discovery found and `check`'s safety analysis
// (monitor/alarm_plan.h, monitor/safety.h). What each resource and permission
// is for: doc/deployment.md. Pure: no I/O; the caller discovers the queues.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/status.h"
#include "deploy/template_value.h"
#include "monitor/config.h"
#include "monitor/discovery.h"

namespace dlq {

// One DLQ as the stack sees it.
struct StackQueue {
  std::string group;       // the config group it belongs to
  std::string name;        // SQS queue name
  std::string url;         // as discovered or configured; "" when only the name is known
  std::string region;      // "" = the stack's region
  std::string account_id;  // "" = the stack's account
  std::string role_arn;    // the group's role: a queue of another account, read through STS AssumeRole
  bool fifo = false;
  std::chrono::seconds retention{sqs::kDefaultRetention};
  std::chrono::seconds source_retention{0};  // longest redrive source's; 0 = unknown
  bool discovered = false;                   // retention read from SQS; otherwise assumed

  // The queue in the function's account: alarms and direct SQS permissions.
  bool SameAccount() const { return role_arn.empty(); }
};

// A discovered queue of `group`.
StackQueue StackQueueFromDiscovery(const GroupConfig& group, const DiscoveredQueue& q);
// `--no-discovery`: the group's explicitly listed queues (names or URLs),
// with `retention` and `source_retention` assumed. Prefixes, regex and
// discover: true are not evaluated (the caller says so). kInvalidArgument for
// a URL that names no queue.
Result<std::vector<StackQueue>> StackQueuesFromConfig(const GroupConfig& group, std::chrono::seconds retention,
                                                      std::chrono::seconds source_retention);

inline constexpr std::string_view kAutoPolicy = "auto";

struct StackOptions {
  std::string function_name = "dlq-archive";  // also the prefix of alarm names
  std::string lambda_code;                    // s3://BUCKET/KEY of the package-lambda zip (required)
  std::string architecture = "x86_64";        // x86_64 | arm64 (the parameter's default)
  int timeout_s = 900;
  int memory_mb = 512;
  int reserved_concurrency = 5;
  // EventBridge schedule of the sweep: "rate(N minutes|hours|days)" or
  // "cron(...)"; empty = the config's sweep_interval as a rate.
  std::string schedule;
  // DLQ_ARCHIVE_POLICY: all | older_than:DURATION | expiring_within:DURATION,
  // or auto: what the daemon archives (the messages that near expiry: the
  // expiry alarm's lead window, the widest over the stack's queues).
  std::string policy = std::string(kAutoPolicy);
  int log_retention_days = 30;

  bool create_bucket = false;                           // else the bucket is the ArchiveBucket parameter
  std::string transition_storage_class = "GLACIER_IR";  // GLACIER_IR | GLACIER | DEEP_ARCHIVE
  int transition_days = 30;                             // 0 = no transition
  int expiration_days = 0;                              // 0 = never expire
  int abort_multipart_days = 7;
  // With create_bucket the bucket is versioned: a deleted or overwritten
  // object's old version expires after this many days (the default of the
  // template's NoncurrentVersionDays parameter).
  int noncurrent_version_days = 30;

  std::vector<std::string> vpc_subnets;          // non-empty: the function runs in the VPC
  std::vector<std::string> vpc_security_groups;  // required with subnets
  std::string vpc_id;                            // required for the interface endpoints
  std::vector<std::string> vpc_route_tables;     // for the S3 gateway endpoint
  bool vpc_endpoints = true;                     // create S3/SQS/Lambda(/STS) endpoints

  // An IAM managed policy for the people who replay (doc/replay.md,
  // doc/origins.md), scoped to this stack's archive, DLQs, account and
  // region: attach it to an operator's role. The function never replays.
  bool replay_policy = false;

  bool athena = true;  // Glue database and table
  std::string athena_database = "dlq_archive";
  std::string athena_table = "dlq_archive";
  std::string first_day = "2020-01-01";

  // kInvalidArgument naming the flag and the expected form.
  Status Validate() const;
};

// The safety analysis behind one queue's alarms, as the template states it.
struct StackQueuePlan {
  StackQueue queue;
  std::string expiry_alarm;  // alarm names; "" when the queue gets none
  std::string depth_alarm;
  double expiry_threshold_s = 0;
  std::string threshold_source;
  bool alarm_path_safe = false;     // AnalyzeQueueSafety of the alarm path
  bool schedule_path_safe = false;  // ... of the schedule sweep
  std::string alarm_report;         // SafetyReport::ToString(), "" without alarms
  std::string schedule_report;      // "" for a cron schedule (no fixed interval)
};

struct GeneratedStack {
  TemplateValue tmpl;
  std::vector<StackQueuePlan> queues;
  std::vector<std::string> warnings;  // for stderr: unsafe queues, what the stack cannot cover
};

// Resources CloudFormation accepts in one template.
inline constexpr size_t kMaxStackResources = 500;

// kInvalidArgument (bad options, no queue, groups that archive to different
// destinations or regions, a KMS alias where an ARN is needed, too many
// resources) naming what to change. `queues` come from groups of `config`.
Result<GeneratedStack> GenerateStack(const MonitorConfig& config, const std::vector<StackQueue>& queues,
                                     const StackOptions& options);

}  // namespace dlq
