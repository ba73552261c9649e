// Deterministic discrete-time simulation of DLQ expiry under three archiving
// policies (fake time in seconds; no threads, no I/O, no randomness). Used to
// show that the reference design loses messages and ours does not; see
// doc/alarms.md ("Simulation") for the model and the table it produces.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dlq {

enum class SimPolicy {
  kReferenceAlarm,  // one CloudWatch age alarm; one partial archive run per transition into ALARM
  kFifoDrain,       // hourly run with a fixed budget, oldest DLQ arrival first, no expiry awareness
  kExpiryAware,     // ours: per-message expiry, sweep, earliest-expiry-first, re-run while ALARM
};
std::string_view SimPolicyName(SimPolicy p);

struct SimArrival {
  int64_t arrival_s = 0;         // when the message entered the DLQ
  int64_t time_in_source_s = 0;  // SentTimestamp = arrival_s - time_in_source_s
  int receive_count = 1;         // >= 3: invisible to ApproximateAgeOfOldestMessage
};

struct SimScenario {
  std::string name;
  bool fifo = false;  // FIFO: SQS restarts the expiry clock on the move
  int64_t dlq_retention_s = 345600;
  int64_t source_retention_s = 345600;
  double drain_rate = 0.5;  // messages/s, the same for every policy
  int64_t horizon_s = int64_t{8} * 86400;
  std::vector<SimArrival> arrivals;  // any order
};

// 4-day DLQ and source retention; a trickle (one message every 10 min for 3
// days, 1 to 3.9 days spent in the source queue), a burst of 10,000 at 12 h
// (1 day in the source), a burst of 1,000 at 14.4 h (3.9 days in the source),
// every 7th message received 3 times. `fifo` switches the queue type only.
SimScenario StandardScenario(bool fifo = false);

struct SimOptions {
  int64_t step_s = 60;  // CloudWatch evaluates alarms every minute
  // Reference design.
  double reference_threshold_s = 345000;
  int64_t reference_period_s = 300;
  int64_t reference_metric_delay_s = 420;  // one period + 120 s
  int64_t reference_max_per_run = 100;     // 10 receives of 10
  // Plain FIFO drain.
  int64_t fifo_interval_s = 3600;
  // Ours.
  int64_t sweep_interval_s = 300;
  int64_t collection_s = 60;
  int64_t safety_margin_s = 3600;
  int64_t assumed_depth = 20000;  // for the expiry alarm's fixed threshold
};

struct SimulationResult {
  std::string scenario;
  std::string policy;
  int64_t arrived = 0;
  int64_t archived = 0;
  int64_t expired_lost = 0;
  int64_t still_queued = 0;   // in the DLQ at the horizon (neither archived nor lost)
  double min_slack_s = 0;     // smallest (expiry - archive time) over archived messages
  int alarm_transitions = 0;  // expiry-alarm state changes
  int depth_alarm_transitions = 0;
};

SimulationResult RunSimulation(const SimScenario& scenario, SimPolicy policy, const SimOptions& options = {});
// "| scenario | policy | arrived | archived | lost | ..." markdown table.
std::string FormatSimulationTable(const std::vector<SimulationResult>& results);

}  // namespace dlq
