// Alarm notifications: the Notifier interface, a webhook implementation
// (JSON POST), a bounded asynchronous queue in front of any notifier, the
// daemon's set of configured webhooks, and a fan-out.
//
// Thread-safety: all notifiers here are thread-safe. Errors are returned as
// Status; every error message and log line produced here names a webhook
// only as "scheme://host[:port]/..." (RedactUrl): Slack and Teams webhooks
// carry their secret in the path, others in the query or userinfo. Header
// values (tokens) never appear.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>  // std::once_flag
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "aws/aws_client.h"
#include "aws/http.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "monitor/config.h"
#include "monitor/daemon_metrics.h"
#include "server/metrics.h"

namespace dlq {

// One failure group of the DLQ, for a notification (monitor/cause_worker.h).
struct NotificationGroup {
  std::string id;                    // its short id (query/fingerprint.h GroupId)
  std::string key;                   // its failure group key
  uint64_t messages = 0;             // archived messages of the group the daemon read
  std::string cause;                 // "Type: message" when found; else empty
  std::string no_cause;              // else the most common answer ("not_mentioned"); empty when none was looked up
  uint64_t answered = 0, found = 0;  // its messages looked up, and those whose answer is `cause`
  std::string url;                   // its example message on the dashboard; empty without dashboard.url
};

struct AlarmNotification {
  std::string queue;  // DLQ name; empty for a group's destination check
  std::string queue_url;
  // The destination check of a group (metric DestinationWritable): the
  // group's name and destination URI; empty for a queue's alarms.
  std::string group;
  std::string destination;
  std::string region;
  std::string account_id;  // optional
  std::string alarm_name;
  std::string alarm_description;  // optional
  std::string old_state;          // "OK", "ALARM", "INSUFFICIENT_DATA"
  std::string new_state;
  std::string reason;
  SystemTime time;                     // of the state change
  std::string metric_name;             // e.g. "ApproximateAgeOfOldestMessage"
  std::optional<double> metric_value;  // the newest datapoint cited in `reason`; none when it cites none
  double threshold = 0;
  std::string comparison;  // e.g. "GreaterThanOrEqualToThreshold"
  // The alarm's first transition since it was created (daemon start, a newly
  // watched queue, alarm settings changed by a reload). Not in the payload.
  bool initial = false;
  // A queue's alarm: the messages in the DLQ at the change (visible, in
  // flight and delayed), the largest failure groups the daemon has archived
  // from it with their causes, and the queue's dashboard page.
  std::optional<int64_t> messages;
  std::vector<NotificationGroup> top_groups;
  std::string dashboard_url;

  // One line a person reads: "orders-dlq: ALARM (37 messages): 30 x
  // ValueError: bad sku (found for 3 of 3 looked up), 7 x no cause found
  // (not_mentioned)".
  std::string Summary() const;

