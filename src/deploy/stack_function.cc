// The Lambda function: its log group, environment, the sweep schedule that
// invokes it and the VPC endpoints it needs in a VPC (stack_internal.h;
// doc/lambda.md).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "common/strings.h"
#include "deploy/stack_internal.h"

namespace dlq::stack_internal {
namespace {

TemplateValue InterfaceEndpoint(std::string_view service) {
  return TemplateValue::Map()
      .Set("Type", "AWS::EC2::VPCEndpoint")
      .Set("Properties", TemplateValue::Map()
                             .Set("VpcEndpointType", "Interface")
                             .Set("ServiceName", Sub(fmt::format("com.amazonaws.${{AWS::Region}}.{}", service)))
                             .Set("VpcId", Ref("VpcId"))
                             .Set("SubnetIds", Ref("SubnetIds"))
                             .Set("SecurityGroupIds", Ref("SecurityGroupIds"))
                             .Set("PrivateDnsEnabled", true));
}

// DLQ_ARCHIVE_QUEUES: names of this account's queues, URLs of other accounts'.
std::string QueueList(const std::vector<StackQueue>& queues) {
  std::string queue_list;
  for (const StackQueue& q : queues) {
    std::string entry = SubLiteral(q.name);
    if (!q.SameAccount()) {
      std::string account = q.account_id.empty() ? AccountOfArn(q.role_arn) : q.account_id;
      entry = StartsWith(q.url, "https://") ? SubLiteral(q.url)
                                            : fmt::format("https://sqs.{}.${{AWS::URLSuffix}}/{}/{}",
                                                          q.region.empty() ? "${AWS::Region}" : SubLiteral(q.region),
                                                          account, SubLiteral(q.name));
    }
    queue_list += (queue_list.empty() ? "" : ",") + entry;
  }
  return queue_list;
}

}  // namespace

// Created here so the role can be scoped to it.
void StackBuilder::AddLogGroup() {
  res_.Set(kLogGroup, TemplateValue::Map()
                          .Set("Type", "AWS::Logs::LogGroup")
                          .Set("Properties", TemplateValue::Map()
                                                 .Set("LogGroupName", "/aws/lambda/" + fn_)
                                                 .Set("RetentionInDays", o_.log_retention_days)));
}

// The runtime's environment (doc/lambda.md).
TemplateValue StackBuilder::FunctionEnvironment() const {
  const GroupConfig& group = *group_;
  TemplateValue env = TemplateValue::Map();
  env.Set("DLQ_ARCHIVE_DESTINATION", Sub(fmt::format("s3://${{{}}}/{}", kBucket, SubLiteral(prefix_))));
  std::string queue_list = QueueList(queues_);
  // Fn::Sub only when a cross-account URL needs the region or URL suffix.
  env.Set("DLQ_ARCHIVE_QUEUES",
          queue_list.find("${") == std::string::npos ? TemplateValue(queue_list) : Sub(queue_list));
  env.Set("DLQ_ARCHIVE_POLICY", policy_text_);
  if (!group.put.sse.empty()) env.Set("DLQ_ARCHIVE_SSE", group.put.sse);
  if (!group.put.sse_kms_key_id.empty()) env.Set("DLQ_ARCHIVE_SSE_KMS_KEY_ID", group.put.sse_kms_key_id);
  if (!group.put.storage_class.empty()) env.Set("DLQ_ARCHIVE_STORAGE_CLASS", group.put.storage_class);
  env.Set("DLQ_ARCHIVE_BATCH_MAX_MESSAGES", std::to_string(group.batch.max_messages));
  env.Set("DLQ_ARCHIVE_BATCH_MAX_BYTES", std::to_string(group.batch.max_bytes));
  env.Set("DLQ_ARCHIVE_BATCH_MAX_AGE",
          fmt::format("{}s", std::max<int64_t>(1, std::chrono::ceil<seconds>(group.batch.max_age).count())));
  if (hive_) {
    env.Set("DLQ_ARCHIVE_HIVE", "1");
  } else if (!default_layout_) {
    env.Set("DLQ_ARCHIVE_KEY_TEMPLATE", group.key_template.text());
  }
  // The cause lookups after each drain (doc/causes.md); the runtime's default is off.
  env.Set("DLQ_ARCHIVE_CAUSES", std::string(StackCausesMode(group)));
  if (group.causes != GroupSettings::Causes::kOff) {
    env.Set("DLQ_ARCHIVE_CAUSE_SAMPLES", std::to_string(group.cause_samples));
    if (!group.consumer_logs.empty()) {
      env.Set("DLQ_ARCHIVE_CONSUMER_LOGS", fmt::format("{}", fmt::join(group.consumer_logs, ",")));
    }
  }
  if (!role_by_account_.empty()) {
    std::string roles;
    for (const auto& [account, arn] : role_by_account_) {
      if (!roles.empty()) roles += ',';
      roles += fmt::format("{}={}", account, arn);
    }
    env.Set("DLQ_ARCHIVE_ROLE_ARNS", roles);
  }
  return env;
}

void StackBuilder::AddFunction() {
  TemplateValue fn_props =
      TemplateValue::Map()
          .Set("FunctionName", fn_)
          .Set("Description", "dlq-archive: archives SQS DLQ messages to S3 (doc/lambda.md)")
          .Set("Runtime", "provided.al2023")
          .Set("Handler", "bootstrap")
          .Set("Architectures", TemplateValue::List({Ref("Architecture")}))
          .Set("Role", GetAtt(kRole, "Arn"))
          .Set("Timeout", Ref("FunctionTimeout"))
          .Set("MemorySize", Ref("FunctionMemory"))
          .Set("ReservedConcurrentExecutions", Ref("ReservedConcurrency"))
          .Set("Code", TemplateValue::Map().Set("S3Bucket", Ref("CodeBucket")).Set("S3Key", Ref("CodeKey")))
          .Set("Environment", TemplateValue::Map().Set("Variables", FunctionEnvironment()))
          .Set("Tags", Tags());
  if (vpc_) {
    fn_props.Set(
        "VpcConfig",
        TemplateValue::Map().Set("SubnetIds", Ref("SubnetIds")).Set("SecurityGroupIds", Ref("SecurityGroupIds")));
  }
  res_.Set(kFunction, TemplateValue::Map()
                          .Set("Type", "AWS::Lambda::Function")
                          .Set("DependsOn", TemplateValue::List({kLogGroup}))
                          .Set("Properties", std::move(fn_props)));
}

// The backstop that does not depend on alarm transitions.
void StackBuilder::AddSchedule() {
  res_.Set(kSchedule,
           TemplateValue::Map()
               .Set("Type", "AWS::Events::Rule")
               .Set("Properties",
                    TemplateValue::Map()
                        .Set("Description", fmt::format("dlq-archive sweep: archives {} from every DLQ of the stack",
                                                        SelectionText(policy_)))
                        .Set("ScheduleExpression", Ref("ScheduleExpression"))
                        .Set("State", "ENABLED")
                        .Set("Targets", TemplateValue::List({TemplateValue::Map()
                                                                 .Set("Id", "dlq-archive-sweep")
                                                                 .Set("Arn", GetAtt(kFunction, "Arn"))}))));
  res_.Set("SweepSchedulePermission", TemplateValue::Map()
                                          .Set("Type", "AWS::Lambda::Permission")
                                          .Set("Properties", TemplateValue::Map()
                                                                 .Set("FunctionName", GetAtt(kFunction, "Arn"))
                                                                 .Set("Action", "lambda:InvokeFunction")
                                                                 .Set("Principal", "events.amazonaws.com")
                                                                 .Set("SourceArn", GetAtt(kSchedule, "Arn"))));
}

// S3 (gateway), SQS, Lambda (the follow-up invoke, the cause lookups), STS
// (roles), CloudWatch Logs (the cause lookups).
void StackBuilder::AddVpcEndpoints() {
  if (!vpc_ || !o_.vpc_endpoints) return;
  res_.Set("S3GatewayEndpoint", TemplateValue::Map()
                                    .Set("Type", "AWS::EC2::VPCEndpoint")
                                    .Set("Properties", TemplateValue::Map()
                                                           .Set("VpcEndpointType", "Gateway")
                                                           .Set("ServiceName", Sub("com.amazonaws.${AWS::Region}.s3"))
                                                           .Set("VpcId", Ref("VpcId"))
                                                           .Set("RouteTableIds", Ref("RouteTableIds"))));
  res_.Set("SqsEndpoint", InterfaceEndpoint("sqs"));
  res_.Set("LambdaEndpoint", InterfaceEndpoint("lambda"));
  if (!role_by_account_.empty()) res_.Set("StsEndpoint", InterfaceEndpoint("sts"));
  if (group_->causes != GroupSettings::Causes::kOff) res_.Set("LogsEndpoint", InterfaceEndpoint("logs"));
}

}  // namespace dlq::stack_internal
