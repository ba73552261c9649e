// The function's execution role and its least-privilege policy, and the KMS
// key as IAM and S3 need it (stack_internal.h; doc/deployment.md).
#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

#include "common/strings.h"
#include "deploy/stack_internal.h"

namespace dlq::stack_internal {
namespace {

TemplateValue Statement(std::string_view sid, const std::vector<std::string>& actions, TemplateValue resources) {
  return TemplateValue::Map()
      .Set("Sid", sid)
      .Set("Effect", "Allow")
      .Set("Action", TemplateValue::Strings(actions))
      .Set("Resource", std::move(resources));
}

// The log group a `consumer_logs:` entry names: "GROUP" or "QUEUE=GROUP".
std::string ConsumerLogGroup(const std::string& entry) {
  const auto eq = entry.find('=');
  return std::string(Trim(eq == std::string::npos ? entry : entry.substr(eq + 1)));
}

}  // namespace

std::string_view StackCausesMode(const GroupSettings& group) {
  switch (group.causes) {
    case GroupSettings::Causes::kAuto: return "auto";
    case GroupSettings::Causes::kOn: return "on";
    case GroupSettings::Causes::kOff: return "off";
  }
  return "off";
}

Result<std::optional<KmsKey>> ResolveKmsKey(const PutOptions& put) {
  if (put.sse != "aws:kms" || put.sse_kms_key_id.empty()) return std::optional<KmsKey>();
  const std::string& k = put.sse_kms_key_id;
  const std::string here = fmt::format("arn:{}:kms:${{AWS::Region}}:${{AWS::AccountId}}", Partition());
  KmsKey key;
  auto alias_at = k.find("alias/");
  if (alias_at != std::string::npos) {
    key.alias = k.substr(alias_at);
    if (StartsWith(k, "arn:")) {
      // arn:PARTITION:kms:REGION:ACCOUNT:alias/NAME: keys of that account and region.
      key.arn = TemplateValue(k);
      key.policy_resource = TemplateValue(k.substr(0, alias_at) + "key/*");
    } else if (alias_at == 0) {
      key.arn = Sub(fmt::format("{}:{}", here, SubLiteral(k)));
      key.policy_resource = Sub(here + ":key/*");
    } else {
      return InvalidArgument(
          fmt::format("sse_kms_key_id '{}': expected a key id, key ARN, alias/NAME or alias ARN", k));
    }
    return std::optional<KmsKey>(std::move(key));
  }
  key.arn = StartsWith(k, "arn:") ? TemplateValue(k) : Sub(fmt::format("{}:key/{}", here, SubLiteral(k)));
  key.policy_resource = key.arn;
  return std::optional<KmsKey>(std::move(key));
}

void StackBuilder::AddCauseStatements(TemplateValue& statements) const {
  // The cause lookups after each drain (doc/causes.md): the consumers' log
  // groups, Lambda's (/aws/lambda/*) and those consumer_logs names.
  const std::string log_group = fmt::format("arn:{}:logs:${{AWS::Region}}:${{AWS::AccountId}}:log-group:", Partition());
  TemplateValue groups = TemplateValue::List({Sub(log_group + "/aws/lambda/*:*")});
  std::set<std::string> named;
  for (const std::string& entry : group_->consumer_logs) named.insert(ConsumerLogGroup(entry));
  for (const std::string& g : named) {
    if (!StartsWith(g, "/aws/lambda/")) groups.Add(Sub(fmt::format("{}{}:*", log_group, SubLiteral(g))));
  }
  // The archive objects a drain wrote, read back, and the kept answers
  // (the sidecar is written under the prefix WriteArchiveObjects grants).
  statements.Add(Statement(
      "LookUpCausesReadArchive", {"s3:GetObject"},
      TemplateValue::List({Sub(fmt::format("arn:{}:s3:::${{{}}}/{}/*", Partition(), kBucket, SubLiteral(prefix_)))})));
  statements.Add(Statement("LookUpCausesListKeptCauses", {"s3:ListBucket"},
                           TemplateValue::List({Sub(fmt::format("arn:{}:s3:::${{{}}}", Partition(), kBucket))}))
                     .Set("Condition", TemplateValue::Map().Set(
                                           "StringLike", TemplateValue::Map().Set(
                                                             "s3:prefix", fmt::format("{}/_causes/*", prefix_)))));
  // Each DLQ's source queues (ListDeadLetterSourceQueues) and their ARN,
  // visibility timeout and redrive policy (GetQueueAttributes): the
  // sources are not known here, so any queue of the account and region.
  statements.Add(Statement(
      "LookUpCausesFindSourceQueues", {"sqs:ListDeadLetterSourceQueues", "sqs:GetQueueAttributes"},
      TemplateValue::List({Sub(fmt::format("arn:{}:sqs:${{AWS::Region}}:${{AWS::AccountId}}:*", Partition()))})));
  statements.Add(Statement("LookUpCausesReadLogs", {"logs:FilterLogEvents"}, std::move(groups)));
  // DescribeLogGroups (a group's retention) is a list call: IAM scopes it to
  // the account's log groups, not to one name. Without it a lookup still
  // runs; it only cannot tell expired logs from absent lines.
  statements.Add(Statement("LookUpCausesLogRetention", {"logs:DescribeLogGroups"},
                           TemplateValue::List({Sub(fmt::format(
                               "arn:{}:logs:${{AWS::Region}}:${{AWS::AccountId}}:log-group:*", Partition()))})));
  statements.Add(Statement("LookUpCausesFindConsumers", {"lambda:GetFunctionConfiguration"},
                           TemplateValue::List({Sub(fmt::format(
                               "arn:{}:lambda:${{AWS::Region}}:${{AWS::AccountId}}:function:*", Partition()))})));
  // IAM has no resource type for ListEventSourceMappings: "*" is the only
  // resource it accepts (it reads mapping configurations, no data).
  statements.Add(Statement("LookUpCausesListMappings", {"lambda:ListEventSourceMappings"}, TemplateValue::List({"*"})));
}

TemplateValue StackBuilder::RoleStatements() const {
  TemplateValue statements = TemplateValue::List();
  TemplateValue queue_arns = TemplateValue::List();
  for (const StackQueue& q : queues_) {
    if (!q.SameAccount()) continue;  // read through the assumed role, not this one
    queue_arns.Add(Sub(fmt::format("arn:{}:sqs:${{AWS::Region}}:${{AWS::AccountId}}:{}", Partition(), q.name)));
  }
  if (!queue_arns.items().empty()) {
    // Batch calls (DeleteMessageBatch, ChangeMessageVisibilityBatch) are
    // authorized by their single-message actions.
    statements.Add(Statement("ArchiveDeadLetterQueues",
                             {"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility",
                              "sqs:GetQueueAttributes", "sqs:GetQueueUrl"},
                             std::move(queue_arns)));
  }
  statements.Add(Statement(
      "WriteArchiveObjects", {"s3:PutObject"},
      TemplateValue::List({Sub(fmt::format("arn:{}:s3:::${{{}}}/{}/*", Partition(), kBucket, SubLiteral(prefix_)))})));
  if (kms_) {
    // Single-part uploads only (objects are sealed well below 5 GiB), so no kms:Decrypt.
    TemplateValue st =
        Statement("EncryptArchiveObjects", {"kms:GenerateDataKey"}, TemplateValue::List({kms_->policy_resource}));
    if (!kms_->alias.empty()) {
      st.Set("Condition", TemplateValue::Map().Set("ForAnyValue:StringEquals",
                                                   TemplateValue::Map().Set("kms:ResourceAliases", kms_->alias)));
    }
    statements.Add(std::move(st));
  }
  if (!role_by_account_.empty()) {
    TemplateValue roles = TemplateValue::List();
    for (const auto& [account, arn] : role_by_account_) roles.Add(arn);
    statements.Add(Statement("AssumeQueueAccountRoles", {"sts:AssumeRole"}, std::move(roles)));
  }
  statements.Add(Statement(
      "WriteOwnLogs", {"logs:CreateLogStream", "logs:PutLogEvents"},
      TemplateValue::List({Sub(fmt::format(
          "arn:{}:logs:${{AWS::Region}}:${{AWS::AccountId}}:log-group:/aws/lambda/{}:*", Partition(), fn_))})));
  // The on-failure destination of asynchronous invocations.
  statements.Add(Statement("PublishFailedInvocations", {"sns:Publish"},
                           TemplateValue::List({Sub(fmt::format("${{{}}}", kAlertTopic))})));
  statements.Add(Statement("FollowUpInvoke", {"lambda:InvokeFunction"},
                           TemplateValue::List({Sub(fmt::format(
                               "arn:{}:lambda:${{AWS::Region}}:${{AWS::AccountId}}:function:{}", Partition(), fn_))})));
  if (group_->causes != GroupSettings::Causes::kOff) AddCauseStatements(statements);
  if (vpc_) {
    // Lambda requires these EC2 network-interface actions on all resources
    // (they have no narrower scope Lambda accepts).
    statements.Add(
        Statement("VpcNetworkInterfaces",
                  {"ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DeleteNetworkInterface",
                   "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"},
                  TemplateValue::List({"*"})));
  }
  return statements;
}

// The execution role. CloudWatch metrics go out as EMF log lines, so no
// cloudwatch:PutMetricData (which has no resource-level scope) is granted.
void StackBuilder::AddRole() {
  res_.Set(
      kRole,
      TemplateValue::Map()
          .Set("Type", "AWS::IAM::Role")
          .Set("Properties",
               TemplateValue::Map()
                   .Set("Description", "dlq-archive Lambda execution role (least privilege, see doc/deployment.md)")
                   .Set("AssumeRolePolicyDocument",
                        TemplateValue::Map()
                            .Set("Version", "2012-10-17")
                            .Set("Statement",
                                 TemplateValue::List(
                                     {TemplateValue::Map()
                                          .Set("Effect", "Allow")
                                          .Set("Principal", TemplateValue::Map().Set("Service", "lambda.amazonaws.com"))
                                          .Set("Action", "sts:AssumeRole")})))
                   .Set("Policies",
                        TemplateValue::List({TemplateValue::Map()
                                                 .Set("PolicyName", "dlq-archive")
                                                 .Set("PolicyDocument", TemplateValue::Map()
                                                                            .Set("Version", "2012-10-17")
                                                                            .Set("Statement", RoleStatements()))}))
                   .Set("Tags", Tags())));
}

// What `replay` needs (doc/iam-policy.json's Replay* and
// OptionalReplay* statements), scoped to this stack: its archive (read, and
// the audit record and ledger written under it), its DLQs (the live form),
// and this account and region's queues, functions, topics and buses (the
// sources and origins are found at replay time, so they are not known here).
// The list calls IAM authorizes on no narrower resource get "*", alone.
TemplateValue StackBuilder::ReplayStatements() const {
  auto in_account = [](std::string_view service, std::string_view resource) {
    return Sub(fmt::format("arn:{}:{}:${{AWS::Region}}:${{AWS::AccountId}}:{}", Partition(), service, resource));
  };
  TemplateValue statements = TemplateValue::List();
  statements.Add(Statement(
      "ReplayReadArchive", {"s3:GetObject"},
      TemplateValue::List({Sub(fmt::format("arn:{}:s3:::${{{}}}/{}/*", Partition(), kBucket, SubLiteral(prefix_)))})));
  statements.Add(
      Statement("ReplayListArchive", {"s3:ListBucket"},
                TemplateValue::List({Sub(fmt::format("arn:{}:s3:::${{{}}}", Partition(), kBucket))}))
          .Set("Condition", TemplateValue::Map().Set(
                                "StringLike", TemplateValue::Map().Set(
                                                  "s3:prefix", TemplateValue::Strings({prefix_, prefix_ + "/*"})))));
  statements.Add(Statement("ReplayWriteAudit", {"s3:PutObject"},
                           TemplateValue::List({Sub(fmt::format("arn:{}:s3:::${{{}}}/{}/_audit/*", Partition(), kBucket,
                                                                SubLiteral(prefix_)))})));
  if (kms_) {
    statements.Add(Statement("ReplayDecryptArchive", {"kms:Decrypt", "kms:GenerateDataKey"},
                             TemplateValue::List({kms_->policy_resource})));
  }
  TemplateValue dlqs = TemplateValue::List();
  for (const StackQueue& q : queues_) {
    if (q.SameAccount()) dlqs.Add(in_account("sqs", q.name));
  }
  if (!dlqs.items().empty()) {
    statements.Add(Statement("ReplayFromDeadLetterQueues",
                             {"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"},
                             std::move(dlqs)));
  }
  statements.Add(
      Statement("ReplayToQueues",
                {"sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ListDeadLetterSourceQueues"},
                TemplateValue::List({in_account("sqs", "*")})));
  statements.Add(
      Statement("ReplayToOriginFunctions",
                {"lambda:GetFunctionConfiguration", "lambda:GetFunctionEventInvokeConfig", "lambda:InvokeFunction"},
                TemplateValue::List({in_account("lambda", "function:*")})));
  statements.Add(Statement("ReplayToOriginTopics", {"sns:GetSubscriptionAttributes", "sns:Publish"},
                           TemplateValue::List({in_account("sns", "*")})));
  statements.Add(Statement("ReplayToOriginBuses", {"events:PutEvents"},
                           TemplateValue::List({in_account("events", "event-bus/*")})));
  // Finding an origin lists the account's functions and subscriptions.
  statements.Add(
      Statement("ReplayFindOrigins", {"lambda:ListFunctions", "sns:ListSubscriptions"}, TemplateValue::List({"*"})));
  return statements;
}

void StackBuilder::AddReplayPolicy() {
  res_.Set(kReplayPolicy,
           TemplateValue::Map()
               .Set("Type", "AWS::IAM::ManagedPolicy")
               .Set("Properties",
                    TemplateValue::Map()
                        .Set("Description",
                             fmt::format("dlq-archive replay of the archive and DLQs of stack function {}: attach to "
                                         "the role of whoever replays (doc/origins.md)",
                                         fn_))
                        .Set("PolicyDocument",
                             TemplateValue::Map().Set("Version", "2012-10-17").Set("Statement", ReplayStatements()))));
}

}  // namespace dlq::stack_internal
