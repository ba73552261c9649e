#include "monitor/scheduler.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "testing/fake_clock.h"
#include "testing/quiescence.h"

namespace dlq {
namespace {

using namespace std::chrono_literals;

// A one-shot gate that jobs block on until the test opens it.
class Gate {
 public:
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;  // guarded by mu_
};

// Polls `pred` until it holds or `timeout` (real time) passes.
bool Eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout = 10s) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return pred();
}

// Records the order in which jobs start.
class Recorder {
 public:
  void Add(const std::string& s) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(s);
  }
  std::vector<std::string> events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> events_;  // guarded by mu_
};

ArchiveJob MakeJob(std::string key, SystemTime deadline, std::function<JobOutcome(std::stop_token)> run,
                   std::function<void(const JobOutcome&)> done = nullptr) {
  ArchiveJob job;
  job.queue_key = std::move(key);
  job.deadline = deadline;
  job.run = std::move(run);
  job.done = std::move(done);
  return job;
}

// A job that records its tag when it starts and succeeds.
ArchiveJob RecordingJob(std::string key, SystemTime deadline, Recorder& rec, std::string tag) {
  return MakeJob(std::move(key), deadline, [&rec, tag](std::stop_token) {
    rec.Add(tag);
    return JobOutcome{};
  });
}

// A job that blocks on `gate`, then succeeds.
ArchiveJob BlockingJob(std::string key, SystemTime deadline, Gate& gate) {
  return MakeJob(std::move(key), deadline, [&gate](std::stop_token) {
    gate.Wait();
    return JobOutcome{};
  });
}

SchedulerOptions Options(int global, int per_queue = 1, int min = 1) {
  SchedulerOptions o;
  o.global_concurrency = global;
  o.per_queue_concurrency = per_queue;
  o.min_concurrency = min;
  return o;
}

TEST(SchedulerOptionsTest, ValidateRejectsBadCombinations) {
  EXPECT_TRUE(SchedulerOptions{}.Validate().ok());
  EXPECT_EQ(Options(0).Validate().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Options(4, 0).Validate().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Options(4, 1, 0).Validate().code(), ErrorCode::kInvalidArgument);
  Status s = Options(4, 1, 5).Validate();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("min_concurrency"), std::string::npos) << s.message();
}

TEST(SchedulerTest, RunsEarliestDeadlineFirstWithTiesInSubmitOrder) {
  FakeClock clock;
  Scheduler sched(Options(1), clock);
  sched.Start();
  const SystemTime t0 = clock.Now();
  Gate gate;
  sched.Submit(BlockingJob("blocker", t0, gate));
  ASSERT_TRUE(Eventually([&] { return sched.Stats().running == 1; }));

  Recorder rec;
  const int offsets_min[] = {50, 10, 30, 10, 40, 20};
  for (int i = 0; i < 6; ++i) {
    sched.Submit(
        RecordingJob(fmt::format("q{}", i), t0 + std::chrono::minutes(offsets_min[i]), rec, fmt::format("q{}", i)));
  }
  EXPECT_EQ(sched.Stats().pending, 6u);
  gate.Open();
  sched.WaitIdle();
  EXPECT_EQ(rec.events(), (std::vector<std::string>{"q1", "q3", "q5", "q2", "q4", "q0"}));
  EXPECT_EQ(sched.Stats().completed, 7u);
}

