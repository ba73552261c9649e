#include "deploy/stack.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "archive/destination.h"
#include "archive/key_layout.h"
#include "archiver/selection_spec.h"
#include "common/count_noun.h"
#include "common/crypto.h"
#include "common/strings.h"
#include "common/time_util.h"
#include "monitor/alarm_plan.h"
#include "monitor/safety.h"
#include "query/athena_ddl.h"

namespace dlq {
namespace {

using std::chrono::seconds;

constexpr std::string_view kFunction = "ArchiverFunction";
constexpr std::string_view kRole = "ArchiverRole";
constexpr std::string_view kLogGroup = "ArchiverLogGroup";
constexpr std::string_view kBucket = "ArchiveBucket";  // the parameter, or the resource with --create-bucket
constexpr std::string_view kSchedule = "SweepSchedule";
constexpr std::string_view kAlertTopic = "AlertTopic";  // for people: alarms and failed invocations
constexpr size_t kMaxAlarmDescription = 1024;           // CloudWatch's limit
constexpr size_t kMaxOutputValue = 4096;                // CloudFormation's

std::string Partition() {
  return "${AWS::Partition}";
}

// A CloudFormation logical id for a queue: its name in CamelCase (letters and
// digits only) and 8 hex digits of its SHA-256, so "a-b" and "a_b" differ.
std::string LogicalId(std::string_view name) {
  std::string out;
  bool upper = true;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0) {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out + Sha256Hex(name).substr(0, 8);
}

std::string AccountOfArn(std::string_view arn) {
  auto parts = Split(arn, ':');  // arn, partition, service, region, account, resource
  return parts.size() >= 6 ? std::string(parts[4]) : "";
}

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

std::string Truncate(std::string s, size_t n) {
  if (s.size() <= n) return s;
  s.resize(n - 3);
  return s + "...";
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
  }
  if (first == nullptr) {
    return InvalidArgument("no queue to deploy for: the config's groups name or discover none");
  }
  return first;
}

// The configured KMS key as IAM and S3 need it. A key id becomes the key's
// ARN in the stack's account and region. An alias cannot be a policy's
// Resource: the statement then covers the account's keys in that region on
// condition that the key carries the alias (kms:ResourceAliases), and the
// bucket's default encryption names the alias ARN.
struct KmsKey {
  TemplateValue arn;              // key or alias ARN (for the bucket)
  TemplateValue policy_resource;  // for the IAM statement
  std::string alias;              // "alias/NAME" when given as an alias
};
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

TemplateValue Statement(std::string_view sid, const std::vector<std::string>& actions, TemplateValue resources) {
  return TemplateValue::Map()
      .Set("Sid", sid)
      .Set("Effect", "Allow")
      .Set("Action", TemplateValue::Strings(actions))
      .Set("Resource", std::move(resources));
}

TemplateValue Parameter(std::string_view type, TemplateValue def, std::string_view description) {
  return TemplateValue::Map().Set("Type", type).Set("Default", std::move(def)).Set("Description", description);
}

TemplateValue Tags() {
  return TemplateValue::List({TemplateValue::Map().Set("Key", "managed-by").Set("Value", "dlq-archive")});
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

TemplateValue AlarmResource(const AlarmSpec& spec, const std::string& alarm_name, const std::string& queue,
                            std::string description) {
  return TemplateValue::Map()
      .Set("Type", "AWS::CloudWatch::Alarm")
      .Set("Properties",
           TemplateValue::Map()
               .Set("AlarmName", alarm_name)
               .Set("AlarmDescription", Truncate(std::move(description), kMaxAlarmDescription))
               .Set("Namespace", "AWS/SQS")
               .Set("MetricName", spec.metric)
               .Set("Dimensions",
                    TemplateValue::List({TemplateValue::Map().Set("Name", "QueueName").Set("Value", queue)}))
               .Set("Statistic", std::string(StatisticName(spec.statistic)))
               .Set("Period", static_cast<int64_t>(spec.period.count()))
               .Set("EvaluationPeriods", spec.evaluation_periods)
               .Set("DatapointsToAlarm", spec.datapoints_to_alarm)
               .Set("Threshold", spec.threshold)
               .Set("ComparisonOperator", std::string(ComparisonName(spec.comparison)))
               .Set("TreatMissingData", std::string(MissingDataName(spec.missing)))
               .Set("AlarmActions", TemplateValue::List({GetAtt(kFunction, "Arn"), Ref(kAlertTopic)})));
}

// A condition: the parameter `name` is not "".
TemplateValue NotEmpty(std::string_view name) {
  return TemplateValue::Map().Set(
      "Fn::Not", TemplateValue::List({TemplateValue::Map().Set("Fn::Equals", TemplateValue::List({Ref(name), ""}))}));
}

// An alarm for people on one of the function's AWS/Lambda metrics: any
// datapoint of `metric` in five minutes.
TemplateValue FunctionAlarm(const std::string& alarm_name, std::string_view metric, std::string description) {
  return TemplateValue::Map()
      .Set("Type", "AWS::CloudWatch::Alarm")
      .Set("Properties",
           TemplateValue::Map()
               .Set("AlarmName", alarm_name)
               .Set("AlarmDescription", std::move(description))
               .Set("Namespace", "AWS/Lambda")
               .Set("MetricName", metric)
               .Set("Dimensions", TemplateValue::List(
                                      {TemplateValue::Map().Set("Name", "FunctionName").Set("Value", Ref(kFunction))}))
               .Set("Statistic", "Sum")
               .Set("Period", 300)
               .Set("EvaluationPeriods", 1)
               .Set("DatapointsToAlarm", 1)
               .Set("Threshold", 1)
               .Set("ComparisonOperator", "GreaterThanOrEqualToThreshold")
               .Set("TreatMissingData", "notBreaching")
               .Set("AlarmActions", TemplateValue::List({Ref(kAlertTopic)})));
}

// A subscription to the alert topic, made only when its parameter is set.
TemplateValue AlertSubscription(std::string_view protocol, std::string_view parameter, std::string_view condition) {
  return TemplateValue::Map()
      .Set("Type", "AWS::SNS::Subscription")
      .Set("Condition", condition)
      .Set("Properties", TemplateValue::Map()
                             .Set("TopicArn", Ref(kAlertTopic))
                             .Set("Protocol", protocol)
                             .Set("Endpoint", Ref(parameter)));
}

TemplateValue AlarmPermission(const std::string& alarm_name) {
  return TemplateValue::Map()
      .Set("Type", "AWS::Lambda::Permission")
      .Set("Properties",
           TemplateValue::Map()
               .Set("FunctionName", GetAtt(kFunction, "Arn"))
               .Set("Action", "lambda:InvokeFunction")
               .Set("Principal", "lambda.alarms.cloudwatch.amazonaws.com")
               .Set("SourceAccount", Ref("AWS::AccountId"))
               .Set("SourceArn", Sub(fmt::format("arn:{}:cloudwatch:${{AWS::Region}}:${{AWS::AccountId}}:alarm:{}",
                                                 Partition(), SubLiteral(alarm_name)))));
}

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

std::string JoinComma(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

// A location under the archive bucket, following the bucket parameter or resource.
TemplateValue InBucket(const std::string& text, const std::string& bucket) {
  const std::string head = "s3://" + bucket + "/";
  if (StartsWith(text, head)) {
    return Sub(fmt::format("s3://${{{}}}/{}", kBucket, SubLiteral(text.substr(head.size()))));
  }
  return TemplateValue(text);
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

// The archive bucket (--create-bucket) and its TLS-only policy.
void AddArchiveBucket(TemplateValue& res, const StackOptions& o, const std::string& bucket, const std::string& prefix,
                      const PutOptions& put, const std::optional<KmsKey>& kms) {
  TemplateValue by_default = TemplateValue::Map();
  if (put.sse == "aws:kms") {
    by_default.Set("SSEAlgorithm", "aws:kms");
    if (kms) by_default.Set("KMSMasterKeyID", kms->arn);
  } else {
    by_default.Set("SSEAlgorithm", "AES256");
  }
  TemplateValue rule =
      TemplateValue::Map().Set("Id", "dlq-archive-lifecycle").Set("Status", "Enabled").Set("Prefix", prefix + "/");
  if (o.transition_days > 0) {
    rule.Set("Transitions", TemplateValue::List({TemplateValue::Map()
                                                     .Set("StorageClass", o.transition_storage_class)
                                                     .Set("TransitionInDays", o.transition_days)}));
  }
  if (o.expiration_days > 0) rule.Set("ExpirationInDays", o.expiration_days);
  // Versioning keeps what a mistaken delete or overwrite removed, this long.
  rule.Set("NoncurrentVersionExpiration", TemplateValue::Map().Set("NoncurrentDays", Ref("NoncurrentVersionDays")));
  rule.Set("AbortIncompleteMultipartUpload", TemplateValue::Map().Set("DaysAfterInitiation", o.abort_multipart_days));
  res.Set(kBucket,
          TemplateValue::Map()
              .Set("Type", "AWS::S3::Bucket")
              .Set("DeletionPolicy", "Retain")  // the archive outlives the stack
              .Set("UpdateReplacePolicy", "Retain")
              .Set("Properties",
                   TemplateValue::Map()
                       .Set("BucketName", bucket)
                       .Set("VersioningConfiguration", TemplateValue::Map().Set("Status", "Enabled"))
                       .Set("BucketEncryption",
                            TemplateValue::Map().Set(
                                "ServerSideEncryptionConfiguration",
                                TemplateValue::List({TemplateValue::Map()
                                                         .Set("ServerSideEncryptionByDefault", std::move(by_default))
                                                         .Set("BucketKeyEnabled", put.sse == "aws:kms")})))
                       .Set("PublicAccessBlockConfiguration", TemplateValue::Map()
                                                                  .Set("BlockPublicAcls", true)
                                                                  .Set("BlockPublicPolicy", true)
                                                                  .Set("IgnorePublicAcls", true)
                                                                  .Set("RestrictPublicBuckets", true))
                       .Set("OwnershipControls",
                            TemplateValue::Map().Set("Rules", TemplateValue::List({TemplateValue::Map().Set(
                                                                  "ObjectOwnership", "BucketOwnerEnforced")})))
                       .Set("LifecycleConfiguration",
                            TemplateValue::Map().Set("Rules", TemplateValue::List({std::move(rule)})))
                       .Set("Tags", Tags())));
  res.Set("ArchiveBucketPolicy",
          TemplateValue::Map()
              .Set("Type", "AWS::S3::BucketPolicy")
              .Set("Properties",
                   TemplateValue::Map()
                       .Set("Bucket", Ref(kBucket))
                       .Set("PolicyDocument",
                            TemplateValue::Map()
                                .Set("Version", "2012-10-17")
                                .Set("Statement",
                                     TemplateValue::List(
                                         {TemplateValue::Map()
                                              .Set("Sid", "DenyInsecureTransport")
                                              .Set("Effect", "Deny")
                                              .Set("Principal", "*")
                                              .Set("Action", "s3:*")
                                              .Set("Resource",
                                                   TemplateValue::List({GetAtt(kBucket, "Arn"),
                                                                        Sub(fmt::format("${{{}.Arn}}/*", kBucket))}))
                                              .Set("Condition", TemplateValue::Map().Set(
                                                                    "Bool", TemplateValue::Map().Set(
                                                                                "aws:SecureTransport", "false")))})))));
}

// The Glue database and table: `ddl`'s table definition (BuildAthenaTable),
// its locations following the ArchiveBucket parameter or resource.
Status AddGlueTable(TemplateValue& res, const StackOptions& o, const std::string& bucket, const std::string& prefix,
                    bool hive, const std::vector<StackQueue>& queues) {
  AthenaDdlOptions ddl;
  ddl.from = fmt::format("s3://{}/{}", bucket, prefix);
  ddl.layout = hive ? ArchiveLayout::kHive : ArchiveLayout::kDefault;
  ddl.database = o.athena_database;
  ddl.table = o.athena_table;
  ddl.first_day = o.first_day;
  for (const StackQueue& q : queues) ddl.queues.push_back(q.name);
  DLQ_ASSIGN_OR_RETURN(AthenaTable table, BuildAthenaTable(ddl));
  auto columns = [](const std::vector<AthenaColumn>& cols) {
    TemplateValue list = TemplateValue::List();
    for (const AthenaColumn& c : cols) list.Add(TemplateValue::Map().Set("Name", c.name).Set("Type", c.type));
    return list;
  };
  TemplateValue table_params = TemplateValue::Map().Set("EXTERNAL", "TRUE");
  for (const auto& [k, v] : table.properties) table_params.Set(k, InBucket(v, table.bucket));
  TemplateValue serde_params = TemplateValue::Map();
  for (const auto& [k, v] : table.serde_properties) serde_params.Set(k, v);
  res.Set("GlueDatabase",
          TemplateValue::Map()
              .Set("Type", "AWS::Glue::Database")
              .Set("Properties", TemplateValue::Map()
                                     .Set("CatalogId", Ref("AWS::AccountId"))
                                     .Set("DatabaseInput", TemplateValue::Map()
                                                               .Set("Name", table.database)
                                                               .Set("Description", "dlq-archive archive (Athena)"))));
  res.Set("GlueTable",
          TemplateValue::Map()
              .Set("Type", "AWS::Glue::Table")
              .Set("Properties",
                   TemplateValue::Map()
                       .Set("CatalogId", Ref("AWS::AccountId"))
                       .Set("DatabaseName", Ref("GlueDatabase"))
                       .Set("TableInput",
                            TemplateValue::Map()
                                .Set("Name", table.name)
                                .Set("TableType", "EXTERNAL_TABLE")
                                .Set("Parameters", std::move(table_params))
                                .Set("PartitionKeys", columns(table.partitions))
                                .Set("StorageDescriptor",
                                     TemplateValue::Map()
                                         .Set("Columns", columns(table.columns))
                                         .Set("Location", InBucket(table.location, table.bucket))
                                         .Set("InputFormat", table.input_format)
                                         .Set("OutputFormat", table.output_format)
                                         .Set("SerdeInfo", TemplateValue::Map()
                                                               .Set("SerializationLibrary", table.serde)
                                                               .Set("Parameters", std::move(serde_params)))))));
  return Status::Ok();
}

}  // namespace

StackQueue StackQueueFromDiscovery(const GroupConfig& group, const DiscoveredQueue& q) {
  StackQueue s;
  s.group = group.name;
  s.name = q.name;
  s.url = q.url;
  s.region = q.region;
  s.account_id = q.account_id;
  s.role_arn = group.role_arn;
  s.fifo = q.fifo;
  s.retention = q.retention;
  s.source_retention = q.MaxSourceRetention();
  s.discovered = true;
  return s;
}

Result<std::vector<StackQueue>> StackQueuesFromConfig(const GroupConfig& group, seconds retention,
                                                      seconds source_retention) {
  std::vector<StackQueue> out;
  for (const std::string& entry : group.queues) {
    StackQueue s;
    s.group = group.name;
    s.role_arn = group.role_arn;
    s.region = group.region;
    s.retention = retention;
    s.source_retention = source_retention;
    if (StartsWith(entry, "https://") || StartsWith(entry, "http://")) {
      std::string_view rest = std::string_view(entry).substr(entry.find("://") + 3);
      auto slash = rest.find('/');
      auto parts = slash == std::string_view::npos ? std::vector<std::string_view>()
                                                   : Split(rest.substr(slash), '/');  // "", ACCOUNT, NAME
      if (parts.size() != 3 || parts[2].empty()) {
        return InvalidArgument(fmt::format("group {}: queue URL {} does not end in /ACCOUNT/NAME", group.name, entry));
      }
      s.url = entry;
      s.account_id = std::string(parts[1]);
      s.name = std::string(parts[2]);
    } else {
      s.name = entry;
      if (!group.role_arn.empty()) s.account_id = AccountOfArn(group.role_arn);
    }
    s.fifo = EndsWith(s.name, ".fifo");
    if (std::find_if(group.exclude.begin(), group.exclude.end(),
                     [&](const std::string& e) { return e == s.name || e == entry; }) != group.exclude.end()) {
      continue;
    }
    out.push_back(std::move(s));
  }
  return out;
}

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

namespace {

// Builds one stack: Build() resolves what the template needs from the config
// and the options, analyses each queue's safety, then adds one family of
// resources per method. Single use; not thread-safe.
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
  void AddRole();
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

AlarmPlanOptions StackPlanOptions() {
  AlarmPlanOptions plan_options;
  plan_options.max_messages_per_run = 0;  // DLQ_ARCHIVE_MAX_MESSAGES is not set: a run drains until its deadline
  return plan_options;
}

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

// Created here so the role can be scoped to it.
void StackBuilder::AddLogGroup() {
  res_.Set(kLogGroup, TemplateValue::Map()
                          .Set("Type", "AWS::Logs::LogGroup")
                          .Set("Properties", TemplateValue::Map()
                                                 .Set("LogGroupName", "/aws/lambda/" + fn_)
                                                 .Set("RetentionInDays", o_.log_retention_days)));
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
  if (vpc_) {
    // The only "*": Lambda requires these EC2 network-interface actions on
    // all resources (they have no narrower scope Lambda accepts).
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

std::string StackBuilder::ScheduleText() const {
  if (!sweep_) {
    return fmt::format("{} archives {} (cron: no fixed interval analysed)", schedule_, SelectionText(policy_));
  }
  return fmt::format("{} archives {} every {}", schedule_, SelectionText(policy_),
                     FormatSpan(static_cast<double>(sweep_->count())));
}

std::string StackBuilder::ExpiryAlarmDescription(const StackQueuePlan& p, const QueueAlarmPlan& plan) const {
  const StackQueue& q = p.queue;
  const std::string attrs =
      q.discovered ? "read from SQS"
                   : "assumed, not discovered (--no-discovery): run `dlq-archive check` against the account";
  if (q.fifo) {
    return fmt::format(
        "Expiry alarm, FIFO DLQ {} (retention {}, {}). Age of oldest message >= {:.0f} s; for FIFO the age "
        "restarts at the move to the DLQ, like the expiry clock. Threshold {}. Alarm path: {}. ALARM invokes {}, "
        "which archives {}. Backstop: {}.",
        q.name, FormatSpan(static_cast<double>(q.retention.count())), attrs, plan.expiry->threshold,
        plan.threshold_source, p.alarm_path_safe ? "SAFE" : "UNSAFE", fn_, SelectionText(policy_), ScheduleText());
  }
  return fmt::format(
      "Expiry alarm, standard DLQ {} (retention {}, source retention {}; {}). Age of oldest message >= {:.0f} "
      "s. CloudWatch's ApproximateAgeOfOldestMessage restarts at the move to the DLQ, but a standard message "
      "expires at its SentTimestamp + retention, and the metric skips messages received 3+ times: this alarm "
      "alone cannot protect them. The real safety net is the schedule: {}; safety analysis of that path: {}. "
      "Threshold {}. ALARM invokes {}.",
      q.name, FormatSpan(static_cast<double>(q.retention.count())),
      q.source_retention.count() > 0 ? FormatSpan(static_cast<double>(q.source_retention.count())) : "unknown", attrs,
      plan.expiry->threshold, ScheduleText(), p.schedule_path_safe ? "SAFE" : "UNSAFE", plan.threshold_source, fn_);
}

// Per DLQ of this account: the expiry and depth alarms and their permissions to invoke the function.
Status StackBuilder::AddAlarms() {
  for (size_t i = 0; i < out_.queues.size(); ++i) {
    if (!alarm_plans_[i]) continue;  // another account's queue
    const StackQueuePlan& p = out_.queues[i];
    const StackQueue& q = p.queue;
    const QueueAlarmPlan& plan = *alarm_plans_[i];
    for (const std::optional<AlarmSpec>& spec : {plan.expiry, plan.depth}) {
      if (spec && spec->period.count() % 60 != 0) {
        return Status(ErrorCode::kInternal, fmt::format("alarm {} on AWS/SQS has period {} s, not a whole number of "
                                                        "minutes (SQS publishes its metrics once a minute)",
                                                        spec->name, spec->period.count()));
      }
    }
    const std::string id = LogicalId(q.name);
    if (plan.expiry) {
      res_.Set("ExpiryAlarm" + id,
               AlarmResource(*plan.expiry, p.expiry_alarm, q.name, ExpiryAlarmDescription(p, plan)));
      res_.Set("ExpiryAlarmPermission" + id, AlarmPermission(p.expiry_alarm));
      alarm_names_.push_back(p.expiry_alarm);
    }
    if (plan.depth) {
      std::string d = fmt::format(
          "Depth alarm, DLQ {}: ApproximateNumberOfMessagesVisible >= {:.0f} for {} of {} periods of {} s. Catches "
          "messages the age metric skips (received 3+ times). ALARM invokes {}, which archives {}. Backstop: {}.",
          q.name, plan.depth->threshold, plan.depth->datapoints_to_alarm, plan.depth->evaluation_periods,
          plan.depth->period.count(), fn_, SelectionText(policy_), ScheduleText());
      res_.Set("DepthAlarm" + id, AlarmResource(*plan.depth, p.depth_alarm, q.name, d));
      res_.Set("DepthAlarmPermission" + id, AlarmPermission(p.depth_alarm));
      alarm_names_.push_back(p.depth_alarm);
    }
  }
  return Status::Ok();
}

// For people: the topic every alarm also notifies, its optional
// subscriptions, alarms on the function's errors and throttles, and the
// topic as the on-failure destination of asynchronous invocations (alarms,
// the schedule and the follow-up invoke are all asynchronous).
void StackBuilder::AddAlerts() {
  res_.Set(kAlertTopic, TemplateValue::Map()
                            .Set("Type", "AWS::SNS::Topic")
                            .Set("Properties", TemplateValue::Map()
                                                   .Set("TopicName", fn_ + "-alerts")
                                                   .Set("DisplayName", "dlq-archive alerts")
                                                   .Set("Tags", Tags())));
  res_.Set("AlertEmailSubscription", AlertSubscription("email", "AlertEmail", "HasAlertEmail"));
  res_.Set("AlertHttpsSubscription", AlertSubscription("https", "AlertHttpsEndpoint", "HasAlertHttpsEndpoint"));
  res_.Set("FunctionErrorsAlarm",
           FunctionAlarm(fn_ + "-errors", "Errors",
                         fmt::format("{} failed an invocation: an archive run, or the sweep, did not finish; see the "
                                     "log group /aws/lambda/{}",
                                     fn_, fn_)));
  res_.Set("FunctionThrottlesAlarm",
           FunctionAlarm(fn_ + "-throttles", "Throttles",
                         fmt::format("{} was throttled (reserved concurrency {}): an alarm's or the schedule's run "
                                     "waited or was dropped",
                                     fn_, o_.reserved_concurrency)));
  res_.Set(
      "ArchiverEventInvokeConfig",
      TemplateValue::Map()
          .Set("Type", "AWS::Lambda::EventInvokeConfig")
          .Set("Properties", TemplateValue::Map()
                                 .Set("FunctionName", Ref(kFunction))
                                 .Set("Qualifier", "$LATEST")
                                 .Set("DestinationConfig",
                                      TemplateValue::Map().Set(
                                          "OnFailure", TemplateValue::Map().Set("Destination", Ref(kAlertTopic))))));
}

// S3 (gateway), SQS, Lambda (the follow-up invoke), STS (roles).
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
}

// The same table definition as `dlq-archive ddl`, for the default and hive layouts.
Status StackBuilder::AddAthena() {
  athena_ = o_.athena && (hive_ || default_layout_);
  if (o_.athena && !athena_) {
    out_.warnings.push_back(
        fmt::format("key_template '{}' is neither default nor hive: no Glue table (Athena's "
                    "partition projection needs one of the two layouts)",
                    group_->key_template_text));
  }
  if (!athena_) return Status::Ok();
  return AddGlueTable(res_, o_, dest_.bucket, prefix_, hive_, queues_);
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

}  // namespace

Result<GeneratedStack> GenerateStack(const MonitorConfig& config, const std::vector<StackQueue>& queues,
                                     const StackOptions& o) {
  return StackBuilder(config, queues, o).Build();
}

}  // namespace dlq
