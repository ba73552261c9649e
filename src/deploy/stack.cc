// The stack's generator: options, resolving the config, the safety analysis
// behind every queue's alarms, parameters, outputs and the order resources
// are added in. The resources by kind: stack_alarms.cc, stack_iam.cc,
// stack_function.cc, stack_storage.cc; the queues: stack_queues.cc.
#include "deploy/stack.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

#include "archive/destination.h"
#include "archive/key_layout.h"
#include "archiver/selection_spec.h"
#include "common/count_noun.h"
#include "common/strings.h"
#include "common/time_util.h"
#include "deploy/stack_internal.h"
#include "monitor/alarm_plan.h"
#include "monitor/safety.h"

namespace dlq {
namespace {

using std::chrono::seconds;

constexpr size_t kMaxOutputValue = 4096;  // CloudFormation's

// "rate(5 minutes)" -> 300 s; nullopt for cron(...) (no fixed interval).
Result<std::optional<seconds>> ParseSchedule(std::string_view s) {
  if (StartsWith(s, "cron(") && EndsWith(s, ")") && s.size() > 6) return std::optional<seconds>();
  if (!StartsWith(s, "rate(") || !EndsWith(s, ")")) {
    return InvalidArgument(fmt::format(
        "--schedule '{}': expected rate(N minutes|hours|days) or cron(...) (EventBridge schedule expressions)", s));
  }
  std::string_view inner = s.substr(5, s.size() - 6);
  auto space = inner.find(' ');
  int64_t count = 0;  // 0: not a number
  if (space != std::string_view::npos) count = ParseInt64(inner.substr(0, space)).value_or(0);
  std::string_view unit = space == std::string_view::npos ? "" : inner.substr(space + 1);
  int64_t unit_s = 0;
  if (unit == "minute" || unit == "minutes") unit_s = 60;
  if (unit == "hour" || unit == "hours") unit_s = 3600;
  if (unit == "day" || unit == "days") unit_s = 86400;
  // EventBridge: singular for 1, plural otherwise.
  if (count <= 0 || unit_s == 0 || (count == 1) != !EndsWith(unit, "s")) {
    return InvalidArgument(fmt::format(
        "--schedule '{}': expected rate(N unit) with N >= 1 and unit minute(s), hour(s) or day(s) (singular for 1)",
        s));
  }
  return std::optional<seconds>(seconds(count * unit_s));
}

std::string RateFor(seconds s) {
  int64_t v = std::max<int64_t>(s.count(), 60);
  if (v % 86400 == 0) return fmt::format("rate({} day{})", v / 86400, v == 86400 ? "" : "s");
  if (v % 3600 == 0) return fmt::format("rate({} hour{})", v / 3600, v == 3600 ? "" : "s");
  int64_t m = (v + 59) / 60;
  return fmt::format("rate({} minute{})", m, m == 1 ? "" : "s");
}

// SQS publishes its CloudWatch metrics once a minute: an alarm on an AWS/SQS
// metric with a shorter or unaligned period has periods without data. The
// daemon's own alarms may use any period (it reads SQS itself); the stack's
// round up to whole minutes.
seconds SqsMetricPeriod(seconds period) {
  return seconds(std::max<int64_t>(1, (period.count() + 59) / 60) * 60);
}

// The config group a queue belongs to; kInvalidArgument when there is none.
Result<const GroupConfig*> GroupOf(const MonitorConfig& config, const StackQueue& q) {
  auto it =
      std::find_if(config.groups.begin(), config.groups.end(), [&](const GroupConfig& g) { return g.name == q.group; });
  if (it == config.groups.end()) return InvalidArgument(fmt::format("queue {}: no group {}", q.name, q.group));
  return &*it;
}

// The settings one stack needs from the groups it covers: they must agree.
Result<const GroupConfig*> CommonGroup(const MonitorConfig& config, const std::vector<StackQueue>& queues) {
  const GroupConfig* first = nullptr;
  for (const StackQueue& q : queues) {
    DLQ_ASSIGN_OR_RETURN(const GroupConfig* g, GroupOf(config, q));
    if (first == nullptr) {
      first = g;
      continue;
    }
    auto differ = [&](std::string_view what, const std::string& a, const std::string& b) -> Status {
      if (a == b) return Status::Ok();
      return InvalidArgument(fmt::format(
          "groups {} and {} differ in {} ('{}' vs '{}'): one stack runs one function with one configuration; "
          "generate one stack per group (--group NAME --function-name NAME)",
          first->name, g->name, what, a, b));
    };
    DLQ_RETURN_IF_ERROR(differ("destination", first->destination, g->destination));
    DLQ_RETURN_IF_ERROR(differ("key_template", first->key_template_text, g->key_template_text));
    DLQ_RETURN_IF_ERROR(differ("sse", first->put.sse, g->put.sse));
    DLQ_RETURN_IF_ERROR(differ("sse_kms_key_id", first->put.sse_kms_key_id, g->put.sse_kms_key_id));
    DLQ_RETURN_IF_ERROR(differ("storage_class", first->put.storage_class, g->put.storage_class));
    DLQ_RETURN_IF_ERROR(differ("region", first->region, g->region));
    DLQ_RETURN_IF_ERROR(differ("causes", std::string(stack_internal::StackCausesMode(*first)),
                               std::string(stack_internal::StackCausesMode(*g))));
    DLQ_RETURN_IF_ERROR(
        differ("cause_samples", std::to_string(first->cause_samples), std::to_string(g->cause_samples)));
    DLQ_RETURN_IF_ERROR(differ("consumer_logs", fmt::format("{}", fmt::join(first->consumer_logs, ",")),
                               fmt::format("{}", fmt::join(g->consumer_logs, ","))));
  }
  if (first == nullptr) {
    return InvalidArgument("no queue to deploy for: the config's groups name or discover none");
  }
  return first;
}

TemplateValue Parameter(std::string_view type, TemplateValue def, std::string_view description) {
  return TemplateValue::Map().Set("Type", type).Set("Default", std::move(def)).Set("Description", description);
}

DiscoveredQueue AsDiscovered(const StackQueue& q) {
  DiscoveredQueue d;
  d.name = q.name;
  d.url = q.url;
  d.fifo = q.fifo;
  d.retention = q.retention;
  if (q.source_retention.count() > 0) d.redrive_sources.push_back({"", "", q.source_retention, 0});
  return d;
}

// The sweep as a safety path: every `interval` the function archives what
// `policy` selects from every queue, found by looking at each message (its
// expiry clock), not through CloudWatch.
QueueSafetyInput SchedulePathInput(const StackQueue& q, const GroupConfig& g, seconds interval, const Selection& p,
                                   const AlarmPlanOptions& plan) {
  QueueSafetyInput in = DefaultSafetyInput(q.name, q.fifo, q.retention, q.source_retention);
  in.age_source = AgeSource::kPerMessageExpiry;
  in.sweep_interval = interval;
  in.collection_interval = seconds(0);
  in.metric_delay = seconds(0);
  in.expiry_alarm_archives = true;
  in.depth = plan.assumed_depth;
  in.drain_rate = plan.assumed_drain_rate;
  in.max_messages_per_run = static_cast<int64_t>(plan.max_messages_per_run);
  in.required_margin = g.alarms.expiry.safety_margin;
  double threshold = 0;  // all: archived at the first sweep
  if (p.kind == SelectionKind::kOlderThan) threshold = static_cast<double>(p.window.count());
  if (p.kind == SelectionKind::kExpiringWithin) {
    threshold = std::max(0.0, static_cast<double>((q.retention - p.window).count()));
  }
  in.expiry_alarm.threshold = threshold;
  in.expiry_alarm.period = interval;
  return in;
}

// A condition: the parameter `name` is not "".
TemplateValue NotEmpty(std::string_view name) {
  return TemplateValue::Map().Set(
      "Fn::Not", TemplateValue::List({TemplateValue::Map().Set("Fn::Equals", TemplateValue::List({Ref(name), ""}))}));
}

std::string JoinComma(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

}  // namespace

Status StackOptions::Validate() const {
  auto bad = [](std::string msg) { return InvalidArgument(std::move(msg)); };
  if (function_name.empty() || function_name.size() > 64 ||
      !std::all_of(function_name.begin(), function_name.end(),
                   [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_'; })) {
    return bad(fmt::format("--function-name '{}': 1 to 64 letters, digits, - and _", function_name));
  }
  auto code = ParseDestination(lambda_code);
  if (lambda_code.empty() || !code.ok() || code->scheme != "s3" || code->prefix.empty()) {
    return bad(fmt::format(
        "--lambda-code '{}': expected s3://BUCKET/KEY of the zip built by scripts/package-lambda (upload it first)",
        lambda_code));
  }
  if (architecture != "x86_64" && architecture != "arm64") {
    return bad(fmt::format("--architecture '{}': expected x86_64 or arm64", architecture));
  }
  if (timeout_s < 30 || timeout_s > 900) return bad(fmt::format("--timeout {}: 30 to 900 seconds", timeout_s));
  if (memory_mb < 128 || memory_mb > 10240) return bad(fmt::format("--memory {}: 128 to 10240 MB", memory_mb));
  if (reserved_concurrency < 1 || reserved_concurrency > 1000) {
    return bad(fmt::format("--reserved-concurrency {}: 1 to 1000", reserved_concurrency));
  }
  if (!schedule.empty()) DLQ_RETURN_IF_ERROR(ParseSchedule(schedule).status());
  if (auto p = ParseSelectionSpec(policy); policy != kAutoPolicy && !p.ok()) {
    return bad(fmt::format("--policy {}", p.status().message()));
  }
  static constexpr int kLogRetention[] = {1,   3,   5,   7,   14,   30,   60,   90,   120,  150,  180,
                                          365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653};
  if (std::find(std::begin(kLogRetention), std::end(kLogRetention), log_retention_days) == std::end(kLogRetention)) {
    return bad(fmt::format("--log-retention-days {}: one of CloudWatch Logs' values (1, 3, 5, 7, 14, 30, 60, 90, ...)",
                           log_retention_days));
  }
  if (transition_storage_class != "GLACIER_IR" && transition_storage_class != "GLACIER" &&
      transition_storage_class != "DEEP_ARCHIVE") {
    return bad(fmt::format("--transition-storage-class '{}': expected GLACIER_IR, GLACIER or DEEP_ARCHIVE",
                           transition_storage_class));
  }
  if (transition_days < 0 || expiration_days < 0 || abort_multipart_days < 1) {
    return bad("--transition-days and --expiration-days must be >= 0, --abort-multipart-days >= 1");
  }
  if (noncurrent_version_days < 1) {
    return bad(fmt::format("noncurrent_version_days {}: at least 1", noncurrent_version_days));
  }
  if (expiration_days > 0 && transition_days > 0 && expiration_days <= transition_days) {
    return bad(
        fmt::format("--expiration-days {} must be later than --transition-days {}", expiration_days, transition_days));
  }
  if (!vpc_subnets.empty() && vpc_security_groups.empty()) {
    return bad("--vpc-subnets needs --vpc-security-groups (the function's network interfaces need a group)");
  }
  if (vpc_subnets.empty() && (!vpc_security_groups.empty() || !vpc_route_tables.empty() || !vpc_id.empty())) {
    return bad("--vpc-security-groups, --vpc-route-tables and --vpc-id need --vpc-subnets");
  }
  if (!vpc_subnets.empty() && vpc_endpoints && vpc_id.empty()) {
    return bad("--vpc-subnets with endpoints needs --vpc-id (or --no-vpc-endpoints when the VPC already has them)");
  }
  if (!vpc_subnets.empty() && vpc_endpoints && vpc_route_tables.empty()) {
    return bad(
        "--vpc-subnets with endpoints needs --vpc-route-tables for the S3 gateway endpoint (or --no-vpc-endpoints)");
  }
  return Status::Ok();
}

namespace stack_internal {

Status StackBuilder::Resolve() {
  DLQ_RETURN_IF_ERROR(o_.Validate());
  DLQ_ASSIGN_OR_RETURN(group_, CommonGroup(config_, queues_));
  DLQ_ASSIGN_OR_RETURN(dest_, ParseDestination(group_->destination));
  if (dest_.scheme != "s3") {
    return InvalidArgument(fmt::format("group {}: destination {} is not s3://: the Lambda function writes to S3 only",
                                       group_->name, group_->destination));
  }
  prefix_ = dest_.prefix.empty() ? std::string(kDefaultKeyPrefix) : dest_.prefix;
  DLQ_ASSIGN_OR_RETURN(kms_, ResolveKmsKey(group_->put));
  if (o_.policy != kAutoPolicy) {  // auto: ResolveAutoPolicy, once the queues are known
    auto parsed_policy = ParseSelectionSpec(o_.policy);
    if (!parsed_policy.ok()) return InvalidArgument("--policy " + parsed_policy.status().message());
    policy_ = *parsed_policy;
    policy_text_ = o_.policy;
  }
  schedule_ = o_.schedule.empty() ? RateFor(config_.sweep_interval) : o_.schedule;
  DLQ_ASSIGN_OR_RETURN(sweep_, ParseSchedule(schedule_));
  DLQ_ASSIGN_OR_RETURN(code_, ParseDestination(o_.lambda_code));
  vpc_ = !o_.vpc_subnets.empty();
  const std::string& kt = group_->key_template_text;
  hive_ = kt == "hive" || kt == kHiveKeyTemplate;
  default_layout_ = kt == "default" || kt == kDefaultKeyTemplate;
  return Status::Ok();
}

// Warns once per group whose alarm periods the stack rounds up to whole minutes.
void StackBuilder::WarnAboutPeriods(const GroupConfig& g) {
  for (bool expiry : {true, false}) {
    const AlarmSettings& a = expiry ? g.alarms.expiry : g.alarms.depth;
    if (!a.enabled || a.period == SqsMetricPeriod(a.period)) continue;
    out_.warnings.push_back(fmt::format(
        "group {}: alarms.{}.period {} is not a whole number of minutes; SQS publishes its metrics once a minute, so "
        "the stack's CloudWatch alarms use {}",
        g.name, expiry ? "expiry" : "depth", FormatDuration(a.period), FormatDuration(SqsMetricPeriod(a.period))));
  }
}

// Each queue once; no external_id; one role per other account.
Status StackBuilder::CheckQueues() {
  std::set<std::string> names;
  std::set<std::string> groups;
  for (const StackQueue& q : queues_) {
    if (!names.insert(q.SameAccount() ? q.name : q.account_id + "/" + q.name).second) {
      return InvalidArgument(fmt::format("queue {} is listed twice (groups overlap?)", q.name));
    }
    DLQ_ASSIGN_OR_RETURN(const GroupConfig* g, GroupOf(config_, q));
    if (!g->external_id.empty()) {
      return InvalidArgument(fmt::format(
          "group {} uses external_id: the Lambda runtime assumes roles without one (DLQ_ARCHIVE_ROLE_ARNS); drop "
          "the sts:ExternalId condition from {}'s trust policy for this function's role, or run the daemon for "
          "this group",
          g->name, g->role_arn));
    }
    if (q.SameAccount() && groups.insert(g->name).second) WarnAboutPeriods(*g);
    if (q.SameAccount()) continue;
    std::string account = q.account_id.empty() ? AccountOfArn(q.role_arn) : q.account_id;
    auto [it, inserted] = role_by_account_.emplace(account, q.role_arn);
    if (!inserted && it->second != q.role_arn) {
      return InvalidArgument(fmt::format("account {} has two roles ({} and {}): the function assumes one per account",
                                         account, it->second, q.role_arn));
    }
  }
  return Status::Ok();
}

namespace {

AlarmPlanOptions StackPlanOptions() {
  AlarmPlanOptions plan_options;
  plan_options.max_messages_per_run = 0;  // DLQ_ARCHIVE_MAX_MESSAGES is not set: a run drains until its deadline
  return plan_options;
}

}  // namespace

// The daemon's alarm plan for `q` as the stack deploys it: CloudWatch's
// metrics, whole-minute periods, and every alarm invoking the function.
QueueAlarmPlan StackBuilder::PlanStackAlarms(const GroupConfig& g, const StackQueue& q) const {
  MonitorConfig plan_config = config_;
  plan_config.sweep_interval = sweep_.value_or(seconds(0));
  GroupConfig lambda_group = g;
  lambda_group.cloudwatch_age = true;  // CloudWatch alarms see only CloudWatch's metrics
  lambda_group.alarms.expiry.action = AlarmSettings::Action::kArchive;
  lambda_group.alarms.depth.action = AlarmSettings::Action::kArchive;  // every alarm invokes the function
  lambda_group.alarms.expiry.period = SqsMetricPeriod(g.alarms.expiry.period);
  lambda_group.alarms.depth.period = SqsMetricPeriod(g.alarms.depth.period);
  return PlanAlarms(plan_config, lambda_group, AsDiscovered(q), StackPlanOptions());
}

// --policy auto: what the daemon's expiry alarm archives (policy.select:
// auto takes the messages expiring within the alarm's lead window; a group's
// explicit policy otherwise). One function serves every queue, so the widest
// selection wins: no queue gets less than the daemon would give it.
Status StackBuilder::ResolveAutoPolicy() {
  std::optional<Selection> chosen;
  for (const StackQueue& q : queues_) {
    DLQ_ASSIGN_OR_RETURN(const GroupConfig* g, GroupOf(config_, q));
    const Selection s = PlanStackAlarms(*g, q).expiry_selection;
    if (!chosen || s.kind == SelectionKind::kAll) {
      chosen = s;
    } else if (chosen->kind == SelectionKind::kAll) {
      continue;
    } else if (s.kind != chosen->kind) {
      return InvalidArgument(fmt::format(
          "--policy auto: group {} archives {}, other queues of the stack {}; one function has one policy: pass "
          "--policy (all, older_than:D or expiring_within:D)",
          g->name, SelectionText(s), SelectionText(*chosen)));
    } else if (s.kind == SelectionKind::kExpiringWithin) {
      chosen->window = std::max(chosen->window, s.window);
    } else {
      chosen->window = std::min(chosen->window, s.window);  // older-than: the shorter window takes more
    }
  }
  policy_ = chosen.value_or(Selection{SelectionKind::kAll, seconds(0)});
  switch (policy_.kind) {
    case SelectionKind::kAll: policy_text_ = "all"; break;
    case SelectionKind::kOlderThan: policy_text_ = fmt::format("older_than:{}s", policy_.window.count()); break;
    case SelectionKind::kExpiringWithin:
      policy_text_ = fmt::format("expiring_within:{}s", policy_.window.count());
      break;
  }
  return Status::Ok();
}

// The safety analysis of one queue, for both paths: the schedule's sweep and
// (in this account) the CloudWatch alarms.
Status StackBuilder::AnalyzeQueue(const StackQueue& q) {
  DLQ_ASSIGN_OR_RETURN(const GroupConfig* g, GroupOf(config_, q));
  StackQueuePlan p;
  p.queue = q;
  if (sweep_) {
    auto report = AnalyzeQueueSafety(SchedulePathInput(q, *g, *sweep_, policy_, StackPlanOptions()));
    if (!report.ok()) return report.status().WithContext("schedule analysis");
    p.schedule_path_safe = report->safe;
    p.schedule_report = report->ToString();
  }
  if (!q.SameAccount()) {
    out_.queues.push_back(std::move(p));
    alarm_plans_.emplace_back();
    out_.warnings.push_back(fmt::format(
        "queue {} (account {}): no alarms; CloudWatch alarm actions cannot invoke a function in another account, "
        "so only the schedule ({}) archives it",
        q.name, q.account_id.empty() ? AccountOfArn(q.role_arn) : q.account_id, schedule_));
    return Status::Ok();
  }
  QueueAlarmPlan plan = PlanStackAlarms(*g, q);
  auto report = AnalyzeQueueSafety(plan.safety);
  if (!report.ok()) return report.status().WithContext("alarm analysis");
  p.alarm_path_safe = report->safe;
  p.alarm_report = report->ToString();
  p.threshold_source = plan.threshold_source;
  if (plan.expiry) {
    p.expiry_alarm = fmt::format("{}-{}-expiry", o_.function_name, q.name);
    p.expiry_threshold_s = plan.expiry->threshold;
  }
  if (plan.depth) p.depth_alarm = fmt::format("{}-{}-depth", o_.function_name, q.name);
  out_.queues.push_back(std::move(p));
  alarm_plans_.push_back(std::move(plan));
  return Status::Ok();
}

Status StackBuilder::AnalyzeSafety() {
  for (const StackQueue& q : queues_) {
    DLQ_RETURN_IF_ERROR(AnalyzeQueue(q));
    const StackQueuePlan& p = out_.queues.back();
    if (!p.alarm_path_safe && !p.schedule_path_safe) {
      out_.warnings.push_back(fmt::format("queue {}: UNSAFE on every path:\n{}{}{}{}", q.name,
                                          p.alarm_report.empty() ? "" : "alarm path: ", p.alarm_report,
                                          p.schedule_report.empty() ? "" : "schedule path: ", p.schedule_report));
    }
  }
  return Status::Ok();
}

// Every parameter has a default that works for this config.
TemplateValue StackBuilder::Parameters() const {
  TemplateValue params = TemplateValue::Map();
  params.Set("CodeBucket", Parameter("String", code_.bucket, "S3 bucket holding the package-lambda zip"));
  params.Set("CodeKey", Parameter("String", code_.prefix, "S3 key of the package-lambda zip"));
  params.Set("Architecture", Parameter("String", o_.architecture, "the zip's architecture")
                                 .Set("AllowedValues", TemplateValue::List({"x86_64", "arm64"})));
  params.Set("FunctionTimeout", Parameter("Number", o_.timeout_s, "seconds per invocation (the drain stops before)")
                                    .Set("MinValue", 30)
                                    .Set("MaxValue", 900));
  params.Set("FunctionMemory", Parameter("Number", o_.memory_mb, "MB").Set("MinValue", 128).Set("MaxValue", 10240));
  params.Set("ReservedConcurrency",
             Parameter("Number", o_.reserved_concurrency, "concurrent invocations reserved (and allowed)")
                 .Set("MinValue", 1)
                 .Set("MaxValue", 1000));
  params.Set("ScheduleExpression",
             Parameter("String", schedule_, "EventBridge schedule of the sweep (the safety net)"));
  params.Set("AlertEmail", Parameter("String", "", "email address subscribed to the alert topic (empty: none)"));
  params.Set("AlertHttpsEndpoint", Parameter("String", "", "https:// URL subscribed to the alert topic (empty: none)"));
  if (!o_.create_bucket) {
    params.Set(kBucket, Parameter("String", dest_.bucket, "existing archive bucket (the config's destination)"));
  } else {
    params.Set("NoncurrentVersionDays",
               Parameter("Number", o_.noncurrent_version_days,
                         "days a deleted or overwritten archive object stays recoverable (bucket versioning)")
                   .Set("MinValue", 1));
  }
  if (vpc_) {
    params.Set("SubnetIds", Parameter("List<AWS::EC2::Subnet::Id>", JoinComma(o_.vpc_subnets), "function subnets"));
    params.Set("SecurityGroupIds",
               Parameter("List<AWS::EC2::SecurityGroup::Id>", JoinComma(o_.vpc_security_groups),
                         "function (and interface endpoint) security groups; allow 443 among them"));
    if (o_.vpc_endpoints) {
      params.Set("VpcId", Parameter("AWS::EC2::VPC::Id", o_.vpc_id, "the subnets' VPC"));
      params.Set("RouteTableIds", Parameter("CommaDelimitedList", JoinComma(o_.vpc_route_tables),
                                            "route tables of the S3 gateway endpoint"));
    }
  }
  return params;
}

TemplateValue StackBuilder::Outputs() const {
  TemplateValue outputs = TemplateValue::Map();
  auto output = [&](std::string_view name, TemplateValue value, std::string_view description) {
    outputs.Set(name, TemplateValue::Map().Set("Description", description).Set("Value", std::move(value)));
  };
  output("FunctionArn", GetAtt(kFunction, "Arn"), "the archiver function");
  output("FunctionName", Ref(kFunction), "invoke with {\"queues\": [...]} to archive on demand");
  output("RoleArn", GetAtt(kRole, "Arn"), "the function's execution role");
  output("ArchiveBucketName", Ref(kBucket), "where archives are written");
  output("ArchiveDestination", Sub(fmt::format("s3://${{{}}}/{}", kBucket, SubLiteral(prefix_))),
         "give this to search, ls, show, stats and replay --from");
  output("LogGroupName", Ref(kLogGroup), "the function's logs and EMF metrics");
  if (o_.replay_policy) {
    output("ReplayPolicyArn", Ref(kReplayPolicy), "attach to the role of whoever runs dlq-archive replay");
  }
  output("ScheduleRuleArn", GetAtt(kSchedule, "Arn"), "the sweep schedule");
  output("AlertTopicArn", Ref(kAlertTopic), "subscribe people here: every alarm and every failed invocation");
  if (athena_) {
    output("GlueDatabaseName", Ref("GlueDatabase"), "Athena database");
    output("GlueTableName", Ref("GlueTable"),
           "Athena table (partition projection; see `dlq-archive ddl` for the view)");
  }
  // Output values are limited (4 KiB): past that, the prefix finds them all.
  std::string alarm_list = JoinComma(alarm_names_);
  if (alarm_list.empty()) alarm_list = "(none)";
  if (alarm_list.size() > kMaxOutputValue) alarm_list = "(too many: see AlarmNamePrefix)";
  output("AlarmNames", alarm_list, "the CloudWatch alarms that invoke the function");
  output("AlarmNamePrefix", fn_ + "-", "aws cloudwatch describe-alarms --alarm-name-prefix VALUE");
  output("QueueCount", std::to_string(queues_.size()), "DLQs this stack archives");
  return outputs;
}

Result<GeneratedStack> StackBuilder::Build() {
  DLQ_RETURN_IF_ERROR(Resolve());
  DLQ_RETURN_IF_ERROR(CheckQueues());
  if (o_.policy == kAutoPolicy) DLQ_RETURN_IF_ERROR(ResolveAutoPolicy());
  DLQ_RETURN_IF_ERROR(AnalyzeSafety());
  TemplateValue t = TemplateValue::Map();
  t.Set("AWSTemplateFormatVersion", "2010-09-09");
  t.Set("Description", fmt::format("dlq-archive: archives {} to s3://{}/{} with the Lambda "
                                   "custom runtime (generated by `dlq-archive stack` from {})",
                                   CountNoun(queues_.size(), "SQS dead-letter queue", "SQS dead-letter queues"),
                                   dest_.bucket, prefix_, config_.path));
  t.Set("Parameters", Parameters());
  t.Set("Conditions", TemplateValue::Map()
                          .Set("HasAlertEmail", NotEmpty("AlertEmail"))
                          .Set("HasAlertHttpsEndpoint", NotEmpty("AlertHttpsEndpoint")));
  AddLogGroup();
  AddRole();
  if (o_.replay_policy) AddReplayPolicy();
  AddFunction();
  AddSchedule();
  DLQ_RETURN_IF_ERROR(AddAlarms());
  AddAlerts();
  if (o_.create_bucket) AddArchiveBucket(res_, o_, dest_.bucket, prefix_, group_->put, kms_);
  AddVpcEndpoints();
  DLQ_RETURN_IF_ERROR(AddAthena());
  if (res_.entries().size() > kMaxStackResources) {
    return InvalidArgument(fmt::format(
        "the template would have {} resources, more than CloudFormation's {} (each DLQ of this account adds 4): "
        "split the queues over several stacks (--group NAME, a distinct --function-name each)",
        res_.entries().size(), kMaxStackResources));
  }
  t.Set("Resources", std::move(res_));
  t.Set("Outputs", Outputs());
  out_.tmpl = std::move(t);
  return std::move(out_);
}

}  // namespace stack_internal

Result<GeneratedStack> GenerateStack(const MonitorConfig& config, const std::vector<StackQueue>& queues,
                                     const StackOptions& o) {
  return stack_internal::StackBuilder(config, queues, o).Build();
}

}  // namespace dlq