TEST(SchedulerTest, PerQueueCapHoldsBackOnlyThatQueue) {
  FakeClock clock;
  Scheduler sched(Options(4, 1), clock);
  sched.Start();
  const SystemTime t0 = clock.Now();
  std::atomic<int> a_running{0}, a_peak{0};
  std::atomic<bool> a1_finished{false}, a2_saw_a1_running{false};
  Gate gate_a1;
  auto track = [&] {
    int now = ++a_running;
    int peak = a_peak.load();
    while (now > peak && !a_peak.compare_exchange_weak(peak, now)) {
    }
  };
  sched.Submit(MakeJob("A", t0, [&](std::stop_token) {
    track();
    gate_a1.Wait();
    --a_running;
    a1_finished = true;
    return JobOutcome{};
  }));
  ASSERT_TRUE(Eventually([&] { return a_running.load() == 1; }));

  // A2 has the earliest deadline, yet must wait for A1 while B and C run.
  Recorder rec;
  sched.Submit(MakeJob("A", t0, [&](std::stop_token) {
    track();
    if (!a1_finished) a2_saw_a1_running = true;
    rec.Add("A2");
    --a_running;
    return JobOutcome{};
  }));
  sched.Submit(RecordingJob("B", t0 + 1min, rec, "B"));
  sched.Submit(RecordingJob("C", t0 + 2min, rec, "C"));
  ASSERT_TRUE(Eventually([&] { return sched.Stats().completed == 2; }));
  std::vector<std::string> first = rec.events();  // B and C run side by side: any order
  std::sort(first.begin(), first.end());
  EXPECT_EQ(first, (std::vector<std::string>{"B", "C"}));
  SchedulerStats s = sched.Stats();
  EXPECT_EQ(s.running, 1u);
  EXPECT_EQ(s.pending, 1u);  // A2 waits behind its own queue only

  gate_a1.Open();
  sched.WaitIdle();
  ASSERT_EQ(rec.events().size(), 3u);
  EXPECT_EQ(rec.events().back(), "A2");
  EXPECT_EQ(a_peak.load(), 1);
  EXPECT_FALSE(a2_saw_a1_running.load());
}

TEST(SchedulerTest, PerQueueCapOfTwoLetsTwoJobsOfOneQueueOverlap) {
  FakeClock clock;
  Scheduler sched(Options(4, 2), clock);
  sched.Start();
  Gate gate;
  sched.Submit(BlockingJob("A", clock.Now(), gate));
  ASSERT_TRUE(Eventually([&] { return sched.Stats().running == 1; }));
  sched.Submit(BlockingJob("A", clock.Now(), gate));
  EXPECT_TRUE(Eventually([&] { return sched.Stats().running == 2; }));
  gate.Open();
  sched.WaitIdle();
  EXPECT_EQ(sched.Stats().completed, 2u);
}

TEST(SchedulerTest, GlobalCapLimitsJobsRunningAtOnce) {
  FakeClock clock;
  ThreadWatch watch;  // the scheduler's workers, started below
  Scheduler sched(Options(3, 1), clock);
  sched.Start();
  Gate gate;
  std::atomic<int> running{0}, peak{0};
  for (int i = 0; i < 10; ++i) {
    sched.Submit(MakeJob(fmt::format("q{}", i), clock.Now(), [&](std::stop_token) {
      int now = ++running;
      int p = peak.load();
      while (now > p && !peak.compare_exchange_weak(p, now)) {
      }
      gate.Wait();
      --running;
      return JobOutcome{};
    }));
  }
  ASSERT_TRUE(Eventually([&] { return running.load() == 3; }));
  // Every worker waits (for the gate or for work): a buggy scheduler has
  // overshot by now.
  ASSERT_TRUE(watch.AwaitQuiescent());
  SchedulerStats s = sched.Stats();
  EXPECT_EQ(s.running, 3u);
  EXPECT_EQ(s.pending, 7u);
  gate.Open();
  sched.WaitIdle();
  EXPECT_EQ(peak.load(), 3);
  EXPECT_EQ(sched.Stats().completed, 10u);
}

TEST(SchedulerTest, ReplacingPendingJobKeepsEarlierDeadlineAndNewestWork) {
  FakeClock clock;
  Scheduler sched(Options(1), clock);
  sched.Start();
  const SystemTime t0 = clock.Now();
  Gate gate;
  sched.Submit(BlockingJob("X", t0, gate));  // running: a pending X must not touch it
  ASSERT_TRUE(Eventually([&] { return sched.Stats().running == 1; }));

  Recorder rec;
  sched.Submit(RecordingJob("X", t0 + 100min, rec, "x1"));
  sched.Submit(RecordingJob("Y", t0 + 50min, rec, "y"));
  sched.Submit(RecordingJob("X", t0 + 200min, rec, "x2"));  // later deadline: X keeps 100min
  sched.Submit(RecordingJob("Z", t0 + 150min, rec, "z"));
  sched.Submit(RecordingJob("W", t0 + 10min, rec, "w1"));
  sched.Submit(RecordingJob("W", t0 + 400min, rec, "w2"));  // W keeps 10min
  sched.Submit(RecordingJob("V", t0 + 300min, rec, "v1"));
  sched.Submit(RecordingJob("V", t0 + 5min, rec, "v2"));  // earlier deadline: V moves to the front
  EXPECT_EQ(sched.Stats().pending, 5u);
  gate.Open();
  sched.WaitIdle();
  EXPECT_EQ(rec.events(), (std::vector<std::string>{"v2", "w2", "y", "x2", "z"}));
}