  // One JSON object shaped like CloudWatch's SNS alarm message where the
  // fields overlap (AlarmName, AlarmDescription, NewStateValue, OldStateValue,
  // NewStateReason, StateChangeTime, Region, AWSAccountId, Trigger{MetricName,
  // Namespace (MetricNamespace), Threshold, ComparisonOperator}) plus
  // Source, Queue, QueueUrl, MetricValue, Summary, and Messages, TopGroups
  // and DashboardUrl when known; Group and Destination (and a
  // Group dimension instead of QueueName) when `group` is set. Times are
  // ISO-8601 UTC with milliseconds; doc/metrics.md has an example.
  std::string ToJson() const;
};

// Trigger.Namespace of a notification: "AWS/SQS" for the metrics SQS
// publishes to CloudWatch (ApproximateAgeOfOldestMessage,
// ApproximateNumberOfMessagesVisible, ...), kOwnMetricNamespace for
// dlq-archive's own (AgeOnExpiryClock, DestinationWritable, ...).
inline constexpr std::string_view kOwnMetricNamespace = "DLQArchive";
std::string_view MetricNamespace(std::string_view metric_name);

// True for an alarm's first evaluation settling INSUFFICIENT_DATA -> OK, which
// webhooks skip unless they ask for it (WebhookTarget::notify_on_startup).
bool IsStartupOk(const AlarmNotification& notification);

class Notifier {
 public:
  virtual ~Notifier() = default;
  virtual Status Notify(const AlarmNotification& notification) = 0;
  // Asks Notify calls in progress on other threads, and all later ones, to
  // give up as soon as they can (returning Cancelled). Default: no effect.
  virtual void Cancel() {}
};

struct WebhookTarget {
  std::string url;      // http or https
  HttpHeaders headers;  // e.g. Authorization; override the defaults
  // Per attempt; zero means WebhookOptions::timeout.
  std::chrono::milliseconds timeout{0};
  // Also post IsStartupOk notifications.
  bool notify_on_startup = false;
};

struct WebhookOptions {
  std::vector<WebhookTarget> targets;
  std::chrono::milliseconds timeout{5000};  // per attempt, for targets without their own
  RetryOptions retry{
      .max_attempts = 4, .base_delay = std::chrono::milliseconds(200), .max_delay = std::chrono::milliseconds(5000)};
  // Rejects an empty target list, non-http(s) URLs, empty header names and
  // non-positive timeouts.
  Status Validate() const;
};

// POSTs AlarmNotification::ToJson() to every target, with Content-Type
// application/json and User-Agent dlq-archive/<version>, synchronously.
// Connection errors, 408, 429 and 5xx are retried with exponential backoff
// and full jitter (sleeping on `clock`); any other non-2xx fails at once.
// Every target is tried even when an earlier one fails; the returned Status
// describes every failed target. After Cancel(), no new attempt starts and a
// backoff sleep ends within 100 ms. `transport` and `clock` must outlive the
// notifier.
class WebhookNotifier final : public Notifier {
 public:
  // Precondition: options.Validate() is OK (Create checks it).
  WebhookNotifier(WebhookOptions options, HttpTransport& transport, Clock& clock,
                  uint64_t seed = std::random_device{}());
  static Result<std::unique_ptr<WebhookNotifier>> Create(WebhookOptions options, HttpTransport& transport,
                                                         Clock& clock);

  Status Notify(const AlarmNotification& notification) override;
  void Cancel() override { cancelled_ = true; }

 private:
  Status Post(const WebhookTarget& target, const std::string& body);

  const WebhookOptions options_;
  HttpTransport& transport_;
  Clock& clock_;
  std::atomic<bool> cancelled_{false};
  Mutex mu_;
  std::mt19937_64 rng_ DLQ_GUARDED_BY(mu_);
};

// Notifications waiting per webhook before new ones are dropped.
inline constexpr size_t kDefaultWebhookQueueCapacity = 100;
// How long a shutdown waits for queued webhook notifications.
inline constexpr std::chrono::milliseconds kDefaultWebhookDrainTimeout{10000};

struct QueuedNotifierOptions {
  std::string name;  // for logs: a RedactUrl form, never a full URL
  size_t capacity = kDefaultWebhookQueueCapacity;
  std::chrono::milliseconds drain_timeout = kDefaultWebhookDrainTimeout;
  // Times drain_timeout and Flush; nullptr: DefaultClock(). Must outlive the notifier.
  Clock* clock = nullptr;
  // Bumped per notification when set; must outlive the notifier.
  metrics::Counter* delivered = nullptr;
  metrics::Counter* failed = nullptr;
  metrics::Counter* dropped = nullptr;  // queue full, shutting down, or given up at shutdown
};

// Puts notifications on a bounded FIFO queue that one worker thread delivers
// through `inner`, so Notify never waits for the network. Notify returns OK
// once queued, or Unavailable (and counts a drop) when the queue is full or
// shutting down. A failed delivery is logged (`notify_failed`) and counted.
// Shutdown() (the destructor calls it) stops accepting, lets the worker
// deliver what is queued until drain_timeout has passed, then drops the rest,
// Cancel()s `inner` and joins the worker: it returns within drain_timeout
// plus the one attempt in flight.
class QueuedNotifier final : public Notifier {
 public:
  QueuedNotifier(std::unique_ptr<Notifier> inner, QueuedNotifierOptions options);
  ~QueuedNotifier() override;
  QueuedNotifier(const QueuedNotifier&) = delete;
  QueuedNotifier& operator=(const QueuedNotifier&) = delete;

  Status Notify(const AlarmNotification& notification) override;
  // Shutdown in two steps, so several notifiers share one deadline:
  // BeginShutdown never blocks; FinishShutdown waits as described above.
  void BeginShutdown();
  void FinishShutdown();
  void Shutdown() {
    BeginShutdown();
    FinishShutdown();
  }
  // Waits until nothing is queued or in flight, at most `timeout`; returns
  // whether that happened.
  bool Flush(std::chrono::milliseconds timeout);

