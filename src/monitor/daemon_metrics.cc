#include "monitor/daemon_metrics.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace dlq {

namespace {

const std::vector<double>& AwsLatencyBuckets() {
  // Up to SQS's 20 s long poll.
  static const std::vector<double> kBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25};
  return kBuckets;
}

const std::vector<double>& CollectionBuckets() {
  static const std::vector<double> kBuckets = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
  return kBuckets;
}

}  // namespace

DaemonMetrics::DaemonMetrics(metrics::Registry& r, std::string_view version)
    : queue_messages(r.AddGauge("dlq_archive_queue_messages",
                                "Approximate number of messages in the DLQ, by SQS state.",
                                {"queue", "region", "state"})),
      queue_oldest_age_seconds(r.AddGauge("dlq_archive_queue_oldest_age_seconds",
                                          "Age of the oldest message in the DLQ, from CloudWatch or observed "
                                          "SentTimestamps.",
                                          {"queue", "region", "source"})),
      queue_seconds_to_expiry(r.AddGauge("dlq_archive_queue_seconds_to_expiry",
                                         "Seconds until the nearest known message in the DLQ expires.",
                                         {"queue", "region"})),
      queue_retention_seconds(r.AddGauge("dlq_archive_queue_retention_seconds",
                                         "The DLQ's MessageRetentionPeriod in seconds.", {"queue", "region"})),
      alarm_state(r.AddGauge("dlq_archive_alarm_state",
                             "1 for the alarm's current state (OK, ALARM, INSUFFICIENT_DATA), 0 for the others.",
                             {"queue", "region", "alarm", "state"})),
      messages_archived_total(r.AddCounter("dlq_archive_messages_archived_total",
                                           "Messages written to a durable archive object.", {"queue", "region"})),
      messages_deleted_total(r.AddCounter("dlq_archive_messages_deleted_total",
                                          "Messages deleted from the DLQ after their archive was confirmed.",
                                          {"queue", "region"})),
      messages_duplicates_total(r.AddCounter("dlq_archive_messages_duplicates_total",
                                             "Messages archived and left in the DLQ because every receipt handle "
                                             "for them had expired at the delete; a later run archives them again.",
                                             {"queue", "region"})),
      messages_received_again_total(r.AddCounter("dlq_archive_messages_received_again_total",
                                                 "Further receipts of a message a run already held or archived "
                                                 "(SQS handed it out again); archived and deleted once.",
                                                 {"queue", "region"})),
      messages_failed_total(r.AddCounter("dlq_archive_messages_failed_total",
                                         "Messages whose archiving failed; they stay in the DLQ.",
                                         {"queue", "region"})),
      objects_total(r.AddCounter("dlq_archive_objects_total", "Archive objects written.", {"queue", "region"})),
      bytes_uploaded_total(r.AddCounter("dlq_archive_bytes_uploaded_total",
                                        "Compressed bytes of archive objects uploaded.", {"queue", "region"})),
      archive_runs_total(r.AddCounter("dlq_archive_archive_runs_total",
                                      "Archive runs by result (ok or error); a run that could not start because "
                                      "the destination check failed counts as error.",
                                      {"queue", "region", "result"})),
      archive_failures_total(r.AddCounter("dlq_archive_archive_failures_total",
                                          "Failed archive runs (including runs not started because the destination "
                                          "check failed) by error class.",
                                          {"queue", "region", "class"})),
      destination_up(r.AddGauge("dlq_archive_destination_up",
                                "1 when the group's archive destination passed its check, 0 when it failed.",
                                {"group"})),
      aws_requests_total(r.AddCounter("dlq_archive_aws_requests_total",
                                      "Finished AWS API calls by result code (OK, AWS error code or error class).",
                                      {"service", "operation", "code"})),
      aws_retries_total(r.AddCounter("dlq_archive_aws_retries_total",
                                     "Extra attempts made by AWS API calls (attempts minus one).",
                                     {"service", "operation"})),
      aws_request_duration_seconds(r.AddHistogram("dlq_archive_aws_request_duration_seconds",
                                                  "Latency of AWS API calls including retries.",
                                                  {"service", "operation"}, AwsLatencyBuckets())),
      collection_duration_seconds(r.AddHistogram("dlq_archive_collection_duration_seconds",
                                                 "Duration of one metric collection pass over all queues.", {},
                                                 CollectionBuckets())),
      queues_watched(r.AddGauge("dlq_archive_queues_watched", "Number of DLQs being watched.")),
      queues_other_shards(
          r.AddGauge("dlq_archive_queues_other_shards", "Discovered DLQs left to the replicas of the other shards.")),
      shard_info(r.AddGauge("dlq_archive_shard_info", "This replica's shard (index of count); the value is always 1.",
                            {"index", "count"})),
      build_info(r.AddGauge("dlq_archive_build_info", "Build information; the value is always 1.", {"version"})),
      up(r.AddGauge("dlq_archive_up", "1 while the daemon's process loop is running.")),
      webhook_deliveries_total(r.AddCounter("dlq_archive_webhook_deliveries_total",
                                            "Alarm notifications posted to a webhook, by result (ok or error).",
                                            {"webhook", "result"})),
      webhook_dropped_total(r.AddCounter("dlq_archive_webhook_dropped_total",
                                         "Alarm notifications dropped: webhook queue full or shutting down.",
                                         {"webhook"})),
      cause_lookups_total(r.AddCounter("dlq_archive_cause_lookups_total",
                                       "Messages whose cause the daemon looked up in their consumer's logs, by the "
                                       "answer (found, not_mentioned, access_denied, ...).",
                                       {"queue", "region", "status"})),
      cause_filter_calls_total(r.AddCounter("dlq_archive_cause_filter_calls_total",
                                            "CloudWatch Logs FilterLogEvents calls made by the cause lookups.",
                                            {"queue", "region"})),
      cause_jobs_dropped_total(r.AddCounter("dlq_archive_cause_jobs_dropped_total",
                                            "Archive runs whose messages got no cause lookup: the lookup queue was "
                                            "full (the messages are archived all the same).",
                                            {"queue", "region"})) {
  build_info.WithLabels({std::string(version)}).Set(1);
  up.WithLabels({}).Set(1);
  queues_watched.WithLabels({}).Set(0);
}