TEST(SchedulerTest, ThrottlingHalvesConcurrencyAndSuccessesRestoreIt) {
  FakeClock clock;
  ThreadWatch watch;  // the scheduler's workers, started below
  Scheduler sched(Options(8, 1, 1), clock);
  sched.Start();
  auto run_one = [&](JobOutcome outcome) {
    sched.Submit(MakeJob("q", clock.Now(), [outcome](std::stop_token) { return outcome; }));
    sched.WaitIdle();
    return sched.Stats().effective_concurrency;
  };
  JobOutcome throttled;
  throttled.throttled = true;
  throttled.status = Unavailable("SendMessage: 503");
  EXPECT_EQ(sched.Stats().effective_concurrency, 8);
  EXPECT_EQ(run_one(throttled), 4);
  EXPECT_EQ(run_one(JobOutcome{Throttled("ReceiveMessage: ThrottlingException")}), 2);  // status code alone counts

  // The halved limit is enforced: 6 jobs, only 2 run.
  Gate gate;
  for (int i = 0; i < 6; ++i) sched.Submit(BlockingJob(fmt::format("b{}", i), clock.Now(), gate));
  ASSERT_TRUE(Eventually([&] { return sched.Stats().running == 2; }));
  ASSERT_TRUE(watch.AwaitQuiescent());  // every worker waits: nothing more starts
  EXPECT_EQ(sched.Stats().running, 2u);
  EXPECT_EQ(sched.Stats().pending, 4u);
  gate.Open();
  sched.WaitIdle();
  EXPECT_EQ(sched.Stats().effective_concurrency, 8);  // six successes: 2 -> 8 (capped)

  EXPECT_EQ(run_one(throttled), 4);
  EXPECT_EQ(run_one(throttled), 2);
  EXPECT_EQ(run_one(throttled), 1);
  EXPECT_EQ(run_one(throttled), 1);                                     // floor: min_concurrency
  EXPECT_EQ(run_one(JobOutcome{FailedPrecondition("queue gone")}), 1);  // a plain failure changes nothing
  EXPECT_EQ(run_one(JobOutcome{}), 2);
  EXPECT_EQ(run_one(JobOutcome{}), 3);
  EXPECT_EQ(sched.Stats().throttled, 6u);
}

TEST(SchedulerTest, AdaptiveConcurrencyRespectsFloorAndCanBeDisabled) {
  FakeClock clock;
  JobOutcome throttled;
  throttled.throttled = true;
  {
    Scheduler sched(Options(8, 1, 3), clock);
    sched.Start();
    for (int i = 0; i < 4; ++i) {
      sched.Submit(MakeJob("q", clock.Now(), [&](std::stop_token) { return throttled; }));
      sched.WaitIdle();
    }
    EXPECT_EQ(sched.Stats().effective_concurrency, 3);
  }
  {
    SchedulerOptions o = Options(8);
    o.adaptive = false;
    Scheduler sched(o, clock);
    sched.Start();
    sched.Submit(MakeJob("q", clock.Now(), [&](std::stop_token) { return throttled; }));
    sched.WaitIdle();
    EXPECT_EQ(sched.Stats().effective_concurrency, 8);
    EXPECT_EQ(sched.Stats().throttled, 1u);
  }
}

