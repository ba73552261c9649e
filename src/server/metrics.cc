#include "server/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace dlq {
namespace metrics {
namespace {

// Series updates must never take a lock.
static_assert(std::atomic<double>::is_always_lock_free);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "dlq metrics: %s\n", message.c_str());
  std::abort();
}

bool ValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool ValidLabelName(std::string_view name) {
  if (name.empty() || name.starts_with("__") || name == "le" || name == "quantile") return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

void AtomicAdd(std::atomic<double>& target, double amount) {
  double current = target.load(std::memory_order_relaxed);
  while (!target.compare_exchange_weak(current, current + amount, std::memory_order_relaxed)) {
  }
}

std::string_view TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
  }
  return "untyped";
}

// `{a="x",b="y"` without the closing brace, or "" when there are no labels
// and no extra label is to follow.
void AppendLabels(std::string& out, const std::vector<std::string>& names, const LabelValues& values,
                  std::string_view extra_name = {}, std::string_view extra_value = {}) {
  if (names.empty() && extra_name.empty()) return;
  out += '{';
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ',';
    out += names[i];
    out += "=\"";
    out += EscapeLabelValue(values[i]);
    out += '"';
  }
  if (!extra_name.empty()) {
    if (!names.empty()) out += ',';
    out += extra_name;
    out += "=\"";
    out += extra_value;
    out += '"';
  }
  out += '}';
}

void AppendSample(std::string& out, std::string_view name, std::string_view suffix,
                  const std::vector<std::string>& names, const LabelValues& values, double value,
                  std::string_view extra_name = {}, std::string_view extra_value = {}) {
  out += name;
  out += suffix;
  AppendLabels(out, names, values, extra_name, extra_value);
  out += ' ';
  out += FormatValue(value);
  out += '\n';
}

}  // namespace

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

std::string EscapeHelp(std::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", value);
}

void Counter::Add(double amount) {
  if (!(amount > 0)) return;  // also rejects NaN
  AtomicAdd(value_, amount);
}

void Gauge::Add(double amount) {
  AtomicAdd(value_, amount);
}

