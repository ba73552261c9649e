#include "testing/simulation.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "monitor/alarm.h"
#include "monitor/safety.h"

namespace dlq {
namespace {

// Simulation second 0 is 2026-01-01T00:00:00Z, aligned to every alarm period used here.
constexpr int64_t kEpochBase = 1767225600;

SystemTime At(int64_t t) {
  return SystemTime(std::chrono::seconds(kEpochBase + t));
}

struct Msg {
  int64_t arrival = 0;
  int64_t sent = 0;
  int receive_count = 1;
  int64_t expiry = 0;           // when SQS deletes it
  int64_t believed_expiry = 0;  // what our daemon computes from SentTimestamp (never later than expiry)
};

class Queue {
 public:
  explicit Queue(const SimScenario& s) {
    msgs_.reserve(s.arrivals.size());
    for (const SimArrival& a : s.arrivals) {
      Msg m;
      m.arrival = a.arrival_s;
      m.sent = a.arrival_s - a.time_in_source_s;
      m.receive_count = a.receive_count;
      m.expiry = s.fifo ? a.arrival_s + s.dlq_retention_s : m.sent + s.dlq_retention_s;
      m.believed_expiry = m.sent + s.dlq_retention_s;
      msgs_.push_back(m);
    }
    std::stable_sort(msgs_.begin(), msgs_.end(), [](const Msg& a, const Msg& b) { return a.arrival < b.arrival; });
  }

  void Arrive(int64_t t) {
    while (next_ < msgs_.size() && msgs_[next_].arrival <= t) {
      const int i = static_cast<int>(next_++);
      by_arrival_.insert(i);
      by_expiry_.insert({msgs_[i].expiry, i});
      by_believed_.insert({msgs_[i].believed_expiry, i});
      if (msgs_[i].receive_count < 3) counted_.insert(i);
    }
  }

  int64_t Expire(int64_t t) {
    int64_t lost = 0;
    while (!by_expiry_.empty() && by_expiry_.begin()->first <= t) {
      Remove(by_expiry_.begin()->second);
      ++lost;
    }
    return lost;
  }

  void Archive(int i, int64_t t, SimulationResult& r) {
    r.min_slack_s = std::min(r.min_slack_s, static_cast<double>(msgs_[i].expiry - t));
    ++r.archived;
    Remove(i);
  }

  void Remove(int i) {
    by_arrival_.erase(i);
    by_expiry_.erase({msgs_[i].expiry, i});
    by_believed_.erase({msgs_[i].believed_expiry, i});
    counted_.erase(i);
  }

  const Msg& msg(int i) const { return msgs_[i]; }
  size_t depth() const { return by_arrival_.size(); }
  size_t total() const { return msgs_.size(); }
  const std::set<int>& by_arrival() const { return by_arrival_; }
  const std::set<std::pair<int64_t, int>>& by_believed() const { return by_believed_; }
  const std::set<int>& counted() const { return counted_; }

