// CloudWatch-compatible metric alarm evaluation (see doc/alarms.md for the
// exact semantics, including how missing data is filled).
//
// An Alarm is not thread-safe: it is owned by one queue's monitor. It never
// reads a clock; every time is passed in. Evaluate() is deterministic given
// the samples added so far.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace dlq {

enum class AlarmState { kInsufficientData, kOk, kAlarm };
enum class Comparison {
  kGreaterThanOrEqualToThreshold,
  kGreaterThanThreshold,
  kLessThanThreshold,
  kLessThanOrEqualToThreshold,
};
enum class MissingData { kMissing, kNotBreaching, kBreaching, kIgnore };
enum class Statistic { kMaximum, kMinimum, kAverage, kSum, kSampleCount };

// CloudWatch spellings: "INSUFFICIENT_DATA", "GreaterThanOrEqualToThreshold",
// "notBreaching", "Maximum". Parsers accept exactly these names.
std::string_view AlarmStateName(AlarmState s);
std::string_view ComparisonName(Comparison c);
std::string_view MissingDataName(MissingData m);
std::string_view StatisticName(Statistic s);
Result<AlarmState> ParseAlarmState(std::string_view text);
Result<Comparison> ParseComparison(std::string_view text);
Result<MissingData> ParseMissingData(std::string_view text);
Result<Statistic> ParseStatistic(std::string_view text);

struct AlarmSpec {
  std::string name;
  std::string metric;  // e.g. "ApproximateAgeOfOldestMessage"
  Statistic statistic = Statistic::kMaximum;
  std::chrono::seconds period{300};
  int evaluation_periods = 1;   // N
  int datapoints_to_alarm = 1;  // M, 1 <= M <= N
  double threshold = 0;
  Comparison comparison = Comparison::kGreaterThanOrEqualToThreshold;
  MissingData missing = MissingData::kMissing;

  // InvalidArgument naming the alarm and the bad field.
  Status Validate() const;
};

struct Transition {
  AlarmState from = AlarmState::kInsufficientData;
  AlarmState to = AlarmState::kInsufficientData;
  SystemTime time;
  std::string reason;  // CloudWatch-style StateReason
  // The newest datapoint `reason` cites (nullopt when it cites none).
  std::optional<double> value;
  bool initial = false;  // the alarm's first transition since it was created
};

// True when `value` breaches `threshold` under `c`.
bool Breaches(Comparison c, double value, double threshold);

// An alarm's evaluation state, to carry it across a restart (monitor/state_store.h).
struct AlarmPeriod {
  int64_t index = 0;  // period start / period
  double sum = 0, min = 0, max = 0, count = 0;
};
struct AlarmSnapshot {
  AlarmState state = AlarmState::kInsufficientData;
  std::vector<AlarmPeriod> periods;  // ascending index
  std::vector<Transition> history;   // oldest first
};

class Alarm {
 public:
  static constexpr size_t kDefaultHistoryLimit = 100;

  // `spec` must have passed Validate() (checked again; an invalid spec makes
  // Evaluate() a no-op that never transitions). Initial state INSUFFICIENT_DATA.
  explicit Alarm(AlarmSpec spec, size_t history_limit = kDefaultHistoryLimit);

  // A raw sample at time t; samples are aggregated into aligned periods
  // [k*period, (k+1)*period) by the spec's statistic. Order does not matter.
  void AddSample(SystemTime t, double value);

  // Evaluates the complete periods ending at or before `now` (the evaluation
  // range is N + 2 periods; see doc/alarms.md). Returns the transition when
  // the state changed, nullopt otherwise.
  std::optional<Transition> Evaluate(SystemTime now);

  AlarmState state() const { return state_; }
  const AlarmSpec& spec() const { return spec_; }
  // Oldest first, at most history_limit entries.
  const std::deque<Transition>& history() const { return history_; }
  // The reason computed by the last Evaluate(), whether or not it changed state.
  const std::string& last_reason() const { return last_reason_; }
  // Aggregated datapoint of the period that starts at `period_start`, if any.
  std::optional<double> Datapoint(SystemTime period_start) const;

  // The state, aggregated periods and history; Restore() puts them back into
  // an alarm of the same spec (the history is cut to history_limit). Restore
  // emits no transition.
  AlarmSnapshot Snapshot() const;
  void Restore(const AlarmSnapshot& snapshot);

 private:
  struct Aggregate {
    double sum = 0;
    double min = 0;
    double max = 0;
    double count = 0;
  };
  double Value(const Aggregate& a) const;

  AlarmSpec spec_;
  bool valid_;
  size_t history_limit_;
  AlarmState state_ = AlarmState::kInsufficientData;
  std::map<int64_t, Aggregate> periods_;  // period index -> aggregate
  std::deque<Transition> history_;
  std::string last_reason_;
};

}  // namespace dlq
