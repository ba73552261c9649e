// Lambda event parsing: turns an invocation payload into what the handler
// must do. Pure; no I/O. Accepts the shapes AWS documents:
//   - CloudWatch alarm Lambda action: {"source":"aws.cloudwatch","alarmData":
//     {"alarmName","state":{"value"},"configuration":{"metrics":[{"metricStat":
//     {"metric":{"dimensions":{"QueueName":...}}}}]}}} (metric-math alarms list
//     several metrics; every QueueName dimension is taken);
//   - an alarm delivered through SNS: {"Records":[{"EventSource":"aws:sns",
//     "Sns":{"Message":"<alarm JSON>"}}]}, the alarm JSON with NewStateValue
//     and Trigger.Dimensions[{name,value}] or Trigger.Metrics[].MetricStat.
//     Metric.Dimensions;
//   - EventBridge "CloudWatch Alarm State Change" (detail.state.value,
//     detail.configuration.metrics as in the Lambda action);
//   - EventBridge "Scheduled Event": a sweep over the configured queues;
//   - a direct invoke {"queues":[...], "policy":{...}, "hop":N}.
// An alarm in any state but ALARM is returned (to be skipped) even when it
// names no queue; an ALARM without a QueueName dimension, anything else, and
// malformed JSON are kInvalidArgument naming the fields looked for. Never
// throws, never aborts.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "archiver/selection_pass.h"
#include "common/status.h"

namespace dlq {

enum class LambdaEventKind { kAlarmAction, kAlarmSns, kAlarmEventBridge, kSchedule, kDirect };
std::string_view LambdaEventKindName(LambdaEventKind kind);  // "alarm", "alarm_sns", ...

// Which messages to archive, as a direct invoke's "policy" gives it:
// {"select":"all"|"older_than"|"expiring_within","window":"1h","max_messages":N}.
struct LambdaPolicy {
  Selection selection;
  uint64_t max_messages = 0;  // 0: no limit
};

struct LambdaEvent {
  LambdaEventKind kind = LambdaEventKind::kSchedule;
  std::string alarm_name;   // alarm kinds
  std::string alarm_state;  // alarm kinds: "ALARM", "OK", "INSUFFICIENT_DATA"
  // Queue names or URLs the event names (alarm dimensions, direct "queues").
  // Empty for a schedule, and for a direct invoke without "queues": use the
  // configured queues.
  std::vector<std::string> queues;
  std::optional<LambdaPolicy> policy;  // direct invoke only
  int hop = 0;                         // direct invoke: how many self-invocations led here

  // Alarm kinds only archive on ALARM; the rest archive always.
  bool ShouldArchive() const;
};

Result<LambdaEvent> ParseLambdaEvent(std::string_view json);

// The direct-invoke payload for a follow-up: {"queues":[...],"policy":{...},"hop":N}.
// ParseLambdaEvent(BuildDirectInvokePayload(...)) gives the same queues, policy and hop.
std::string BuildDirectInvokePayload(const std::vector<std::string>& queues, const std::optional<LambdaPolicy>& policy,
                                     int hop);

}  // namespace dlq