TEST(SchedulerTest, StopInterruptsRunningJobsAndDropsPendingOnes) {
  FakeClock clock;
  Scheduler sched(Options(1), clock);
  sched.Start();
  std::atomic<bool> started{false}, pending_ran{false}, late_ran{false};
  std::optional<Status> long_status;
  std::mutex status_mu;
  sched.Submit(MakeJob(
      "long", clock.Now(),
      [&](std::stop_token stop) {
        started = true;
        // Runs until stopped (30 s at most: a scheduler that never stops it
        // fails below instead of hanging).
        std::mutex m;
        std::condition_variable_any never;
        std::unique_lock lock(m);
        never.wait_for(lock, stop, 30s, [] { return false; });
        return stop.stop_requested() ? JobOutcome{Cancelled("archive long: stopped")} : JobOutcome{};
      },
      [&](const JobOutcome& o) {
        std::lock_guard<std::mutex> lock(status_mu);
        long_status = o.status;
      }));
  sched.Submit(MakeJob("pending", clock.Now(), [&](std::stop_token) {
    pending_ran = true;
    return JobOutcome{};
  }));
  ASSERT_TRUE(Eventually([&] { return started.load(); }));

  const auto t = std::chrono::steady_clock::now();
  sched.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t, 10s);
  {
    std::lock_guard<std::mutex> lock(status_mu);
    ASSERT_TRUE(long_status.has_value());
    EXPECT_EQ(long_status->code(), ErrorCode::kCancelled);
  }
  EXPECT_FALSE(pending_ran.load());
  sched.Submit(MakeJob("late", clock.Now(), [&](std::stop_token) {
    late_ran = true;
    return JobOutcome{};
  }));
  sched.WaitIdle();  // returns: nothing pending after Stop
  EXPECT_FALSE(late_ran.load());
  SchedulerStats s = sched.Stats();
  EXPECT_EQ(s.pending, 0u);
  EXPECT_EQ(s.running, 0u);
}

TEST(SchedulerTest, ExceptionsInJobsBecomeInternalStatusAndWorkerSurvives) {
  FakeClock clock;
  Scheduler sched(Options(1), clock);
  sched.Start();
  std::mutex mu;
  std::vector<Status> statuses;
  auto record = [&](const JobOutcome& o) {
    std::lock_guard<std::mutex> lock(mu);
    statuses.push_back(o.status);
  };
  sched.Submit(MakeJob(
      "us-east-1/boom", clock.Now(), [](std::stop_token) -> JobOutcome { throw std::runtime_error("kaboom"); },
      record));
  sched.WaitIdle();
  sched.Submit(MakeJob(
      "odd", clock.Now(), [](std::stop_token) -> JobOutcome { throw 42; }, record));
  sched.WaitIdle();
  sched.Submit(MakeJob(
      "done-throws", clock.Now(), [](std::stop_token) { return JobOutcome{}; },
      [](const JobOutcome&) { throw std::logic_error("bad callback"); }));
  sched.WaitIdle();
  sched.Submit(MakeJob(
      "fine", clock.Now(), [](std::stop_token) { return JobOutcome{}; }, record));
  sched.WaitIdle();

  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(statuses.size(), 3u);
  EXPECT_EQ(statuses[0].code(), ErrorCode::kInternal);
  EXPECT_NE(statuses[0].message().find("kaboom"), std::string::npos) << statuses[0].message();
  EXPECT_NE(statuses[0].message().find("us-east-1/boom"), std::string::npos) << statuses[0].message();
  EXPECT_EQ(statuses[1].code(), ErrorCode::kInternal);
  EXPECT_TRUE(statuses[2].ok());
  EXPECT_EQ(sched.Stats().completed, 4u);
}

TEST(SchedulerTest, MoreIsNotResubmittedButResubmissionFromDoneIsAwaited) {
  FakeClock clock;
  Scheduler sched(Options(2), clock);
  sched.Start();
  std::atomic<int> runs{0};
  JobOutcome more;
  more.more = true;
  // Without a resubmission, more=true runs once.
  sched.Submit(MakeJob("once", clock.Now(), [&](std::stop_token) {
    ++runs;
    return more;
  }));
  sched.WaitIdle();
  EXPECT_EQ(runs.load(), 1);

  // A daemon-style resubmission from done: WaitIdle waits for all slices.
  // Each slice ends only once this thread waits in WaitIdle (the workers
  // started before the watch, so it watches this thread alone).
  ThreadWatch watch;
  std::atomic<int> slices{0};
  std::function<void(const JobOutcome&)> resubmit;
  auto make = [&] {
    return MakeJob(
        "sliced", clock.Now(),
        [&](std::stop_token) {
          EXPECT_TRUE(watch.AwaitQuiescent());
          JobOutcome o;
          o.more = ++slices < 4;
          return o;
        },
        [&](const JobOutcome& o) {
          if (o.more) resubmit(o);
        });
  };
  resubmit = [&](const JobOutcome&) { sched.Submit(make()); };
  sched.Submit(make());
  sched.WaitIdle();
  EXPECT_EQ(slices.load(), 4);
}