  uint64_t delivered() const { return delivered_; }
  uint64_t failed() const { return failed_; }
  uint64_t dropped() const { return dropped_; }

 private:
  void Work();
  void CountDropped(uint64_t n);

  const std::unique_ptr<Notifier> inner_;
  const QueuedNotifierOptions options_;
  Clock& clock_;
  std::atomic<uint64_t> delivered_{0}, failed_{0}, dropped_{0};
  Mutex mu_;
  CondVar cv_;  // queue_, closing_, abandon_ or busy_ changed
  std::deque<AlarmNotification> queue_ DLQ_GUARDED_BY(mu_);
  bool busy_ DLQ_GUARDED_BY(mu_) = false;                               // a delivery is in flight
  bool closing_ DLQ_GUARDED_BY(mu_) = false;                            // Notify refuses; worker exits when drained
  bool abandon_ DLQ_GUARDED_BY(mu_) = false;                            // worker exits after the delivery in flight
  std::chrono::steady_clock::time_point deadline_ DLQ_GUARDED_BY(mu_);  // set by BeginShutdown
  std::thread worker_;                                                  // joined once, by FinishShutdown
  std::once_flag joined_;
};

struct WebhookSetOptions {
  size_t capacity = kDefaultWebhookQueueCapacity;  // per webhook
  std::chrono::milliseconds drain_timeout = kDefaultWebhookDrainTimeout;
  RetryOptions retry = WebhookOptions{}.retry;
};

// The daemon's `notify.webhooks`: one QueuedNotifier over a one-target
// WebhookNotifier per entry, so each webhook has its own timeout, queue and
// worker and a dead endpoint delays neither collection nor the other
// webhooks. Series of `metrics` (optional; must outlive the set):
// webhook_deliveries_total{webhook,result} and webhook_dropped_total{webhook},
// where `webhook` is WebhookLabels(). `transport` and `clock` must outlive it.
class WebhookSet final : public Notifier {
 public:
  WebhookSet(HttpTransport& transport, Clock& clock, DaemonMetrics* metrics, WebhookSetOptions options = {});
  ~WebhookSet() override;  // shuts every webhook down (bounded, see QueuedNotifier)
  WebhookSet(const WebhookSet&) = delete;
  WebhookSet& operator=(const WebhookSet&) = delete;

  // Installs notifiers for `webhooks` (which may be empty). When they equal
  // the current ones, nothing changes. Otherwise the new set takes every
  // later Notify and the previous set is shut down in the background: what
  // it has queued is delivered or dropped within its drain_timeout. Apply
  // never waits for the network. On error (an invalid webhook) nothing
  // changes.
  Status Apply(const std::vector<WebhookConfig>& webhooks);
  // Queues `notification` on every webhook; returns at once. Non-OK lists the
  // webhooks that dropped it.
  Status Notify(const AlarmNotification& notification) override;
  // Waits until no current webhook has anything queued or in flight and
  // every replaced set has shut down, at most `timeout`; returns whether so.
  bool Flush(std::chrono::milliseconds timeout);
  size_t size() const;

 private:
  struct Entry {
    std::string label;
    bool notify_on_startup = false;
    std::unique_ptr<QueuedNotifier> notifier;
  };
  using Entries = std::vector<Entry>;

  HttpTransport& transport_;
  Clock& clock_;
  DaemonMetrics* const metrics_;
  const WebhookSetOptions options_;
  mutable Mutex mu_;
  std::vector<WebhookConfig> configs_ DLQ_GUARDED_BY(mu_);              // what entries_ was built from
  std::shared_ptr<Entries> entries_ DLQ_GUARDED_BY(mu_);                // the pointer; entries are thread-safe
  std::vector<std::shared_future<void>> retiring_ DLQ_GUARDED_BY(mu_);  // shutdowns of replaced sets
};

// The `webhook` label of each entry: RedactUrl(url), with " #<n>" (its
// 1-based position) appended when an earlier entry has the same label.
std::vector<std::string> WebhookLabels(const std::vector<WebhookConfig>& webhooks);

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
  void Cancel() override;

 private:
  std::vector<Notifier*> notifiers_;
};

// "scheme://host[:port]/..." of a URL: no userinfo, path, query or fragment
// ("/..." marks what was removed), for error messages and logs.
std::string RedactUrl(std::string_view url);
// `text` with every occurrence of `url`'s userinfo, path and query replaced
// by the redaction marker, for messages that come from a transport.
std::string ScrubUrl(std::string_view text, std::string_view url);

}  // namespace dlq
