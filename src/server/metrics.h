// A small Prometheus metrics registry and the daemon's metric set.
//
// Thread-safety: everything here is thread-safe. Inc/Add/Set/Observe on a
// series handle are lock-free (std::atomic<double> / std::atomic<uint64_t>);
// WithLabels and Render take the family's mutex, so hot paths should cache
// the handle. Handles (Counter&, Gauge&, Histogram&) stay valid for the
// registry's lifetime, even after RemoveLabels: a removed series is retired
// (no longer rendered) rather than freed, and asking for the same labels again
// creates a fresh series starting at zero.
//
// Misuse is a programming error and aborts with a message: an invalid metric
// or label name, a counter not named *_total, registering one name twice with
// a different type/labels, or WithLabels with the wrong number of values.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aws/aws_client.h"
#include "common/mutex.h"

namespace dlq {
namespace metrics {

using LabelValues = std::vector<std::string>;

class Counter {
 public:
  void Inc() { Add(1.0); }
  // Negative or NaN amounts are ignored: counters only go up.
  void Add(double amount);
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Gauge {
 public:
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Add(double amount);
  void Inc() { Add(1.0); }
  void Dec() { Add(-1.0); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Histogram {
 public:
  // `bounds` are the finite upper bounds, strictly increasing; +Inf is implied.
  explicit Histogram(const std::vector<double>* bounds);
  void Observe(double value);

  struct Snapshot {
    std::vector<uint64_t> cumulative;  // one per bound, then +Inf
    uint64_t count = 0;                // equals cumulative.back()
    double sum = 0;
  };
  Snapshot Read() const;

 private:
  const std::vector<double>* bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // bounds_->size() + 1, not cumulative
  std::atomic<double> sum_{0.0};
};

enum class MetricType { kCounter, kGauge, kHistogram };

// One metric family: a name, help text, label names, and its series.
template <typename Metric>
class Family {
 public:
  Family(std::string name, std::string help, std::vector<std::string> label_names, MetricType type,
         std::vector<double> bounds = {});
  Family(const Family&) = delete;
  Family& operator=(const Family&) = delete;

  // Returns the series for these label values (in label-name order), creating
  // it at zero on first use. Aborts when the number of values is wrong.
  Metric& WithLabels(const LabelValues& values);
  // Stops exporting the series; outstanding handles stay valid. Returns
  // whether it existed.
  bool RemoveLabels(const LabelValues& values);
  // Removes every series whose labels match all (name, value) pairs; returns
  // how many. Unknown label names match nothing.
  size_t RemoveMatching(const std::vector<std::pair<std::string, std::string>>& match);
  size_t size() const;

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  MetricType type() const { return type_; }
  const std::vector<double>& bounds() const { return bounds_; }

  // Appends this family in the text exposition format (nothing when empty).
  void RenderTo(std::string& out) const;

 private:
  std::unique_ptr<Metric> MakeMetric() const;

  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  const MetricType type_;
  const std::vector<double> bounds_;  // histograms only
  mutable Mutex mu_;
  std::map<LabelValues, std::unique_ptr<Metric>> series_ DLQ_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Metric>> retired_ DLQ_GUARDED_BY(mu_);
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Registering an existing name with the same type and label names returns
  // the existing family; anything else aborts (see the file comment).
  CounterFamily& AddCounter(std::string name, std::string help, std::vector<std::string> label_names = {});
  GaugeFamily& AddGauge(std::string name, std::string help, std::vector<std::string> label_names = {});
  // `bounds`: finite upper bounds, strictly increasing.
  HistogramFamily& AddHistogram(std::string name, std::string help, std::vector<std::string> label_names,
                                std::vector<double> bounds);

  // Text exposition format 0.0.4: families sorted by name, series sorted by
  // label values, families without series omitted.
  std::string Render() const;

 private:
  struct Entry {
    MetricType type;
    std::unique_ptr<CounterFamily> counter;
    std::unique_ptr<GaugeFamily> gauge;
    std::unique_ptr<HistogramFamily> histogram;
  };
  Entry& Register(const std::string& name, MetricType type, const std::vector<std::string>& label_names,
                  const std::vector<double>* bounds) DLQ_REQUIRES(mu_);

  mutable Mutex mu_;
  std::map<std::string, Entry> families_ DLQ_GUARDED_BY(mu_);
};

// Exposition helpers, exposed for tests.
std::string EscapeLabelValue(std::string_view value);  // \ " and newline
std::string EscapeHelp(std::string_view help);         // \ and newline
std::string FormatValue(double value);                 // shortest round-trip, +Inf/-Inf/NaN

inline constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace metrics

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
  metrics::GaugeFamily& build_info;  // {version}, always 1
  metrics::GaugeFamily& up;          // 1 while the daemon runs
  // Webhooks: {webhook} (see WebhookLabels in monitor/notifier.h).
  metrics::CounterFamily& webhook_deliveries_total;  // + result="ok|error"
  metrics::CounterFamily& webhook_dropped_total;

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