// ---------------------------------------------------------------------------
// Flood simulation: 300 queues on a simulated clock. Queue contents are
// counts in per-expiry buckets; a job archives `kRate` messages per simulated
// second for at most kBudget messages or kMaxSlice, plus a fixed kJobSetup
// (the final long poll confirming the queue is empty, the S3 PUT). The test
// plays the daemon: it sweeps every queue each simulated minute and resubmits
// a queue from `done` when its job returns more=true.
//
// Determinism: the simulated clock only moves when every running job is parked
// waiting for its simulated finish time and no dispatch is possible; jobs are
// then woken one at a time in (finish time, queue index) order. During a sweep
// the free worker slots are first filled with placeholder jobs so the whole
// sweep is submitted before the scheduler picks from it.
// ---------------------------------------------------------------------------

constexpr int kQueues = 300;
constexpr int kSmallQueues = 5;
constexpr int64_t kFloodMessages = 1'000'000;
constexpr int64_t kRate = 2'000;  // messages per simulated second per job
constexpr int64_t kBudget = 50'000;
constexpr auto kMaxSlice = 30s;
constexpr auto kJobSetup = 20s;
constexpr auto kSweepEvery = 1min;
constexpr auto kSimLimit = 6h;
constexpr int kWorkers = 4;

enum class Policy { kEarliestDeadlineFirst, kFifo };
enum class Kind { kFlood, kOrdinary, kSmall };

struct Bucket {
  SystemTime expiry;
  int64_t count;
};

struct SimQueue {
  std::string name;
  Kind kind = Kind::kOrdinary;
  std::deque<Bucket> buckets;  // ascending expiry
  int64_t initial = 0;
  int64_t count = 0;
  int64_t archived = 0;
  int64_t expired = 0;
  int jobs = 0;
  bool outstanding = false;  // a job is pending or running
  std::optional<SystemTime> first_start;
  std::optional<SystemTime> emptied_at;
  Duration first_expiry_in{};  // from the start of the run
};

struct SmallResult {
  std::string name;
  Duration first_expiry_in{};
  Duration first_job_at{};
  int64_t messages = 0;
  int64_t expired = 0;
};

struct FleetResult {
  bool completed = false;  // every queue emptied (archived or expired) within kSimLimit
  std::vector<SmallResult> small;
  int64_t flood_archived = 0;
  int64_t flood_expired = 0;
  Duration flood_done_at{};
  int flood_jobs = 0;
  int64_t ordinary_expired = 0;
  Duration ordinary_done_at{};
  int jobs = 0;
  Duration sim_end{};
  double real_seconds = 0;
};

class FleetSim {
 public:
  explicit FleetSim(Policy policy) : policy_(policy), clock_(kStart), now_(kStart) {
    SchedulerOptions o = Options(kWorkers, 1);
    if (policy == Policy::kFifo) o.per_queue_concurrency = kWorkers;  // the naive setup: no per-queue cap
    scheduler_.emplace(o, clock_);
    BuildQueues();
  }

  FleetResult Run() {
    const auto real_start = std::chrono::steady_clock::now();
    scheduler_->Start();
    SystemTime next_sweep = kStart;
    bool ok = true;
    while (ok) {
      if (!WaitQuiescent()) {
        ok = false;
        break;
      }
      std::optional<std::pair<SystemTime, uint64_t>> wake;  // (time, sleeper id)
      bool all_empty = true;
      {
        std::lock_guard<std::mutex> lock(mu_);
        std::optional<std::pair<SystemTime, int>> best;
        for (const auto& [id, s] : sleepers_) {
          if (s.released) continue;
          if (!best || std::make_pair(s.wake, s.queue) < *best) {
            best = std::make_pair(s.wake, s.queue);
            wake = std::make_pair(s.wake, id);
          }
        }
        for (const SimQueue& q : queues_) all_empty = all_empty && q.count == 0 && !q.outstanding;
        if (all_empty || now_ - kStart > kSimLimit) break;
      }
      if (wake && wake->first <= next_sweep) {
        std::lock_guard<std::mutex> lock(mu_);
        AdvanceLocked(wake->first);
        sleepers_[wake->second].released = true;
        cv_.notify_all();
      } else {
        {
          std::lock_guard<std::mutex> lock(mu_);
          AdvanceLocked(next_sweep);
        }
        ok = Sweep();
        next_sweep += kSweepEvery;
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      abort_ = true;
    }
    cv_.notify_all();
    scheduler_->Stop();
    FleetResult r = Summarize();
    r.completed = r.completed && ok;
    r.real_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - real_start).count();
    return r;
  }

