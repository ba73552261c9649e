// Safety analysis: can a DLQ message expire before it is archived? Pure
// functions of the configuration (no I/O, thread-safe). Formulas and the
// assumptions behind each default are in doc/alarms.md ("Safety analysis").
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "monitor/alarm.h"
#include "sqs/limits.h"

namespace dlq {

// SQS's maximum retention; the worst case when a source queue's retention is unknown.
inline constexpr std::chrono::seconds kSqsMaxRetention{1209600};

enum class AgeSource {
  // CloudWatch ApproximateAgeOfOldestMessage: for a standard queue the age is
  // counted from the move into the DLQ, and messages received 3+ times are skipped.
  kCloudWatchAge,
  // Our own per-message age on the expiry clock (from SentTimestamp), seen by peeking.
  kPerMessageExpiry,
};

struct QueueSafetyInput {
  std::string queue;
  bool fifo = false;
  std::chrono::seconds dlq_retention{sqs::kDefaultRetention};
  // Longest retention among the source queues (standard queues); 0 = unknown,
  // which is taken as kSqsMaxRetention.
  std::chrono::seconds source_retention{0};
  AgeSource age_source = AgeSource::kPerMessageExpiry;
  AlarmSpec expiry_alarm;  // threshold: message age in seconds
  // How long one look at the queue takes (peek or GetQueueAttributes).
  std::chrono::seconds collection_interval{60};
  // Lag before a datapoint is visible; negative = default (CloudWatch: one
  // period + 120 s; per-message: 0).
  std::chrono::seconds metric_delay{-1};
  // Scheduled sweep; 0 = archive only when the alarm enters ALARM.
  std::chrono::seconds sweep_interval{300};
  bool rerun_while_alarm = true;        // re-run the archiver every period while ALARM lasts
  bool archive_on_depth_alarm = false;  // a depth alarm also starts the archiver
  // The expiry alarm's action archives (and deletes) on every sweep. False
  // (notify or copy): the expiry alarm archives nothing it can be relied on.
  bool expiry_alarm_archives = true;
  double drain_rate = 5;  // messages per second the archiver sustains
  int64_t depth = 10000;  // messages that may be ahead of a given one
  // Where depth and drain_rate come from, for people: "queued now",
  // "assumed backlog", "configured: --drain-rate".
  std::string depth_source = "assumed backlog";
  std::string drain_rate_source = "assumed";
  int64_t max_messages_per_run = 0;  // 0 = a run drains everything
  std::chrono::seconds required_margin{3600};

  Status Validate() const;
};

struct SafetyReport {
  std::string queue;
  bool safe = false;
  double worst_case_arrival_to_archive_s = 0;  // +inf when unbounded
  double earliest_expiry_after_arrival_s = 0;
  double margin_s = 0;  // smallest (expiry - archive time) over possible arrivals; -inf when unbounded
  // The same worst case on one clock: a message is archived at the latest
  // latest_archive_s and expires expires_s after `clock_origin` (its
  // SentTimestamp, or its arrival in the DLQ). margin_s = expires_s - latest_archive_s.
  std::string clock_origin;
  double latest_archive_s = 0;
  double expires_s = 0;
  // (messages the age metric never sees are reported in reasons, not in margin_s)
  double detection_delay_s = 0;
  double drain_time_s = 0;
  double required_margin_s = 0;
  std::vector<std::string> reasons;  // each with its numbers

  // "orders-dlq: UNSAFE: a message can expire 4d (345721 s) before it is
  // archived (required: archived at least 1h (3600 s) before it expires)\n  - reason\n ..."
  std::string ToString() const;
};

// A duration for people: the two largest units and the exact seconds,
// "13d 23h (1206000 s)", "1h (3600 s)", "45 s"; "unbounded" for infinity.
std::string FormatSpan(double seconds);

// InvalidArgument on a bad input; otherwise the analysis (which may say unsafe).
Result<SafetyReport> AnalyzeQueueSafety(const QueueSafetyInput& in);

// One term of the detection delay: its seconds and what they are.
struct DelayTerm {
  double seconds = 0;
  std::string what;  // "sweep interval", "metric delay", "1 of 60 s periods"
};
// The terms DetectionDelay adds up, in order; their sum is the delay.
std::vector<DelayTerm> DetectionDelayTerms(const QueueSafetyInput& in);
// "15 s (10 s sweep interval + 5 s collection interval + 0 s metric delay)".
std::string DetectionDelayText(const QueueSafetyInput& in);
// "2 s (30 messages, queued now, at 20 msg/s, assumed: ...)"; "unbounded (...)"
// when runs stop before the queue is drained.
std::string DrainTimeText(const QueueSafetyInput& in);

// Whether a standard DLQ keeps messages long enough after they arrive: its
// retention R must exceed the longest source retention S (unknown: the SQS
// maximum) by the time the expiry alarm needs (detection delay + drain time +
// required margin). FIFO DLQs restart the clock and never need a change.
struct RetentionAdvice {
  bool needed = false;   // R < S + needed margin
  bool fixable = false;  // needed, and some R up to the SQS maximum suffices
  std::chrono::seconds current{0};
  std::chrono::seconds source{0};  // S as used (the maximum when unknown)
  bool source_known = false;
  std::chrono::seconds margin{0};    // detection + drain + required margin, rounded up to a second
  std::chrono::seconds proposed{0};  // min(max, S + margin rounded up to the hour); current when not needed
  std::string line;                  // one line for people; "" when not needed
};
// Pure; `in` must pass Validate() (otherwise: not needed, empty line).
RetentionAdvice AdviseRetention(const QueueSafetyInput& in);

struct ExpiryThresholdPlan {
  double age_threshold_s = 0;   // alarm when age >= this
  double archive_window_s = 0;  // or: archive when time to expiry <= this
  double detection_delay_s = 0;
  double drain_time_s = 0;
};

// The age threshold that leaves in.required_margin after detection and drain.
// FailedPrecondition (with the retention needed) when no threshold can.
Result<ExpiryThresholdPlan> DeriveExpiryThreshold(const QueueSafetyInput& in);

// Our defaults for one DLQ: per-message expiry, sweep every 300 s, re-run
// while ALARM, threshold from DeriveExpiryThreshold (0 when none is possible;
// AnalyzeQueueSafety then says why).
QueueSafetyInput DefaultSafetyInput(const std::string& queue, bool fifo, std::chrono::seconds dlq_retention,
                                    std::chrono::seconds source_retention);
// Age alarm: Maximum, 300 s, 1 of 1, >= threshold, missing data breaching.
AlarmSpec DefaultExpiryAlarm(const std::string& queue, double threshold_s);
// Depth alarm: ApproximateNumberOfMessagesVisible >= 1 for 3 of 3 periods of
// 300 s, missing data notBreaching (SQS stops publishing for idle queues).
AlarmSpec DefaultDepthAlarm(const std::string& queue);

}  // namespace dlq
