#include "monitor/alarm.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <utility>

namespace dlq {
namespace {

// Periods CloudWatch fetches beyond the N evaluated ones (the documented
// example uses an evaluation range of 5 for N = 3).
constexpr int kExtraRangePeriods = 2;

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t UnixSeconds(SystemTime t) {
  return std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count();
}

// "22/11/26 10:05:00" (dd/mm/yy HH:MM:SS, UTC), the form CloudWatch uses in StateReason.
std::string ReasonTime(int64_t unix_seconds) {
  std::time_t tt = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  return fmt::format("{:02d}/{:02d}/{:02d} {:02d}:{:02d}:{:02d}", tm.tm_mday, tm.tm_mon + 1, tm.tm_year % 100,
                     tm.tm_hour, tm.tm_min, tm.tm_sec);
}

std::string_view OperatorPhrase(Comparison c) {
  switch (c) {
    case Comparison::kGreaterThanOrEqualToThreshold: return "greater than or equal to";
    case Comparison::kGreaterThanThreshold: return "greater than";
    case Comparison::kLessThanThreshold: return "less than";
    case Comparison::kLessThanOrEqualToThreshold: return "less than or equal to";
  }
  return "?";
}

std::string Plural(int n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

}  // namespace

std::string_view AlarmStateName(AlarmState s) {
  switch (s) {
    case AlarmState::kInsufficientData: return "INSUFFICIENT_DATA";
    case AlarmState::kOk: return "OK";
    case AlarmState::kAlarm: return "ALARM";
  }
  return "?";
}

std::string_view ComparisonName(Comparison c) {
  switch (c) {
    case Comparison::kGreaterThanOrEqualToThreshold: return "GreaterThanOrEqualToThreshold";
    case Comparison::kGreaterThanThreshold: return "GreaterThanThreshold";
    case Comparison::kLessThanThreshold: return "LessThanThreshold";
    case Comparison::kLessThanOrEqualToThreshold: return "LessThanOrEqualToThreshold";
  }
  return "?";
}

std::string_view MissingDataName(MissingData m) {
  switch (m) {
    case MissingData::kMissing: return "missing";
    case MissingData::kNotBreaching: return "notBreaching";
    case MissingData::kBreaching: return "breaching";
    case MissingData::kIgnore: return "ignore";
  }
  return "?";
}

std::string_view StatisticName(Statistic s) {
  switch (s) {
    case Statistic::kMaximum: return "Maximum";
    case Statistic::kMinimum: return "Minimum";
    case Statistic::kAverage: return "Average";
    case Statistic::kSum: return "Sum";
    case Statistic::kSampleCount: return "SampleCount";
  }
  return "?";
}

namespace {
template <typename E, size_t K>
Result<E> ParseEnum(std::string_view text, const E (&values)[K], std::string_view (*name)(E), std::string_view what) {
  std::string valid;
  for (E v : values) {
    if (name(v) == text) return v;
    if (!valid.empty()) valid += ", ";
    valid += name(v);
  }
  return InvalidArgument(fmt::format("unknown {} \"{}\" (valid: {})", what, text, valid));
}
}  // namespace

Result<AlarmState> ParseAlarmState(std::string_view text) {
  static constexpr AlarmState kAll[] = {AlarmState::kInsufficientData, AlarmState::kOk, AlarmState::kAlarm};
  return ParseEnum(text, kAll, &AlarmStateName, "alarm state");
}
Result<Comparison> ParseComparison(std::string_view text) {
  static constexpr Comparison kAll[] = {Comparison::kGreaterThanOrEqualToThreshold, Comparison::kGreaterThanThreshold,
                                        Comparison::kLessThanThreshold, Comparison::kLessThanOrEqualToThreshold};
  return ParseEnum(text, kAll, &ComparisonName, "comparison operator");
}
Result<MissingData> ParseMissingData(std::string_view text) {
  static constexpr MissingData kAll[] = {MissingData::kMissing, MissingData::kNotBreaching, MissingData::kBreaching,
                                         MissingData::kIgnore};
  return ParseEnum(text, kAll, &MissingDataName, "treat_missing_data");
}
Result<Statistic> ParseStatistic(std::string_view text) {
  static constexpr Statistic kAll[] = {Statistic::kMaximum, Statistic::kMinimum, Statistic::kAverage, Statistic::kSum,
                                       Statistic::kSampleCount};
  return ParseEnum(text, kAll, &StatisticName, "statistic");
}

Status AlarmSpec::Validate() const {
  auto bad = [&](std::string what) { return InvalidArgument(fmt::format("alarm \"{}\": {}", name, what)); };
  if (name.empty()) return InvalidArgument("alarm: name is empty");
  if (metric.empty()) return bad("metric is empty");
  if (period.count() <= 0) return bad(fmt::format("period must be positive (got {} s)", period.count()));
  if (evaluation_periods < 1) return bad(fmt::format("evaluation_periods must be >= 1 (got {})", evaluation_periods));
  if (datapoints_to_alarm < 1 || datapoints_to_alarm > evaluation_periods) {
    return bad(fmt::format("datapoints_to_alarm must be in [1, evaluation_periods={}] (got {})", evaluation_periods,
                           datapoints_to_alarm));
  }
  if (!std::isfinite(threshold)) return bad("threshold is not a finite number");
  return Status::Ok();
}

bool Breaches(Comparison c, double value, double threshold) {
  switch (c) {
    case Comparison::kGreaterThanOrEqualToThreshold: return value >= threshold;
    case Comparison::kGreaterThanThreshold: return value > threshold;
    case Comparison::kLessThanThreshold: return value < threshold;
    case Comparison::kLessThanOrEqualToThreshold: return value <= threshold;
  }
  return false;
}

Alarm::Alarm(AlarmSpec spec, size_t history_limit)
    : spec_(std::move(spec)), valid_(spec_.Validate().ok()), history_limit_(std::max<size_t>(history_limit, 1)) {}

void Alarm::AddSample(SystemTime t, double value) {
  if (!valid_ || !std::isfinite(value)) return;
  int64_t index = FloorDiv(UnixSeconds(t), spec_.period.count());
  auto [it, inserted] = periods_.try_emplace(index);
  Aggregate& a = it->second;
  if (inserted) {
    a.min = value;
    a.max = value;
  } else {
    a.min = std::min(a.min, value);
    a.max = std::max(a.max, value);
  }
  a.sum += value;
  a.count += 1;
}

double Alarm::Value(const Aggregate& a) const {
  switch (spec_.statistic) {
    case Statistic::kMaximum: return a.max;
    case Statistic::kMinimum: return a.min;
    case Statistic::kAverage: return a.sum / a.count;
    case Statistic::kSum: return a.sum;
    case Statistic::kSampleCount: return a.count;
  }
  return a.max;
}

std::optional<double> Alarm::Datapoint(SystemTime period_start) const {
  auto it = periods_.find(FloorDiv(UnixSeconds(period_start), spec_.period.count()));
  if (it == periods_.end()) return std::nullopt;
  return Value(it->second);
}

namespace {

// A real datapoint of the evaluation range.
struct Point {
  int64_t index;  // of its period
  double value;
  bool breaching;
};

// The state the datapoints call for, CloudWatch's way: `breaching` of the
// `real` ones breach, the other N - real are missing and treated as the spec
// says.
struct Decision {
  AlarmState next;
  int fill_breaching = 0;  // missing datapoints counted as breaching
  bool decided = true;     // false: missing data ignored, the state is kept
};

Decision Decide(const AlarmSpec& spec, AlarmState current, int real, int breaching) {
  const int n = spec.evaluation_periods;
  const int m = spec.datapoints_to_alarm;
  const int r = real, b = breaching;
  const int fills = n - r;  // missing datapoints that need a treatment
  Decision d{current};
  if (fills == 0) {
    d.next = b >= m ? AlarmState::kAlarm : AlarmState::kOk;
    return d;
  }
  switch (spec.missing) {
    case MissingData::kBreaching:
      d.fill_breaching = fills;
      d.next = b + fills >= m ? AlarmState::kAlarm : AlarmState::kOk;
      break;
    case MissingData::kNotBreaching: d.next = b >= m ? AlarmState::kAlarm : AlarmState::kOk; break;
    case MissingData::kIgnore:
      if (b >= m) {
        d.next = AlarmState::kAlarm;
      } else if (r - b > n - m) {
        d.next = AlarmState::kOk;  // ALARM impossible whatever the missing points were
      } else {
        d.decided = false;  // retain the current state
      }
      break;
    case MissingData::kMissing:
      if (r == 0) {
        d.next = AlarmState::kInsufficientData;
      } else if (b >= m) {
        d.next = AlarmState::kAlarm;
      } else if (r - b > n - m) {
        d.next = AlarmState::kOk;
      } else {
        // Judged on the real datapoints only: ALARM when every one breaches.
        d.next = b == r ? AlarmState::kAlarm : AlarmState::kOk;
      }
      break;
  }
  return d;
}

// The reason, in CloudWatch's StateReason form.
std::string StateReason(const AlarmSpec& spec, AlarmState current, const std::vector<Point>& real, int breaching,
                        const Decision& d) {
  const int64_t p = spec.period.count();
  const int n = spec.evaluation_periods;
  const int m = spec.datapoints_to_alarm;
  const int r = static_cast<int>(real.size()), b = breaching;
  const int fills = n - r;
  std::string points;
  for (const Point& pt : real) {
    if (!points.empty()) points += ", ";
    points += fmt::format("{:.1f} ({})", pt.value, ReasonTime(pt.index * p));
  }
  if (r == 0 && (d.next == AlarmState::kInsufficientData || !d.decided)) {
    return fmt::format("Insufficient Data: {} unknown.", Plural(n, "datapoint") + (n == 1 ? " was" : " were"));
  }
  if (!d.decided) {
    return fmt::format("Missing data ignored: {} of the last {} breached the threshold ({:.1f}); state kept.", b,
                       Plural(n, "datapoint"), spec.threshold);
  }
  const bool to_alarm = d.next == AlarmState::kAlarm;
  const int counted = to_alarm ? b + d.fill_breaching : n - b - d.fill_breaching;
  std::string fill_note;
  if (fills > 0) {
    fill_note = fmt::format(" ({} treated as {})", Plural(fills, "missing datapoint"), MissingDataName(spec.missing));
  }
  // Only a change of state is a transition; a kept state says so.
  const std::string needed = Plural(to_alarm ? m : n - m + 1, "datapoint");
  const std::string minimum =
      d.next == current
          ? fmt::format("minimum {} for {}; state kept", needed, AlarmStateName(current))
          : fmt::format("minimum {} for {} -> {} transition", needed, AlarmStateName(current), AlarmStateName(d.next));
  return fmt::format("Threshold Crossed: {} out of the last {} [{}]{} {} {}{} the threshold ({:.1f}) ({}).", counted,
                     Plural(n, "datapoint"), points, fill_note, counted == 1 ? "was" : "were", to_alarm ? "" : "not ",
                     OperatorPhrase(spec.comparison), spec.threshold, minimum);
}

}  // namespace

std::optional<Transition> Alarm::Evaluate(SystemTime now) {
  if (!valid_) return std::nullopt;
  const int64_t p = spec_.period.count();
  const int n = spec_.evaluation_periods;
  const int range = n + kExtraRangePeriods;
  // Index of the newest complete period: it ends at or before `now`.
  const int64_t newest = FloorDiv(UnixSeconds(now), p) - 1;
  const int64_t oldest = newest - range + 1;

  std::vector<Point> real;  // newest first, at most n
  for (int64_t i = newest; i >= oldest && static_cast<int>(real.size()) < n; --i) {
    auto it = periods_.find(i);
    if (it == periods_.end()) continue;
    double v = Value(it->second);
    real.push_back({i, v, Breaches(spec_.comparison, v, spec_.threshold)});
  }
  // Forget periods that can never be evaluated again.
  periods_.erase(periods_.begin(), periods_.lower_bound(oldest - range));

  int b = 0;
  for (const Point& pt : real) b += pt.breaching ? 1 : 0;
  const Decision d = Decide(spec_, state_, static_cast<int>(real.size()), b);
  const AlarmState next = d.next;
  std::string reason = StateReason(spec_, state_, real, b, d);
  last_reason_ = reason;

  if (next == state_) return std::nullopt;
  std::optional<double> cited;  // the newest datapoint in `reason`
  if (!real.empty()) cited = real.front().value;
  Transition t{state_, next, now, std::move(reason), cited, history_.empty()};
  state_ = next;
  history_.push_back(t);
  while (history_.size() > history_limit_) history_.pop_front();
  return t;
}

AlarmSnapshot Alarm::Snapshot() const {
  AlarmSnapshot s;
  s.state = state_;
  s.periods.reserve(periods_.size());
  for (const auto& [index, a] : periods_) s.periods.push_back({index, a.sum, a.min, a.max, a.count});
  s.history.assign(history_.begin(), history_.end());
  return s;
}

void Alarm::Restore(const AlarmSnapshot& snapshot) {
  state_ = snapshot.state;
  periods_.clear();
  for (const AlarmPeriod& p : snapshot.periods) periods_[p.index] = {p.sum, p.min, p.max, p.count};
  history_.assign(snapshot.history.begin(), snapshot.history.end());
  while (history_.size() > history_limit_) history_.pop_front();
}

}  // namespace dlq