 private:
  static constexpr SystemTime kStart = SystemTime(std::chrono::seconds(1'700'000'000));

  struct Sleeper {
    SystemTime wake;
    int queue;
    bool released = false;
  };

  void BuildQueues() {
    queues_.resize(kQueues);
    // Discovery order: the flood first, ordinary queues, the small ones last.
    SimQueue& flood = queues_[0];
    flood.name = "dlq-000-orders";
    flood.kind = Kind::kFlood;
    for (int k = 0; k < 100; ++k) flood.buckets.push_back({kStart + 2h + k * 50min, kFloodMessages / 100});
    for (int i = 1; i < kQueues - kSmallQueues; ++i) {
      SimQueue& q = queues_[i];
      q.name = fmt::format("dlq-{:03d}", i);
      q.buckets.push_back({kStart + 6h + i * 1min, 2 + i % 5});
      q.buckets.push_back({kStart + 24h + i * 1min, 1 + i % 3});
    }
    const int expiry_min[kSmallQueues] = {10, 12, 15, 18, 20};
    for (int j = 0; j < kSmallQueues; ++j) {
      SimQueue& q = queues_[kQueues - kSmallQueues + j];
      q.name = fmt::format("dlq-{:03d}-payments-{}", kQueues - kSmallQueues + j, j);
      q.kind = Kind::kSmall;
      q.buckets.push_back({kStart + std::chrono::minutes(expiry_min[j]), 25});
      q.buckets.push_back({kStart + std::chrono::minutes(expiry_min[j]) + 30min, 15});
    }
    for (SimQueue& q : queues_) {
      for (const Bucket& b : q.buckets) q.count += b.count;
      q.initial = q.count;
      q.first_expiry_in = q.buckets.front().expiry - kStart;
    }
  }

  SystemTime DeadlineLocked(const SimQueue& q) const {
    // The naive control gives every job the same deadline: plain FIFO.
    return policy_ == Policy::kFifo ? kStart + 14 * 24h : q.buckets.front().expiry;
  }

  void AdvanceLocked(SystemTime t) {
    now_ = t;
    clock_.Set(t);
    for (SimQueue& q : queues_) {
      while (!q.buckets.empty() && q.buckets.front().expiry <= t) {
        q.expired += q.buckets.front().count;
        q.count -= q.buckets.front().count;
        q.buckets.pop_front();
        if (q.count == 0 && !q.emptied_at) q.emptied_at = t;
      }
    }
  }

  ArchiveJob MakeSimJob(int qi, SystemTime deadline) {
    return MakeJob(
        queues_[qi].name, deadline, [this, qi](std::stop_token stop) { return RunSlice(qi, stop); },
        [this, qi](const JobOutcome& o) { Done(qi, o); });
  }

  // One bounded slice: plan at the start, park until the simulated finish,
  // then archive from the earliest-expiring buckets what has not expired.
  JobOutcome RunSlice(int qi, std::stop_token stop) {
    std::unique_lock<std::mutex> lock(mu_);
    SimQueue& q = queues_[qi];
    ++q.jobs;
    if (!q.first_start) q.first_start = now_;
    const int64_t max_by_time = kRate * std::chrono::duration_cast<std::chrono::seconds>(kMaxSlice).count();
    const int64_t planned = std::min({q.count, kBudget, max_by_time});
    const Duration work = std::chrono::milliseconds((planned * 1000 + kRate - 1) / kRate);
    const uint64_t id = next_sleeper_++;
    auto it = sleepers_.emplace(id, Sleeper{now_ + kJobSetup + work, qi}).first;
    cv_.notify_all();
    cv_.wait(lock, [&] { return it->second.released || abort_ || stop.stop_requested(); });
    const bool released = it->second.released;
    sleepers_.erase(it);
    if (!released) return JobOutcome{Cancelled("sim: stopped")};
    int64_t todo = std::min(planned, q.count);
    q.archived += todo;
    q.count -= todo;
    while (todo > 0) {
      Bucket& b = q.buckets.front();
      const int64_t n = std::min(todo, b.count);
      b.count -= n;
      todo -= n;
      if (b.count == 0) q.buckets.pop_front();
    }
    if (q.count == 0 && !q.emptied_at) q.emptied_at = now_;
    JobOutcome o;
    o.more = q.count > 0;
    return o;
  }

  void Done(int qi, const JobOutcome& o) {
    std::optional<SystemTime> resubmit;
    {
      std::lock_guard<std::mutex> lock(mu_);
      SimQueue& q = queues_[qi];
      q.outstanding = false;
      if (o.status.ok() && o.more && q.count > 0 && !abort_) {
        q.outstanding = true;
        resubmit = DeadlineLocked(q);
      }
    }
    if (resubmit) scheduler_->Submit(MakeSimJob(qi, *resubmit));
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++done_calls_;
    }
    cv_.notify_all();
  }

  // Fills the free slots with placeholders, submits every non-empty queue
  // without an outstanding job (discovery order), then frees the slots.
  bool Sweep() {
    const SchedulerStats s = scheduler_->Stats();
    const int free = s.effective_concurrency - static_cast<int>(s.running);
    for (int i = 0; i < free; ++i) {
      scheduler_->Submit(MakeJob(
          fmt::format("__hold_{}", i), clock_.Now(),
          [this](std::stop_token stop) {
            std::unique_lock<std::mutex> lock(mu_);
            ++holds_waiting_;
            cv_.notify_all();
            cv_.wait(lock, [&] { return holds_open_ || abort_ || stop.stop_requested(); });
            return JobOutcome{};
          },
          [this](const JobOutcome&) {
            {
              std::lock_guard<std::mutex> lock(mu_);
              ++done_calls_;
            }
            cv_.notify_all();
          }));
    }
    if (free > 0) {
      std::unique_lock<std::mutex> lock(mu_);
      if (!cv_.wait_for(lock, 10s, [&] { return holds_waiting_ == free; })) {
        ADD_FAILURE() << "placeholders did not start";
        return false;
      }
    }
    std::vector<std::pair<int, SystemTime>> submit;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int i = 0; i < kQueues; ++i) {
        SimQueue& q = queues_[i];
        if (q.count == 0 || q.outstanding) continue;
        q.outstanding = true;
        submit.emplace_back(i, DeadlineLocked(q));
      }
    }
    for (const auto& [qi, deadline] : submit) scheduler_->Submit(MakeSimJob(qi, deadline));
    if (free > 0) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        holds_open_ = true;
        holds_waiting_ = 0;
      }
      cv_.notify_all();
      if (!WaitQuiescent()) return false;
      std::lock_guard<std::mutex> lock(mu_);
      holds_open_ = false;
    }
    return true;
  }

  // True once every running job is parked and no further dispatch can happen.
  bool WaitQuiescent() {
    const auto give_up = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < give_up) {
      const SchedulerStats a = scheduler_->Stats();
      size_t parked = 0;
      uint64_t done = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (const auto& [id, s] : sleepers_) parked += s.released ? 0 : 1;
        parked += static_cast<size_t>(holds_waiting_);
        done = done_calls_;
      }
      const SchedulerStats b = scheduler_->Stats();
      const bool stable = a.pending == b.pending && a.running == b.running && a.completed == b.completed &&
                          a.effective_concurrency == b.effective_concurrency;
      if (stable && a.running == parked && a.completed == done &&
          (a.pending == 0 || a.running >= static_cast<size_t>(a.effective_concurrency))) {
        return true;
      }
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, 200us);
    }
    ADD_FAILURE() << "simulation did not settle";
    return false;
  }

  FleetResult Summarize() {
    std::lock_guard<std::mutex> lock(mu_);
    FleetResult r;
    r.completed = true;
    r.sim_end = now_ - kStart;
    for (const SimQueue& q : queues_) {
      r.jobs += q.jobs;
      r.completed = r.completed && q.count == 0;
      const Duration done_at = q.emptied_at ? *q.emptied_at - kStart : Duration::max();
      switch (q.kind) {
        case Kind::kFlood:
          r.flood_archived = q.archived;
          r.flood_expired = q.expired;
          r.flood_done_at = done_at;
          r.flood_jobs = q.jobs;
          break;
        case Kind::kOrdinary:
          r.ordinary_expired += q.expired;
          r.ordinary_done_at = std::max(r.ordinary_done_at, done_at);
          break;
        case Kind::kSmall: {
          SmallResult s;
          s.name = q.name;
          s.messages = q.initial;
          s.expired = q.expired;
          s.first_job_at = q.first_start ? *q.first_start - kStart : Duration::max();
          s.first_expiry_in = q.first_expiry_in;
          r.small.push_back(s);
          break;
        }
      }
    }
    return r;
  }

  const Policy policy_;
  FakeClock clock_;
  std::optional<Scheduler> scheduler_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<SimQueue> queues_;          // guarded by mu_
  SystemTime now_;                        // guarded by mu_
  std::map<uint64_t, Sleeper> sleepers_;  // guarded by mu_
  uint64_t next_sleeper_ = 0;             // guarded by mu_
  uint64_t done_calls_ = 0;               // guarded by mu_
  int holds_waiting_ = 0;                 // guarded by mu_
  bool holds_open_ = false;               // guarded by mu_
  bool abort_ = false;                    // guarded by mu_
};

