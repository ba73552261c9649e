// Private to the stack's files (stack*.cc; not for other modules): the
// template's fixed logical ids, the helpers several resource families share
// and the StackBuilder that generates one stack. The contract is in stack.h.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "archive/destination.h"
#include "archiver/selection_spec.h"
#include "common/status.h"
#include "deploy/stack.h"
#include "deploy/template_value.h"
#include "monitor/alarm_plan.h"
#include "monitor/config.h"

namespace dlq::stack_internal {

using std::chrono::seconds;

inline constexpr std::string_view kFunction = "ArchiverFunction";
inline constexpr std::string_view kRole = "ArchiverRole";
inline constexpr std::string_view kReplayPolicy = "ReplayPolicy";
inline constexpr std::string_view kLogGroup = "ArchiverLogGroup";
inline constexpr std::string_view kBucket = "ArchiveBucket";  // the parameter, or the resource with --create-bucket
inline constexpr std::string_view kSchedule = "SweepSchedule";
inline constexpr std::string_view kAlertTopic = "AlertTopic";  // for people: alarms and failed invocations

inline std::string Partition() {
  return "${AWS::Partition}";
}

inline TemplateValue Tags() {
  return TemplateValue::List({TemplateValue::Map().Set("Key", "managed-by").Set("Value", "dlq-archive")});
}

// The account field of an ARN; "" when `arn` has too few fields
// (stack_queues.cc).
std::string AccountOfArn(std::string_view arn);

// The configured KMS key as IAM and S3 need it. A key id becomes the key's
// ARN in the stack's account and region. An alias cannot be a policy's
// Resource: the statement then covers the account's keys in that region on
// condition that the key carries the alias (kms:ResourceAliases), and the
// bucket's default encryption names the alias ARN. ResolveKmsKey: nullopt
// unless `put` uses aws:kms with a key; kInvalidArgument for a malformed
// alias (stack_iam.cc).
struct KmsKey {
  TemplateValue arn;              // key or alias ARN (for the bucket)
  TemplateValue policy_resource;  // for the IAM statement
  std::string alias;              // "alias/NAME" when given as an alias
};
Result<std::optional<KmsKey>> ResolveKmsKey(const PutOptions& put);

// Adds the archive bucket (--create-bucket) and its TLS-only policy to
// `res` (stack_storage.cc).
void AddArchiveBucket(TemplateValue& res, const StackOptions& o, const std::string& bucket, const std::string& prefix,
                      const PutOptions& put, const std::optional<KmsKey>& kms);

// The group's `causes:` as DLQ_ARCHIVE_CAUSES takes it: auto, on or off.
std::string_view StackCausesMode(const GroupSettings& group);

// Builds one stack: Build() resolves what the template needs from the config
// and the options, analyses each queue's safety, then adds one family of
// resources per method (stack.cc: resolving, the safety analysis,
// parameters and outputs; the resources by kind: stack_alarms.cc,
// stack_iam.cc, stack_function.cc, stack_storage.cc). Single use; not
// thread-safe.
class StackBuilder {
 public:
  StackBuilder(const MonitorConfig& config, const std::vector<StackQueue>& queues, const StackOptions& o)
      : config_(config), queues_(queues), o_(o), fn_(o.function_name) {}

  Result<GeneratedStack> Build();

 private:
  Status Resolve();
  Status CheckQueues();
  QueueAlarmPlan PlanStackAlarms(const GroupConfig& g, const StackQueue& q) const;
  Status ResolveAutoPolicy();
  void WarnAboutPeriods(const GroupConfig& g);
  Status AnalyzeSafety();
  Status AnalyzeQueue(const StackQueue& q);
  TemplateValue Parameters() const;
  void AddLogGroup();
  TemplateValue RoleStatements() const;
  // The cause lookups' statements (doc/deployment.md), when causes are not off.
  void AddCauseStatements(TemplateValue& statements) const;
  void AddRole();
  // StackOptions::replay_policy: the operators' managed policy.
  TemplateValue ReplayStatements() const;
  void AddReplayPolicy();
  TemplateValue FunctionEnvironment() const;
  void AddFunction();
  void AddSchedule();
  std::string ScheduleText() const;
  std::string ExpiryAlarmDescription(const StackQueuePlan& p, const QueueAlarmPlan& plan) const;
  Status AddAlarms();
  void AddAlerts();
  void AddVpcEndpoints();
  Status AddAthena();
  TemplateValue Outputs() const;

  const MonitorConfig& config_;
  const std::vector<StackQueue>& queues_;
  const StackOptions& o_;
  const std::string fn_;

  // Resolved by Resolve() and CheckQueues().
  const GroupConfig* group_ = nullptr;  // the settings every group of the stack agrees on
  Destination dest_;
  std::string prefix_;
  std::optional<KmsKey> kms_;
  Selection policy_;
  std::string policy_text_;  // DLQ_ARCHIVE_POLICY
  std::string schedule_;
  std::optional<seconds> sweep_;  // nullopt for a cron schedule
  Destination code_;
  std::map<std::string, std::string> role_by_account_;  // other accounts' queues: account -> role ARN
  bool vpc_ = false;
  bool hive_ = false;
  bool default_layout_ = false;

  // Built.
  GeneratedStack out_;
  std::vector<std::optional<QueueAlarmPlan>> alarm_plans_;  // parallel to out_.queues; none for other accounts
  TemplateValue res_ = TemplateValue::Map();
  std::vector<std::string> alarm_names_;
  bool athena_ = false;
};

}  // namespace dlq::stack_internal
