#include "monitor/scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>

#include "common/log.h"

namespace dlq {

Status SchedulerOptions::Validate() const {
  if (global_concurrency < 1) {
    return InvalidArgument(fmt::format("scheduler: global_concurrency must be >= 1, got {}", global_concurrency));
  }
  if (per_queue_concurrency < 1) {
    return InvalidArgument(fmt::format("scheduler: per_queue_concurrency must be >= 1, got {}", per_queue_concurrency));
  }
  if (min_concurrency < 1 || min_concurrency > global_concurrency) {
    return InvalidArgument(fmt::format("scheduler: min_concurrency must be in [1, global_concurrency={}], got {}",
                                       global_concurrency, min_concurrency));
  }
  return Status::Ok();
}

namespace {

// Options that failed Validate() are clamped so the scheduler can never
// deadlock on a zero limit; callers are expected to Validate() first.
SchedulerOptions Sanitized(SchedulerOptions o) {
  o.global_concurrency = std::max(1, o.global_concurrency);
  o.per_queue_concurrency = std::max(1, o.per_queue_concurrency);
  o.min_concurrency = std::clamp(o.min_concurrency, 1, o.global_concurrency);
  return o;
}

}  // namespace

Scheduler::Scheduler(SchedulerOptions options, Clock& clock)
    : options_(Sanitized(options)), clock_(clock), effective_limit_(options_.global_concurrency) {}

Scheduler::~Scheduler() {
  Stop();
}

void Scheduler::Start() {
  MutexLock life(lifecycle_mu_);
  {
    MutexLock lock(mu_);
    if (stopped_ || !workers_.empty()) return;
  }
  workers_.reserve(static_cast<size_t>(options_.global_concurrency));
  for (int i = 0; i < options_.global_concurrency; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

void Scheduler::Stop() {
  MutexLock life(lifecycle_mu_);
  std::unordered_map<std::string, PendingJob> dropped;  // destroyed outside mu_
  {
    MutexLock lock(mu_);
    stopped_ = true;
    dropped.swap(pending_);
    order_.clear();
  }
  // Outside mu_: the jobs' stop callbacks run here.
  stop_source_.request_stop();
  work_cv_.NotifyAll();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
  idle_cv_.NotifyAll();
}

void Scheduler::Submit(ArchiveJob job) {
  std::optional<ArchiveJob> replaced;  // destroyed outside mu_
  {
    MutexLock lock(mu_);
    if (stopped_) return;
    auto it = pending_.find(job.queue_key);
    if (it == pending_.end()) {
      const uint64_t seq = next_seq_++;
      order_.emplace(OrderKey{job.deadline, seq}, job.queue_key);
      std::string key = job.queue_key;
      pending_.emplace(std::move(key), PendingJob{std::move(job), seq});
    } else {
      PendingJob& p = it->second;
      if (job.deadline < p.job.deadline) {
        order_.erase(OrderKey{p.job.deadline, p.seq});
        p.seq = next_seq_++;
        order_.emplace(OrderKey{job.deadline, p.seq}, job.queue_key);
      } else {
        job.deadline = p.job.deadline;  // keep the earlier deadline and its place
      }
      replaced.emplace(std::move(p.job));
      p.job = std::move(job);
    }
  }
  work_cv_.NotifyOne();
}

void Scheduler::WaitIdle() {
  MutexLock lock(mu_);
  idle_cv_.Wait(mu_, [this]() DLQ_REQUIRES(mu_) { return pending_.empty() && running_ == 0; });
}

SchedulerStats Scheduler::Stats() const {
  MutexLock lock(mu_);
  SchedulerStats s;
  s.pending = pending_.size();
  s.running = running_;
  s.effective_concurrency = effective_limit_;
  s.completed = completed_;
  s.throttled = throttled_;
  return s;
}

std::optional<ArchiveJob> Scheduler::TakeNextLocked() {
  if (running_ >= static_cast<size_t>(effective_limit_)) return std::nullopt;
  // At most one pending job per key, so this skips at most one entry per
  // queue at its cap: O(global_concurrency) steps, not O(pending).
  for (auto it = order_.begin(); it != order_.end(); ++it) {
    const std::string& key = it->second;
    auto running = running_per_key_.find(key);
    if (running != running_per_key_.end() && running->second >= options_.per_queue_concurrency) continue;
    auto node = pending_.extract(key);
    order_.erase(it);
    ArchiveJob job = std::move(node.mapped().job);
    ++running_per_key_[job.queue_key];
    ++running_;
    return job;
  }
  return std::nullopt;
}

JobOutcome Scheduler::RunGuarded(ArchiveJob& job) {
  try {
    if (!job.run) return JobOutcome{Internal(fmt::format("archive job for {}: no run function", job.queue_key))};
    return job.run(stop_source_.get_token());
  } catch (const std::exception& e) {
    return JobOutcome{Internal(fmt::format("archive job for {} threw: {}", job.queue_key, e.what()))};
  } catch (...) {
    return JobOutcome{Internal(fmt::format("archive job for {} threw a non-standard exception", job.queue_key))};
  }
}

void Scheduler::FinishLocked(const std::string& queue_key, const JobOutcome& outcome) {
  --running_;
  auto it = running_per_key_.find(queue_key);
  if (it != running_per_key_.end() && --it->second <= 0) running_per_key_.erase(it);
  ++completed_;
  const bool throttled = outcome.throttled || outcome.status.code() == ErrorCode::kThrottled;
  if (throttled) {
    ++throttled_;
    if (options_.adaptive) effective_limit_ = std::max(options_.min_concurrency, effective_limit_ / 2);
  } else if (outcome.status.ok() && options_.adaptive) {
    effective_limit_ = std::min(options_.global_concurrency, effective_limit_ + 1);
  }
}

void Scheduler::LogIfLate(const ArchiveJob& job) const {
  // Milliseconds first, so a far-past deadline (SystemTime::min()) cannot overflow.
  using std::chrono::milliseconds;
  const int64_t now_ms = std::chrono::duration_cast<milliseconds>(clock_.Now().time_since_epoch()).count();
  const int64_t deadline_ms = std::chrono::duration_cast<milliseconds>(job.deadline.time_since_epoch()).count();
  if (job.deadline == SystemTime::min() || now_ms <= deadline_ms) return;
  // Queues whose nearest expiry is unknown are due "now", so small delays are
  // routine; a start more than a minute past a known deadline is worth a warning.
  Log().Log(now_ms - deadline_ms > 60000 ? LogLevel::kWarn : LogLevel::kDebug, "scheduler_late_start",
            {{"queue", job.queue_key}, {"late_ms", now_ms - deadline_ms}});
}

void Scheduler::WorkerLoop() {
  MutexLock lock(mu_);
  while (!stopped_) {
    std::optional<ArchiveJob> job = TakeNextLocked();
    if (!job) {
      work_cv_.Wait(mu_);
      continue;
    }
    lock.Unlock();

    LogIfLate(*job);
    const JobOutcome outcome = RunGuarded(*job);
    if (job->done) {
      try {
        job->done(outcome);
      } catch (const std::exception& e) {
        Log().Log(LogLevel::kError, "scheduler_done_threw", {{"queue", job->queue_key}, {"error", e.what()}});
      } catch (...) {
        Log().Log(LogLevel::kError, "scheduler_done_threw", {{"queue", job->queue_key}});
      }
    }
    const std::string key = std::move(job->queue_key);
    job.reset();  // the job's captures are destroyed outside mu_

    lock.Lock();
    FinishLocked(key, outcome);
    // A freed slot, a freed per-queue slot or a raised limit may each let
    // another worker start, so wake them all (there are only a few).
    work_cv_.NotifyAll();
    if (pending_.empty() && running_ == 0) idle_cv_.NotifyAll();
  }
}

}  // namespace dlq
