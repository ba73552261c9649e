#pragma once

#include <chrono>
#include <cstdint>

namespace dlq {

// How many of a drain's receivers receive at once.
//
// More receivers raise a drain's rate only while the queue's server has
// capacity to spare. SQS serves receives side by side; a server that serves
// them one after another (a local stand-in, an endpoint under throttling,
// a drain held back by its uploads) only queues the extra receives, and
// every receiver that waits in that queue costs CPU (a thread woken per
// reply) for no more messages per second.
//
// So the governor measures. It starts at `min_receivers` and doubles the
// level while a doubling raises the rate of received messages by at least
// `min_gain` of what it ideally would (a doubling needs +min_gain, a step
// from 4 to 6 half of that), up to `max_receivers`; it keeps the last level
// that paid. Every `reprobe_after` it probes again from half its level, so
// it follows a server that got faster or slower.
//
// A level's rate is measured over a phase: from the moment the level is
// set until at least `receives_per_receiver` receives per receiver have
// come back and at least `min_phase` has passed. Messages that come back
// in the phase count (a receive that started under the previous level and
// ends in the phase too: over a phase of many receives that is noise).
//
// Not thread-safe: the drainer calls it under a lock.
class ReceiverGovernor {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  struct Options {
    int max_receivers = 1;
    int min_receivers = 2;  // one receive waits at the server while the last reply is processed
    std::chrono::milliseconds min_phase{250};
    int receives_per_receiver = 4;
    double min_gain = 0.3;
    std::chrono::milliseconds reprobe_after{30000};
  };

  ReceiverGovernor(const Options& options, TimePoint start);

  // Receivers that may receive now: 1 .. max_receivers.
  int limit() const { return limit_; }
  // Whether the last probe has ended (the level is the one that paid).
  bool settled() const { return settled_; }
  // Messages per second measured at the settled level's phase (0 before).
  double settled_rate() const { return settled_rate_; }

  // A receive came back at `end` with `messages` messages (0 for an empty
  // or failed receive). Returns true when limit() changed.
  bool Observe(TimePoint end, uint64_t messages);

 private:
  void StartPhase(int level, TimePoint at);
  void Settle(int level, double rate, TimePoint at);

  Options options_;
  int limit_ = 1;
  bool settled_ = false;
  double settled_rate_ = 0;
  TimePoint settled_at_{};
  // The phase being measured.
  TimePoint phase_start_{};
  uint64_t phase_receives_ = 0;
  uint64_t phase_messages_ = 0;
  // The last level of this probe that paid, and its rate; 0 before the
  // probe's first phase ends.
  int best_level_ = 0;
  double best_rate_ = 0;
};

}  // namespace dlq
