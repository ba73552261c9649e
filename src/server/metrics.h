// A small Prometheus metrics registry (the daemon's metric set is in
// monitor/daemon_metrics.h).
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

}  // namespace dlq
