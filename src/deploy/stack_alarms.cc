// The stack's alarms: per DLQ of this account the expiry and depth alarms
// that invoke the function, and for people the alert topic, its
// subscriptions and the function's own alarms (stack_internal.h).
#include <fmt/format.h>

#include <cctype>
#include <optional>
#include <string>

#include "common/crypto.h"
#include "common/time_util.h"
#include "deploy/stack_internal.h"

namespace dlq::stack_internal {
namespace {

constexpr size_t kMaxAlarmDescription = 1024;  // CloudWatch's limit

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

std::string Truncate(std::string s, size_t n) {
  if (s.size() <= n) return s;
  s.resize(n - 3);
  return s + "...";
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

}  // namespace

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

}  // namespace dlq::stack_internal
