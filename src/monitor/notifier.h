// Alarm notifications: the Notifier interface, a webhook implementation
// (JSON POST) and a fan-out. Notify is called on every alarm state change.
//
// Thread-safety: all notifiers here are thread-safe. A failed notification
// is reported as a Status and never blocks archiving; the caller decides
// whether to log it. Errors name the webhook URL without its query string
// and never contain header values (they hold tokens).
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "aws/aws_client.h"
#include "aws/http.h"
#include "common/clock.h"
#include "common/status.h"

namespace dlq {

struct AlarmNotification {
  std::string queue;  // DLQ name
  std::string queue_url;
  std::string region;
  std::string account_id;  // optional
  std::string alarm_name;
  std::string alarm_description;  // optional
  std::string old_state;          // "OK", "ALARM", "INSUFFICIENT_DATA"
  std::string new_state;
  std::string reason;
  SystemTime time;                     // of the state change
  std::string metric_name;             // e.g. "ApproximateAgeOfOldestMessage"
  std::optional<double> metric_value;  // the datapoint that caused the change
  double threshold = 0;
  std::string comparison;  // e.g. "GreaterThanOrEqualToThreshold"

  // One JSON object shaped like CloudWatch's SNS alarm message where the
  // fields overlap (AlarmName, AlarmDescription, NewStateValue, OldStateValue,
  // NewStateReason, StateChangeTime, Region, AWSAccountId, Trigger{MetricName,
  // Namespace, Threshold, ComparisonOperator}) plus Source, Queue, QueueUrl
  // and MetricValue. Times are ISO-8601 UTC with milliseconds; doc/metrics.md
  // has an example.
  std::string ToJson() const;
};

class Notifier {
 public:
  virtual ~Notifier() = default;
  virtual Status Notify(const AlarmNotification& notification) = 0;
};

struct WebhookTarget {
  std::string url;      // http or https
  HttpHeaders headers;  // e.g. Authorization; override the defaults
};

struct WebhookOptions {
  std::vector<WebhookTarget> targets;
  std::chrono::milliseconds timeout{5000};  // per attempt
  RetryOptions retry{
      .max_attempts = 4, .base_delay = std::chrono::milliseconds(200), .max_delay = std::chrono::milliseconds(5000)};
  // Rejects an empty target list, non-http(s) URLs, empty header names and
  // non-positive timeouts.
  Status Validate() const;
};

// POSTs AlarmNotification::ToJson() to every target, with Content-Type
// application/json and User-Agent dlq-archive/<version>. Connection errors,
// 408, 429 and 5xx are retried with exponential backoff and full jitter
// (sleeping on `clock`); any other non-2xx fails at once. Every target is
// tried even when an earlier one fails; the returned Status describes every
// failed target. `transport` and `clock` must outlive the notifier.
class WebhookNotifier final : public Notifier {
 public:
  // Precondition: options.Validate() is OK (Create checks it).
  WebhookNotifier(WebhookOptions options, HttpTransport& transport, Clock& clock,
                  uint64_t seed = std::random_device{}());
  static Result<std::unique_ptr<WebhookNotifier>> Create(WebhookOptions options, HttpTransport& transport,
                                                         Clock& clock);

  Status Notify(const AlarmNotification& notification) override;

 private:
  Status Post(const WebhookTarget& target, const std::string& body);

  const WebhookOptions options_;
  HttpTransport& transport_;
  Clock& clock_;
  std::mutex mu_;
  std::mt19937_64 rng_;  // guarded by mu_
};

// Sends to every notifier in order, even after a failure; returns OK when all
// succeed, else a Status listing the failures (code of the first one).
// Does not own the notifiers; they must outlive it.
class MultiNotifier final : public Notifier {
 public:
  MultiNotifier() = default;
  explicit MultiNotifier(std::vector<Notifier*> notifiers) : notifiers_(std::move(notifiers)) {}
  // Not thread-safe with concurrent Notify: add all before use.
  void Add(Notifier* notifier) { notifiers_.push_back(notifier); }
  Status Notify(const AlarmNotification& notification) override;

 private:
  std::vector<Notifier*> notifiers_;
};

// "scheme://host[:port]/path" of a URL: no userinfo, query or fragment, for
// error messages and logs.
std::string RedactUrl(std::string_view url);

}  // namespace dlq
