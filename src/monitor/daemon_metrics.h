// The daemon's metric set over the generic registry (server/metrics.h), and
// the AwsClient observer that feeds its AWS call metrics. doc/metrics.md
// describes each metric. Thread-safe as the registry is.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "aws/aws_client.h"
#include "server/metrics.h"

namespace dlq {

// Every metric the daemon exposes (doc/metrics.md describes each one).
// Holds references into `registry`, which must outlive it.
struct DaemonMetrics {
  DaemonMetrics(metrics::Registry& registry, std::string_view version);

  // Per queue: {queue, region, ...}.
  metrics::GaugeFamily& queue_messages;            // + state="visible|not_visible|delayed"
  metrics::GaugeFamily& queue_oldest_age_seconds;  // + source="cloudwatch|observed"
  metrics::GaugeFamily& queue_seconds_to_expiry;
  metrics::GaugeFamily& queue_retention_seconds;
  metrics::GaugeFamily& alarm_state;  // + alarm, state; use SetAlarmState
  metrics::CounterFamily& messages_archived_total;
  metrics::CounterFamily& messages_deleted_total;
  metrics::CounterFamily& messages_duplicates_total;
  metrics::CounterFamily& messages_received_again_total;
  metrics::CounterFamily& messages_failed_total;
  metrics::CounterFamily& objects_total;
  metrics::CounterFamily& bytes_uploaded_total;
  metrics::CounterFamily& archive_runs_total;      // + result="ok|error"
  metrics::CounterFamily& archive_failures_total;  // + class (ErrorCodeName); failed or blocked runs
  metrics::GaugeFamily& destination_up;            // {group}: 1 when the destination check passed, 0 when it failed
  // AWS calls.
  metrics::CounterFamily& aws_requests_total;              // {service, operation, code}
  metrics::CounterFamily& aws_retries_total;               // {service, operation}
  metrics::HistogramFamily& aws_request_duration_seconds;  // {service, operation}
  // Process.
  metrics::HistogramFamily& collection_duration_seconds;  // no labels
  metrics::GaugeFamily& queues_watched;
  metrics::GaugeFamily& queues_other_shards;  // discovered queues owned by another shard (monitor/shard.h)
  metrics::GaugeFamily& shard_info;           // {index, count}, always 1
  metrics::GaugeFamily& build_info;           // {version}, always 1
  metrics::GaugeFamily& up;                   // 1 while the daemon runs
  // Webhooks: {webhook} (see WebhookLabels in monitor/notifier.h).
  metrics::CounterFamily& webhook_deliveries_total;  // + result="ok|error"
  metrics::CounterFamily& webhook_dropped_total;
  // Cause lookups (monitor/cause_worker.h): {queue, region}.
  metrics::CounterFamily& cause_lookups_total;  // + status (causes/cause_record.h CauseStatusName)
  metrics::CounterFamily& cause_filter_calls_total;
  metrics::CounterFamily& cause_jobs_dropped_total;

  // The alarm states a series exists for (CloudWatch's three).
  static const std::vector<std::string>& AlarmStates();
  // Sets 1 for `state` and 0 for the other states of this alarm.
  void SetAlarmState(const std::string& queue, const std::string& region, const std::string& alarm,
                     const std::string& state);
  // Drops every per-queue series of a queue that is no longer watched.
  void RemoveQueue(const std::string& queue, const std::string& region);
};

// The `code` label of aws_requests_total for one finished call: "OK", the AWS
// error code when there is one, else the ErrorCode name ("Unavailable").
std::string AwsCallCode(const CallRecord& record);

// An AwsClient observer that counts requests, retries and latencies.
// `metrics` must outlive every client it is attached to.
CallObserver MakeAwsCallObserver(DaemonMetrics& metrics);

}  // namespace dlq