 private:
  std::vector<Msg> msgs_;
  size_t next_ = 0;
  std::set<int> by_arrival_;
  std::set<std::pair<int64_t, int>> by_expiry_;
  std::set<std::pair<int64_t, int>> by_believed_;
  std::set<int> counted_;  // receive count < 3, as ApproximateAgeOfOldestMessage sees them
};

AlarmSpec ReferenceAlarmSpec(const SimOptions& o) {
  AlarmSpec s;
  s.name = "reference-age";
  s.metric = "ApproximateAgeOfOldestMessage";
  s.statistic = Statistic::kMaximum;
  s.period = std::chrono::seconds(o.reference_period_s);
  s.evaluation_periods = 1;
  s.datapoints_to_alarm = 1;
  s.threshold = o.reference_threshold_s;
  s.comparison = Comparison::kGreaterThanOrEqualToThreshold;
  s.missing = MissingData::kMissing;
  return s;
}

}  // namespace

std::string_view SimPolicyName(SimPolicy p) {
  switch (p) {
    case SimPolicy::kReferenceAlarm: return "reference (1 alarm, 1 partial run)";
    case SimPolicy::kFifoDrain: return "plain FIFO drain (hourly)";
    case SimPolicy::kExpiryAware: return "ours (expiry-aware sweep)";
  }
  return "?";
}

SimScenario StandardScenario(bool fifo) {
  SimScenario s;
  s.name = fifo ? "fifo-4d" : "standard-4d";
  s.fifo = fifo;
  s.dlq_retention_s = 345600;
  s.source_retention_s = 345600;
  s.drain_rate = 0.5;
  s.horizon_s = int64_t{8} * 86400;
  constexpr int64_t kDay = 86400;
  constexpr int64_t kMinInSource = kDay;            // 1 day
  constexpr int64_t kMaxInSource = kDay * 39 / 10;  // 3.9 days
  int64_t n = 0;
  auto add = [&](int64_t arrival, int64_t in_source) {
    ++n;
    s.arrivals.push_back({arrival, in_source, n % 7 == 0 ? 3 : 1});
  };
  for (int64_t i = 0; i < 432; ++i) {  // trickle: every 10 minutes for 3 days
    add(600 * i, kMinInSource + (i * 7919) % (kMaxInSource - kMinInSource + 1));
  }
  for (int64_t j = 0; j < 10000; ++j) add(kDay / 2 + j % 600, kMinInSource);      // burst A at 12 h
  for (int64_t j = 0; j < 1000; ++j) add(kDay * 6 / 10 + j % 300, kMaxInSource);  // burst B at 14.4 h
  return s;
}

// The simulation's event loop, one pass over the fleet per tick (test support).
// NOLINTNEXTLINE(readability-function-size)
SimulationResult RunSimulation(const SimScenario& scenario, SimPolicy policy, const SimOptions& o) {
  SimulationResult r;
  r.scenario = scenario.name;
  r.policy = std::string(SimPolicyName(policy));
  r.min_slack_s = std::numeric_limits<double>::infinity();
  Queue q(scenario);
  r.arrived = static_cast<int64_t>(q.total());

  const double rate = scenario.drain_rate;
  const int64_t step = std::max<int64_t>(o.step_s, 1);
  const int64_t retention = scenario.dlq_retention_s;
  double tokens = 0;
  int64_t budget = 0;  // reference and FIFO: messages left in the current run

  Alarm reference_alarm(ReferenceAlarmSpec(o));
  // Ours: the per-message formula of DeriveExpiryThreshold with the assumed depth.
  const double assumed_window = static_cast<double>(o.sweep_interval_s + o.collection_s + o.safety_margin_s) +
                                static_cast<double>(o.assumed_depth) / rate;
  AlarmSpec ours_spec = DefaultExpiryAlarm(scenario.name, std::floor(retention - assumed_window));
  ours_spec.period = std::chrono::seconds(o.sweep_interval_s);
  Alarm ours_alarm(ours_spec);
  AlarmSpec depth_spec = DefaultDepthAlarm(scenario.name);
  depth_spec.period = std::chrono::seconds(o.sweep_interval_s);
  Alarm depth_alarm(depth_spec);
  int64_t due_limit = std::numeric_limits<int64_t>::min();

  for (int64_t t = 0; t <= scenario.horizon_s; t += step) {
    q.Arrive(t);
    r.expired_lost += q.Expire(t);
    tokens += rate * static_cast<double>(step);
    int64_t capacity = static_cast<int64_t>(std::floor(tokens));
    int64_t done = 0;

    switch (policy) {
      case SimPolicy::kReferenceAlarm: {
        const double age = q.counted().empty() ? 0.0 : static_cast<double>(t - q.msg(*q.counted().begin()).arrival);
        reference_alarm.AddSample(At(t), age);
        if (auto tr = reference_alarm.Evaluate(At(t - o.reference_metric_delay_s))) {
          ++r.alarm_transitions;
          if (tr->to == AlarmState::kAlarm) budget = o.reference_max_per_run;  // one Lambda invocation
        }
        while (done < capacity && budget > 0 && !q.by_arrival().empty()) {
          q.Archive(*q.by_arrival().begin(), t, r);
          ++done;
          --budget;
        }
        break;
      }
      case SimPolicy::kFifoDrain: {
        if (t % o.fifo_interval_s == 0) budget = static_cast<int64_t>(rate * static_cast<double>(o.fifo_interval_s));
        while (done < capacity && budget > 0 && !q.by_arrival().empty()) {
          q.Archive(*q.by_arrival().begin(), t, r);
          ++done;
          --budget;
        }
        break;
      }
      case SimPolicy::kExpiryAware: {
        if (t % o.sweep_interval_s == 0) {
          const double depth = static_cast<double>(q.depth());
          const double age =
              q.by_believed().empty() ? 0.0 : static_cast<double>(t - (q.by_believed().begin()->first - retention));
          // The observation at t is the datapoint of the period that ends at t.
          ours_alarm.AddSample(At(t - o.sweep_interval_s), age);
          depth_alarm.AddSample(At(t - o.sweep_interval_s), depth);
          if (ours_alarm.Evaluate(At(t))) ++r.alarm_transitions;
          if (depth_alarm.Evaluate(At(t))) ++r.depth_alarm_transitions;
          const double window =
              static_cast<double>(o.sweep_interval_s + o.collection_s + o.safety_margin_s) + depth / rate;
          due_limit = t + static_cast<int64_t>(std::ceil(window));
        }
        const bool drain_all = ours_alarm.state() == AlarmState::kAlarm;  // re-run every sweep while ALARM
        while (done < capacity && !q.by_believed().empty()) {
          auto [believed, i] = *q.by_believed().begin();
          if (!drain_all && believed > due_limit) break;
          q.Archive(i, t, r);
          ++done;
        }
        break;
      }
    }
    tokens -= static_cast<double>(done);
    tokens = std::min(tokens, rate * static_cast<double>(step));  // idle capacity does not accumulate
  }
  r.still_queued = static_cast<int64_t>(q.depth());
  if (r.archived == 0) r.min_slack_s = 0;
  return r;
}

std::string FormatSimulationTable(const std::vector<SimulationResult>& results) {
  std::string out =
      "| scenario | policy | arrived | archived | lost | still queued | min slack (s) | alarm transitions |\n"
      "|---|---|---:|---:|---:|---:|---:|---:|\n";
  for (const SimulationResult& r : results) {
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {:.0f} | {} |\n", r.scenario, r.policy, r.arrived, r.archived,
                       r.expired_lost, r.still_queued, r.min_slack_s, r.alarm_transitions);
  }
  return out;
}

}  // namespace dlq