std::string Minutes(Duration d) {
  if (d == Duration::max()) return "never";
  return fmt::format("{:.1f}m", std::chrono::duration<double, std::ratio<60>>(d).count());
}

void PrintResult(const char* label, const FleetResult& r) {
  fmt::print("\n[{}] {} queues, {} workers, {} jobs, simulated {} in {:.2f}s real\n", label, kQueues, kWorkers, r.jobs,
             Minutes(r.sim_end), r.real_seconds);
  fmt::print("  {:<22} {:>9} {:>10} {:>9} {:>8}\n", "small queue", "expires", "first job", "messages", "expired");
  for (const SmallResult& s : r.small) {
    fmt::print("  {:<22} {:>9} {:>10} {:>9} {:>8}\n", s.name, Minutes(s.first_expiry_in), Minutes(s.first_job_at),
               s.messages, s.expired);
  }
  fmt::print("  flood: {} archived, {} expired, emptied at {}, {} slices\n", r.flood_archived, r.flood_expired,
             Minutes(r.flood_done_at), r.flood_jobs);
  fmt::print("  ordinary ({} queues): {} expired, last emptied at {}\n", kQueues - 1 - kSmallQueues, r.ordinary_expired,
             Minutes(r.ordinary_done_at));
}

TEST(SchedulerFloodTest, FloodedQueueNeverStarvesSmallQueuesNearExpiry) {
  const FleetResult edf = FleetSim(Policy::kEarliestDeadlineFirst).Run();
  PrintResult("earliest deadline first, per-queue cap 1", edf);
  ASSERT_TRUE(edf.completed);
  ASSERT_EQ(edf.small.size(), static_cast<size_t>(kSmallQueues));
  for (const SmallResult& s : edf.small) {
    EXPECT_EQ(s.expired, 0) << s.name;
    EXPECT_LT(s.first_job_at, s.first_expiry_in) << s.name;
  }
  EXPECT_EQ(edf.flood_archived, kFloodMessages);
  EXPECT_EQ(edf.flood_expired, 0);
  EXPECT_EQ(edf.flood_jobs, static_cast<int>(kFloodMessages / kBudget));
  EXPECT_EQ(edf.ordinary_expired, 0);

  // Deterministic: a second run gives the same numbers.
  const FleetResult again = FleetSim(Policy::kEarliestDeadlineFirst).Run();
  EXPECT_EQ(again.jobs, edf.jobs);
  EXPECT_EQ(again.flood_done_at, edf.flood_done_at);
  EXPECT_EQ(again.ordinary_done_at, edf.ordinary_done_at);
  EXPECT_EQ(again.sim_end, edf.sim_end);
}

TEST(SchedulerFloodTest, NaiveFifoLetsTheSameSmallQueuesExpire) {
  // Negative control: the same fleet and daemon, but every job gets the same
  // deadline (FIFO by submission) and there is no per-queue cap.
  const FleetResult fifo = FleetSim(Policy::kFifo).Run();
  PrintResult("naive FIFO (equal deadlines, per-queue cap = global)", fifo);
  ASSERT_TRUE(fifo.completed);
  ASSERT_EQ(fifo.small.size(), static_cast<size_t>(kSmallQueues));
  for (const SmallResult& s : fifo.small) {
    EXPECT_GT(s.expired, 0) << s.name << " survived FIFO: the control does not exercise the scheduler";
    EXPECT_GT(s.first_job_at, s.first_expiry_in) << s.name;
  }
  EXPECT_EQ(fifo.flood_archived, kFloodMessages);  // FIFO is fair to the flood, just not to deadlines
}

}  // namespace
}  // namespace dlq