Histogram::Histogram(const std::vector<double>* bounds)
    : bounds_(bounds), buckets_(new std::atomic<uint64_t>[bounds->size() + 1]) {
  for (size_t i = 0; i <= bounds_->size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double value) {
  // First bucket whose upper bound is >= value (le is inclusive); NaN lands in +Inf.
  size_t index = static_cast<size_t>(std::lower_bound(bounds_->begin(), bounds_->end(), value) - bounds_->begin());
  if (std::isnan(value)) index = bounds_->size();
  buckets_[index].fetch_add(1, std::memory_order_relaxed);
  AtomicAdd(sum_, value);
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot snapshot;
  snapshot.cumulative.reserve(bounds_->size() + 1);
  uint64_t running = 0;
  for (size_t i = 0; i <= bounds_->size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    snapshot.cumulative.push_back(running);
  }
  // Deriving the count from the buckets keeps _count == +Inf bucket even
  // while other threads observe.
  snapshot.count = running;
  snapshot.sum = sum_.load(std::memory_order_relaxed);
  return snapshot;
}

template <typename Metric>
Family<Metric>::Family(std::string name, std::string help, std::vector<std::string> label_names, MetricType type,
                       std::vector<double> bounds)
    : name_(std::move(name)),
      help_(std::move(help)),
      label_names_(std::move(label_names)),
      type_(type),
      bounds_(std::move(bounds)) {}

template <typename Metric>
std::unique_ptr<Metric> Family<Metric>::MakeMetric() const {
  if constexpr (std::is_same_v<Metric, Histogram>) {
    return std::make_unique<Histogram>(&bounds_);
  } else {
    return std::make_unique<Metric>();
  }
}

template <typename Metric>
Metric& Family<Metric>::WithLabels(const LabelValues& values) {
  if (values.size() != label_names_.size()) {
    Die(fmt::format("{}: {} label values given, {} expected", name_, values.size(), label_names_.size()));
  }
  MutexLock lock(mu_);
  auto it = series_.find(values);
  if (it == series_.end()) it = series_.emplace(values, MakeMetric()).first;
  return *it->second;
}

template <typename Metric>
bool Family<Metric>::RemoveLabels(const LabelValues& values) {
  MutexLock lock(mu_);
  auto it = series_.find(values);
  if (it == series_.end()) return false;
  retired_.push_back(std::move(it->second));
  series_.erase(it);
  return true;
}

template <typename Metric>
size_t Family<Metric>::RemoveMatching(const std::vector<std::pair<std::string, std::string>>& match) {
  std::vector<std::pair<size_t, const std::string*>> wanted;
  for (const auto& [label, value] : match) {
    auto pos = std::find(label_names_.begin(), label_names_.end(), label);
    if (pos == label_names_.end()) return 0;
    wanted.emplace_back(static_cast<size_t>(pos - label_names_.begin()), &value);
  }
  MutexLock lock(mu_);
  size_t removed = 0;
  for (auto it = series_.begin(); it != series_.end();) {
    bool matches =
        std::all_of(wanted.begin(), wanted.end(), [&](const auto& w) { return it->first[w.first] == *w.second; });
    if (matches) {
      retired_.push_back(std::move(it->second));
      it = series_.erase(it);
      ++removed;
    } else {
      ++it;
    }
  }
  return removed;
}

template <typename Metric>
size_t Family<Metric>::size() const {
  MutexLock lock(mu_);
  return series_.size();
}

template <typename Metric>
void Family<Metric>::RenderTo(std::string& out) const {
  MutexLock lock(mu_);
  if (series_.empty()) return;
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name_, EscapeHelp(help_), name_, TypeName(type_));
  for (const auto& [values, metric] : series_) {
    if constexpr (std::is_same_v<Metric, Histogram>) {
      Histogram::Snapshot snapshot = metric->Read();
      for (size_t i = 0; i < bounds_.size(); ++i) {
        AppendSample(out, name_, "_bucket", label_names_, values, static_cast<double>(snapshot.cumulative[i]), "le",
                     FormatValue(bounds_[i]));
      }
      AppendSample(out, name_, "_bucket", label_names_, values, static_cast<double>(snapshot.count), "le", "+Inf");
      AppendSample(out, name_, "_sum", label_names_, values, snapshot.sum);
      AppendSample(out, name_, "_count", label_names_, values, static_cast<double>(snapshot.count));
    } else {
      AppendSample(out, name_, "", label_names_, values, metric->Value());
    }
  }
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

Registry::Entry& Registry::Register(const std::string& name, MetricType type,
                                    const std::vector<std::string>& label_names, const std::vector<double>* bounds) {
  if (!ValidMetricName(name)) Die(fmt::format("invalid metric name '{}'", name));
  if (type == MetricType::kCounter && !name.ends_with("_total")) {
    Die(fmt::format("counter '{}' must be named *_total", name));
  }
  for (const std::string& label : label_names) {
    if (!ValidLabelName(label)) Die(fmt::format("{}: invalid label name '{}'", name, label));
    if (std::count(label_names.begin(), label_names.end(), label) > 1) {
      Die(fmt::format("{}: duplicate label name '{}'", name, label));
    }
  }
  if (bounds != nullptr) {
    for (size_t i = 0; i < bounds->size(); ++i) {
      if (!std::isfinite((*bounds)[i]) || (i > 0 && (*bounds)[i] <= (*bounds)[i - 1])) {
        Die(fmt::format("{}: histogram bounds must be finite and strictly increasing", name));
      }
    }
  }
  auto it = families_.find(name);
  if (it != families_.end()) {
    const Entry& e = it->second;
    const std::vector<std::string>* existing_labels = e.counter ? &e.counter->label_names()
                                                      : e.gauge ? &e.gauge->label_names()
                                                                : &e.histogram->label_names();
    bool same =
        e.type == type && *existing_labels == label_names && (bounds == nullptr || e.histogram->bounds() == *bounds);
    if (!same) Die(fmt::format("metric '{}' registered twice with different type, labels or buckets", name));
    return it->second;
  }
  Entry& entry = families_[name];
  entry.type = type;
  return entry;
}

CounterFamily& Registry::AddCounter(std::string name, std::string help, std::vector<std::string> label_names) {
  MutexLock lock(mu_);
  Entry& e = Register(name, MetricType::kCounter, label_names, nullptr);
  if (!e.counter) {
    e.counter =
        std::make_unique<CounterFamily>(std::move(name), std::move(help), std::move(label_names), MetricType::kCounter);
  }
  return *e.counter;
}

GaugeFamily& Registry::AddGauge(std::string name, std::string help, std::vector<std::string> label_names) {
  MutexLock lock(mu_);
  Entry& e = Register(name, MetricType::kGauge, label_names, nullptr);
  if (!e.gauge) {
    e.gauge =
        std::make_unique<GaugeFamily>(std::move(name), std::move(help), std::move(label_names), MetricType::kGauge);
  }
  return *e.gauge;
}

HistogramFamily& Registry::AddHistogram(std::string name, std::string help, std::vector<std::string> label_names,
                                        std::vector<double> bounds) {
  MutexLock lock(mu_);
  Entry& e = Register(name, MetricType::kHistogram, label_names, &bounds);
  if (!e.histogram) {
    e.histogram = std::make_unique<HistogramFamily>(std::move(name), std::move(help), std::move(label_names),
                                                    MetricType::kHistogram, std::move(bounds));
  }
  return *e.histogram;
}

std::string Registry::Render() const {
  MutexLock lock(mu_);
  std::string out;
  for (const auto& [name, entry] : families_) {
    if (entry.counter) entry.counter->RenderTo(out);
    if (entry.gauge) entry.gauge->RenderTo(out);
    if (entry.histogram) entry.histogram->RenderTo(out);
  }
  return out;
}

}  // namespace metrics

}  // namespace dlq