const std::vector<std::string>& DaemonMetrics::AlarmStates() {
  static const std::vector<std::string> kStates = {"OK", "ALARM", "INSUFFICIENT_DATA"};
  return kStates;
}

void DaemonMetrics::SetAlarmState(const std::string& queue, const std::string& region, const std::string& alarm,
                                  const std::string& state) {
  for (const std::string& s : AlarmStates()) {
    alarm_state.WithLabels({queue, region, alarm, s}).Set(s == state ? 1 : 0);
  }
  // An unknown state still gets its series so it is visible.
  if (std::find(AlarmStates().begin(), AlarmStates().end(), state) == AlarmStates().end()) {
    alarm_state.WithLabels({queue, region, alarm, state}).Set(1);
  }
}

void DaemonMetrics::RemoveQueue(const std::string& queue, const std::string& region) {
  const std::vector<std::pair<std::string, std::string>> match = {{"queue", queue}, {"region", region}};
  queue_messages.RemoveMatching(match);
  queue_oldest_age_seconds.RemoveMatching(match);
  queue_seconds_to_expiry.RemoveMatching(match);
  queue_retention_seconds.RemoveMatching(match);
  alarm_state.RemoveMatching(match);
  messages_archived_total.RemoveMatching(match);
  messages_deleted_total.RemoveMatching(match);
  messages_duplicates_total.RemoveMatching(match);
  messages_received_again_total.RemoveMatching(match);
  messages_failed_total.RemoveMatching(match);
  objects_total.RemoveMatching(match);
  bytes_uploaded_total.RemoveMatching(match);
  archive_runs_total.RemoveMatching(match);
  archive_failures_total.RemoveMatching(match);
  cause_lookups_total.RemoveMatching(match);
  cause_filter_calls_total.RemoveMatching(match);
  cause_jobs_dropped_total.RemoveMatching(match);
}

std::string AwsCallCode(const CallRecord& record) {
  if (record.code == ErrorCode::kOk) return "OK";
  if (!record.aws_error_code.empty()) return record.aws_error_code;
  return std::string(ErrorCodeName(record.code));
}

CallObserver MakeAwsCallObserver(DaemonMetrics& metrics) {
  return [&metrics](const CallRecord& record) {
    metrics.aws_requests_total.WithLabels({record.service, record.operation, AwsCallCode(record)}).Inc();
    if (record.attempts > 1) {
      metrics.aws_retries_total.WithLabels({record.service, record.operation}).Add(record.attempts - 1);
    }
    metrics.aws_request_duration_seconds.WithLabels({record.service, record.operation})
        .Observe(std::chrono::duration<double>(record.latency).count());
  };
}

}  // namespace dlq
